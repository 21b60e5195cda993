#!/usr/bin/env bash
# 02-pair-scale.sh -- Issue 3: the cost of an ri-open + ri-close pair does
# not grow with the journal: at 10^6 records it is within 1.2x of its cost
# at 10^3.
#
# Two journals of the same shape, filled by ri-fill (cached, see
# lib/common.bash): "small", 500 closed invocations and 1,000 open intents
# (2,002 records), and "large", 499,500 closed and 1,000 open (1,000,002
# records) -- the same 1,000 open intents in both, so only the number of
# closed records differs.  Each is copied, its config set to the system
# clock with fault injection off, and the same pair loop as 01-pair.sh
# runs on both, in interleaved blocks (ABBA) to cancel drift and load.
#
# Then the WAL frames one append writes, at each size (issue 43 target 5:
# <= 10 at 10^6; counted in the verdict).
#
# BENCH_SCALE_ROUNDS (default 6) x BENCH_SCALE_N (default 20) pairs each.
. "$(dirname "$0")/lib/common.bash"

ROUNDS=${BENCH_SCALE_ROUNDS:-6}
N=${BENCH_SCALE_N:-20}
TARGET=1.2

bench_header "02-pair-scale" \
    "ri-open + ri-close pair cost on a 10^6-record journal vs a 10^3-record one" \
    "the same pair loop on the ~10^3-record journal, interleaved in the same run" \
    "median pair time at 10^6 <= ${TARGET}x the median at 10^3"

small=$(bench_journal small "$SMALL_CLOSED" "$OPEN_INTENTS") || bench_die "cannot build the small journal"
large=$(bench_journal large "$LARGE_CLOSED" "$OPEN_INTENTS") || bench_die "cannot build the large journal"
bench_copy "$small" "$BT/small" system || bench_die "copy"
bench_copy "$large" "$BT/large" system || bench_die "copy"
ns=$(bench_info "$small" records)
nl=$(bench_info "$large" records)

ri_pair() { # DIR KEY
	local o
	o=$(RI_CONFIG=$1/ri.json RI_CREDENTIAL_FILE=$1/alice.cred "$RI_BIN/ri-open" --kind ledger \
	    --act-key "$2" --actor alice --intent-data "{\"pairing_datum\":\"pd-$2\"}" </dev/null) || return 1
	printf '%s' "${o%\}},\"outcome_action_ref\":\"ledger.disclosed\",\"outcome_data\":{\"disclosure_id\":\"dsc-$2\"}}" |
	    RI_CONFIG=$1/ri.json RI_CREDENTIAL_FILE=$1/alice.cred "$RI_BIN/ri-close" >/dev/null
}
block() { # DIR COUNT TAG OUT
	local i t0 t1 fails=0
	for ((i = 0; i < $2; i++)); do
		t0=${EPOCHREALTIME/[.,]/}
		if ri_pair "$1" "$3-$i" 2>>"$BT/err.log"; then
			t1=${EPOCHREALTIME/[.,]/}
			printf '%d.%03d\n' $(( (t1 - t0) / 1000 )) $(( (t1 - t0) % 1000 )) >>"$4"
		else
			fails=$((fails + 1))    # counted, and kept out of the times
		fi
	done
	return $fails
}

# warm-up: page cache (the large file is read where the pairs touch it)
block "$BT/small" 5 warm "$BT/warm" || bench_die "pair failed on the small journal"
block "$BT/large" 5 warm "$BT/warm" || bench_die "pair failed on the large journal"
: >"$BT/small.ms"
: >"$BT/large.ms"
fails=0
for ((r = 0; r < ROUNDS; r++)); do
	if ((r % 2 == 0)); then
		block "$BT/small" "$N" "s$r" "$BT/small.ms" || fails=$((fails + $?))
		block "$BT/large" "$N" "l$r" "$BT/large.ms" || fails=$((fails + $?))
	else
		block "$BT/large" "$N" "l$r" "$BT/large.ms" || fails=$((fails + $?))
		block "$BT/small" "$N" "s$r" "$BT/small.ms" || fails=$((fails + $?))
	fi
