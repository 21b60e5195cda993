#!/usr/bin/env bats
# migrate.bats -- ri-init --migrate (issue 43; INTERFACE, third wave:
# Shards; docs/SHARDS.md, "Migration"): a format-3 journal made format 4
# without rewriting its history, verified before and after, the old file
# kept.  The journals are copies of tests/fixtures/format3 (made by the
# release before format 4: its `make` says how), never built here.
#
# test-pg: no -- a format-3 SQLite file; PostgreSQL's migration is tests/pg/migrate.bats

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"

FIXTURE=$BATS_TEST_DIRNAME/fixtures/format3

setup() {
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/ri.XXXXXX")
	cp "$FIXTURE"/* "$T"/
	rm -f "$T/make"
	chmod 600 "$T"/*.key "$T"/*.cred "$T"/*.db "$T"/*.witness
	export RI_CONFIG=$T/ri.json RI_NOW=1767225603000 RI_CREDENTIAL_FILE=$T/alice.cred
	unset RI_CREDENTIAL RI_FAULT
	ri_cfg ".kinds.ledger.probe = [\"$RI_EXAMPLES/ledger-probe\", \"--store\", \"$T/ledger.db\"]"
	cp "$T/journal.db" "$T/original.db"
}

teardown() {
	if [ -n "${T:-}" ]; then rm -rf "$T"; fi
}

# contents DB -- every row of every format-3 table, quoted (the schema aside)
contents() {
	local t
	for t in meta records heads nodes open_intents actors leases marks; do
		echo "== $t"
		sqlite3 -cmd '.mode quote' "$1" "SELECT * FROM $t"
	done
}

# rows DB -- every record's columns as format 3 wrote them, one line each
rows() {
	sqlite3 "$1" "SELECT seq, event_id, action_ref, kind, act_key, invocation_id, actor_ref, attestation_id,
	    recorded_at, retention_until, role, act_prev, inv_prev, payload, hex(salt), hex(digest), hex(hash), hex(mac)
	    FROM records WHERE seq <= 7 ORDER BY seq"
}

@test "issue 43, --migrate: a format-3 journal is made format 4 -- its records kept byte for byte below the boundary, the old file kept as journal.db.format3 with every row unchanged, audit.migrated and a seal appended; the audit, ri-startcheck and ri-read pass, and the act in flight closes" {
	run --separate-stderr ri-read --kind ledger --act-key k1
	# the refusal names the format (INTERFACE, third wave)
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"is format 3"*"run ri-init --migrate"* ]]
	run --separate-stderr ri-init --migrate
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	jq -e '.from_format == 3 and .format == 4 and .boundary == 7' <<<"$output"
	jq -e --arg k "$T/journal.db.format3" '.kept == $k and .seal.seq > 8' <<<"$output"
	# the answer is the schema's third form
	printf '%s\n' "$output" | python3 "$BATS_TEST_DIRNAME/lib/validate.py" --closed \
	    "$BATS_TEST_DIRNAME/../schemas/ri-init.answer.json"
	# ASSERT: the old file kept, every row unchanged (its schema gains
	# only the triggers that refuse writes: the next test)
	[ "$(contents "$T/journal.db.format3")" = "$(contents "$T/original.db")" ]
	[ "$(sqlite3 "$T/journal.db.format3" "SELECT sql FROM sqlite_master WHERE name NOT LIKE 'ri_migrated_%'")" = \
	    "$(sqlite3 "$T/original.db" "SELECT sql FROM sqlite_master")" ]
	# ASSERT: history not rewritten -- every format-3 record's bytes, hash and MAC
	[ "$(rows "$T/journal.db")" = "$(rows "$T/original.db")" ]
	[ "$(sqlite3 "$T/journal.db" "SELECT v FROM meta WHERE k = 'format'")" = 4 ]
	[ "$(sqlite3 "$T/journal.db" "SELECT v FROM meta WHERE k = 'boundary'")" = 7 ]
	[ "$(sqlite3 "$T/journal.db" "SELECT action_ref FROM records WHERE seq = 8")" = audit.migrated ]
	run --separate-stderr ri-audit
	echo "$output" | jq -c '.checks[] | select(.status == "fail")'
	[ "$status" -eq 0 ]
	run --separate-stderr ri-startcheck
	[ "$status" -eq 0 ]
	run --separate-stderr ri-read --kind ledger --act-key k1
	[ "$status" -eq 0 ]
	jq -e '.invocations[0].state == "closed"' <<<"$output"
	# the act in flight before the migration closes after it
	local k2
	k2=$(ri-read --kind ledger --act-key k2)
	jq -e '.invocations[0].state == "open"' <<<"$k2"
	jq -c '.invocations[0] | {kind: "ledger", act_key: "k2", invocation_id,
	    intent_event_id: .records[0].event_id, actor_ref: "alice", outcome_action_ref: "ledger.disclosed",
	    outcome_data: {disclosure_id: "d2"}}' <<<"$k2" >"$T/close.json"
	run --separate-stderr ri-close <"$T/close.json"
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	# and a new act opens and closes, above the boundary
	o=$(echo '{"kind":"ledger","act_key":"k3","actor_ref":"alice","intent_data":{}}' | ri-open)
	jq -c '{kind, act_key, invocation_id, intent_event_id, actor_ref: "alice",
	    outcome_action_ref: "ledger.disclosed", outcome_data: {disclosure_id: "d3"}}' <<<"$o" | ri-close >/dev/null
	run --separate-stderr ri-audit
	[ "$status" -eq 0 ]
	# once is enough: a format-4 journal is not migrated again
	run --separate-stderr ri-init --migrate
	[ "$status" -eq 64 ]
	# a moved boundary fails closed: the records on one side of it hash
	# under the other format (and the head's MAC binds it)
	cp "$T/journal.db" "$T/migrated.db"
	sqlite3 "$T/journal.db" "UPDATE meta SET v = '6' WHERE k = 'boundary'"
	run --separate-stderr ri-read --kind ledger --act-key k1
	echo "$stderr"
	[ "$status" -eq 30 ]
	cp "$T/migrated.db" "$T/journal.db"
	sqlite3 "$T/journal.db" "UPDATE meta SET v = '2' WHERE k = 'shards'"
	run --separate-stderr ri-read --kind ledger --act-key k1
	[ "$status" -eq 30 ]
}

@test "issue 43 review, --migrate: the kept journal.db.format3 refuses every write -- a process still on the old journal (a format-3 release's ri-run whose command outlived the migration) fails its next append, as step-2, rather than land where the new journal never reads; the file's rows stay as they were, it still reads, and the new journal audits clean" {
	run --separate-stderr ri-init --migrate
	echo "$stderr"
	[ "$status" -eq 0 ]
	local sql
	# what a format-3 writer does, straight at the kept file: append a
	# record, move the head, release a lease, close an intent, grow the
	# tree, register an actor, and the meta row
	for sql in \
	    "INSERT INTO records SELECT 8, 'evt_straggler', action_ref, kind, act_key, invocation_id, actor_ref,
	        attestation_id, recorded_at + 1, retention_until, role, act_prev, inv_prev, payload, salt, digest, hash,
	        mac FROM records WHERE seq = 7" \
	    "UPDATE heads SET last_seq = last_seq + 1" \
	    "UPDATE leases SET holder = NULL WHERE act_key = 'k2'" \
	    "DELETE FROM open_intents" \
	    "DELETE FROM nodes" \
	    "INSERT INTO actors SELECT 'bob', service, cred_hash, created_at, revoked_at, reg_seq, mac FROM actors
	        WHERE actor_ref = 'alice'" \
	    "UPDATE meta SET v = '3' WHERE k = 'format'"; do
		run sqlite3 "$T/journal.db.format3" "$sql"
		echo "${sql%% *}: $status $output"
		# ASSERT: the kept file refuses the write itself
		[[ "$status" -ne 0 && "$output" == *"journal migrated to format 4: this is the kept format-3 file"* ]]
	done
	# nothing landed, and the file reads as before
	[ "$(contents "$T/journal.db.format3")" = "$(contents "$T/original.db")" ]
	[ "$(rows "$T/journal.db.format3")" = "$(rows "$T/original.db")" ]
	# the new journal is untouched by any of it
	run --separate-stderr ri-audit
	echo "$output" | jq -c '.checks[] | select(.status == "fail")'
	[ "$status" -eq 0 ]
	run --separate-stderr ri-read --kind ledger --act-key k2
	[ "$status" -eq 0 ]
	jq -e '.invocations[0].state == "open"' <<<"$output"
}

# unchanged -- the migration left the journal as it was and made nothing
unchanged() {
	cmp "$T/journal.db" "$T/original.db"
	[ ! -e "$T/journal.db.format3" ]
	[ ! -e "$T/journal.db.migrating" ]
}

@test "issue 43, --migrate verifies every record before it converts: a record altered -- 30 naming it, the journal left as it was, no copy made" {
	sqlite3 "$T/journal.db" "DROP TRIGGER records_append_only_update;
	    UPDATE records SET payload = replace(payload, '5', '6') WHERE seq = 4"
	cp "$T/journal.db" "$T/original.db"
	run --separate-stderr ri-init --migrate
	echo "migrate: $status $stderr"
	# ASSERT (the records, verified under format 3 before anything is renamed)
	[[ "$status" -eq 30 && "$stderr" == *"1 of 7 records fail verification"* ]]
	unchanged
}

@test "issue 43, --migrate verifies the old head before it converts: the journal truncated behind its head, or a head that fails format 3's MAC -- 30, the journal left as it was" {
	sqlite3 "$T/journal.db" "DROP TRIGGER records_append_only_delete; DELETE FROM records WHERE seq = 7"
	cp "$T/journal.db" "$T/original.db"
	run --separate-stderr ri-init --migrate
	echo "$stderr"
	[ "$status" -eq 30 ]
	[[ "$stderr" == *"truncated"* ]]
	unchanged
	cp "$FIXTURE/journal.db" "$T/journal.db"
	sqlite3 "$T/journal.db" "UPDATE heads SET grants = grants + 1"
	cp "$T/journal.db" "$T/original.db"
	run --separate-stderr ri-init --migrate
	echo "migrate: $status $stderr"
	# ASSERT (the head, under format 3's MAC)
	[[ "$status" -eq 30 && "$stderr" == *"head fails its MAC (format 3)"* ]]
	unchanged
}

@test "issue 43, --migrate refuses a rolled-back journal: an older copy (behind the witness, which saw the act in flight) is not made to look fresh -- 30, nothing changed" {
	cp "$T/journal-early.db" "$T/journal.db"
	cp "$T/journal.db" "$T/original.db"
	run --separate-stderr ri-init --migrate
	echo "$stderr"
	[ "$status" -eq 30 ]
	[[ "$stderr" == *"witness"* ]]
	unchanged
}

@test "issue 43, --migrate never overwrites: a kept journal.db.format3 already there, or a journal.db.migrating left behind -- 64, nothing changed" {
	: >"$T/journal.db.format3"
	run --separate-stderr ri-init --migrate
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"journal.db.format3 exists"* ]]
	cmp "$T/journal.db" "$T/original.db"
	rm "$T/journal.db.format3"
	: >"$T/journal.db.migrating"
	run --separate-stderr ri-init --migrate
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"journal.db.migrating: already exists"* ]]
	cmp "$T/journal.db" "$T/original.db"
	[ ! -e "$T/journal.db.format3" ]
}

@test "issue 43 review, --migrate: a journal path holding ', ? or # (which the old file's URI would read as its own) is refused with 78 before anything is written -- no copy, nothing kept, the journal as it was" {
	local c name
	for c in "'" '?' '#'; do
		name="jour${c}nal.db"
		cp "$T/original.db" "$T/$name"
		ri_cfg ".journal = \"$T/$name\""
		run --separate-stderr ri-init --migrate
		echo "$c: $status $stderr"
		# ASSERT: the config's error, naming the character class
		[ "$status" -eq 78 ]
		[[ "$stderr" == *"a path with ', ? or # cannot be migrated; move it"* ]]
		cmp "$T/$name" "$T/original.db"
		[ ! -e "$T/$name.migrating" ]
		[ ! -e "$T/$name.format3" ]
		[ ! -e "$T/$name-wal" ]
		[ ! -e "$T/$name-shm" ]
	done
	# refused before the copy is made: a copy left behind is not even looked at
	: >"$T/$name.migrating"
	run --separate-stderr ri-init --migrate
	[ "$status" -eq 78 ]
	[ ! -s "$T/$name.migrating" ]
}
