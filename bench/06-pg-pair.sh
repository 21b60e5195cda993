#!/usr/bin/env bash
# 06-pg-pair.sh -- Issue 13: one ri-open + ri-close pair on PostgreSQL
# against the same pair on SQLite, and against a baseline of two psql
# processes each INSERTing one journal-shaped row, measured in the same
# run; and the round trips one append costs.
#
# The baseline runs the psql binary of the server's own version
# ($PGBIN/psql), never Debian's /usr/bin/psql (a Perl wrapper that costs
# ~20 ms a start and flattered ri 2-3x, issue 43).  Round trips are counted
# twice: by the backend itself (RI_PG_TRACE), and from the client's socket
# (strace: each run of send()s after an answer was read is one round trip),
# so the backend's own counter is checked against the wire.
#
# A throwaway server is started as tests/pg/run starts it (unix socket,
# fsync on, synchronous_commit on).  Blocks of pairs alternate
# baseline / PostgreSQL / SQLite so drift and load cancel; the ratios are of
# the median pair times.  The round trips are counted by the backend itself
# (RI_PG_TRACE: each record_action prints its own count; =2 prints every
# statement, "[N in one round trip]" for statements sent together).
#
# BENCH_PG_ROUNDS (default 4) x BENCH_PG_N (default 10) pairs of each.
# Skipped (PASS with a note) when no PostgreSQL server binaries exist.
. "$(dirname "$0")/lib/common.bash"

ROUNDS=${BENCH_PG_ROUNDS:-4}
N=${BENCH_PG_N:-10}
TARGET=1.5

bench_header "06-pg-pair" \
    "ri-open + ri-close pairs on PostgreSQL (two processes, system clock, distinct act keys)" \
    "two psql processes per pair, each INSERTing one journal-shaped row (one transaction each)" \
    "time per pair <= ${TARGET}x the baseline's and <= 2 round trips per append (the issue's goals); reported: PG vs SQLite"

bench_pg_start; case $? in
0) ;;
2) echo "no PostgreSQL server binaries (apt-get install postgresql): skipped"; bench_verdict 1 ;;
*) bench_die "cannot start the server" ;;
esac
psql -h "$PGD" -U ri -d ri -qc "CREATE SCHEMA inst; CREATE SCHEMA base;
    CREATE TABLE base.records(seq bigserial PRIMARY KEY, event_id text NOT NULL UNIQUE, action_ref text NOT NULL,
      kind text NOT NULL, act_key text NOT NULL, invocation_id text, actor_ref text NOT NULL,
      attestation_id text NOT NULL, recorded_at bigint NOT NULL, retention_until bigint, role integer NOT NULL,
      act_prev bigint NOT NULL, inv_prev bigint NOT NULL, payload text, salt bytea, digest bytea NOT NULL,
      hash bytea NOT NULL, mac bytea NOT NULL);
    CREATE INDEX ON base.records(invocation_id, seq); CREATE INDEX ON base.records(kind, act_key, seq);" >/dev/null ||
    bench_die "baseline schema"
URI="postgresql:///ri?host=$PGD&user=ri&options=-csearch_path%3Dinst"

P=$BT/pg S=$BT/sq
mkdir -p "$P" "$S"
bench_config "$P/ri.json" system "$BENCH_PROBE"
jq --arg u "$URI" '.journal = $u | .fault_injection = false' "$P/ri.json" >"$P/ri.json.new" && mv "$P/ri.json.new" "$P/ri.json"
for d in "$P" "$S"; do
	[ "$d" = "$S" ] && { bench_instance "$S" system || bench_die "sqlite instance"; bench_cfg "$S" '.fault_injection = false'; continue; }
	"$RI_BIN/ri-init" -c "$d/ri.json" >/dev/null &&
	    "$RI_BIN/ri-actor" -c "$d/ri.json" add alice --credential-file "$d/alice.cred" >/dev/null &&
	    "$RI_BIN/ri-actor" -c "$d/ri.json" add ledger-reconciler --service --credential-file "$d/reconciler.cred" \
	        >/dev/null || bench_die "postgresql instance"
done

ri_pair() { bench_pair "$@"; }
base_row() { # ACTION KEY SUFFIX
	"$PGBIN/psql" -h "$PGD" -U ri -d ri -qAtc "INSERT INTO base.records(event_id, action_ref, kind, act_key, invocation_id,
	    actor_ref, attestation_id, recorded_at, retention_until, role, act_prev, inv_prev, payload, salt, digest,
	    hash, mac) VALUES ('evt_$2_$3', '$1', 'ledger', '$2', 'inv_$2', 'alice', 'att_$2_$3', 0, NULL, 1, 0, 0,
	    '{\"pairing_datum\":\"pd-$2\"}', gen_random_uuid()::text::bytea, sha256('d'), sha256('h'), sha256('m'))
	    RETURNING seq" >/dev/null
}
base_pair() { base_row ledger.intended "$1" i && base_row ledger.disclosed "$1" o; }

declare -a TB TP TS
k=0
for r in $(seq 1 "$ROUNDS"); do
	for which in B P S; do
		for i in $(seq 1 "$N"); do
			k=$((k + 1))
			t0=$(now_us)
			case $which in
			B) base_pair "k$k" || bench_die "baseline pair" ;;
			P) ri_pair "$P" "k$k" || bench_die "postgresql pair" ;;
			S) ri_pair "$S" "k$k" || bench_die "sqlite pair" ;;
			esac
			t1=$(now_us)
			eval "T$which+=($((t1 - t0)))"
		done
	done
