#!/usr/bin/env bash
# 01-pair.sh -- Issue 15, target 1 (issue 3 before it): one ri-open +
# ri-close pair costs at most 1.5x the physical floor -- two process starts
# and two O_DSYNC 4 KiB appends in the same shell shape -- and at most two
# fsync'd SQLite transactions; measured in the same run.
#
# The pair: ri-open (intent) then ri-close (outcome) as two processes, as a
# script runs them, on a fresh instance with the system clock and the
# walkthrough numbers, a distinct act key per pair.  The close request is
# built from the open answer with bash string operations (no jq in the
# loop: a jq process costs more than the thing measured).
#
# The baseline (the target's): the physical floor, bench/floor.c -- a bare
# C process (linked to nothing of ours) that makes one O_DSYNC append of
# 4 KiB and prints a line; per pair two of them, the first one's output
# captured like ri-open's answer, the second one's input piped like
# ri-close's request.  Nothing can do a pair's durable work in less.
#
# A diagnostic baseline: a WAL database with synchronous=FULL and a table
# shaped like a journal row (the same columns and indexes as records), and
# per pair two separate sqlite3 processes, each inserting the same payload
# -- what the same work costs through the sqlite3 CLI (it checkpoints and
# removes its WAL at every exit, so it does not grow with the run).
#
# A second diagnostic, the SQLite floor: bench/sqlite_floor.c, a process
# linked as the commands are but doing nothing of ri's -- it opens a WAL
# database and makes the same one-row insert, one fsync'd commit, no
# checkpoint; two per pair in the floor's shell shape.  Its WAL is
# restarted before each of its blocks (untimed), so it never reads a
# longer WAL than that block wrote: the best case SQLite allows a process
# that opens it per command.  It says how much of the gap to the physical
# floor is the substrate's before any of ri's work (issue 15, target 1).
#
# Blocks of pairs alternate floor/ri/sqlite3/SQLite floor (ABCD DCBA order)
# so drift and load cancel; the ratio is of the median pair times (the
# ratio of the minimums is shown too).  Then strace counts every fsync and fdatasync
# (directory syncs included) of one pair, and of 20 pairs (averaged).
#
# Issue 39: every append adds a line to the witness.  A second instance,
# identical but "witness": null, runs the same pairs in the same rotation:
# the witness's cost is the ratio of the two (target <= 1.1).  Issue 15
# ended blocked on its physical-floor target (1.5x, kept as a diagnostic):
# the pair is judged against the SQLite floor (<= 1.3x), as issue 39 says.
#
# BENCH_PAIR_ROUNDS (default 6) x BENCH_PAIR_N (default 20) pairs of each.
. "$(dirname "$0")/lib/common.bash"

ROUNDS=${BENCH_PAIR_ROUNDS:-6}
N=${BENCH_PAIR_N:-20}
TARGET=1.3              # ri pair / SQLite floor pair
WTARGET=1.1             # ri pair / the same pair with no witness
FTARGET=1.5             # diagnostic: ri pair / the physical floor (issue 15)

bench_header "01-pair" \
    "ri-open + ri-close pairs/s (two processes, fsync'd journal, system clock, distinct act keys)" \
    "the SQLite floor (2 bare SQLite processes, one fsync'd insert each), and the same ri pair without the witness" \
    "time per pair <= ${TARGET}x the SQLite floor's and <= ${WTARGET}x the witness-less pair's (medians); at most 2 fsync'd transactions per pair"

I=$BT/inst
bench_instance "$I" system || bench_die "cannot create an instance"
bench_cfg "$I" '.fault_injection = false' || bench_die "config"
export RI_CONFIG=$I/ri.json RI_CREDENTIAL_FILE=$I/alice.cred
# the same instance without a witness (issue 39: what the per-append line costs)
I2=$BT/inst-nw
bench_instance "$I2" system || bench_die "cannot create the witness-less instance"
bench_cfg "$I2" '.fault_injection = false | .witness = null' || bench_die "config"

DB=$BT/base/base.db
mkdir -p "$BT/base"
sqlite3 "$DB" >/dev/null <<'SQL' || bench_die "cannot create the baseline database"
PRAGMA journal_mode=WAL;
CREATE TABLE records(seq INTEGER PRIMARY KEY, event_id TEXT NOT NULL UNIQUE, action_ref TEXT NOT NULL,
  kind TEXT NOT NULL, act_key TEXT NOT NULL, invocation_id TEXT, actor_ref TEXT NOT NULL,
  attestation_id TEXT NOT NULL, recorded_at INTEGER NOT NULL, retention_until INTEGER,
  role INTEGER NOT NULL, act_prev INTEGER NOT NULL, inv_prev INTEGER NOT NULL, payload TEXT,
  salt BLOB, digest BLOB NOT NULL, hash BLOB NOT NULL, mac BLOB NOT NULL);
