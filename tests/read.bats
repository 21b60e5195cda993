#!/usr/bin/env bats
# read.bats -- the Read Invocation contract (read invocation 1-15) through
# ri-read: one entry per invocation, newest first, capped at read_cap; the
# records of each (intent, recovery_intended, closings); the state from
# "Which closing stands"; not-known versus journal-unavailable versus a
# journal that fails verification; and a read that takes no section and
# writes nothing.
#
# test-pg: backend

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"

setup() {
	ri_instance
	export RI_CREDENTIAL=$ALICE
}

teardown() {
	if [ -n "${T:-}" ] && [ -d "$T" ]; then rm -rf "$T"; fi
}

# rreq KEY [INVOCATION_ID] -- an ri-read request
rreq() {
	jq -nc --arg k "$1" --arg i "${2:-}" \
	    '{kind:"ledger", act_key:$k} + (if $i == "" then {} else {invocation_id:$i} end)'
}

field() { jq -r --arg f "$1" 'if has($f) then .[$f] else empty end' <<<"$output" 2>/dev/null; }

# opened KEY [INTENT_DATA] -- an ri-open that must succeed; answer in $A
opened() {
	A=$(open_req "$1" "${2:-{\}}" | ri-open) || { echo "setup ri-open $1 failed"; return 1; }
}
closed() { opened "$1" "${2:-{\}}" && close_req "$A" | ri-close >/dev/null; }
inv() { jq -r .invocation_id <<<"$A"; }

need() {
	command -v "$1" >/dev/null || skip "needs $1"
}

# the journal's whole content and the leases table, to prove "unchanged"
journal_state() {
	jsql "SELECT count(*), coalesce(max(seq), 0) FROM records" &&
	    jsql "SELECT kind, act_key, coalesce(holder, ''), expires_at, token FROM leases ORDER BY 1, 2" &&
	    jsql "SELECT count(*) FROM open_intents"
}

# ---- entries ---------------------------------------------------------------------

@test "read invocation 2: one entry per invocation id, most recent first" {
	closed k1; i1=$(inv)
	closed k1; i2=$(inv)
	opened k1; i3=$(inv)
	closed other                           # another act is not in this report
	run --separate-stderr ri-read <<<"$(rreq k1)"
	[ "$status" -eq 0 ]
	[ "$(jq -r '[.invocations[].invocation_id] | join(" ")' <<<"$output")" = "$i3 $i2 $i1" ]
	[ "$(field more)" = false ]
	jq -e '.binding_duplicate == false' <<<"$output"
}

@test "read invocation 2: read_cap 2 with 3 invocations -> the 2 most recent entries and more=true" {
	ri_cfg '.instance.read_cap = 2'
	closed k1
	closed k1; i2=$(inv)
	closed k1; i3=$(inv)
	run --separate-stderr ri-read <<<"$(rreq k1)"
	[ "$status" -eq 0 ]
	[ "$(jq -r '[.invocations[].invocation_id] | join(" ")' <<<"$output")" = "$i3 $i2" ]
	[ "$(field more)" = true ]
}

@test "read invocation 2: read_cap 2 with exactly 2 invocations -> more=false" {
	ri_cfg '.instance.read_cap = 2'
	closed k1
	closed k1
	run --separate-stderr ri-read <<<"$(rreq k1)"
	[ "$status" -eq 0 ]
	[ "$(jq '.invocations | length' <<<"$output")" -eq 2 ]
	[ "$(field more)" = false ]
}