done

read -r sn smean smed sp90 smin smax < <(stats "$BT/small.ms")
read -r ln lmean lmed lp90 lmin lmax < <(stats "$BT/large.ms")
printf '  %-30s %10s %6s %9s %9s %9s %9s %9s\n' "per pair ($ROUNDS rounds x $N, ABBA)" records n "mean ms" \
    "median ms" "p90 ms" "min ms" "pairs/s"
printf '  %-30s %10d %6d %9.2f %9.2f %9.2f %9.2f %9.1f\n' "small journal (10^3)" "$ns" "$sn" "$smean" "$smed" \
    "$sp90" "$smin" "$(awk -v m="$smed" 'BEGIN { print 1000 / m }')"
printf '  %-30s %10d %6d %9.2f %9.2f %9.2f %9.2f %9.1f\n' "large journal (10^6)" "$nl" "$ln" "$lmean" "$lmed" \
    "$lp90" "$lmin" "$(awk -v m="$lmed" 'BEGIN { print 1000 / m }')"
R=$(ratio "$lmed" "$smed")
echo "  ratio (median at 10^6 / median at 10^3): $R   (mean ratio $(ratio "$lmean" "$smean"))   target <= $TARGET"
if [ "$fails" != 0 ]; then
	echo "  $fails pairs FAILED (non-zero exit; kept out of the times); first errors:"
	sort "$BT/err.log" | uniq -c | sort -rn | head -3 | sed 's/^/    /'
fi
# Instruction counts (callgrind), insensitive to the machine's load: a
# diagnostic beside the wall-clock verdict.  3 pairs on each journal, each
# process under callgrind, after the same history of pairs on both.
if command -v valgrind >/dev/null 2>&1; then
	ir() { # DIR KEY -> instructions of ri-open + ri-close
		local o a b
		o=$(RI_CONFIG=$1/ri.json RI_CREDENTIAL_FILE=$1/alice.cred valgrind --tool=callgrind \
		    --callgrind-out-file=/dev/null "$RI_BIN/ri-open" --kind ledger --act-key "$2" --actor alice \
		    --intent-data "{\"pairing_datum\":\"pd-$2\"}" </dev/null 2>"$BT/vg.o") || return 1
		printf '%s' "${o%\}},\"outcome_action_ref\":\"ledger.disclosed\",\"outcome_data\":{}}" >"$BT/vg.req"
		RI_CONFIG=$1/ri.json RI_CREDENTIAL_FILE=$1/alice.cred valgrind --tool=callgrind \
		    --callgrind-out-file=/dev/null "$RI_BIN/ri-close" <"$BT/vg.req" >/dev/null 2>"$BT/vg.c" || return 1
		a=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$BT/vg.o")
		b=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$BT/vg.c")
		echo $((a + b))
	}
	irs=0 irl=0
	for i in 1 2 3; do
		x=$(ir "$BT/small" "vg-$i") && y=$(ir "$BT/large" "vg-$i") || { irs=0; break; }
		irs=$((irs + x)) irl=$((irl + y))
	done
	if [ "$irs" != 0 ]; then
		echo "  instructions per pair (callgrind, mean of 3; diagnostic): 10^3: $((irs / 3)), 10^6: $((irl / 3)), ratio $(ratio "$irl" "$irs")"
	fi