CREATE INDEX records_invocation ON records(invocation_id, seq);
CREATE INDEX records_act ON records(kind, act_key, seq);
CREATE INDEX records_retention ON records(retention_until) WHERE payload IS NOT NULL;
SQL
# the SQLite floor's database: the same table, its own file
SDB=$BT/base/sqlite-floor.db
cp "$DB" "$SDB" || bench_die "cannot copy the baseline database"

FLOOR=${RI_BENCH:-$BENCH_ROOT/build/default/bench}/floor
[ -x "$FLOOR" ] || bench_die "$FLOOR is not built (make bench builds it)"
SQFLOOR=${RI_BENCH:-$BENCH_ROOT/build/default/bench}/sqlite_floor
[ -x "$SQFLOOR" ] || bench_die "$SQFLOOR is not built (make bench builds it)"
FL=$BT/base/floor.log

# one pair of the journal: intent, then outcome
ri_pair() {
	local o
	o=$("$RI_BIN/ri-open" --kind ledger --act-key "$1" --actor alice \
	    --intent-data "{\"pairing_datum\":\"pd-$1\"}" </dev/null) || return 1
	printf '%s' "${o%\}},\"outcome_action_ref\":\"ledger.disclosed\",\"outcome_data\":{\"disclosure_id\":\"dsc-$1\"}}" |
	    "$RI_BIN/ri-close" >/dev/null
}

# the same pair on the witness-less instance
ri_pair_nw() { RI_CONFIG=$I2/ri.json RI_CREDENTIAL_FILE=$I2/alice.cred ri_pair "$@"; }

# one pair of the baseline: the same two payloads, one process each (the SQL
# is built with printf -v: no fork but the two sqlite3 processes and the
# pipe, as in ri_pair)
base_row() { # VAR ACTION INV KEY PAYLOAD EVENT_SUFFIX
	local now=${EPOCHREALTIME/[.,]/}
	printf -v "$1" "PRAGMA synchronous=FULL; INSERT INTO records(event_id, action_ref, kind, act_key,
	    invocation_id, actor_ref, attestation_id, recorded_at, retention_until, role, act_prev,
	    inv_prev, payload, salt, digest, hash, mac) VALUES ('evt_%s_%s', '%s', 'ledger', '%s', '%s',
	    'alice', 'att_%s', %s, %s, 1, 0, 0, '%s', randomblob(16), randomblob(32), randomblob(32),
	    randomblob(32)) RETURNING seq;" "$4" "$6" "$2" "$4" "$3" "$3" "${now%???}" "${now%???}" "$5"
}
# pair_row i KEY | pair_row o KEY SEQ -- one of a pair's two rows, in the
# caller's $sql: the intent, or the outcome naming the intent's seq
pair_row() {
	local inv="inv_$2"
	if [ "$1" = i ]; then
		base_row sql ledger.intended "$inv" "$2" \
		    "{\"act_key\":\"$2\",\"data\":{\"pairing_datum\":\"pd-$2\"},\"invocation_id\":\"$inv\",\"kind\":\"ledger\"}" i
	else
		base_row sql ledger.disclosed "$inv" "$2" \
		    "{\"act_key\":\"$2\",\"data\":{\"disclosure_id\":\"dsc-$2\"},\"intent_event_id\":\"evt_$2_$3\",\"invocation_id\":\"$inv\",\"kind\":\"ledger\"}" o
	fi
}
base_pair() {
	local o sql
	pair_row i "$1"
	o=$(sqlite3 "$DB" "$sql") || return 1
	pair_row o "$1" "$o"
	printf '%s' "$sql" | sqlite3 "$DB" >/dev/null
}

# one pair of the SQLite floor: the baseline's two rows, each in a bare
# SQLite process
sqlite_floor_pair() {
	local o sql
	pair_row i "$1"
	o=$("$SQFLOOR" "$SDB" "$sql") || return 1
	pair_row o "$1" "${o//[^0-9]/}"
	printf '%s' "$o" | "$SQFLOOR" "$SDB" "$sql" - >/dev/null
}
# its WAL restarted, untimed, before each of its blocks
sqlite_floor_restart() { sqlite3 "$SDB" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null; }