@test "read invocation 3a: with invocation_id given, exactly that one entry" {
	closed k1; i1=$(inv)
	closed k1
	opened k1
	run --separate-stderr ri-read <<<"$(rreq k1 "$i1")"
	[ "$status" -eq 0 ]
	[ "$(jq '.invocations | length' <<<"$output")" -eq 1 ]
	[ "$(jq -r '.invocations[0].invocation_id' <<<"$output")" = "$i1" ]
	[ "$(jq -r '.invocations[0].state' <<<"$output")" = closed ]
	# the --invocation-id shorthand says the same
	run --separate-stderr ri-read --kind ledger --act-key k1 --invocation-id "$i1" </dev/null
	[ "$status" -eq 0 ]
	[ "$(jq -r '[.invocations[].invocation_id] | join(" ")' <<<"$output")" = "$i1" ]
}

# ---- records ----------------------------------------------------------------------

@test "read invocation 4, INTERFACE Records: records carry the intent then the closing, each {event_id, seq, action_ref, actor_ref, recorded_at, payload}" {
	opened k1 '{"amount":5,"pairing_datum":"n-1"}'
	ev_i=$(jq -r .intent_event_id <<<"$A")
	ev_o=$(close_req "$A" '{"disclosure_id":"dsc-1"}' | ri-close | jq -r .outcome_event_id)
	run --separate-stderr ri-read <<<"$(rreq k1)"
	[ "$status" -eq 0 ]
	jq -e --arg i "$(inv)" --arg ei "$ev_i" --arg eo "$ev_o" '.invocations[0] as $e |
	    $e.invocation_id == $i and ($e.records | length) == 2 and
	    ($e.records[0] | .event_id == $ei and .action_ref == "ledger.intended" and
	        .actor_ref == "alice" and .recorded_at == "2026-11-29T10:00:00.000Z" and
	        (.seq | type) == "number" and
	        .payload == {invocation_id:$i, kind:"ledger", act_key:"k1",
	                     data:{amount:5, pairing_datum:"n-1"}}) and
	    ($e.records[1] | .event_id == $eo and .action_ref == "ledger.disclosed" and
	        .payload.intent_event_id == $ei and .payload.invocation_id == $i and
	        .payload.data == {disclosure_id:"dsc-1"}) and
	    $e.records[0].seq < $e.records[1].seq and $e.more == false' <<<"$output"
}

@test "read invocation 4: the sweep's recovery_intended record is in records, before the recovered outcome (recovery true, acting_actor_ref)" {
	need ri-sweep
	opened k1 '{"pairing_datum":"pd-1"}'
	RI_PAIRING_DATUM=pd-1 ledger-disclose --store "$T/ledger.db" --subject s --recipient r >/dev/null
	ri_at 33
	sweep_ran >/dev/null
	run --separate-stderr ri-read <<<"$(rreq k1)"
	[ "$status" -eq 0 ]
	jq -e '.invocations[0] | .state == "closed" and
	    ([.records[].action_ref] == ["ledger.intended", "ledger.recovery_intended", "ledger.disclosed"]) and
	    .records[2].payload.recovery == true and .records[2].payload.acting_actor_ref == "alice" and
	    .records[2].actor_ref == "ledger-reconciler"' <<<"$output"
}

# ---- states (Which closing stands, Term state projection) ---------------------------

@test "read invocation 10, state projection: open (no closing), closed (an outcome), refused (<kind>.refused)" {
	opened k1; io=$(inv)
	closed k2; ic=$(inv)
	opened k3; ir=$(inv)
	jq -c '{kind, act_key, invocation_id, intent_event_id, actor_ref} +
	    {reason:"no", constituent_code:3}' <<<"$A" | ri-refuse >/dev/null
	[ "$(ri-read <<<"$(rreq k1)" | jq -r '.invocations[0] | .invocation_id + " " + .state')" = "$io open" ]
	[ "$(ri-read <<<"$(rreq k2)" | jq -r '.invocations[0] | .invocation_id + " " + .state')" = "$ic closed" ]
	[ "$(ri-read <<<"$(rreq k3)" | jq -r '.invocations[0] | .invocation_id + " " + .state')" = "$ir refused" ]
}

