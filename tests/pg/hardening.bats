#!/usr/bin/env bats
# hardening.bats -- issue 40 on PostgreSQL: what a role that holds only
# DML on the instance's tables (SELECT, INSERT, UPDATE, DELETE: no
# ownership, no DDL) can do to an instance, and what ri says of it.  Runs
# only under tests/pg/run (make test-pg), which starts the server.
#
# test-pg: backend

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/../lib/common"

setup() {
	ri_pg_on || skip "needs tests/pg/run (a PostgreSQL server)"
}

teardown() {
	if [ -n "${HOLDER:-}" ]; then
		kill "$HOLDER" 2>/dev/null || true
		wait "$HOLDER" 2>/dev/null || true
	fi
	if [ -n "${T:-}" ] && [ -d "$T" ]; then
		rm -rf "$T"
	fi
}

sql() {
	ri_pg_sql "$RI_CONFIG" "$1"
}

# dml_role -- a login role with DML alone on the instance's schema; DML
# holds its connection URI
dml_role() {
	local uri schema role
	uri=$(jq -r .journal "$RI_CONFIG")
	schema=$(sql "SELECT current_schema()")
	role=dml_$schema
	# the journal's role "ri" may not create roles (it is no superuser,
	# as in production): the server's admin makes it, ri grants on its own
	psql -h "$RI_TEST_PG_HOST" -U postgres -d ri -qAtc "CREATE ROLE $role LOGIN" >/dev/null
	sql "GRANT USAGE ON SCHEMA $schema TO $role;
	    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA $schema TO $role" >/dev/null
	DML=${uri/user=ri/user=$role}
}

# as_dml SQL -- run SQL as the DML role
as_dml() {
	psql "$DML" -qAtc "$1"
}

@test "issue 40 point 1: a DML role deletes the tree's leaves and an open-intents row, then holds nodes locked while the keyed ri-audit runs -- the checks it could not complete are incomplete, exit 1, never a pass" {
	ri_instance
	o=$(open_req k1 | ri-open)
	close_req "$o" '{"disclosure_id":"d1"}' | ri-close >/dev/null
	open_req k2 | ri-open >/dev/null
	run ri-audit
	[ "$status" -eq 0 ]
	dml_role
	# the attack: rows only the audit's state read would miss
	as_dml "DELETE FROM nodes WHERE id <> ''::bytea; DELETE FROM open_intents" >/dev/null
	# ... and the state read kept out of reach
	psql "$DML" -qAt -c "BEGIN" -c "LOCK TABLE nodes IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(600)" \
	    >/dev/null 2>&1 &
	HOLDER=$!
	for _ in $(seq 1 200); do
		[ "$(sql "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		    WHERE c.relname = 'nodes' AND l.mode = 'AccessExclusiveLock' AND l.granted")" -ge 1 ] && break
		sleep 0.05
	done
	run --separate-stderr ri-audit
	printf '%s\n' "$output" >"$T/audit.json"
	# ASSERT Check 8.1: a check the audit could not complete is never a pass
	[ "$status" -eq 1 ]
	jq -e '[.checks[] | select(.status == "incomplete")] | length > 0' "$T/audit.json"
	jq -e '.checks[] | select(.check == "8.1.1") | .status != "pass"' "$T/audit.json"
	jq -e '.tally.incomplete > 0' "$T/audit.json"
	# the read's failure is named where a person reads it
	jq -e '[.checks[] | select(.status == "incomplete") | .incomplete[]] | length > 0' "$T/audit.json"
	# the lock gone, the audit sees the attack for what it is
	kill "$HOLDER"
	wait "$HOLDER" 2>/dev/null || true
	HOLDER=
	# (a killed psql leaves its backend asleep, the lock held: end it)
	psql -h "$RI_TEST_PG_HOST" -U postgres -d ri -qAtc "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	    WHERE query LIKE '%pg_sleep(600)%' AND pid <> pg_backend_pid()" >/dev/null
	for _ in $(seq 1 200); do
		[ "$(sql "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		    WHERE c.relname = 'nodes' AND l.mode = 'AccessExclusiveLock'")" -eq 0 ] && break
		sleep 0.05
	done
	run --separate-stderr ri-audit
	printf '%s\n' "$output" >"$T/audit.json"
	[ "$status" -eq 1 ]
	jq -e '.checks[] | select(.check == "8.1.1") | .status == "fail"' "$T/audit.json"
}