# one pair of the floor: two bare processes, each one synchronous append
floor_pair() {
	local o
	o=$("$FLOOR" append "$FL") || return 1
	printf '%s' "${o%\}},\"k\":\"$1\"}" | "$FLOOR" append "$FL" - >/dev/null
}

# block WHICH COUNT TAG OUT -- COUNT pairs, each pair's ms appended to OUT
block() {
	local i t0 t1 fails=0
	for ((i = 0; i < $2; i++)); do
		t0=${EPOCHREALTIME/[.,]/}
		if "$1" "$3-$i" 2>>"$BT/err.log"; then
			t1=${EPOCHREALTIME/[.,]/}
			printf '%d.%03d\n' $(( (t1 - t0) / 1000 )) $(( (t1 - t0) % 1000 )) >>"$4"
		else
			fails=$((fails + 1))    # counted, and kept out of the times
		fi
	done
	return $fails
}

# warm-up: page cache, binaries, both databases past their first write
block ri_pair 5 warm >/dev/null "$BT/warm" || bench_die "ri pair failed in warm-up"
block ri_pair_nw 5 warm >/dev/null "$BT/warm" || bench_die "witness-less ri pair failed in warm-up"
block base_pair 5 warm >/dev/null "$BT/warm" || bench_die "baseline pair failed in warm-up"
block floor_pair 5 warm >/dev/null "$BT/warm" || bench_die "floor pair failed in warm-up"
block sqlite_floor_pair 5 warm >/dev/null "$BT/warm" || bench_die "SQLite floor pair failed in warm-up"
: >"$BT/ri.ms"
: >"$BT/nw.ms"
: >"$BT/base.ms"
: >"$BT/floor.ms"
: >"$BT/sqfloor.ms"
fails=0
for ((r = 0; r < ROUNDS; r++)); do
	if ((r % 2 == 0)); then
		block floor_pair "$N" "f$r" "$BT/floor.ms" || fails=$((fails + $?))
		block ri_pair "$N" "r$r" "$BT/ri.ms" || fails=$((fails + $?))
		block ri_pair_nw "$N" "w$r" "$BT/nw.ms" || fails=$((fails + $?))
		block base_pair "$N" "b$r" "$BT/base.ms" || fails=$((fails + $?))
		sqlite_floor_restart || bench_die "cannot restart the SQLite floor's WAL"
		block sqlite_floor_pair "$N" "s$r" "$BT/sqfloor.ms" || fails=$((fails + $?))
	else
		sqlite_floor_restart || bench_die "cannot restart the SQLite floor's WAL"
		block sqlite_floor_pair "$N" "s$r" "$BT/sqfloor.ms" || fails=$((fails + $?))
		block base_pair "$N" "b$r" "$BT/base.ms" || fails=$((fails + $?))
		block ri_pair_nw "$N" "w$r" "$BT/nw.ms" || fails=$((fails + $?))
		block ri_pair "$N" "r$r" "$BT/ri.ms" || fails=$((fails + $?))
		block floor_pair "$N" "f$r" "$BT/floor.ms" || fails=$((fails + $?))
	fi
done

read -r fn fmean fmed fp90 fmin fmax < <(stats "$BT/floor.ms")
read -r bn bmean bmed bp90 bmin bmax < <(stats "$BT/base.ms")
read -r rn rmean rmed rp90 rmin rmax < <(stats "$BT/ri.ms")
read -r sn smean smed sp90 smin smax < <(stats "$BT/sqfloor.ms")
read -r wn wmean wmed wp90 wmin wmax < <(stats "$BT/nw.ms")
printf '  %-34s %6s %9s %9s %9s %9s %9s\n' "per pair ($ROUNDS rounds x $N, ABCD DCBA)" n "mean ms" "median ms" "p90 ms" \
    "min ms" "pairs/s"
printf '  %-34s %6d %9.2f %9.2f %9.2f %9.2f %9.1f\n' "floor: 2 processes, 2 O_DSYNC 4K" "$fn" "$fmean" "$fmed" \
    "$fp90" "$fmin" "$(awk -v m="$fmed" 'BEGIN { print 1000 / m }')"
