# bench/lib/common.bash -- what every bench/NN-*.sh script sources: paths,
# a fresh instance with the walkthrough numbers, cached large journals,
# journal copies for measurement, the load note and small statistics.
#
# Rules kept here (see bench/run):
#  - every measured command runs the real binaries on a real, fsync'd
#    journal: RI_UNSAFE_NOSYNC is only ever set for ri-fill, and every copy
#    handed to a measurement has "fault_injection": false, so the seam
#    cannot be on even by accident;
#  - ratios are against a baseline measured in the same run;
#  - the load average is printed, and said to be high when it is.
#
# Environment: RI_BIN, RI_TOOLS (ri-fill), BENCH_CACHE (default
# build/bench-cache), TMPDIR.

set -u

BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RI_BIN=${RI_BIN:-$BENCH_ROOT/bin}
RI_TOOLS=${RI_TOOLS:-$BENCH_ROOT/build/default/tools}
BENCH_CACHE=${BENCH_CACHE:-$BENCH_ROOT/build/bench-cache}
export RI_BIN RI_TOOLS BENCH_CACHE
unset RI_CONFIG RI_CREDENTIAL RI_CREDENTIAL_FILE RI_FAULT RI_NOW RI_UNSAFE_NOSYNC

BT=$(mktemp -d "${TMPDIR:-/tmp}/ri-bench.XXXXXX") || exit 1
bench_cleanup() {
	# our own background jobs only (their pids), then the scratch dir
	local j
	for j in $(jobs -p); do kill "$j" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$BT"
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

bench_die() {
	echo "bench: $*" >&2
	echo "FAIL (the benchmark could not run: $*)"
	exit 1
}

# ---- reporting --------------------------------------------------------------

BENCH_CORES=$(nproc 2>/dev/null || echo 1)

# bench_load -- print the load and set BENCH_LOADED=1 when the 1-minute
# load average exceeds the number of cores (other work is running)
bench_load() {
	local l1
	read -r l1 _ </proc/loadavg
	BENCH_LOAD=$l1
	BENCH_LOADED=$(awk -v l="$l1" -v c="$BENCH_CORES" 'BEGIN { print (l > c) ? 1 : 0 }')
	if [ "$BENCH_LOADED" = 1 ]; then
		printf '  load: %s on %s cores -- HIGH: other work is running on this machine;\n' \
		    "$(cut -d' ' -f1-3 /proc/loadavg)" "$BENCH_CORES"
		printf '        wall-clock numbers are noisy\n'
	else
		printf '  load: %s on %s cores\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "$BENCH_CORES"
	fi
}

# bench_header NAME WHAT BASELINE TARGET
bench_header() {
	printf '%s: %s\n' "$1" "$2"
	printf '  baseline: %s\n' "$3"
	printf '  target:   %s\n' "$4"
	bench_load
}

# bench_verdict OK(0|1) -- the last line; exit status of the script
bench_verdict() {
	bench_load
	if [ "$1" = 1 ]; then
		echo PASS
		exit 0
	fi
	if [ "${BENCH_LOADED:-0}" = 1 ]; then
		echo "  (the machine was loaded during this run; the FAIL stands as measured)"
	fi
	echo FAIL
	exit 1
}

# ---- statistics ---------------------------------------------------------------

# stats FILE -- one number a line: prints "n mean median p90 min max"
stats() {
	sort -g "$1" | awk '{ v[NR] = $1; s += $1 }
	    END { if (NR == 0) { print "0 0 0 0 0 0"; exit }
	          p = int(NR * 0.9); if (p < 1) p = 1; if (p > NR) p = NR
	          m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
	          printf "%d %.3f %.3f %.3f %.3f %.3f\n", NR, s / NR, m, v[p], v[1], v[NR] }'
}

# ratio A B [DIGITS] -- A / B
ratio() {
	awk -v a="$1" -v b="$2" -v d="${3:-3}" 'BEGIN { if (b == 0) print "inf"; else printf "%.*f\n", d, a / b }'
}

# le A B -- exit 0 when A <= B (floats)
le() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'
}

# now_us -- microseconds, without forking (bash 5 EPOCHREALTIME)
now_us() {
	local t=${EPOCHREALTIME/[.,]/}
	printf '%s\n' "$t"
}

# ---- instances ----------------------------------------------------------------