@test "state projection: escalated (the sweep's not-committed under commit_fence none), then resolved (an operator's abandonment naming it)" {
	need ri-sweep
	need ri-resolve
	ledger-admin --store "$T/ledger.db" init >/dev/null
	opened k1 '{"pairing_datum":"pd-none"}'
	ri_at 33
	sweep_ran >/dev/null
	run --separate-stderr ri-read <<<"$(rreq k1)"
	[ "$(jq -r '.invocations[0].state' <<<"$output")" = escalated ]
	esc=$(jq -r '.invocations[0].records[-1].event_id' <<<"$output")
	OP=$(ri-actor add oper | jq -r .credential)
	jq -c --arg c "$OP" '{kind, act_key, invocation_id, intent_event_id} +
	    {actor_ref:"oper", credential:$c, disposition:{abandoned:{cause:"store quiet"}}}' <<<"$A" |
	    ri-resolve >/dev/null
	run --separate-stderr ri-read <<<"$(rreq k1)"
	[ "$status" -eq 0 ]
	# read invocation 6: the superseded escalation is still in records
	jq -e --arg esc "$esc" '.invocations[0] | .state == "resolved" and .binding_duplicate == false and
	    ([.records[].action_ref] == ["ledger.intended", "ledger.escalated", "ledger.abandoned"]) and
	    .records[2].payload.supersedes == $esc and .records[2].payload.resolved_by == "oper"' <<<"$output"
}

@test "state projection: abandoned (the sweep's abandonment, commit_fence declared, past the abandon edge)" {
	need ri-sweep
	ri_cfg '.kinds.ledger.commit_fence = "declared"'
	ledger-admin --store "$T/ledger.db" init >/dev/null
	opened k1 '{"pairing_datum":"pd-none"}'
	ri_at 40
	sweep_ran >/dev/null
	run --separate-stderr ri-read <<<"$(rreq k1)"
	[ "$status" -eq 0 ]
	jq -e '.invocations[0] | .state == "abandoned" and .records[-1].action_ref == "ledger.abandoned" and
	    (.records[-1].payload | has("resolved_by") | not)' <<<"$output"
}

@test "read invocation 9a: with service_identity null two open intents on the act (open step 3.8) do not set the act's binding_duplicate" {
	ri_cfg '.kinds.ledger.service_identity = null'
	opened k1
	ri_at 33
	opened k1
	run --separate-stderr ri-read <<<"$(rreq k1)"
	[ "$status" -eq 0 ]
	jq -e '[.invocations[].state] == ["open", "open"] and .binding_duplicate == false' <<<"$output"
}

# ---- not-known, journal-unavailable, integrity ------------------------------------

@test "read invocation 12: not-known (17) for an act with no intent, and for an invocation id the act does not have" {
	closed k1
	n=$(records)
	run --separate-stderr ri-read <<<"$(rreq never-opened)"
	[ "$status" -eq 17 ]
	[ "$(field refused)" = not-known ]
	run --separate-stderr ri-read <<<"$(rreq k1 inv_00000000000000000000000000000000)"
	[ "$status" -eq 17 ]
	[ "$(field refused)" = not-known ]
	# an invocation of another act is not this act's
	opened k2
	run --separate-stderr ri-read <<<"$(rreq k1 "$(inv)")"
	[ "$status" -eq 17 ]
	[ "$(records)" -eq $((n + 1)) ]
}

@test "read invocation 11, Action wiring 3: with the journal missing ri-read answers journal-unavailable (15), never not-known (17)" {
	closed k1
	mv "$T/journal.db" "$T/journal.away"
	rm -f "$T/journal.db-wal" "$T/journal.db-shm"
	run --separate-stderr ri-read <<<"$(rreq k1)"
	[ "$status" -eq 15 ]
	[ "$status" -ne 17 ]
	[ ! -e "$T/journal.db" ]
}

