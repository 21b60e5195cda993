#!/usr/bin/env bash
# 08-pg-writers.sh -- Issue 43's honest baselines: acts/s on one PostgreSQL
# journal at 1, 2, 4 and 8 writers on distinct acts, against two baselines
# measured in the same run on the same server:
#
#   psql     each writer runs, per act, two processes of the psql binary
#            ($PGBIN/psql, never Debian's Perl wrapper), each INSERTing one
#            journal-shaped row -- the same two writes, a process each, as
#            ri-open and ri-close;
#   pgbench  the same two INSERTs per act from pgbench's clients (one
#            connection each, kept): what the server does with no process
#            start and no connect, the ceiling of a writer.
#
# ri's act is one ri-open and one ri-close (system clock, distinct act
# keys).  Reported for each writer count: acts/s of each, and ri / psql
# (issue 43 target 3: at 8 writers ri >= 1.0x psql).  Each count runs
# BENCH_PGW_ROUNDS rounds (default 3) of BENCH_PGW_N acts a writer (default
# 20), alternating ri / psql so load cancels; min and median are printed.
# Skipped (PASS with a note) when no PostgreSQL server binaries exist.
. "$(dirname "$0")/lib/common.bash"

ROUNDS=${BENCH_PGW_ROUNDS:-3}
N=${BENCH_PGW_N:-20}
WRITERS=${BENCH_PGW_WRITERS:-1 2 4 8}
TARGET=1.0

bench_header "08-pg-writers" \
    "ri-open + ri-close acts on one PostgreSQL journal, $WRITERS writers on distinct acts" \
    "the same two INSERTs an act: psql binary processes (two an act), and pgbench clients" \
    "at 8 writers ri acts/s >= ${TARGET}x the psql baseline's (issue 43 target 3); reported: every count"

bench_pg_start; case $? in
0) ;;
2) echo "no PostgreSQL server binaries (apt-get install postgresql): skipped"; bench_verdict 1 ;;
*) bench_die "cannot start the server" ;;
esac
PSQL=$PGBIN/psql
[ -x "$PSQL" ] || bench_die "no psql binary at $PSQL"
"$PSQL" -h "$PGD" -U ri -d ri -qc "CREATE SCHEMA base;
    CREATE TABLE base.records(seq bigserial PRIMARY KEY, event_id text NOT NULL UNIQUE, action_ref text NOT NULL,
      kind text NOT NULL, act_key text NOT NULL, invocation_id text, actor_ref text NOT NULL,
      attestation_id text NOT NULL, recorded_at bigint NOT NULL, retention_until bigint, role integer NOT NULL,
      act_prev bigint NOT NULL, inv_prev bigint NOT NULL, payload text, salt bytea, digest bytea NOT NULL,
      hash bytea NOT NULL, mac bytea NOT NULL);
    CREATE INDEX ON base.records(invocation_id, seq); CREATE INDEX ON base.records(kind, act_key, seq);" \
    >/dev/null || bench_die "baseline schema"
URI=$(bench_pg_uri inst) || bench_die "schema"

P=$BT/pg
bench_pg_instance "$P" "$URI" || bench_die "postgresql instance"

# the baseline's row: what an append writes, values of the same size
ROW="INSERT INTO base.records(event_id, action_ref, kind, act_key, invocation_id, actor_ref, attestation_id,
    recorded_at, retention_until, role, act_prev, inv_prev, payload, salt, digest, hash, mac)
    VALUES (%s, '%s', 'ledger', %s, %s, 'alice', %s, 0, NULL, 1, 0, 0, '{\"pairing_datum\":\"pd\"}',
    gen_random_uuid()::text::bytea, sha256('d'), sha256('h'), sha256('m')) RETURNING seq"
psql_row() { # ACTION KEY SUFFIX
	# shellcheck disable=SC2059 # the row is the format
	"$PSQL" -h "$PGD" -U ri -d ri -qAtc "$(printf "$ROW" "'evt_$2_$3'" "$1" "'$2'" "'inv_$2'" "'att_$2_$3'")" >/dev/null
}