done
med() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
mb=$(med "${TB[@]}") mp=$(med "${TP[@]}") ms=$(med "${TS[@]}")
printf '%-34s %12s\n' "median time per pair" "ms"
printf '%-34s %12.2f\n' "baseline (2 psql INSERTs)" "$(awk -v v="$mb" 'BEGIN { print v / 1000 }')"
printf '%-34s %12.2f\n' "ri on PostgreSQL" "$(awk -v v="$mp" 'BEGIN { print v / 1000 }')"
printf '%-34s %12.2f\n' "ri on SQLite" "$(awk -v v="$ms" 'BEGIN { print v / 1000 }')"
rpb=$(awk -v a="$mp" -v b="$mb" 'BEGIN { printf "%.2f", a / b }')
rps=$(awk -v a="$mp" -v b="$ms" 'BEGIN { printf "%.2f", a / b }')
echo "PostgreSQL / baseline: ${rpb}x    PostgreSQL / SQLite: ${rps}x"

# round trips: one pair, counted by the backend
k=$((k + 1))
o=$(RI_PG_TRACE=2 RI_CONFIG=$P/ri.json RI_CREDENTIAL_FILE=$P/alice.cred "$RI_BIN/ri-open" --kind ledger \
    --act-key "k$k" --actor alice --intent-data '{"pairing_datum":"rt"}' 2>"$BT/trace.open" </dev/null)
printf '%s' "${o%\}},\"outcome_action_ref\":\"ledger.disclosed\",\"outcome_data\":{\"disclosure_id\":\"rt\"}}" |
    RI_PG_TRACE=2 RI_CONFIG=$P/ri.json RI_CREDENTIAL_FILE=$P/alice.cred "$RI_BIN/ri-close" >/dev/null 2>"$BT/trace.close"
# record_action's own count (RI_PG_TRACE): the intent's append in ri-open,
# the outcome's in ri-close
per_append=$(sed -n 's/.*record_action [^ ]*: \([0-9]*\) round trips.*/\1/p' "$BT/trace.open" | head -1)
per_close=$(sed -n 's/.*record_action [^ ]*: \([0-9]*\) round trips.*/\1/p' "$BT/trace.close" | head -1)
echo "round trips: ri-open $(grep -o '[0-9]*$' "$BT/trace.open" | tail -1), ri-close $(grep -o '[0-9]*$' "$BT/trace.close" | tail -1) (whole process: connect, start gate, take, reads, the append, release)"
echo "round trips per append (record_action: the head lock with its reads sent ahead, then the writes with COMMIT): intent ${per_append:-?}, outcome ${per_close:-?} (the issue's goal: <= 2 per append)"
# round trips from the socket: a send after a receive opens a new one
wire_rts() { # STRACE-LOG
	awk '/sendto\(|sendmsg\(/ { if (!sending) n++; sending = 1; next }
	     /recvfrom\(|recvmsg\(/ && / = [1-9][0-9]*$/ { sending = 0 } END { print n + 0 }' "$1"
}
if command -v strace >/dev/null; then
	k=$((k + 1))
	traced() { strace -f -qq -e trace=sendto,sendmsg,recvfrom,recvmsg -o "$@"; }
	o=$(RI_CONFIG=$P/ri.json RI_CREDENTIAL_FILE=$P/alice.cred traced "$BT/wire.open" "$RI_BIN/ri-open" \
	    --kind ledger --act-key "k$k" --actor alice --intent-data '{"pairing_datum":"w"}' </dev/null 2>/dev/null) ||
	    bench_die "ri-open under strace"
	printf '%s' "${o%\}},\"outcome_action_ref\":\"ledger.disclosed\",\"outcome_data\":{\"disclosure_id\":\"w\"}}" |
	    RI_CONFIG=$P/ri.json RI_CREDENTIAL_FILE=$P/alice.cred traced "$BT/wire.close" "$RI_BIN/ri-close" \
	    >/dev/null 2>&1 || bench_die "ri-close under strace"
	traced "$BT/wire.base" "$PGBIN/psql" -h "$PGD" -U ri -d ri -qAtc "SELECT 1" >/dev/null
	echo "round trips on the wire (the client's socket): ri-open $(wire_rts "$BT/wire.open"), ri-close $(wire_rts "$BT/wire.close"); one psql statement $(wire_rts "$BT/wire.base") (connect and authentication included)"
else
	echo "round trips on the wire: not counted (no strace)"
fi
if le "$rpb" "$TARGET" && [ "${per_append:-9}" -le 2 ] && [ "${per_close:-9}" -le 2 ]; then
	echo "PostgreSQL pair ${rpb}x the two-INSERT baseline (<= ${TARGET}x); round trips per append ${per_append}, ${per_close} (<= 2)"
	bench_verdict 1
fi
echo "PostgreSQL pair ${rpb}x the two-INSERT baseline (target <= ${TARGET}x); round trips per append ${per_append:-?}, ${per_close:-?} (target <= 2)"
bench_verdict 0