printf '  %-34s %6d %9.2f %9.2f %9.2f %9.2f %9.1f\n' "ri-open + ri-close" "$rn" "$rmean" "$rmed" "$rp90" \
    "$rmin" "$(awk -v m="$rmed" 'BEGIN { print 1000 / m }')"
printf '  %-34s %6d %9.2f %9.2f %9.2f %9.2f %9.1f\n' "ri pair, \"witness\": null" "$wn" "$wmean" "$wmed" "$wp90" \
    "$wmin" "$(awk -v m="$wmed" 'BEGIN { print 1000 / m }')"
printf '  %-34s %6d %9.2f %9.2f %9.2f %9.2f %9.1f\n' "(diagnostic: 2 sqlite3 inserts)" "$bn" "$bmean" "$bmed" "$bp90" \
    "$bmin" "$(awk -v m="$bmed" 'BEGIN { print 1000 / m }')"
printf '  %-34s %6d %9.2f %9.2f %9.2f %9.2f %9.1f\n' "(diagnostic: SQLite floor, 2 bare)" "$sn" "$smean" "$smed" "$sp90" \
    "$smin" "$(awk -v m="$smed" 'BEGIN { print 1000 / m }')"
R=$(ratio "$rmed" "$smed")
RW=$(ratio "$rmed" "$wmed")
echo "  ratio (median ri pair / median SQLite floor pair): $R   (min ratio $(ratio "$rmin" "$smin"))   target <= $TARGET"
echo "  ratio (median ri pair / median witness-less ri pair): $RW   (min ratio $(ratio "$rmin" "$wmin"))   target <= $WTARGET"
echo "  (diagnostic: ri / the physical floor, median: $(ratio "$rmed" "$fmed"), min: $(ratio "$rmin" "$fmin"); issue 15's $FTARGET, blocked)"
echo "  (diagnostic: ri / two sqlite3-CLI inserts, median: $(ratio "$rmed" "$bmed"), min: $(ratio "$rmin" "$bmin"))"
echo "  (diagnostic: SQLite floor / floor, median: $(ratio "$smed" "$fmed"), min: $(ratio "$smin" "$fmin");" \
    "ri / SQLite floor, median: $(ratio "$rmed" "$smed"), min: $(ratio "$rmin" "$smin"))"
echo "  (SQLite opened per process takes $(ratio "$smed" "$fmed")x the physical floor before any of ri's work)"
if [ "$fails" != 0 ]; then
	echo "  $fails pairs FAILED (non-zero exit; kept out of the times); first errors:"
	sort "$BT/err.log" | uniq -c | sort -rn | head -3 | sed 's/^/    /'
fi

# ---- fsyncs ------------------------------------------------------------------
# strace -y names each fd's file: -wal = a transaction's commit, the
# directory = the writer's one-time fsync of the WAL's directory, before
# its first commit and outside the write lock (lib/store/sqlite/store_sqlite_vfs.h;
# SQLite's own, inside the commit, for a WAL it creates), .db = a
# checkpoint.
classify() { # STRACE_OUT -> "wal dir db other"
	awk '/fsync|fdatasync/ && /= 0/ {
	       if ($0 ~ /-wal>/) w++; else if ($0 ~ /\.db>/) d++; else if ($0 ~ /<\/[^>]*>/ && $0 !~ /\.[a-z]+>/) dir++; else o++
	     } END { printf "%d %d %d %d\n", w, dir, d, o }' "$1"
}
st() { strace -f -y -qq -e trace=fsync,fdatasync -o "$1" "${@:2}"; }
# one pair whose processes did not checkpoint (a checkpoint -- once the
# WAL holds WAL_TRIM_FRAMES, 128, lib/store/sqlite/query_sqlite.c: every fourth or fifth
# pair -- is counted apart, in the mean of 20 below)
for try in 1 2 3 4 5; do
	o=$(st "$BT/s.open" "$RI_BIN/ri-open" --kind ledger --act-key "strace-$try" --actor alice \
	    --intent-data "{\"pairing_datum\":\"pd-strace-$try\"}" </dev/null) || bench_die "ri-open under strace"
	printf '%s' "${o%\}},\"outcome_action_ref\":\"ledger.disclosed\",\"outcome_data\":{}}" >"$BT/close.json"
	st "$BT/s.close" "$RI_BIN/ri-close" <"$BT/close.json" >/dev/null || bench_die "ri-close under strace"
	cat "$BT/s.open" "$BT/s.close" | grep -q '\.db>' || break