# payloads -- how many records still hold their payload
payloads() {
	sql "SELECT count(*) FROM records WHERE payload IS NOT NULL"
}

@test "issue 40 point 2: under \"clock\": \"system\" the server's own clock decides retention -- a DML role that sets ri.clock in its own session, or shadows ri_clock() through its search_path, cannot purge a payload; the journal still audits clean" {
	RI_INIT_CFG='.clock = "system"' ri_instance
	unset RI_NOW
	o=$(open_req k1 | ri-open)
	close_req "$o" '{"disclosure_id":"d1"}' | ri-close >/dev/null
	n=$(payloads)
	[ "$n" -ge 4 ]
	dml_role
	# the session's own test clock, set to the end of time
	run as_dml "SET ri.clock = '9223372036854775807'; UPDATE records SET payload = NULL, salt = NULL"
	# ASSERT retention is the server's: the append-only trigger refuses
	[ "$status" -ne 0 ]
	[[ "$output" == *"append-only"* ]]
	[ "$(payloads)" -eq "$n" ]
	# a clock of its own, found first on its search_path
	schema=$(sql "SELECT current_schema()")
	psql -h "$RI_TEST_PG_HOST" -U postgres -d ri -qAtc "CREATE SCHEMA evil_$schema AUTHORIZATION dml_$schema" >/dev/null
	run as_dml "CREATE FUNCTION evil_$schema.ri_clock() RETURNS bigint LANGUAGE sql
	    AS 'SELECT 9223372036854775807::bigint';
	    SET search_path = evil_$schema, $schema; UPDATE records SET payload = NULL, salt = NULL"
	[ "$status" -ne 0 ]
	[[ "$output" == *"append-only"* ]]
	[ "$(payloads)" -eq "$n" ]
	run ri-audit
	[ "$status" -eq 0 ]
	# and ri-startcheck names the journal's clock
	run ri-startcheck --json
	jq -e '.capabilities[] | select(.check == "journal-clock") | .pass' <<<"$output"
}

@test "issue 43: ri_clock() carries no SET clause (so it is inlined) and reads pg_catalog's clock under any search_path -- a role's own clock_timestamp() and * put in front of pg_catalog change nothing, in its own statements or through the append-only trigger" {
	RI_INIT_CFG='.clock = "system"' ri_instance
	unset RI_NOW
	o=$(open_req k1 | ri-open)
	close_req "$o" '{"disclosure_id":"d1"}' | ri-close >/dev/null
	n=$(payloads)
	[ "$n" -ge 4 ]
	# inlinable: a function with a SET clause never is
	[ "$(sql "SELECT p.proconfig IS NULL FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
	    WHERE n.nspname = current_schema() AND p.proname = 'ri_clock'")" = t ]
	dml_role
	schema=$(sql "SELECT current_schema()")
	psql -h "$RI_TEST_PG_HOST" -U postgres -d ri -qAtc "CREATE SCHEMA evil_$schema AUTHORIZATION dml_$schema" >/dev/null
	as_dml "CREATE FUNCTION evil_$schema.clock_timestamp() RETURNS timestamptz LANGUAGE sql
	    AS \$\$ SELECT '9999-12-31 00:00:00+00'::pg_catalog.timestamptz \$\$;
	    CREATE FUNCTION evil_$schema.mul(numeric, integer) RETURNS numeric LANGUAGE sql
	    AS \$\$ SELECT 9000000000000000::pg_catalog.numeric \$\$;
	    CREATE OPERATOR evil_$schema.* (LEFTARG = numeric, RIGHTARG = integer, FUNCTION = evil_$schema.mul)" >/dev/null
	evil="SET search_path = evil_$schema, pg_catalog, $schema"
	# the role's own clock does answer, unqualified, on its search_path ...
	[ "$(as_dml "$evil; SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint > 100000000000000")" = t ]
	# ASSERT ... but never inside ri_clock(), inlined into the role's statement
	[ "$(as_dml "$evil; SELECT ri_clock() < 100000000000000")" = t ]
	# ASSERT nor in the append-only trigger's
	run as_dml "$evil; UPDATE records SET payload = NULL, salt = NULL"
	[ "$status" -ne 0 ]
	[[ "$output" == *"append-only"* ]]
	[ "$(payloads)" -eq "$n" ]
	run ri-audit
	[ "$status" -eq 0 ]
}