fi
# WAL frames per append (issue 43 target 5): one ri-open and one ri-close
# on each journal, each after a checkpoint that empties the WAL.  A
# command commits twice (the lease, then the append); the append is the
# commit whose frames hold a page of the records table (dbstat, read
# after the WAL is read).  A WAL frame is a 24-byte header and a page; the
# header's first 4 bytes are the page number, the next 4 nonzero on a
# commit.  Reported with how many of the append's frames are pages of the
# tree of scope heads (the nodes table).
wal_groups() { # DB -> one line a commit: its frames' page numbers
	local db=$1 ps size off pg cm line=
	ps=$(od -An -tu4 --endian=big -j8 -N4 "$db-wal" | tr -d ' ')
	size=$(stat -c %s "$db-wal")
	for ((off = 32; off + 24 + ps <= size; off += 24 + ps)); do
		read -r pg cm < <(od -An -tu4 --endian=big -j"$off" -N8 "$db-wal")
		line="$line $pg"
		if [ "$cm" != 0 ]; then
			echo "$line"
			line=
		fi
	done
}
append_frames() { # DB -> "frames nodes" of the append the WAL holds
	local db=$1 g groups recs nodes n k
	# the WAL first: the sqlite3 CLI, the last connection to close,
	# checkpoints it away
	groups=$(wal_groups "$db") || return 1
	recs=" $(sqlite3 "$db" "SELECT group_concat(pageno, ' ') FROM dbstat WHERE name = 'records'") "
	nodes=" $(sqlite3 "$db" "SELECT group_concat(pageno, ' ') FROM dbstat WHERE name = 'nodes'") "
	while read -r g; do
		n=0 k=0
		for p in $g; do
			n=$((n + 1))
			case $nodes in *" $p "*) k=$((k + 1)) ;; esac
		done
		for p in $g; do
			case $recs in *" $p "*) echo "$n $k"; return 0 ;; esac
		done
	done <<<"$groups"
	return 1
}
wal_pair() { # DIR KEY -> "intent_frames intent_nodes outcome_frames outcome_nodes"
	local o a b db=$1/journal.db
	sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null || return 1
	o=$(RI_CONFIG=$1/ri.json RI_CREDENTIAL_FILE=$1/alice.cred "$RI_BIN/ri-open" --kind ledger \
	    --act-key "$2" --actor alice --intent-data "{\"pairing_datum\":\"pd-$2\"}" </dev/null) || return 1
	a=$(append_frames "$db") || return 1
	sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null || return 1
	printf '%s' "${o%\}},\"outcome_action_ref\":\"ledger.disclosed\",\"outcome_data\":{}}" |
	    RI_CONFIG=$1/ri.json RI_CREDENTIAL_FILE=$1/alice.cred "$RI_BIN/ri-close" >/dev/null || return 1
	b=$(append_frames "$db") || return 1
	echo "$a $b"
}
WAL_TARGET=10
WAL_N=5
wal_mean() { # DIR TAG -> the mean over WAL_N pairs of each wal_pair column
	local i line
	for ((i = 0; i < WAL_N; i++)); do
		line=$(wal_pair "$1" "$2-$i") || return 1
		echo "$line"
	done | awk '{ for (c = 1; c <= 4; c++) t[c] += $c; n++ }
	    END { if (n) printf "%.1f %.1f %.1f %.1f\n", t[1] / n, t[2] / n, t[3] / n, t[4] / n }'
}
if read -r si sin so son < <(wal_mean "$BT/small" wal) && read -r li lin lo lon < <(wal_mean "$BT/large" wal) &&
    [ -n "$lo" ]; then
	echo "  WAL frames per append (issue 43 target 5; mean of $WAL_N pairs), intent / outcome, of which pages of"
	echo "  the tree of scope heads (nodes):"
	echo "    $ns records: $si / $so (nodes $sin / $son); $nl records: $li / $lo (nodes $lin / $lon);" \
	    "target <= $WAL_TARGET at 10^6"
	wal_ok=1
	le "$li" "$WAL_TARGET" && le "$lo" "$WAL_TARGET" || wal_ok=0
	echo "    issue 43 target 5 (WAL frames): $([ "$wal_ok" = 1 ] && echo PASS || echo FAIL)"
else
	echo "  WAL frames per append: could not be measured"
	wal_ok=0
fi
ok=1
le "$R" "$TARGET" || ok=0
[ "$fails" = 0 ] || ok=0
[ "$wal_ok" = 1 ] || ok=0
bench_verdict "$ok"