@test "INTERFACE conventions: ri-read's journal-unavailable for a missing journal is also a JSON refusal on stdout" {
	closed k1
	mv "$T/journal.db" "$T/journal.away"
	rm -f "$T/journal.db-wal" "$T/journal.db-shm"
	run --separate-stderr ri-read <<<"$(rreq k1)"
	[ "$status" -eq 15 ]
	[ "$(field refused)" = journal-unavailable ]
}

@test "INTERFACE 30, read invocation 11: a tampered record (trigger dropped, a payload byte flipped) -> 30 with cause integrity, never 17 -- also for the tampered intent alone" {
	closed k1
	ev=$(jq -r .intent_event_id <<<"$A")
	attacker_sql "UPDATE records SET payload = replace(payload, '\"data\":{}', '\"data\":{ }') WHERE event_id = '$ev'"
	run --separate-stderr ri-read <<<"$(rreq k1)"
	[ "$status" -eq 30 ]
	[ "$(field refused)" = journal-unavailable ]
	[ "$(field cause)" = integrity ]
	run --separate-stderr ri-read <<<"$(rreq k1 "$(inv)")"
	[ "$status" -eq 30 ]
	[ "$(field cause)" = integrity ]
}

@test "INTERFACE 30: a tampered act_key column (the record moved to another act) is 30, never not-known for either act" {
	closed k1
	ev=$(jq -r .intent_event_id <<<"$A")
	attacker_sql "UPDATE records SET act_key = 'k9' WHERE event_id = '$ev'"
	run --separate-stderr ri-read <<<"$(rreq k9)"
	[ "$status" -eq 30 ]
	run --separate-stderr ri-read <<<"$(rreq k1)"
	[ "$status" -eq 30 ]
}

# ---- no section, no write ----------------------------------------------------------

@test "read invocation 13-14: ri-read takes no section and writes nothing (rows, leases, open intents unchanged; a held section does not delay it)" {
	closed k1
	opened k1                              # k1's section is held now (30 s lease)
	before=$(journal_state)
	# read invocation 13: a reader that waited on the section would wait
	# out its 30 s lease; timeout 10 ends such a wait (124) -- an event,
	# not a wall-clock bound a loaded machine could break
	run --separate-stderr timeout 10 ri-read <<<"$(rreq k1)"
	[ "$status" -eq 0 ]
	[ "$(jq -r '[.invocations[].state] | join(",")' <<<"$output")" = open,closed ]
	run --separate-stderr ri-read <<<"$(rreq nothing-here)"
	[ "$status" -eq 17 ]
	[ "$(journal_state)" = "$before" ]
	# the holder still holds, and Close works
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
}

@test "issue 44 point 10: ri-read --text is for people -- the act's invocations newest first, one line a record (seq, instant, action, actor, event id) with its data; a refusal prints nothing on stdout" {
	opened k1 '{"amount":5}'
	close_req "$A" '{"disclosure_id":"dsc-1"}' | ri-close >/dev/null
	opened k1 '{"amount":6}'
	run --separate-stderr ri-read --kind ledger --act-key k1 --text
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 5 ]
	[[ "${lines[0]}" == "inv_"*"  ledger k1  open" ]]
	[[ "${lines[1]}" =~ ^\ +[0-9]+\ \ 2026-11-29T10:00:00\.000Z\ \ ledger\.intended\ +alice\ +evt_[0-9a-f]+\ \ data\ \{\"amount\":6\}$ ]]
	[[ "${lines[2]}" == "inv_"*"  ledger k1  closed" ]]
	[[ "${lines[4]}" == *"ledger.disclosed"*"data {\"disclosure_id\":\"dsc-1\"}" ]]
	# the same as JSON without it
	[ "$(ri-read --kind ledger --act-key k1 | jq '.invocations | length')" -eq 2 ]
	run --separate-stderr ri-read --kind ledger --act-key nothing --text
	[ "$status" -eq 17 ]
	[ -z "$output" ]
	[[ "$stderr" == "ri-read: not-known"* ]]
}