# bench_config FILE CLOCK PROBE_JSON_ARRAY -- the walkthrough numbers of the
# specification (tests/lib/common.bash "walkthrough"), one kind "ledger"
# with a service identity; fault injection on (ri-fill's seam needs it; a
# measurement copy turns it off, bench_copy)
bench_config() {
	cat >"$1" <<JSON
{
  "journal": "journal.db", "findings": "findings.db",
  "integrity_key_file": "journal.key", "seal_key_file": "seal.key",
  "clock": "$2", "fault_injection": true,
  "instance": { "clock_offset_allowance": "2s", "reconciliation_cadence": "60s", "run_bound": "135s",
                "closure_latency": "15s", "journal_write_bound": "5s", "read_bound": "2s",
                "compensation_window": "10m", "intent_candidates_cap": 16, "read_cap": 20,
                "reference_length_cap": 256, "payload_cap": 65536, "journal_fence": "declared" },
  "kinds": {
    "ledger": { "outcomes": ["disclosed"], "repeatable": true,
      "completion_bound": "30s", "commit_round_trip": "1s", "probe_round_trip": "1s",
      "retention_period": "400d", "commit_fence": "none", "pairing_datum": "nonce",
      "outcome_envelope": 4096, "retry_terminus": "lease",
      "probe": $3,
      "service_identity": { "actor_ref": "ledger-reconciler", "credential_file": "reconciler.cred" } }
  }
}
JSON
}

# A trivial probe: reads its request, answers committed for every act.
BENCH_PROBE='["/bin/sh", "-c", "cat >/dev/null; echo {\\\"answer\\\":\\\"committed\\\",\\\"outcome_action_ref\\\":\\\"ledger.disclosed\\\",\\\"outcome_data\\\":{}}"]'

# bench_instance DIR [CLOCK] -- a new instance in DIR (created): ri-init,
# alice (a person, DIR/alice.cred) and the ledger's service identity
bench_instance() {
	local d=$1 clock=${2:-system}
	mkdir -p "$d" || return 1
	bench_config "$d/ri.json" "$clock" "$BENCH_PROBE"
	"$RI_BIN/ri-init" -c "$d/ri.json" >/dev/null &&
	    "$RI_BIN/ri-actor" -c "$d/ri.json" add alice --credential-file "$d/alice.cred" >/dev/null &&
	    "$RI_BIN/ri-actor" -c "$d/ri.json" add ledger-reconciler --service \
	        --credential-file "$d/reconciler.cred" >/dev/null
}

# bench_cfg DIR 'jq filter' -- edit DIR/ri.json (outside any measured loop)
bench_cfg() {
	jq "$2" "$1/ri.json" >"$1/ri.json.new" && mv "$1/ri.json.new" "$1/ri.json"
}

# ---- the large-journal cache -------------------------------------------------

# The two journal shapes of 02, 03 and 04: the same 1,000 open intents,
# 10^3 or 10^6 records in all.  BENCH_LARGE_CLOSED shrinks the large one
# for a quick trial run of the scripts (its results are then not the
# issue's measurement; the tables print the real record counts).
SMALL_CLOSED=500
LARGE_CLOSED=${BENCH_LARGE_CLOSED:-499500}
OPEN_INTENTS=1000