done
base_row sql ledger.intended inv_s strace-1 '{}' i
st "$BT/s.b1" sqlite3 "$DB" "$sql" >/dev/null || bench_die "sqlite3 under strace"
base_row sql ledger.disclosed inv_s strace-1 '{}' o
printf '%s' "$sql" >"$BT/b2.sql"
st "$BT/s.b2" sqlite3 "$DB" <"$BT/b2.sql" >/dev/null || bench_die "sqlite3 under strace"
# 20 pairs of each, for the amortized cost (checkpoints)
st "$BT/s.ri20" bash -c "$(declare -f ri_pair); for i in \$(seq 20); do ri_pair strace20-\$i || exit 1; done" ||
    bench_die "ri pairs under strace"
st "$BT/s.b20" bash -c "DB='$DB'; $(declare -f base_row pair_row base_pair); for i in \$(seq 20); do base_pair strace20-\$i || exit 1; done" ||
    bench_die "baseline pairs under strace"
echo "  fsync/fdatasync calls (strace -f -y -e trace=fsync,fdatasync):"
printf '  %-34s %10s %10s %12s %7s\n' "" "WAL" "directory" "db (ckpt)" "other"
read -r ow odir odb oo < <(classify "$BT/s.open")
read -r cw cdir cdb co < <(classify "$BT/s.close")
printf '  %-34s %10d %10d %12d %7d\n' "ri-open (one)" "$ow" "$odir" "$odb" "$oo"
printf '  %-34s %10d %10d %12d %7d\n' "ri-close (one)" "$cw" "$cdir" "$cdb" "$co"
read -r b1w b1dir b1db b1o < <(classify "$BT/s.b1")
read -r b2w b2dir b2db b2o < <(classify "$BT/s.b2")
printf '  %-34s %10d %10d %12d %7d\n' "baseline insert 1 (one)" "$b1w" "$b1dir" "$b1db" "$b1o"
printf '  %-34s %10d %10d %12d %7d\n' "baseline insert 2 (one)" "$b2w" "$b2dir" "$b2db" "$b2o"
read -r w dir db oth < <(classify "$BT/s.ri20")
printf '  %-34s %10.2f %10.2f %12.2f %7.2f\n' "ri pair, mean of 20" "$(ratio "$w" 20 2)" "$(ratio "$dir" 20 2)" \
    "$(ratio "$db" 20 2)" "$(ratio "$oth" 20 2)"
read -r w dir db oth < <(classify "$BT/s.b20")
printf '  %-34s %10.2f %10.2f %12.2f %7.2f\n' "baseline pair, mean of 20" "$(ratio "$w" 20 2)" "$(ratio "$dir" 20 2)" \
    "$(ratio "$db" 20 2)" "$(ratio "$oth" 20 2)"
st "$BT/s.f20" bash -c "FLOOR='$FLOOR' FL='$FL'; $(declare -f floor_pair); for i in \$(seq 20); do floor_pair f20-\$i || exit 1; done" ||
    bench_die "floor pairs under strace"
all() { awk '/fsync|fdatasync/ && /= 0/ { n++ } END { print n + 0 }' "$@"; }
echo "  every fsync + fdatasync, directories and checkpoints included: ri pair (one): $(all "$BT/s.open" "$BT/s.close"),"
echo "    ri pair (mean of 20): $(ratio "$(all "$BT/s.ri20")" 20 2), sqlite3 pair (mean of 20): $(ratio "$(all "$BT/s.b20")" 20 2),"
echo "    floor pair: 0 (O_DSYNC: each write is its own data sync)"
tx=$(( ow + cw ))
[ "$((odb + cdb))" = 0 ] || echo "  (5 tries all hit a checkpoint: the WAL column above includes the checkpoint's syncs)"
echo "  fsync'd transactions in one ri pair (WAL commit syncs): $tx   target <= 2"
echo "  (directory: each writer syncs the WAL's directory once, before its first commit and outside the write lock:"
echo "   $((odir + cdir)) in the pair.  Over 20 pairs the WAL column also holds the checkpoints' syncs and the WAL-restart"
echo "   header sync that follow every 128 WAL frames (every fourth or fifth pair); the sqlite3 CLI checkpoints and"
echo "   removes its WAL at every exit, hence its db syncs.)"

ok=1
le "$R" "$TARGET" || ok=0
le "$RW" "$WTARGET" || ok=0
[ "$tx" -le 2 ] || ok=0
[ "$fails" = 0 ] || ok=0
bench_verdict "$ok"
