#!/usr/bin/env bash
# 07-pg-hosts.sh -- Issue 13: 4 hosts x 500 acts on one PostgreSQL journal,
# against the same 2,000 acts on SQLite from one host, measured in the same
# run.
#
# A "host" is what a second machine holds: its own copy of the instance's
# files (config, integrity and seal keys, witness, credentials, findings
# register) and its own processes, writing to the shared journal.  Each
# host runs its acts one after another (ri-open, then ri-close), on act
# keys of its own; all hosts start together.  The SQLite side runs the same
# number of writer processes on one journal file, on one host.  Reported:
# acts per second of each and their ratio.  The verdict is the accounting,
# not a speed: every pair answered 0, and ri-audit over each journal is
# clean (one intent and one outcome per act, nothing else).
#
# BENCH_PG_HOSTS (default 4) hosts x BENCH_PG_HOSTS_N (default 500) acts.
# Skipped (PASS with a note) when no PostgreSQL server binaries exist.
. "$(dirname "$0")/lib/common.bash"

HOSTS=${BENCH_PG_HOSTS:-4}
N=${BENCH_PG_HOSTS_N:-500}

bench_header "07-pg-hosts" \
    "$HOSTS hosts x $N ri-open + ri-close acts sharing one PostgreSQL journal (system clock, distinct act keys)" \
    "the same $((HOSTS * N)) acts on SQLite from one host ($HOSTS writer processes on one journal file)" \
    "every act accounted for (each pair 0, ri-audit clean on both); reported: acts/s of each, PG / SQLite"

bench_pg_start; case $? in
0) ;;
2) echo "no PostgreSQL server binaries (apt-get install postgresql): skipped"; bench_verdict 1 ;;
*) bench_die "cannot start the server" ;;
esac
URI=$(bench_pg_uri inst) || bench_die "schema"

P0=$BT/host0 S=$BT/sq
bench_pg_instance "$P0" "$URI" || bench_die "postgresql instance"
for h in $(seq 1 $((HOSTS - 1))); do
	cp -a "$P0" "$BT/host$h" || bench_die "host $h"
done
bench_instance "$S" system || bench_die "sqlite instance"
bench_cfg "$S" '.fault_injection = false'

# writer DIR PREFIX -- N acts one after another; a failed pair is counted
writer() {
	local i bad=0
	for i in $(seq 1 "$N"); do
		bench_pair "$1" "$2-$i" || bad=$((bad + 1))
	done
	echo "$bad" >"$BT/bad.$2"
}

# run_all NAME DIR... -- one writer per DIR, all at once; prints the seconds
run_all() {
	local name=$1 w=0 t0 t1
	shift
	t0=$(now_us)
	for d in "$@"; do
		writer "$d" "$name$w" &
		w=$((w + 1))
	done
	wait
	t1=$(now_us)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) / 1e6 }'
}

hosts=()
sq=()
for h in $(seq 0 $((HOSTS - 1))); do
	hosts+=("$BT/host$h")
	sq+=("$S")
done
tp=$(run_all pg "${hosts[@]}")
ts=$(run_all sq "${sq[@]}")
bad=$(cat "$BT"/bad.* | awk '{ s += $1 } END { print s + 0 }')
acts=$((HOSTS * N))
rp=$(awk -v n="$acts" -v t="$tp" 'BEGIN { printf "%.1f", n / t }')
rs=$(awk -v n="$acts" -v t="$ts" 'BEGIN { printf "%.1f", n / t }')
printf '%-44s %10s %10s\n' "" "seconds" "acts/s"
printf '%-44s %10.2f %10s\n' "PostgreSQL, $HOSTS hosts x $N acts" "$tp" "$rp"
printf '%-44s %10.2f %10s\n' "SQLite, one host, $HOSTS writers x $N acts" "$ts" "$rs"
echo "PostgreSQL / SQLite throughput: $(ratio "$rp" "$rs" 2)x"

# the accounting: ri-audit over each journal (one intent and one outcome
# per act, exactly one writer each)
ok=1
[ "$bad" -eq 0 ] || { echo "$bad of $((2 * acts)) pairs did not answer 0"; ok=0; }
for d in "$P0" "$S"; do
	RI_CONFIG=$d/ri.json "$RI_BIN/ri-audit" >/dev/null 2>&1 || { echo "ri-audit over $d: not clean"; ok=0; }
done
q="SELECT count(CASE WHEN action_ref = 'ledger.intended' THEN 1 END) || '|' ||
    count(CASE WHEN action_ref = 'ledger.disclosed' THEN 1 END) FROM records"
pgi=$(psql "$URI" -qAtc "$q")
sqi=$(sqlite3 "$S/journal.db" "$q")
echo "intents|outcomes: PostgreSQL $pgi, SQLite $sqi (expected $acts|$acts each)"
[ "$pgi" = "$acts|$acts" ] && [ "$sqi" = "$acts|$acts" ] || ok=0
bench_verdict "$ok"