# bench_journal NAME CLOSED OPEN [MARK [FILL_ARG...]] -- print the directory
# of a cached instance whose journal holds the 2 actor records, CLOSED
# closed invocations (an intent and an outcome each) and OPEN open intents
# (MARK 1, the default: the duplicate-scan mark at the last closed record;
# 0: no mark; FILL_ARGs are passed to ri-fill, e.g. --act-key), filled by ri-fill
# through the real substrate with fsync skipped (RI_UNSAFE_NOSYNC=1, the
# fill-only seam), then checkpointed so journal.db is the whole journal.
# Cached under $BENCH_CACHE/NAME-CLOSED-OPEN-KEY, KEY a content hash of
# ri-fill, ri-init and ri-actor (the journal's format is theirs); an entry of the same
# name and shape under another key is stale and removed.  BENCH_FILL_KEY=K
# uses key K instead (a developer's knob, while the journal format is known
# not to change: the 10^6 journal takes minutes to fill).
# Prints the fill's time on stderr when it builds.  Never measure the
# cache itself: copy it (bench_copy).
bench_journal() {
	local name=$1 closed=$2 open=$3 mark=${4:-1} key dir tmp t0 t1 f
	shift 3
	[ $# -gt 0 ] && shift
	for f in "$RI_TOOLS/ri-fill" "$RI_BIN/ri-init" "$RI_BIN/ri-actor"; do
		[ -x "$f" ] || { echo "bench: $f is not built (make build/default/tools/ri-fill)" >&2; return 1; }
	done
	# bump fill-vN when the way a cached instance is made changes
	key=$( { sha256sum "$RI_TOOLS/ri-fill" "$RI_BIN/ri-init" "$RI_BIN/ri-actor" | cut -d' ' -f1
	    echo "$name $closed $open $mark $* fill-v3"; } | sha256sum | cut -c1-16)
	[ -n "${BENCH_FILL_KEY:-}" ] && key=$BENCH_FILL_KEY
	dir=$BENCH_CACHE/$name-$closed-$open-$key
	mkdir -p "$BENCH_CACHE" || return 1
	(
		flock 9
		[ -f "$dir/.complete" ] && exit 0
		for f in "$BENCH_CACHE/$name-$closed-$open"-*; do
			[ -e "$f" ] && [ "$f" != "$dir" ] && rm -rf "$f"
		done
		rm -rf "$BENCH_CACHE/.build-$name-$closed-$open"-*     # a killed build's (we hold the lock)
		tmp=$BENCH_CACHE/.build-$name-$closed-$open-$$
		bench_instance "$tmp" system || exit 1
		echo "  (building $name: $closed closed + $open open invocations with ri-fill," \
		    "fsync skipped; cached in $dir)" >&2
		t0=$(now_us)
		RI_UNSAFE_NOSYNC=1 "$RI_TOOLS/ri-fill" -c "$tmp/ri.json" --credential-file "$tmp/alice.cred" \
		    --closed "$closed" --open "$open" $([ "$mark" = 1 ] && echo --mark) "$@" >/dev/null || exit 1
		t1=$(now_us)
		# sealed, as a live instance's journal is (every ri-sweep run
		# seals): Open's sequence high water for an act is the newest seal
		"$RI_BIN/ri-seal" -c "$tmp/ri.json" >/dev/null || exit 1
		sqlite3 "$tmp/journal.db" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null || exit 1
		n=$(sqlite3 "$tmp/journal.db" "SELECT count(*) FROM records") || exit 1
		printf 'records %s\nclosed %s\nopen %s\nfill_s %s\nmax_recorded_at %s\n' "$n" "$closed" "$open" \
		    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e6 }')" \
		    "$(sqlite3 "$tmp/journal.db" "SELECT max(recorded_at) FROM records")" >"$tmp/fill.info"
		echo "  (built $name: $n records in $(awk '/^fill_s/ { print $2 }' "$tmp/fill.info") s," \
		    "$(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / ((b - a) / 1e6) }') records/s)" >&2
		touch "$tmp/.complete" && mv "$tmp" "$dir"
	) 9>"$BENCH_CACHE/.lock" || { rm -rf "$BENCH_CACHE/.build-$name-$closed-$open-"*; return 1; }
	printf '%s\n' "$dir"
}

# bench_info DIR KEY -- a value from a cached instance's fill.info
bench_info() {
	awk -v k="$2" '$1 == k { print $2 }' "$1/fill.info"
}

# bench_copy SRC DST [CLOCK] -- a measurement copy of a cached instance, with
# "fault_injection": false (and the clock given, default system)
bench_copy() {
	rm -rf "$2" && cp -a "$1" "$2" || return 1
	rm -f "$2/.complete"
	bench_cfg "$2" ".fault_injection = false | .clock = \"${3:-system}\"" || return 1
	# write the copy back now, not while a measurement runs
	sync "$2/journal.db"
}

# ---- PostgreSQL (issue 13) ---------------------------------------------------

# bench_pg_start -- a throwaway server as tests/pg/run starts it (unix
# socket only, fsync and synchronous_commit on) with a database "ri";
# sets PGD (its directory) and stops it at exit.  Returns 2 when no server
# binaries exist.
bench_pg_start() {
	PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
	[ -x "$PGBIN/initdb" ] || return 2
	PGD=$(mktemp -d /tmp/ri-bench-pg.XXXXXX)
	[ "$(id -u)" = 0 ] && chown postgres "$PGD"
	trap 'bench_pg_stop; bench_cleanup' EXIT
	bench_as_pg "$PGBIN/initdb" -D "$PGD/data" -A trust -U ri >/dev/null 2>&1 || return 1
	bench_as_pg "$PGBIN/pg_ctl" -D "$PGD/data" -w -l "$PGD/log" \
	    -o "-k $PGD -c listen_addresses='' -c max_connections=100 -c shared_preload_libraries=pg_stat_statements" \
	    start >/dev/null || return 1
	psql -h "$PGD" -U ri -d postgres -qc "CREATE DATABASE ri" >/dev/null
	# the server's time in statements (06-pg-pair.sh, issue 43 target 2)
	psql -h "$PGD" -U ri -d ri -qc "CREATE EXTENSION pg_stat_statements" >/dev/null
}
bench_as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
bench_pg_stop() {
	[ -s "$PGD/pgbouncer.pid" ] && kill "$(cat "$PGD/pgbouncer.pid")" 2>/dev/null
	bench_as_pg "$PGBIN/pg_ctl" -D "$PGD/data" -m immediate stop >/dev/null 2>&1
	rm -rf "$PGD"
}