@test "issue 40 point 2: an instance made under the test clock (\"clock\": \"env\") and then run under \"clock\": \"system\" fails ri-startcheck's journal-clock: its ri_clock() still reads a session setting" {
	ri_instance
	ri_cfg '.clock = "system"'
	unset RI_NOW
	run ri-startcheck --json
	[ "$status" -eq 1 ]
	jq -e '.capabilities[] | select(.check == "journal-clock") | .pass == false' <<<"$output"
	jq -e '.capabilities[] | select(.check == "journal-clock") | .message | test("ri.clock")' <<<"$output"
}

# with_password URI -- URI with a password in both places libpq takes one
with_password() {
	sed -e 's#^postgresql://#postgresql://ri:s3cretA@#' -e 's#$#\&password=s3cretB#' <<<"$1"
}

@test "issue 40 point 9: a journal URI's password is never printed -- not in ri-init's answer, ri-startcheck's (text or --json), ri-audit's, ri-sweep's, ri-read's or ri-findings', nor on stderr; the URI is shown with *** for it" {
	ri_instance
	ri_cfg ".journal = \"$(with_password "$(jq -r .journal "$RI_CONFIG")")\""
	: >"$T/all.out"
	for cmd in ri-startcheck "ri-startcheck --json" "ri-audit --text" ri-sweep "ri-read --kind ledger --act-key k1" \
	    ri-findings; do
		# shellcheck disable=SC2086
		run --separate-stderr $cmd </dev/null
		printf '%s\n%s\n' "$output" "$stderr" >>"$T/all.out"
	done
	run --separate-stderr ri-startcheck --json
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	jq -e '.capabilities[] | select(.check == "journal") | .message | test("postgresql://ri:\\*\\*\\*@.*password=\\*\\*\\*")' <<<"$output"
	# ri-init's answer names the journal it made
	mkdir "$T/i2"
	# a second instance: its own journal and its own witness
	cp "$RI_CONFIG" "$T/i2/ri.json"
	ri_pg_journal "$T/i2/ri.json"
	jq --arg u "$(with_password "$(jq -r .journal "$T/i2/ri.json")")" '.journal = $u' "$T/i2/ri.json" >"$T/i2/ri.json.new"
	mv "$T/i2/ri.json.new" "$T/i2/ri.json"
	run --separate-stderr env RI_CONFIG="$T/i2/ri.json" ri-init
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	printf '%s\n%s\n' "$output" "$stderr" >>"$T/all.out"
	jq -e '.journal | test("\\*\\*\\*")' <<<"$output"
	# ASSERT point 9: never the password
	grep -n "s3cret" "$T/all.out" || true
	[ "$(grep -c "s3cret" "$T/all.out")" -eq 0 ]
}

# tables -- how many relations the schema of CONFIG's journal holds
tables() {
	psql "$(jq -r .journal "$1")" -qAtc "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	    WHERE n.nspname = current_schema()"
}

@test "issue 40 point 11: ri-init with a witness it cannot create exits 78 and leaves nothing made -- no table in the database, no key, no file; the corrected retry makes the instance" {
	ri_instance
	mkdir "$T/i2"
	jq --arg u "$(ri_pg_new_db)" '.journal = $u | .witness = "no/such/dir/journal.witness"' "$RI_CONFIG" >"$T/i2/ri.json"
	run --separate-stderr env RI_CONFIG="$T/i2/ri.json" ri-init
	[ "$status" -eq 78 ]
	grep -q "no/such/dir" <<<"$stderr"
	# ASSERT point 11: a failed ri-init leaves no half-made instance
	[ "$(tables "$T/i2/ri.json")" -eq 0 ]
	[ "$(ls "$T/i2")" = ri.json ]
	# corrected, the retry succeeds
	jq '.witness = "journal.witness"' "$T/i2/ri.json" >"$T/i2/ri.json.new" && mv "$T/i2/ri.json.new" "$T/i2/ri.json"
	run --separate-stderr env RI_CONFIG="$T/i2/ri.json" ri-init
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[ "$(tables "$T/i2/ri.json")" -gt 0 ]
	run --separate-stderr env RI_CONFIG="$T/i2/ri.json" ri-audit
	[ "$status" -eq 0 ]
}