# writer WHICH PREFIX -- N acts one after another; a failure is counted
writer() {
	local i bad=0
	for i in $(seq 1 "$N"); do
		case $1 in
		ri) bench_pair "$P" "$2-$i" || bad=$((bad + 1)) ;;
		psql) { psql_row ledger.intended "$2-$i" i && psql_row ledger.disclosed "$2-$i" o; } || bad=$((bad + 1)) ;;
		esac
	done
	echo "$bad" >"$BT/bad.$1.$2"
}

# acts_per_s WHICH W ROUND -- W writers at once; prints acts/s
acts_per_s() {
	local w t0 t1
	t0=$(now_us)
	for w in $(seq 1 "$2"); do writer "$1" "$1-w$2-r$3-$w" & done
	wait
	t1=$(now_us)
	awk -v n="$(($2 * N))" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", n / ((b - a) / 1e6) }'
}

# pgbench: the same two INSERTs an act, a transaction each, W clients
cat >"$BT/act.sql" <<'SQL'
\set k random(1, 1000000000)
INSERT INTO base.records(event_id, action_ref, kind, act_key, invocation_id, actor_ref, attestation_id, recorded_at, retention_until, role, act_prev, inv_prev, payload, salt, digest, hash, mac) VALUES ('evt_' || :k || '_' || :client_id || '_i_' || txid_current(), 'ledger.intended', 'ledger', 'pb' || :k, 'inv_pb' || :k, 'alice', 'att_pb' || :k || '_' || txid_current(), 0, NULL, 1, 0, 0, '{"pairing_datum":"pd"}', gen_random_uuid()::text::bytea, sha256('d'), sha256('h'), sha256('m'));
INSERT INTO base.records(event_id, action_ref, kind, act_key, invocation_id, actor_ref, attestation_id, recorded_at, retention_until, role, act_prev, inv_prev, payload, salt, digest, hash, mac) VALUES ('evt_' || :k || '_' || :client_id || '_o_' || txid_current(), 'ledger.disclosed', 'ledger', 'pb' || :k, 'inv_pb' || :k, 'alice', 'att_pb' || :k || '_o_' || txid_current(), 0, NULL, 1, 0, 0, '{"pairing_datum":"pd"}', gen_random_uuid()::text::bytea, sha256('d'), sha256('h'), sha256('m'));
SQL
pgbench_acts() { # W -- acts/s: pgbench's tps counts a run of the script (an act, its two INSERTs autocommitted)
	"$PGBIN/pgbench" -h "$PGD" -U ri -n -c "$1" -j "$1" -t "$N" -f "$BT/act.sql" ri 2>/dev/null |
	    sed -n 's/^tps = \([0-9.]*\) .*/\1/p' | head -1 | awk '{ printf "%.1f", $1 }'
}

med() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
mn() { printf '%s\n' "$@" | sort -g | head -1; }
printf '%-8s %22s %22s %14s %12s\n' "writers" "ri acts/s (min/med)" "psql acts/s (min/med)" "pgbench acts/s" "ri / psql"
ok=1
for W in $WRITERS; do
	R=() Q=()
	for r in $(seq 1 "$ROUNDS"); do
		R+=("$(acts_per_s ri "$W" "$r")")
		Q+=("$(acts_per_s psql "$W" "$r")")
	done
	pb=$(pgbench_acts "$W")
	mr=$(med "${R[@]}") mq=$(med "${Q[@]}")
	rr=$(ratio "$mr" "$mq" 2)
	printf '%-8s %22s %22s %14s %11sx\n' "$W" "$(mn "${R[@]}")/$mr" "$(mn "${Q[@]}")/$mq" "${pb:-?}" "$rr"
	if [ "$W" = 8 ] && ! le "$TARGET" "$rr"; then ok=0; fi
done
bad=$(cat "$BT"/bad.* | awk '{ s += $1 } END { print s + 0 }')
[ "$bad" -eq 0 ] || { echo "$bad acts did not complete"; ok=0; }
echo "issue 43 target 3: at 8 writers ri / psql >= ${TARGET}x"
bench_verdict "$ok"