# bench_pg_pooler -- PgBouncer (Debian's) in transaction pooling mode in
# front of the bench server, on a loopback port, trust for the users of
# $PGD/bouncer.users (bench_pg_pooled_uri adds each); prints host:port.
# Answers 2 when there is no pgbouncer.  Stopped with the server.
bench_pg_pooler() {
	local port bin=${PGBOUNCER:-/usr/sbin/pgbouncer}
	[ -x "$bin" ] || return 2
	printf '"ri" ""\n' >"$PGD/bouncer.users"
	for _ in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		cat >"$PGD/pgbouncer.ini" <<-EOF
		[databases]
		ri = host=$PGD dbname=ri
		[pgbouncer]
		listen_addr = 127.0.0.1
		listen_port = $port
		unix_socket_dir =
		pool_mode = transaction
		auth_type = trust
		auth_file = $PGD/bouncer.users
		admin_users = ri
		max_client_conn = 200
		default_pool_size = 20
		logfile = $PGD/pgbouncer.log
		pidfile = $PGD/pgbouncer.pid
		EOF
		[ "$(id -u)" = 0 ] && chown postgres "$PGD/pgbouncer.ini" "$PGD/bouncer.users"
		rm -f "$PGD/pgbouncer.pid"
		bench_as_pg "$bin" -d -q "$PGD/pgbouncer.ini" 2>>"$PGD/pgbouncer.err" || continue
		for _ in $(seq 1 50); do
			if psql -h 127.0.0.1 -p "$port" -U ri -d pgbouncer -qAtc "SHOW VERSION" 2>/dev/null | grep -q PgBouncer; then
				echo "127.0.0.1:$port"
				return 0
			fi
			sleep 0.1
		done
		[ -s "$PGD/pgbouncer.pid" ] && kill "$(cat "$PGD/pgbouncer.pid")" 2>/dev/null
	done
	return 1
}

# bench_pg_pooled_uri POOLER NAME -- a role NAME whose search_path is its
# own new schema NAME (PgBouncer drops a URI's options=, docs/POSTGRESQL.md),
# the pooler told of it; prints the journal URI through the pooler
bench_pg_pooled_uri() {
	psql -h "$PGD" -U ri -d ri -v ON_ERROR_STOP=1 -qc "CREATE ROLE $2 LOGIN; ALTER ROLE $2 SET search_path = $2;
	    CREATE SCHEMA $2 AUTHORIZATION $2" >/dev/null || return 1
	printf '"%s" ""\n' "$2" >>"$PGD/bouncer.users"
	psql -h "${1%:*}" -p "${1##*:}" -U ri -d pgbouncer -qAtc RELOAD >/dev/null || return 1
	printf 'postgresql://%s/ri?user=%s\n' "$1" "$2"
}

# bench_pg_uri SCHEMA -- the journal URI of a new schema of that name
bench_pg_uri() {
	psql -h "$PGD" -U ri -d ri -qc "CREATE SCHEMA $1" >/dev/null || return 1
	printf 'postgresql:///ri?host=%s&user=ri&options=-csearch_path%%3D%s\n' "$PGD" "$1"
}

# bench_pg_instance DIR URI [SHARDS] -- an instance in DIR (system clock,
# no fault injection) whose journal is URI: initialised (with SHARDS
# shards; PostgreSQL's default, 16, unless given), alice and the
# reconciler registered, their credentials in DIR
bench_pg_instance() {
	mkdir -p "$1" &&
	    bench_config "$1/ri.json" system "$BENCH_PROBE" &&
	    bench_cfg "$1" ".journal = \"$2\" | .fault_injection = false${3:+ | .shards = $3}" &&
	    "$RI_BIN/ri-init" -c "$1/ri.json" >/dev/null &&
	    "$RI_BIN/ri-actor" -c "$1/ri.json" add alice --credential-file "$1/alice.cred" >/dev/null &&
	    "$RI_BIN/ri-actor" -c "$1/ri.json" add ledger-reconciler --service \
	        --credential-file "$1/reconciler.cred" >/dev/null
}

# bench_pair DIR KEY -- one ri-open + ri-close of act KEY as alice on the
# instance whose files are in DIR
bench_pair() {
	local o
	o=$(RI_CONFIG=$1/ri.json RI_CREDENTIAL_FILE=$1/alice.cred "$RI_BIN/ri-open" --kind ledger --act-key "$2" \
	    --actor alice --intent-data "{\"pairing_datum\":\"pd-$2\"}" </dev/null) || return 1
	printf '%s' "${o%\}},\"outcome_action_ref\":\"ledger.disclosed\",\"outcome_data\":{\"disclosure_id\":\"dsc-$2\"}}" |
	    RI_CONFIG=$1/ri.json RI_CREDENTIAL_FILE=$1/alice.cred "$RI_BIN/ri-close" >/dev/null
}
