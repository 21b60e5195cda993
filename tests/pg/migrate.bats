#!/usr/bin/env bats
# migrate.bats -- ri-init --migrate on PostgreSQL (issue 43; docs/SHARDS.md,
# "Migration"): a format-3 instance's schema, loaded from a pg_dump the
# release before format 4 made (tests/fixtures/format3-pg, its make), is
# verified and made format 4 in place in one transaction, its tables kept
# as they were in <schema>_format3.  Runs only under tests/pg/run.
#
# test-pg: backend

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/../lib/common"

FIXTURE=$BATS_TEST_DIRNAME/../fixtures/format3-pg

setup() {
	ri_pg_on || skip "needs tests/pg/run (a PostgreSQL server)"
	[ -z "${RI_TEST_PG_BOUNCER:-}" ] || skip "loads a dump straight into the server"
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/ri.XXXXXX")
	cp "$FIXTURE"/* "$T"/
	rm -f "$T/make" "$T"/*.sql
	chmod 600 "$T"/*.key "$T"/*.cred
	J=ri_m$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	W=w_m$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	sed "s/@JOURNAL@/$J/g" "$FIXTURE/journal.sql" |
	    psql -h "$RI_TEST_PG_HOST" -U ri -d ri -v ON_ERROR_STOP=1 -qAt >/dev/null
	sed "s/@WITNESS@/$W/g" "$FIXTURE/witness.sql" |
	    psql -h "$RI_TEST_PG_HOST" -U riw -d riw -v ON_ERROR_STOP=1 -qAt >/dev/null
	cat >"$T/ri.json" <<JSON
{
  "journal": "postgresql:///ri?host=$RI_TEST_PG_HOST&user=ri&options=-csearch_path%3D$J",
  "witness": "postgresql:///riw?host=$RI_TEST_PG_HOST&user=riw&options=-csearch_path%3D$W",
  "findings": "findings.db", "integrity_key_file": "journal.key", "seal_key_file": "seal.key",
  "clock": "env", "fault_injection": true,
  "instance": { "clock_offset_allowance":"2s","reconciliation_cadence":"60s","run_bound":"135s",
                "closure_latency":"12s","journal_write_bound":"3s","read_bound":"2s",
                "compensation_window":"10m", "intent_candidates_cap": 16, "read_cap": 20,
                "reference_length_cap": 256, "payload_cap": 65536, "journal_fence": "declared" },
  "kinds": {
    "ledger": { "outcomes": ["disclosed"], "repeatable": true,
      "completion_bound":"30s","commit_round_trip":"1s","probe_round_trip":"1s","retention_period":"400d",
      "commit_fence": "none", "pairing_datum": "nonce", "outcome_envelope": 4096,
      "retry_terminus": "lease",
      "probe": ["$RI_EXAMPLES/ledger-probe", "--store", "$T/ledger.db"],
      "service_identity": { "actor_ref": "ledger-reconciler", "credential_file": "reconciler.cred" } }
  }
}
JSON
	export RI_CONFIG=$T/ri.json RI_NOW=1767225603000 RI_CREDENTIAL_FILE=$T/alice.cred
	unset RI_CREDENTIAL RI_FAULT
}

teardown() {
	if [ -n "${J:-}" ]; then
		psql -h "$RI_TEST_PG_HOST" -U ri -d ri -qAtc "DROP SCHEMA IF EXISTS $J CASCADE;
		    DROP SCHEMA IF EXISTS ${J}_format3 CASCADE" >/dev/null 2>&1 || true
		psql -h "$RI_TEST_PG_HOST" -U riw -d riw -qAtc "DROP SCHEMA IF EXISTS $W CASCADE" >/dev/null 2>&1 || true
	fi
	if [ -n "${T:-}" ]; then rm -rf "$T"; fi
}

sql() {
	psql -h "$RI_TEST_PG_HOST" -U ri -d ri -qAtc "SET search_path = $J; $1" | grep -v '^SET$' || true
}

# rows [SCHEMA] -- every format-3 record's columns, one line each
rows() {
	sql "SELECT seq, event_id, action_ref, kind, act_key, invocation_id, actor_ref, attestation_id, recorded_at,
	    retention_until, role, act_prev, inv_prev, payload, encode(salt, 'hex'), encode(digest, 'hex'),
	    encode(hash, 'hex'), encode(mac, 'hex') FROM ${1:-$J}.records WHERE seq <= 7 ORDER BY seq"
}

# tamper SQL -- as the server's superuser, the append-only triggers not fired
tamper() {
	psql -h "$RI_TEST_PG_HOST" -U postgres -d ri -v ON_ERROR_STOP=1 -qAt -c "SET search_path = $J" \
	    -c "SET session_replication_role = replica" -c "$1" >/dev/null
}

@test "issue 43, --migrate on PostgreSQL: a format-3 schema made format 4 in place -- its records kept byte for byte, its tables kept in <schema>_format3, audit.migrated and a seal appended; the audit, ri-startcheck and ri-read pass, the act in flight closes, a new act lands" {
	run --separate-stderr ri-read --kind ledger --act-key k1
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"is format 3"*"run ri-init --migrate"* ]]
	before=$(rows)
	run --separate-stderr ri-init --migrate
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	jq -e --arg k "${J}_format3" '.from_format == 3 and .format == 4 and .boundary == 7 and .kept == $k' <<<"$output"
	# the answer is the schema's third form
	printf '%s\n' "$output" | python3 "$BATS_TEST_DIRNAME/../lib/validate.py" --closed \
	    "$BATS_TEST_DIRNAME/../../schemas/ri-init.answer.json"
	# ASSERT: history not rewritten, and the old tables kept as they were
	[ "$(rows)" = "$before" ]
	[ "$(rows "${J}_format3")" = "$before" ]
	[ "$(sql "SELECT v FROM ri_meta WHERE k = 'format'")" = 4 ]
	[ "$(sql "SELECT v FROM ${J}_format3.ri_meta WHERE k = 'format'")" = 3 ]
	[ "$(sql "SELECT action_ref FROM records WHERE seq = 8")" = audit.migrated ]
	run --separate-stderr ri-audit
	echo "$output" | jq -c '.checks[] | select(.status == "fail")'
	[ "$status" -eq 0 ]
	run --separate-stderr ri-startcheck
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	run --separate-stderr ri-read --kind ledger --act-key k1
	[ "$status" -eq 0 ]
	jq -e '.invocations[0].state == "closed"' <<<"$output"
	local k2
	k2=$(ri-read --kind ledger --act-key k2)
	jq -c '.invocations[0] | {kind: "ledger", act_key: "k2", invocation_id,
	    intent_event_id: .records[0].event_id, actor_ref: "alice", outcome_action_ref: "ledger.disclosed",
	    outcome_data: {disclosure_id: "d2"}}' <<<"$k2" >"$T/close.json"
	run --separate-stderr ri-close <"$T/close.json"
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	o=$(echo '{"kind":"ledger","act_key":"k3","actor_ref":"alice","intent_data":{}}' | ri-open)
	jq -c '{kind, act_key, invocation_id, intent_event_id, actor_ref: "alice",
	    outcome_action_ref: "ledger.disclosed", outcome_data: {disclosure_id: "d3"}}' <<<"$o" | ri-close >/dev/null
	run --separate-stderr ri-audit
	[ "$status" -eq 0 ]
	run --separate-stderr ri-init --migrate
	[ "$status" -eq 64 ]
}

# unchanged -- the migration's transaction rolled back: format 3, nothing kept
unchanged() {
	[ "$(sql "SELECT v FROM ri_meta WHERE k = 'format'")" = 3 ]
	[ "$(sql "SELECT count(*) FROM pg_namespace WHERE nspname = '${J}_format3'")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM information_schema.columns WHERE table_schema = '$J'
	    AND table_name = 'records' AND column_name = 'shard'")" -eq 0 ]
}

@test "issue 43, --migrate on PostgreSQL verifies before it converts: a record altered, the journal truncated behind its head, or a head that fails its MAC -- 30, and the transaction leaves format 3 as it was" {
	tamper "UPDATE records SET payload = replace(payload, '5', '6') WHERE seq = 4"
	run --separate-stderr ri-init --migrate
	echo "$stderr"
	[ "$status" -eq 30 ]
	[[ "$stderr" == *"record seq 4 fails verification (format 3)"* ]]
	unchanged
	tamper "UPDATE records SET payload = replace(payload, '6', '5') WHERE seq = 4; DELETE FROM records WHERE seq = 7"
	run --separate-stderr ri-init --migrate
	echo "$stderr"
	[ "$status" -eq 30 ]
	unchanged
	teardown
	setup
	tamper "UPDATE heads SET grants = grants + 1"
	run --separate-stderr ri-init --migrate
	echo "$stderr"
	[ "$status" -eq 30 ]
	[[ "$stderr" == *"fails its MAC (format 3)"* ]]
	unchanged
}
