# common.bash -- what every bats suite loads: a fresh instance in its own
# temp dir, the env clock, actors, and small helpers.  Tests never share
# state and never sleep to move time: they move RI_NOW.

RI_BIN=${RI_BIN:-$(cd "$BATS_TEST_DIRNAME/.." && pwd)/bin}
RI_EXAMPLES=${RI_EXAMPLES:-$(cd "$BATS_TEST_DIRNAME/.." && pwd)/examples/bin}
export PATH="$RI_BIN:$RI_EXAMPLES:$PATH"
T0=1795946400000                # 2026-11-29T10:00:00Z in ms
. "$(dirname "${BASH_SOURCE[0]}")/pg.bash"

# ri_instance [walkthrough|fast] -- a new instance under $T:
#   walkthrough: the spec's walkthrough numbers (completion_bound 30 s, ...)
#   fast:        the same shape in milliseconds, for tests that must wait out
#                a lease in real time (completion_bound 3 s, jwb 300 ms)
# Exports RI_CONFIG, RI_NOW; registers alice (human) and the reconciler
# (service, credential file); ALICE holds alice's credential.
ri_instance() {
	local shape=${1:-walkthrough}
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/ri.XXXXXX")
	export RI_CONFIG=$T/ri.json RI_NOW=$T0
	unset RI_CREDENTIAL RI_CREDENTIAL_FILE RI_FAULT
	if [ "$shape" = fast ]; then
		inst='"clock_offset_allowance":"100ms","reconciliation_cadence":"10s","run_bound":"5s",
		      "closure_latency":"1500ms","journal_write_bound":"300ms","read_bound":"200ms",
		      "compensation_window":"60s"'
		kind='"completion_bound":"3s","commit_round_trip":"100ms","probe_round_trip":"200ms","retention_period":"1d"'
	else
		inst='"clock_offset_allowance":"2s","reconciliation_cadence":"60s","run_bound":"135s",
		      "closure_latency":"12s","journal_write_bound":"3s","read_bound":"2s",
		      "compensation_window":"10m"'
		kind='"completion_bound":"30s","commit_round_trip":"1s","probe_round_trip":"1s","retention_period":"400d"'
	fi
	cat >"$T/ri.json" <<JSON
{
  "journal": "journal.db", "findings": "findings.db",
  "integrity_key_file": "journal.key", "seal_key_file": "seal.key",
  "clock": "env", "fault_injection": true,
  "instance": { $inst, "intent_candidates_cap": 16, "read_cap": 20,
                "reference_length_cap": 256, "payload_cap": 65536, "journal_fence": "declared" },
  "kinds": {
    "ledger": { "outcomes": ["disclosed"], "repeatable": true, $kind,
      "commit_fence": "none", "pairing_datum": "nonce", "outcome_envelope": 4096,
      "retry_terminus": "lease",
      "probe": ["$RI_EXAMPLES/ledger-probe", "--store", "$T/ledger.db"],
      "service_identity": { "actor_ref": "ledger-reconciler", "credential_file": "reconciler.cred" } }
  }
}
JSON
	if ri_pg_on; then
		ri_pg_skip_file_tests
		ri_pg_journal "$T/ri.json" || return 1
	fi
	# RI_TEST_SHARDS: every instance made with that many shards
	# (the whole suite against sharded journals: make check)
	if [ -n "${RI_TEST_SHARDS:-}" ]; then
		ri_cfg ".shards = $RI_TEST_SHARDS" || return 1
	fi
	# RI_INIT_CFG: a jq filter the config takes before ri-init (what
	# ri-init fixes for the instance's life, e.g. '.clock = "system"')
	if [ -n "${RI_INIT_CFG:-}" ]; then
		ri_cfg "$RI_INIT_CFG" || return 1
	fi
	ri-init >/dev/null || return 1
	ALICE=$(ri-actor add alice | jq -r .credential) || return 1
	ri-actor add ledger-reconciler --service --credential-file "$T/reconciler.cred" >/dev/null || return 1
	export ALICE
}

# loops N -- the rounds a stress loop of N rounds runs: N scaled by
# RI_TEST_LOOPS, a percentage (default 100; at least 1 round).  make test
# runs every loop whole; make check (a sanitized process starts ~10x
# slower than a plain one) and make test-pg (every command a server
# session) run a third of the rounds: the same races, fewer of them, for
# CI's time (.ci/run; the test's name says which loops scale).
loops() {
	local n=$(($1 * ${RI_TEST_LOOPS:-100} / 100))
	[ "$n" -ge 1 ] || n=1
	echo "$n"
}