@test "issue 40 point 11: a step after the schema that fails (the genesis seal, whose clock cannot be read) drops what ri-init made in the database and removes every file it made, so the corrected retry succeeds" {
	ri_instance
	mkdir "$T/i2"
	cp "$RI_CONFIG" "$T/i2/ri.json"
	ri_pg_journal "$T/i2/ri.json"          # its own journal and witness
	# nothing before the schema reads the clock; the genesis seal does
	run --separate-stderr env RI_CONFIG="$T/i2/ri.json" RI_NOW=not-an-instant ri-init
	[ "$status" -ne 0 ]
	grep -q "RI_NOW" <<<"$stderr"
	# ASSERT point 11: what was made in the database is gone with the rest
	[ "$(tables "$T/i2/ri.json")" -eq 0 ]
	[ "$(ls "$T/i2")" = ri.json ]
	run --separate-stderr env RI_CONFIG="$T/i2/ri.json" ri-init
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	run --separate-stderr env RI_CONFIG="$T/i2/ri.json" ri-audit
	[ "$status" -eq 0 ]
}

@test "issue 41 point 5, issue 40 point 11: the findings register is a table of the schema -- a failed ri-init drops it with the rest, the retry makes it, no findings file is made, and ri-findings and ri-startcheck read it" {
	ri_instance
	mkdir "$T/i2"
	# no witness: the first instance's is taken (and a file one would be
	# skipped as "sqlite file" here)
	jq --arg u "$(ri_pg_new_db)" '.journal = $u | .["witness"] = null' "$RI_CONFIG" >"$T/i2/ri.json"
	run --separate-stderr env RI_CONFIG="$T/i2/ri.json" RI_NOW=not-an-instant ri-init
	[ "$status" -ne 0 ]
	grep -q "RI_NOW" <<<"$stderr"
	# ASSERT: the findings tables went with the schema
	[ "$(tables "$T/i2/ri.json")" -eq 0 ]
	[ "$(ls "$T/i2")" = ri.json ]
	run --separate-stderr env RI_CONFIG="$T/i2/ri.json" ri-init
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	jq -e '.findings | startswith("postgresql://")' <<<"$output"
	# the config's "findings" path names no register on PostgreSQL
	f=$(jq -r .findings "$T/i2/ri.json")
	[ ! -e "$T/i2/$f" ]
	[ "$(psql "$(jq -r .journal "$T/i2/ri.json")" -qAtc "SELECT count(*) FROM findings")" -eq 0 ]
	run --separate-stderr env RI_CONFIG="$T/i2/ri.json" ri-findings
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	run --separate-stderr env RI_CONFIG="$T/i2/ri.json" ri-startcheck --json
	jq -e '.capabilities[] | select(.check == "findings") | .pass' <<<"$output"
}

@test "issue 43, the schema fingerprint: a trigger dropped is refused by ri-startcheck, ri-sweep and ri-audit (the catalog read); ri-open checks the MACed schema version with the meta rows, and refuses a version row that does not verify" {
	ri_instance
	o=$(open_req k1 | ri-open)
	close_req "$o" '{"disclosure_id":"d1"}' | ri-close >/dev/null
	sql "DROP TRIGGER records_no_truncate ON records"
	# ASSERT the four commands that read the catalog refuse it
	run --separate-stderr ri-startcheck --json
	[ "$status" -ne 0 ]
	[[ "$output$stderr" == *"schema is not the one ri creates"* ]]
	run --separate-stderr ri-sweep
	[ "$status" -eq 15 ]
	[[ "$stderr" == *"schema is not the one ri creates"* ]]
	run --separate-stderr ri-audit
	[ "$status" -ne 0 ]
	[[ "$output" == *"schema is not the one ri creates"* ]]
	# ASSERT ri-open does not read the catalog (the ruling): it opens
	open_req k2 | ri-open >/dev/null
	# ASSERT the version row is checked under the key at every open
	sql "UPDATE ri_meta SET v = '1 ' || repeat('0', 64) WHERE k = 'schema_version'"
	run --separate-stderr ri-open <<<"$(open_req k3)"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"schema version row"* ]]
	run --separate-stderr ri-read --kind ledger --act-key k1
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"schema version row"* ]]
}

@test "INTERFACE third wave, Shards: a PostgreSQL journal of an older format is refused by every command with 78, naming its format (as the file is: tests/hardening.bats); nothing is written" {
	ri_instance
	open_req k1 | ri-open >/dev/null
	sql "UPDATE ri_meta SET v = '2' WHERE k = 'format'"
	local n
	n=$(jsql "SELECT count(*) FROM records")
	for cmd in "ri-read --kind ledger --act-key k1" ri-audit ri-sweep; do
		# shellcheck disable=SC2086
		run --separate-stderr $cmd
		echo "$cmd: $status $stderr"
		# ASSERT: 78 (a release to change), never 30 (a journal tampered with)
		[ "$status" -eq 78 ]
		[[ "$stderr" == *"is format 2; this ri"*"reads format 4"*"keep the old release"* ]]
	done
	run --separate-stderr ri-open <<<"$(open_req k2)"
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"is format 2"* ]]
	run --separate-stderr ri-startcheck --json
	[ "$status" -eq 1 ]
	[[ "$output$stderr" == *"is format 2"* ]]
	[ "$(jsql "SELECT count(*) FROM records")" -eq "$n" ]
}