# ri_cfg 'jq filter' -- edit the config in place (e.g. '.kinds.ledger.repeatable = false')
ri_cfg() {
	jq "$1" "$RI_CONFIG" >"$RI_CONFIG.new" && mv "$RI_CONFIG.new" "$RI_CONFIG"
}

# ri_at SECONDS -- set the env clock to T0 + SECONDS (fractions allowed)
ri_at() {
	RI_NOW=$(awk -v t="$T0" -v s="$1" 'BEGIN { printf "%.0f", t + s * 1000 }')
	export RI_NOW
}

# open_req KEY [INTENT_DATA] [ACTOR] [CRED] -- an ri-open request
open_req() {
	jq -nc --arg k "$1" --argjson d "${2:-{\}}" --arg a "${3:-alice}" --arg c "${4:-$ALICE}" \
	    '{kind:"ledger", act_key:$k, actor_ref:$a, credential:$c, intent_data:$d}'
}

# close_req OPEN_ANSWER [OUTCOME_DATA] -- ri-open's answer merged into an ri-close request
close_req() {
	jq -c --arg c "${3:-$ALICE}" --argjson d "${2:-{\}}" \
	    '{kind, act_key, invocation_id, intent_event_id, actor_ref} +
	     {credential:$c, outcome_action_ref:"ledger.disclosed", outcome_data:$d}' <<<"$1"
}

# records [WHERE] -- how many journal rows (optionally filtered by SQL)
records() {
	if ri_pg_on; then
		ri_pg_sql "$RI_CONFIG" "SELECT count(*) FROM records ${1:+WHERE $1}"
		return
	fi
	sqlite3 "$T/journal.db" "SELECT count(*) FROM records ${1:+WHERE $1}"
}

# jsql SQL -- a read-only query of the journal, on either backend: the
# SQLite file, or (make test-pg) the instance's PostgreSQL schema.  Only
# SQL both dialects read alike belongs here; a test that edits the journal
# (an attacker's write) or uses SQLite's own functions stays on the file
# and is skipped against a server (tests/lib/pg.bash)
# ri_shards -- the instance's shard count (its heads), on either backend
ri_shards() {
	jsql "SELECT count(*) FROM heads"
}

jsql() {
	if ri_pg_on; then
		ri_pg_sql "$RI_CONFIG" "$1"
		return
	fi
	sqlite3 "$T/journal.db" "$1"
}

# payload_at PATH -- the SQL expression of a record's payload field at
# PATH (dotted: data.disclosure_id), as text, on either backend
payload_at() {
	if ri_pg_on; then
		printf "(payload::jsonb #>> '{%s}')" "${1//./,}"
	else
		printf "json_extract(payload, '\$.%s')" "$1"
	fi
}

# intent_of WHERE -- {kind, act_key, invocation_id, intent_event_id} of the
# newest intent the SQL condition picks, on either backend
intent_of() {
	jsql "SELECT kind || '|' || act_key || '|' || invocation_id || '|' || event_id FROM records
	    WHERE action_ref LIKE '%.intended' AND $1 ORDER BY seq DESC LIMIT 1" |
	    jq -R -c 'split("|") | {kind: .[0], act_key: .[1], invocation_id: .[2], intent_event_id: .[3]}'
}
# sweep_ran [ARGS...] -- ri-sweep, its tally on stdout; succeeds when the
# run finished: exit 0, or 3 with acts left to an operator (ri-sweep(1))
sweep_ran() {
	local out rc=0
	out=$(ri-sweep "$@") || rc=$?
	printf '%s\n' "$out"
	[ "$rc" -eq 0 ] && return 0
	[ "$rc" -eq 3 ] && jq -e '.needs_operator > 0' <<<"$out" >/dev/null && return 0
	echo "ri-sweep exited $rc: $out" >&2
	return 1
}
export -f ri_cfg ri_at open_req close_req records jsql payload_at intent_of ri_pg_on ri_pg_sql sweep_ran

# attacker_sql SQL -- run SQL against the journal as an attacker with file
# access and no key would: drop the append-only triggers, run it, and put
# the triggers back exactly as they were (so the schema ri checks at open
# is intact and what is judged is the tampered data itself)
attacker_sql() {
	local triggers
	triggers=$(sqlite3 "$T/journal.db" "SELECT group_concat(sql, ';
') || ';' FROM sqlite_schema WHERE type = 'trigger'") || return 1
	local rc=0
	sqlite3 "$T/journal.db" "DROP TRIGGER IF EXISTS records_append_only_update;
	    DROP TRIGGER IF EXISTS records_append_only_delete; $1" || rc=$?
	[ "$triggers" = ";" ] || sqlite3 "$T/journal.db" "$triggers" || return 1
	return "$rc"
}
export -f attacker_sql