@test "issue 40 point 1 on the findings register: a DML role holds the register locked (ACCESS EXCLUSIVE) -- ri-findings answers 15 within its lock wait, naming the register, never hangs; the lock gone, it reads again" {
	ri_instance
	dml_role
	psql "$DML" -qAt -c "BEGIN" -c "LOCK TABLE findings IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(600)" \
	    >/dev/null 2>&1 &
	HOLDER=$!
	for _ in $(seq 1 200); do
		[ "$(sql "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		    WHERE c.relname = 'findings' AND l.mode = 'AccessExclusiveLock' AND l.granted")" -ge 1 ] && break
		sleep 0.05
	done
	# ASSERT: a read of the register waits no longer than a write of it
	# (5 s), then fails closed -- 124 would be a hang
	run --separate-stderr timeout 20 ri-findings --open
	echo "$status $output $stderr"
	[ "$status" -eq 15 ]
	[[ "$stderr" == *"findings register"* ]]
	run --separate-stderr timeout 20 ri-findings --check
	[ "$status" -ne 124 ]
	[ "$status" -ne 0 ]
	kill "$HOLDER"
	wait "$HOLDER" 2>/dev/null || true
	HOLDER=
	psql -h "$RI_TEST_PG_HOST" -U postgres -d ri -qAtc "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	    WHERE query LIKE '%pg_sleep(600)%' AND pid <> pg_backend_pid()" >/dev/null
	for _ in $(seq 1 200); do
		[ "$(sql "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		    WHERE c.relname = 'findings' AND l.mode = 'AccessExclusiveLock'")" -eq 0 ] && break
		sleep 0.05
	done
	run --separate-stderr ri-findings --open
	[ "$status" -eq 0 ]
}

@test "issue 43, shards: a sequence put back (a partial restore, setval) hands out a seq not above its shard's head, or another shard's record's -- the append is refused (recording-failure, step 2) naming the allocator and nothing lands; set above every record again, the next append lands and the journal audits clean" {
	ri_instance
	[ "$(ri_shards)" -gt 1 ] || skip "one shard: seqs come from the head (RI_TEST_SHARDS)"
	for k in a b c; do
		o=$(open_req "$k" | ri-open)
		close_req "$o" '{"disclosure_id":"d"}' | ri-close >/dev/null
	done
	n=$(records)
	sql "SELECT setval('ri_seq', 1)" >/dev/null
	# the same act again (the kind is repeatable): its shard's head is above 1
	run --separate-stderr ri-open <<<"$(open_req a)"
	[ "$status" -eq 20 ] || { echo "$status $output $stderr"; false; }
	grep -q "the allocator was put back" <<<"$stderr"
	[ "$(records)" -eq "$n" ]
	# put back to just below the newest record, of shard sx: an act of
	# another shard (its head below it) is handed that record's seq -- the
	# records' key refuses it, and the message names the allocator too,
	# not only the server's duplicate key
	sx=$(sql "SELECT shard FROM records ORDER BY seq DESC LIMIT 1")
	sql "SELECT setval('ri_seq', (SELECT max(seq) - 1 FROM records))" >/dev/null
	k=$(sql "SELECT act_key FROM records WHERE act_key IN ('a', 'b', 'c') AND shard <> $sx LIMIT 1")
	[ -n "$k" ] || skip "a, b and c all in the newest record's shard"
	run --separate-stderr ri-open <<<"$(open_req "$k")"
	[ "$status" -eq 20 ] || { echo "$status $output $stderr"; false; }
	grep -q "the allocator was put back" <<<"$stderr" || { echo "$stderr"; false; }
	[ "$(records)" -eq "$n" ]
	sql "SELECT setval('ri_seq', (SELECT max(seq) FROM records))" >/dev/null
	run ri-open <<<"$(open_req a)"
	[ "$status" -eq 0 ]
	run ri-audit
	[ "$status" -eq 0 ]
}
