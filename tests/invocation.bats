#!/usr/bin/env bats
# invocation.bats -- the invocation's own four actions over the real binaries:
# every refusal code of ri-open, ri-close, ri-refuse and ri-yield reached by a
# real scenario (fault injection only where nothing else reaches the arm),
# with its exit code, its JSON answer and what the journal holds afterwards;
# a race of three processes on one act; and malformed requests.
#
# The instance is tests/lib/common.bash's: walkthrough numbers (lease 30 s,
# allowance 2 s -> examine edge +32 s, journal_write_bound 3 s) unless a test
# says `ri_instance fast` (lease 3 s, jwb 300 ms) because it must wait a lease
# or a write bound out in real time.  Time moves only through RI_NOW.
#
# test-pg: backend

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"

BG=

teardown() {
	# only the background process this test started, by its id
	if [ -n "${BG:-}" ]; then
		kill "$BG" 2>/dev/null || true
		wait "$BG" 2>/dev/null || true
	fi
	if [ -n "${T:-}" ] && [ -d "$T" ]; then rm -rf "$T"; fi
}

# ---- helpers --------------------------------------------------------------

# refuse_req OPEN_ANSWER [CRED] [CODE] -- an ri-refuse request for that invocation
refuse_req() {
	jq -c --arg c "${2:-$ALICE}" --argjson code "${3:-3}" \
	    '{kind, act_key, invocation_id, intent_event_id, actor_ref} +
	     {credential:$c, reason:"the store refused the write", constituent_code:$code}' <<<"$1"
}

# yield_req OPEN_ANSWER [CRED] -- an ri-yield request: the intent's actor
# and its credential (close 1: only the intent's actor yields)
yield_req() {
	jq -c --arg c "${2:-$ALICE}" '{kind, act_key, invocation_id, actor_ref} + {credential:$c}' <<<"$1"
}

# rd KEY [INVOCATION_ID] -- ri-read's answer for the act (stdout only)
rd() {
	jq -nc --arg k "$1" --arg i "${2:-}" \
	    '{kind:"ledger", act_key:$k} + (if $i == "" then {} else {invocation_id:$i} end)' |
	    ri-read 2>/dev/null
}

# state_of KEY INVOCATION_ID -- that entry's state
state_of() { rd "$1" "$2" | jq -r '.invocations[0].state'; }

# holder KEY -- the section's holder ("" when free or never taken)
holder() {
	jsql "SELECT coalesce(holder, '') FROM leases WHERE kind = 'ledger' AND act_key = '$1'"
}

# lease_rows KEY -- whether the section was ever taken (0/1)
lease_rows() {
	jsql "SELECT count(*) FROM leases WHERE kind = 'ledger' AND act_key = '$1'"
}

# act_rows KEY -- journal records of the act (not the substrate's audit.*)
act_rows() { records "kind = 'ledger' AND act_key = '$1'"; }

# field NAME -- a field of the last `run`'s JSON answer
field() { jq -r --arg f "$1" 'if has($f) then .[$f] else empty end' <<<"$output" 2>/dev/null; }

# opened KEY [INTENT_DATA] -- ri-open that must succeed; the answer in $A
opened() {
	A=$(open_req "$1" "${2:-{\}}" | ri-open) || { echo "setup ri-open $1 failed"; return 1; }
}

ms() { date +%s%3N; }

wait_for() {
	local i
	for i in $(seq 1 100); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	echo "timed out waiting for $1"
	return 1
}

# paused_close OPEN_ANSWER -- an ri-close that passes step 1 (RI_NOW is its
# own, frozen at spawn, so its lease stays alive for it) and pauses before
# the step-2 re-read; resume_close lets it go and collects its answer.
paused_close() {
	mkdir -p "$T/f"
	mkfifo "$T/f/close.after_remaining"
	close_req "$1" >"$T/close.req"
	RI_FAULT=close.after_remaining=pause RI_FAULT_DIR="$T/f" \
	    ri-close <"$T/close.req" >"$T/close.out" 2>"$T/close.err" 3>&- &
	BG=$!
	wait_for "$T/f/close.after_remaining.reached"
}
resume_close() {
	echo >"$T/f/close.after_remaining"
	CLOSE_RC=0
	wait "$BG" || CLOSE_RC=$?
	BG=
	CLOSE_OUT=$(cat "$T/close.out")
}

need_sweep() {
	command -v ri-sweep >/dev/null || skip "needs ri-sweep (issue 4)"
}

# ---- Open: invalid-credential (10) ------------------------------------------

@test "open step 4.4, Primitive policy 19: a wrong credential is invalid-credential (10), nothing written, section released" {
	# Invariant 1.2: refused before anything is written
	ri_instance
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1 '{}' alice ri1_not-her-credential)"
	[ "$status" -eq 10 ]
	[ "$(field refused)" = invalid-credential ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
	# released: the next open is granted at once, not after the 30 s lease
	run --separate-stderr timeout 10 ri-open <<<"$(open_req k1)"
	[ "$status" -eq 0 ]
}

@test "Primitive policy 19: an actor the registry does not know is invalid-credential (10), nothing written" {
	ri_instance
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1 '{}' mallory "$ALICE")"
	[ "$status" -eq 10 ]
	[ "$(field refused)" = invalid-credential ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
	run --separate-stderr ri-read <<<'{"kind":"ledger","act_key":"k1"}'
	[ "$status" -eq 17 ]
}

@test "Primitive policy 19: an actor revoked with ri-actor revoke is invalid-credential (10), nothing written" {
	ri_instance
	ri-actor revoke alice >/dev/null
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 10 ]
	[ "$(field refused)" = invalid-credential ]
	[ "$(records)" -eq "$n" ]
	[ "$(act_rows k1)" -eq 0 ]
	[ "$(holder k1)" = "" ]
}

# ---- Open: invalid-request (11) ---------------------------------------------

@test "open step 1.1, 1.5: an empty act_key is invalid-request (11, cause malformed), nothing written, no section taken" {
	ri_instance
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req '')"
	[ "$status" -eq 11 ]
	[ "$(field refused)" = invalid-request ]
	[ "$(field cause)" = malformed ]
	[ "$(records)" -eq "$n" ]
	[ "$(jsql 'SELECT count(*) FROM leases')" -eq 0 ]
}

@test "Primitive policy 1, open step 1.1: an act_key over reference_length_cap is invalid-request (11, malformed); at the cap it opens" {
	# Primitive policy 8: the actor_ref cap, below
	ri_instance
	long=$(printf 'k%.0s' $(seq 1 257))
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req "$long")"
	[ "$status" -eq 11 ]
	[ "$(field refused)" = invalid-request ]
	[ "$(field cause)" = malformed ]
	[ "$(records)" -eq "$n" ]
	[ "$(jsql 'SELECT count(*) FROM leases')" -eq 0 ]
	run --separate-stderr ri-open <<<"$(open_req "${long:1}")"
	[ "$status" -eq 0 ]
	[ "$(records)" -eq $((n + 1)) ]
	# Primitive policy 8: an actor_ref over the cap is refused the same way
	run --separate-stderr ri-open <<<"$(open_req k2 '{}' "$long")"
	[ "$status" -eq 11 ]
	[ "$(field cause)" = malformed ]
	[ "$(records)" -eq $((n + 1)) ]
}

@test "open step 1.1, Primitive policy 7: an empty actor_ref is invalid-request (11, malformed), nothing written" {
	ri_instance
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1 | jq -c '.actor_ref = ""')"
	[ "$status" -eq 11 ]
	[ "$(field refused)" = invalid-request ]
	[ "$(field cause)" = malformed ]
	[ "$(records)" -eq "$n" ]
	[ "$(lease_rows k1)" -eq 0 ]
}

@test "open step 1.1, INTERFACE credentials: no credential (none in the request, \$RI_CREDENTIAL or \$RI_CREDENTIAL_FILE) is invalid-request (11, malformed); env and file are honoured" {
	ri_instance
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1 | jq -c 'del(.credential)')"
	[ "$status" -eq 11 ]
	[ "$(field cause)" = malformed ]
	[ "$(records)" -eq "$n" ]
	[ "$(lease_rows k1)" -eq 0 ]
	run --separate-stderr env RI_CREDENTIAL="$ALICE" ri-open <<<"$(open_req k1 | jq -c 'del(.credential)')"
	[ "$status" -eq 0 ]
	(umask 077; echo "$ALICE" >"$T/alice.cred")
	run --separate-stderr env RI_CREDENTIAL_FILE="$T/alice.cred" ri-open <<<"$(open_req k2 | jq -c 'del(.credential)')"
	[ "$status" -eq 0 ]
}

@test "open step 1.2: the kind's service identity may not open: invalid-request (11, cause service-identity), nothing written" {
	ri_instance
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1 '{}' ledger-reconciler "$(cat "$T/reconciler.cred")")"
	[ "$status" -eq 11 ]
	[ "$(field refused)" = invalid-request ]
	[ "$(field cause)" = service-identity ]
	[ "$(records)" -eq "$n" ]
	[ "$(lease_rows k1)" -eq 0 ]
}

@test "open step 1.3-1.4, Primitive policy 12-13: intent_data larger than payload_cap is invalid-request (11, cause payload-cap), nothing written" {
	ri_instance
	big=$(jq -nc --arg s "$(head -c 70000 /dev/zero | tr '\0' x)" '{blob:$s}')
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1 "$big")"
	[ "$status" -eq 11 ]
	[ "$(field refused)" = invalid-request ]
	[ "$(field cause)" = payload-cap ]
	[ "$(records)" -eq "$n" ]
	[ "$(lease_rows k1)" -eq 0 ]
}

# largest_record KEY INV ACTION -- the kind's largest record (Primitive
# policy 12, Invariant 6) built whole with its placeholder strings, as the
# substrate measures a payload: the canonical envelope's length in bytes.
# ACTION outcome: the outcome carrying outcome_envelope bytes of data with
# every field a writer may add; ACTION escalation: intent_candidates_cap
# candidates of reference_length_cap each.  Built here with jq, so the
# test checks ri's own arithmetic (lib/protocol/open.c fits) against the records.
largest_record() {
	jq -nc --arg k "$1" --arg inv "$2" --arg what "$3" \
	    --argjson refcap "$(jq .instance.reference_length_cap "$RI_CONFIG")" \
	    --argjson env "$(jq .kinds.ledger.outcome_envelope "$RI_CONFIG")" \
	    --argjson ncand "$(jq .instance.intent_candidates_cap "$RI_CONFIG")" '
	    def xs(n): [range(n)] | map("x") | join("");
	    xs($refcap) as $actor | "evt_00000000000000000000000000000000" as $ev |
	    {invocation_id: $inv, intent_event_id: $ev, kind: "ledger", act_key: $k, recovery: true,
	     acting_actor_ref: $actor, resolved_by: $actor, supersedes: $ev} as $common |
	    (if $what == "outcome" then
	        ["ledger.disclosed", $common + {data: {x: xs($env - 8)}}]
	     else
	        ["ledger.escalated", $common + {store_candidates: [range($ncand)] | map(xs($refcap)),
	                                         cause: "outcome-unrecordable"}]
	     end) as [$ref, $payload] |
	    {action_ref: $ref, actor_ref: $actor, attestation_id: "att_00000000000000000000000000000000",
	     data: $payload} | tojson | length'
}

@test "Primitive policy 12, Invariant 6: payload_cap at exactly the kind's largest record opens; one byte less is invalid-request (11, cause payload-cap), nothing written" {
	ri_instance
	# the sizes do not depend on the invocation id's value, only its length
	inv=inv_00000000000000000000000000000000
	out=$(largest_record k1 "$inv" outcome)
	esc=$(largest_record k1 "$inv" escalation)
	big=$(( out > esc ? out : esc ))
	[ "$big" -gt 1024 ]
	ri_cfg ".instance.payload_cap = $((big - 1))"
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 11 ]
	[ "$(field refused)" = invalid-request ]
	[ "$(field cause)" = payload-cap ]
	[[ "$stderr" == *"outcome $out, escalation $esc bytes"* ]]
	[ "$(records)" -eq "$n" ]
	[ "$(lease_rows k1)" -eq 0 ]
	ri_cfg ".instance.payload_cap = $big"
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 0 ]
	# the intent, and before it the changed binding it is judged by
	# (bindings are history, issue 41)
	[ "$(records)" -eq $((n + 2)) ]
	[ "$(records "action_ref = 'audit.bound'")" -eq 1 ]
}

@test "Binding 1, INTERFACE 11: a kind the config does not bind is invalid-request (11, cause unbound-kind), nothing written" {
	ri_instance
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1 | jq -c '.kind = "payroll"')"
	[ "$status" -eq 11 ]
	[ "$(field refused)" = invalid-request ]
	[ "$(field cause)" = unbound-kind ]
	[ "$(records)" -eq "$n" ]
	[ "$(jsql 'SELECT count(*) FROM leases')" -eq 0 ]
}

# ---- Open: act-in-flight (12) -----------------------------------------------

@test "open step 3.4-3.5: a second open of an act whose intent is in flight (the first yielded) is act-in-flight (12) naming it, writes nothing" {
	# open step 3.2, 3.3: the open intents come from the re-read under the section, never a cache; open step 5, 5.1: the first Open returned holding the section, its intent counted open
	ri_instance
	opened k1
	ri-yield <<<"$(yield_req "$A")" >/dev/null
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 12 ]
	[ "$(field refused)" = act-in-flight ]
	[ "$(field invocation_id)" = "$(jq -r .invocation_id <<<"$A")" ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]                # open step 3.4: released
}

@test "open step 3.4-3.5, Term in-flight: past the holder's lease (31 s) but short of the examine edge (32 s) the intent is still in flight (12)" {
	ri_instance
	opened k1
	ri_at 31
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 12 ]
	[ "$(field refused)" = act-in-flight ]
	[ "$(field invocation_id)" = "$(jq -r .invocation_id <<<"$A")" ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
}

@test "open step 3.6-3.7: with a service identity an aged open intent (33 s) is act-in-flight (12), awaiting the sweep; nothing written, released" {
	# Primitive policy 15, 38: Open's one reading of now, against the intent's recorded_at from the range read
	ri_instance
	opened k1
	ri_at 33
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 12 ]
	[ "$(field refused)" = act-in-flight ]
	[ "$(field invocation_id)" = "$(jq -r .invocation_id <<<"$A")" ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = open ]
}

@test "open step 3.8a-3.8e: with service_identity null an aged intent is passed: the new open lands, the old stays open, closure-at-risk is surfaced" {
	ri_instance
	ri_cfg '.kinds.ledger.service_identity = null'
	opened k1
	old=$(jq -r .invocation_id <<<"$A")
	ri_at 33
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 0 ]
	new=$(field invocation_id)
	[ -n "$new" ]
	[ "$new" != "$old" ]
	[ "$(records)" -eq $((n + 1)) ]
	# 3.8e: the new intent pairs on the new invocation id
	[ "$(records "action_ref = 'ledger.intended' AND invocation_id = '$new'")" -eq 1 ]
	# 3.8b: the old intent stays open
	[ "$(state_of k1 "$old")" = open ]
	[ "$(state_of k1 "$new")" = open ]
	# 3.8c: surfaced on the compliance surface
	run sqlite3 "$T/findings.db" "SELECT finding, invocation_id FROM findings"
	[[ "$output" == *"closure-at-risk|$old"* ]]
	# read invocation 9a: no intents key without a service identity
	[ "$(rd k1 | jq -r .binding_duplicate)" = false ]
}

@test "open step 3.8, INTERFACE hard alert: the open that passes an aged intent under service_identity null carries an \"alert\" in its answer" {
	ri_instance
	ri_cfg '.kinds.ledger.service_identity = null'
	opened k1
	ri_at 33
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 0 ]
	jq -e 'has("alert")' <<<"$output"
}

# ---- Open: act-landed (13) --------------------------------------------------

@test "open step 3.9, Rejection path (a second invocation of the same act): repeatable=false -> act-landed (13) with the outcome_event_id, nothing written" {
	ri_instance
	ri_cfg '.kinds.ledger.repeatable = false'
	opened k1
	ev=$(close_req "$A" | ri-close | jq -r .outcome_event_id)
	[ -n "$ev" ]
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 13 ]
	[ "$(field refused)" = act-landed ]
	[ "$(field outcome_event_id)" = "$ev" ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]                # open step 3.9b: released
}

@test "repeatable 1, Rejection path (a second invocation of the same act): repeatable=true -> the second act opens and closes" {
	ri_instance
	opened k1
	close_req "$A" | ri-close >/dev/null
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 0 ]
	B=$output
	run --separate-stderr ri-close <<<"$(close_req "$B")"
	[ "$status" -eq 0 ]
	[ "$(rd k1 | jq -r '[.invocations[].state] | join(",")')" = closed,closed ]
}

# ---- Open: section-unavailable (14) -----------------------------------------

@test "open step 2.2-2.3: a section held by an open that died after its pre-check (no intent) -> the next open waits the holder's remaining lease, then section-unavailable (14), nothing written" {
	# act section 7: no try-take -- the take waits, bounded by the holder's lease
	ri_instance fast
	run --separate-stderr env RI_FAULT=open.after_precheck=die ri-open <<<"$(open_req k1)"
	[ "$status" -eq 137 ]
	dead=$(holder k1)
	[ -n "$dead" ]
	[ "$(act_rows k1)" -eq 0 ]
	n=$(records)
	t=$(ms)
	run --separate-stderr ri-open <<<"$(open_req k1)"
	waited=$(( $(ms) - t ))
	[ "$status" -eq 14 ]
	[ "$(field refused)" = section-unavailable ]
	[ "$(records)" -eq "$n" ]
	[ "$waited" -ge 2500 ]                 # it waited the holder's lease out (3 s)...
	[ "$waited" -lt 8000 ]                 # ...and no longer (open step 2.2)
	[ "$(holder k1)" = "$dead" ]
	# act section 2: the dead holder's section frees only at its lease's end
	ri_at 3.001
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 0 ]
}

# ---- Open: journal-unavailable (15) -----------------------------------------

@test "open step 3.13, INTERFACE 15: with the journal gone ri-open is journal-unavailable (15) and creates nothing" {
	ri_instance
	mv "$T/journal.db" "$T/journal.away"
	rm -f "$T/journal.db-wal" "$T/journal.db-shm"
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 15 ]
	[ ! -e "$T/journal.db" ]
}

@test "INTERFACE conventions: ri-open's journal-unavailable for a missing journal is also a JSON refusal on stdout" {
	ri_instance
	mv "$T/journal.db" "$T/journal.away"
	rm -f "$T/journal.db-wal" "$T/journal.db-shm"
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 15 ]
	[ "$(field refused)" = journal-unavailable ]
}

@test "open step 3.13, INTERFACE 30: a tampered intent of an in-flight invocation on the act -> journal-unavailable (15, cause integrity), nothing written, released" {
	ri_instance
	opened k1
	ri-yield <<<"$(yield_req "$A")" >/dev/null
	ev=$(jq -r .intent_event_id <<<"$A")
	attacker_sql "UPDATE records SET payload = replace(payload, '\"data\":{}', '\"data\":{ }') WHERE event_id = '$ev'"
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 15 ]
	[ "$(field refused)" = journal-unavailable ]
	[ "$(field cause)" = integrity ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
}

@test "open step 3.1, INTERFACE 30: a tampered record of an earlier, closed invocation on the act -> journal-unavailable (15, cause integrity), nothing written" {
	ri_instance
	opened k1
	close_req "$A" | ri-close >/dev/null
	ev=$(jq -r .intent_event_id <<<"$A")
	attacker_sql "UPDATE records SET payload = replace(payload, '\"data\":{}', '\"data\":{ }') WHERE event_id = '$ev'"
	# the reader sees it (30); the writer must not write over it
	run --separate-stderr ri-read <<<'{"kind":"ledger","act_key":"k1"}'
	[ "$status" -eq 30 ]
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 15 ]
	[ "$(field cause)" = integrity ]
	[ "$(records)" -eq "$n" ]
}

# ---- Open: recording-failure(intent) (20) and the intent position's arms ----

@test "Primitive policy 23: open.intent.before=fail (step-2) -> recording-failure(intent) (20), nothing written, section released" {
	ri_instance
	n=$(records)
	run --separate-stderr env RI_FAULT=open.intent.before=fail ri-open <<<"$(open_req k1)"
	[ "$status" -eq 20 ]
	[ "$(field refused)" = recording-failure ]
	[ "$(field position)" = intent ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
	# Action wiring table: the whole action may be retried -- at once
	run --separate-stderr timeout 10 ri-open <<<"$(open_req k1)"
	[ "$status" -eq 0 ]
}

@test "Primitive policy 23: open.intent.before=fail3 (step-3) -> recording-failure(intent) (20), nothing written, section released" {
	ri_instance
	n=$(records)
	run --separate-stderr env RI_FAULT=open.intent.before=fail3 ri-open <<<"$(open_req k1)"
	[ "$status" -eq 20 ]
	[ "$(field refused)" = recording-failure ]
	[ "$(field position)" = intent ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
}

@test "Primitive policy 32-35, 37: open.intent.before=lose -> read back after journal_write_bound finds nothing -> 20, nothing written, released" {
	ri_instance fast
	n=$(records)
	t=$(ms)
	run --separate-stderr env RI_FAULT=open.intent.before=lose ri-open <<<"$(open_req k1)"
	waited=$(( $(ms) - t ))
	[ "$status" -eq 20 ]
	[ "$(field refused)" = recording-failure ]
	[ "$(field position)" = intent ]
	[ "$waited" -ge 300 ]                  # Primitive policy 34: not before jwb
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
}

@test "Primitive policy 34, 36a: open.intent.after=lose (the reply lost, the record landed) -> read back after journal_write_bound, adopted: success with an alert" {
	ri_instance fast
	n=$(records)
	t=$(ms)
	run --separate-stderr env RI_FAULT=open.intent.after=lose ri-open <<<"$(open_req k1)"
	waited=$(( $(ms) - t ))
	[ "$status" -eq 0 ]
	[ "$waited" -ge 300 ]
	jq -e 'has("alert")' <<<"$output"
	inv=$(field invocation_id)
	ev=$(field intent_event_id)
	# Primitive policy 33: no blind retry -- exactly one intent, the adopted one
	[ "$(records)" -eq $((n + 1)) ]
	[ "$(jsql "SELECT event_id FROM records WHERE invocation_id = '$inv'")" = "$ev" ]
	# open step 5.3: it returns holding the section, and Close works
	[ "$(holder k1)" = "$inv" ]
	run --separate-stderr ri-close <<<"$(close_req "$output")"
	[ "$status" -eq 0 ]
}

@test "Primitive policy 24-26: open.intent.after=fail (step-4) -> success with a hard alert, exactly one intent (no retry)" {
	ri_instance
	n=$(records)
	run --separate-stderr env RI_FAULT=open.intent.after=fail ri-open <<<"$(open_req k1)"
	[ "$status" -eq 0 ]
	jq -e 'has("alert")' <<<"$output"
	[[ "$stderr" == *ALERT* ]]
	[ "$(records)" -eq $((n + 1)) ]
	[ "$(records "invocation_id = '$(field invocation_id)'")" -eq 1 ]
	[ "$(holder k1)" = "$(field invocation_id)" ]
}

@test "Primitive policy 20-21a: a retention-source invalid-request at the intent (noretention) is read back and proceeds with a hard alert" {
	ri_instance
	n=$(records)
	run --separate-stderr env RI_FAULT=open.intent.before=noretention ri-open <<<"$(open_req k1)"
	[ "$status" -eq 0 ]
	jq -e 'has("alert")' <<<"$output"
	[ "$(records)" -eq $((n + 1)) ]
	[ "$(records "invocation_id = '$(field invocation_id)'")" -eq 1 ]
}

# ---- Close -------------------------------------------------------------------

@test "close step 2.2a-2.2c, 2.2e: a Close that finds the sweep's outcome (it paused past step 1 while the sweep closed the act) adopts it, landed_by sweep, appends nothing" {
	need_sweep
	ri_instance
	opened k1 '{"pairing_datum":"pd-k1"}'
	RI_PAIRING_DATUM=pd-k1 ledger-disclose --store "$T/ledger.db" --subject s --recipient r >/dev/null
	paused_close "$A"
	ri_at 33
	run --separate-stderr ri-sweep
	[ "$status" -eq 0 ]
	[ "$(jq -r .closed <<<"$output")" -eq 1 ]
	sweep_ev=$(jsql "SELECT event_id FROM records WHERE action_ref = 'ledger.disclosed'")
	n=$(records)
	resume_close
	[ "$CLOSE_RC" -eq 0 ]
	[ "$(jq -r .outcome_event_id <<<"$CLOSE_OUT")" = "$sweep_ev" ]
	[ "$(jq -r .landed_by <<<"$CLOSE_OUT")" = sweep ]
	[ "$(records)" -eq "$n" ]
	[ "$(records "action_ref = 'ledger.disclosed'")" -eq 1 ]
	[ "$(holder k1)" = "" ]
}

@test "close step 2.3a-2.3b: a Close that finds the sweep's escalation does not adopt it: recording-failure(outcome) (21), appends nothing" {
	need_sweep
	ri_instance
	ledger-admin --store "$T/ledger.db" init >/dev/null
	opened k1 '{"pairing_datum":"pd-none"}'
	paused_close "$A"
	ri_at 33
	run --separate-stderr ri-sweep
	[ "$status" -eq 3 ]                    # escalated: an act for an operator
	[ "$(jq -r .escalated <<<"$output")" -eq 1 ]
	n=$(records)
	resume_close
	[ "$CLOSE_RC" -eq 21 ]
	[ "$(jq -r .refused <<<"$CLOSE_OUT")" = recording-failure ]
	[ "$(jq -r .position <<<"$CLOSE_OUT")" = outcome ]
	[ "$(records)" -eq "$n" ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = escalated ]
}

@test "close step 2.2a-2.2c: Close re-run after its own outcome landed (close.outcome.after=die) adopts that outcome, appends nothing" {
	# close 2: nothing kept between Open and Close -- the re-run Close reads what it needs from the journal
	ri_instance
	opened k1
	run --separate-stderr env RI_FAULT=close.outcome.after=die ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 137 ]
	ev=$(jsql "SELECT event_id FROM records WHERE action_ref = 'ledger.disclosed'")
	[ -n "$ev" ]
	n=$(records)
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
	[ "$(field outcome_event_id)" = "$ev" ]
	[[ "$(field landed_by)" =~ ^(invocation|sweep)$ ]]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
}

@test "close step 1.2a-1.2c, act section 10: Close after the lease expired writes nothing and answers recording-failure(outcome) (21)" {
	ri_instance
	opened k1
	ri_at 31
	n=$(records)
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 21 ]
	[ "$(field refused)" = recording-failure ]
	[ "$(field position)" = outcome ]
	[ "$(records)" -eq "$n" ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = open ]
}

@test "close step 1.2, journal write bound: 1 ms less than journal_write_bound of lease left -> 21, nothing written; exactly journal_write_bound left -> it writes" {
	# retry terminus 1, 2; journal write bound 1: Close asks remaining first, and writes nothing with less than journal_write_bound left
	ri_instance
	opened k1
	ri_at 27.001                           # lease ends at 30 s, jwb 3 s
	n=$(records)
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 21 ]
	[ "$(field refused)" = recording-failure ]
	[ "$(field position)" = outcome ]
	[ "$(records)" -eq "$n" ]
	ri_at 0
	opened k2
	ri_at 27
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
	[ "$(field landed_by)" = invocation ]
	[ "$(records)" -eq $((n + 2)) ]
}

@test "close step 3.1: Close appends exactly one outcome record -- the outcome action ref, the caller's actor, the outcome data -- and answers its event id" {
	ri_instance
	opened k1
	n=$(records)
	run --separate-stderr ri-close <<<"$(close_req "$A" '{"row":7,"note":"ok"}')"
	[ "$status" -eq 0 ]
	ev=$(field outcome_event_id)
	[ "$(records)" -eq $((n + 1)) ]
	rec=$(rd k1 | jq -c --arg e "$ev" '.invocations[0].records[] | select(.event_id == $e)')
	[ "$(jq -r .action_ref <<<"$rec")" = ledger.disclosed ]
	[ "$(jq -r .actor_ref <<<"$rec")" = alice ]
	[ "$(jq -c .payload.data <<<"$rec")" = '{"note":"ok","row":7}' ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = closed ]
}

@test "close step 3.3: an outcome_action_ref outside the kind's vocabulary -> 21 with an alert, nothing written, section released" {
	ri_instance
	opened k1
	n=$(records)
	run --separate-stderr ri-close <<<"$(close_req "$A" | jq -c '.outcome_action_ref = "ledger.shredded"')"
	[ "$status" -eq 21 ]
	[ "$(field refused)" = recording-failure ]
	[ "$(field position)" = outcome ]
	jq -e 'has("alert")' <<<"$output"
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = open ]
}

@test "close 1, Primitive policy 31: a wrong credential at Close -> 21 cause invalid-credential, nothing written, the section untouched; the owner's own close lands" {
	ri_instance
	opened k1
	n=$(records)
	run --separate-stderr ri-close <<<"$(close_req "$A" '{}' ri1_wrong)"
	[ "$status" -eq 21 ]
	[ "$(field refused)" = recording-failure ]
	[ "$(field position)" = outcome ]
	[ "$(field cause)" = invalid-credential ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "$(jq -r .invocation_id <<<"$A")" ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = open ]
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
}

@test "close step 3.8, Primitive policy 31: the owner revoked between Close's checks and its write -> 21, nothing written, section released, the intent stays open" {
	ri_instance
	opened k1
	paused_close "$A"
	ri-actor revoke alice >/dev/null
	n=$(records)
	resume_close
	[ "$CLOSE_RC" -eq 21 ]
	[ "$(jq -r .position <<<"$CLOSE_OUT")" = outcome ]
	[ "$(records "action_ref = 'ledger.disclosed'")" -eq 0 ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = open ]
}

@test "Primitive policy 29: close.outcome.before=fail (step-2, once) is retried under the section and lands (0), one outcome" {
	ri_instance
	opened k1
	n=$(records)
	run --separate-stderr env RI_FAULT=close.outcome.before=fail ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
	[ "$(field landed_by)" = invocation ]
	[ "$(records)" -eq $((n + 1)) ]
	[ "$(records "action_ref = 'ledger.disclosed'")" -eq 1 ]
	[ "$(holder k1)" = "" ]
}

@test "Primitive policy 29: close.outcome.before=fail3 (step-3, once) is retried under the section and lands (0), one outcome" {
	ri_instance
	opened k1
	n=$(records)
	run --separate-stderr env RI_FAULT=close.outcome.before=fail3 ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
	[ "$(records)" -eq $((n + 1)) ]
}

@test "close step 3.6a, 3.7, Primitive policy 30: retry_terminus counted(1) with close.outcome.before=fail -> 21, nothing written, released, intent open" {
	ri_instance
	ri_cfg '.kinds.ledger.retry_terminus = {"counted": 1}'
	opened k1
	n=$(records)
	run --separate-stderr env RI_FAULT=close.outcome.before=fail ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 21 ]
	[ "$(field refused)" = recording-failure ]
	[ "$(field position)" = outcome ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = open ]
}

@test "close step 3.6a, 3.7: retry_terminus counted(2) with the outcome write failing on both attempts -> 21, nothing written, released" {
	# retry terminus 3: counted(2) bounds the attempts and never the lease's end (the retries stay inside it); close step 3.5
	ri_instance
	ri_cfg '.kinds.ledger.retry_terminus = {"counted": 2}'
	opened k1
	n=$(records)
	# (arms listed nth-descending: see the RI_FAULT list test below)
	run --separate-stderr env RI_FAULT=close.outcome.before=fail@2,close.outcome.before=fail@1 \
	    ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 21 ]
	[ "$(field position)" = outcome ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
}

@test "faults.def RI_FAULT list: two arms of one point (close.outcome.before=fail@1,close.outcome.before=fail@2) each fire on their own pass" {
	ri_instance
	ri_cfg '.kinds.ledger.retry_terminus = {"counted": 2}'
	opened k1
	n=$(records)
	run --separate-stderr env RI_FAULT=close.outcome.before=fail@1,close.outcome.before=fail@2 \
	    ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 21 ]
	[ "$(records)" -eq "$n" ]
}

@test "faults.def append.section=delay:<ms> (issue 43's measured ceiling): every append is held <ms> -- ri-open's one append and ri-close's one -- and lands as without it; a malformed delay is 78" {
	ri_instance
	n=$(records)
	t=$(ms)
	A=$(open_req k1 | RI_FAULT=append.section=delay:400 ri-open)
	[ $(( $(ms) - t )) -ge 400 ]
	t=$(ms)
	run --separate-stderr env RI_FAULT=append.section=delay:400 ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
	[ $(( $(ms) - t )) -ge 400 ]
	[ "$(records)" -eq $((n + 2)) ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = closed ]
	for bad in delay: delay:x delay:-1 delay:5ms delay:60001 delay:99999999999999999999; do
		run --separate-stderr env RI_FAULT="append.section=$bad" ri-open <<<"$(open_req k2)"
		[ "$status" -eq 78 ]
		[[ "$stderr" == *"unknown action"* ]]
	done
	[ "$(records)" -eq $((n + 2)) ]
}

@test "faults.def append.section is inside the journal head's critical section (issue 43): a writer held there holds back another act's writer until it goes on" {
	# one shard: every act's writer takes the one head
	RI_INIT_CFG='.shards = 1' ri_instance
	mkdir -p "$T/f"
	mkfifo "$T/f/append.section"
	RI_FAULT=append.section=pause RI_FAULT_DIR="$T/f" \
	    ri-open <<<"$(open_req k1)" >"$T/a.out" 2>"$T/a.err" 3>&- &
	BG=$!
	wait_for "$T/f/append.section.reached"
	ri-open <<<"$(open_req k2)" >"$T/b.out" 2>"$T/b.err" 3>&- &
	b=$!
	sleep 0.5
	kill -0 "$b"                            # still waiting for the head
	[ ! -s "$T/b.out" ]
	echo >"$T/f/append.section"
	rc=0
	wait "$BG" || rc=$?
	BG=
	[ "$rc" -eq 0 ]
	wait "$b"                               # and then lands
	[ "$(act_rows k1)" -eq 1 ] && [ "$(act_rows k2)" -eq 1 ]
	[ "$(records "act_key = 'k1' AND seq < (SELECT min(seq) FROM records WHERE act_key = 'k2')")" -eq 1 ]
}

# pick CONDITION -- the first of the open acts s1, s2, ... whose records
# meet CONDITION (on their shard, say); empty when none does
pick() {
	jsql "SELECT act_key FROM records WHERE kind = 'ledger' AND act_key LIKE 's%' AND $1 ORDER BY act_key LIMIT 1"
}

# held_close KEY -- ri-close of the open act KEY (its answer in $T/o.KEY)
# paused inside its append's critical section (append.section), in the
# background ($BG); its output in $T/a.out, $T/a.err; echo >"$T/f/append.section" goes on
held_close() {
	mkdir -p "$T/f"
	mkfifo "$T/f/append.section"
	RI_FAULT=append.section=pause RI_FAULT_DIR="$T/f" \
	    ri-close <<<"$(close_req "$(cat "$T/o.$1")")" >"$T/a.out" 2>"$T/a.err" 3>&- &
	BG=$!
	wait_for "$T/f/append.section.reached"
}

@test "issue 43, shards (docs/SHARDS.md, lock order): a writer held in its shard's critical section holds back no act of another shard; an act of its own shard waits" {
	ri_pg_on || skip "SQLite has one writer whatever its shards"
	ri_instance
	# INTERFACE, third wave: 16 shards on PostgreSQL unless told
	[ "$(ri_shards)" -eq "${RI_TEST_SHARDS:-16}" ]
	[ "$(ri_shards)" -gt 1 ] || skip "one shard (RI_TEST_SHARDS)"
	# the test holds a section for seconds under load: the server ends a
	# writer idle past its budget (jwb less the allowance), so a longer one
	ri_cfg '.instance.journal_write_bound = "8s" | .instance.closure_latency = "60s"'
	# open acts; their records say which shard each is in (the routing is
	# keyed); each closing then appends to its act's shard
	for i in $(seq 1 24); do open_req "s$i" | ri-open >"$T/o.s$i"; done
	sa=$(jsql "SELECT shard FROM records WHERE kind = 'ledger' AND act_key LIKE 's%' GROUP BY shard
	    HAVING count(DISTINCT act_key) >= 2 ORDER BY shard LIMIT 1")
	[ -n "$sa" ]                    # 24 acts, 16 shards: one holds two
	a=$(pick "shard = $sa")
	same=$(pick "shard = $sa AND act_key <> '$a'")
	other=$(pick "shard <> $sa")
	held_close "$a"
	# another shard's act closes while the section is held
	run ri-close <<<"$(close_req "$(cat "$T/o.$other")")"
	[ "$status" -eq 0 ]
	# the held act's shard's act waits for it
	ri-close <<<"$(close_req "$(cat "$T/o.$same")")" >"$T/b.out" 2>"$T/b.err" 3>&- &
	b=$!
	sleep 0.5
	kill -0 "$b" || { echo "the act of the held shard closed while the section was held: $(cat "$T/b.out")"; false; }
	echo >"$T/f/append.section"
	rc=0
	wait "$BG" || rc=$?
	BG=
	[ "$rc" -eq 0 ] || { echo "the held close: $rc $(cat "$T/a.err")"; false; }
	wait "$b" || { echo "the act of the held shard: $(cat "$T/b.out" "$T/b.err")"; false; }
	# each act its intent and its outcome; the held act's seq was given
	# before the other shard's, which committed first: a gap the audit
	# reads as allocation order, not a loss (Check 8.1.1 per shard)
	[ "$(act_rows "$a")" -eq 2 ] && [ "$(act_rows "$other")" -eq 2 ] && [ "$(act_rows "$same")" -eq 2 ]
	[ "$(jsql "SELECT max(seq) FROM records WHERE act_key = '$a'")" -lt \
	    "$(jsql "SELECT max(seq) FROM records WHERE act_key = '$other'")" ]
	run ri-audit
	[ "$status" -eq 0 ]
}

@test "issue 43, shards, issue 41 point 1: an outcome held in its shard's section holds shard 0's head shared -- a rebinding (audit.bound, shard 0's) waits for it, so the outcome's bindings guard judged before its COMMIT is exact" {
	ri_pg_on || skip "SQLite has one writer whatever its shards"
	RI_INIT_CFG='.shards = 16' ri_instance
	ri_cfg '.instance.journal_write_bound = "8s" | .instance.closure_latency = "60s"'   # (held for seconds: above)
	ri-actor add ledger-reconciler-2 --service --credential-file "$T/r2.cred" >/dev/null
	for i in $(seq 1 8); do open_req "s$i" | ri-open >"$T/o.s$i"; done
	a=$(pick "shard <> 0")
	[ -n "$a" ] || skip "8 acts all drew shard 0"
	sa=$(jsql "SELECT shard FROM records WHERE kind = 'ledger' AND act_key = '$a' LIMIT 1")
	# the rebinding writer: an act of another shard than the held one's, so
	# only shard 0's head can hold it back
	r=$(pick "shard <> $sa")
	[ -n "$r" ] || skip "8 acts all drew one shard"
	nb=$(records "action_ref = 'audit.bound'")       # (the bounds above are bindings too)
	held_close "$a"
	# the kind rebound: the next outcome records the new binding in shard 0
	ri_cfg '.kinds.ledger.service_identity = {"actor_ref": "ledger-reconciler-2", "credential_file": "r2.cred"}'
	ri-close <<<"$(close_req "$(cat "$T/o.$r")")" >"$T/b.out" 2>"$T/b.err" 3>&- &
	b=$!
	sleep 0.5
	kill -0 "$b" || { echo "the rebinding landed while an outcome held its shard's section: $(cat "$T/b.out" "$T/b.err")"; false; }
	[ "$(records "action_ref = 'audit.bound'")" -eq "$nb" ]
	echo >"$T/f/append.section"
	rc=0
	wait "$BG" || rc=$?
	BG=
	[ "$rc" -eq 0 ] || { echo "ri-close exited $rc: $(cat "$T/a.err")"; false; }
	wait "$b" || { echo "the rebinding close: $(cat "$T/b.out" "$T/b.err")"; false; }
	[ "$(records "action_ref = 'audit.bound'")" -eq $((nb + 1)) ] ||
	    { echo "audit.bound: $(jsql "SELECT seq, act_key, shard FROM records WHERE action_ref = 'audit.bound'")"; false; }
	run ri-audit
	[ "$status" -eq 0 ]
}

@test "close step 3.6a: retry_terminus counted(2) with only the first attempt failing -> the second lands (0)" {
	ri_instance
	ri_cfg '.kinds.ledger.retry_terminus = {"counted": 2}'
	opened k1
	n=$(records)
	run --separate-stderr env RI_FAULT=close.outcome.before=fail@1 ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
	[ "$(records)" -eq $((n + 1)) ]
}

# The release frees the section only as its holder's take wrote it
# (issue 43: on PostgreSQL in one round trip, the row matched on holder,
# expiry, token and MAC as the outcome's append read it under the head's
# lock; RI_NC_RELEASE_UNMATCHED frees whatever row stands).
@test "act section 14, issue 43: a Close paused after its outcome landed, past its lease, while another invocation of the act took the section -- its release leaves the new holder's section held, and the new holder closes under it" {
	ri_instance
	opened k1
	mkdir -p "$T/f"
	mkfifo "$T/f/close.outcome.after"
	close_req "$A" >"$T/close.req"
	RI_FAULT=close.outcome.after=pause RI_FAULT_DIR="$T/f" \
	    ri-close <"$T/close.req" >"$T/close.out" 2>"$T/close.err" 3>&- &
	bg=$!
	wait_for "$T/f/close.outcome.after.reached"
	# past the lease (completion_bound 30 s): the act opens again, its
	# section taken by the new invocation
	ri_at 40
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 0 ]
	B=$output
	new=$(holder k1)
	[ -n "$new" ]
	echo >"$T/f/close.outcome.after"
	rc=0
	wait "$bg" || rc=$?
	[ "$rc" -eq 0 ]
	[ "$(holder k1)" = "$new" ] || { echo "a stale release freed the new holder's section: holder '$(holder k1)'"; false; }
	run --separate-stderr ri-close <<<"$(close_req "$B")"
	[ "$status" -eq 0 ]
	[ "$(holder k1)" = "" ]
}

@test "Primitive policy 32-36a: close.outcome.after=lose -> read back after journal_write_bound, adopted (0), one outcome (no blind retry)" {
	ri_instance fast
	opened k1
	n=$(records)
	t=$(ms)
	run --separate-stderr env RI_FAULT=close.outcome.after=lose ri-close <<<"$(close_req "$A")"
	waited=$(( $(ms) - t ))
	[ "$status" -eq 0 ]
	[ "$waited" -ge 300 ]
	[ "$(records)" -eq $((n + 1)) ]
	[ "$(field outcome_event_id)" = "$(jsql "SELECT event_id FROM records WHERE action_ref = 'ledger.disclosed'")" ]
	[ "$(holder k1)" = "" ]
}

@test "Primitive policy 27-28: close.outcome.after=fail (step-4) -> success with a hard alert, one outcome (no retry)" {
	ri_instance
	opened k1
	n=$(records)
	run --separate-stderr env RI_FAULT=close.outcome.after=fail ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
	jq -e 'has("alert")' <<<"$output"
	[ -n "$(field outcome_event_id)" ]
	[ "$(records)" -eq $((n + 1)) ]
	[ "$(holder k1)" = "" ]
}

@test "Primitive policy 27-28: a retention-source invalid-request at the outcome (close.outcome.before=noretention) -> read back, success with a hard alert" {
	ri_instance
	opened k1
	n=$(records)
	run --separate-stderr env RI_FAULT=close.outcome.before=noretention ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
	jq -e 'has("alert")' <<<"$output"
	[ "$(records)" -eq $((n + 1)) ]
	[ "$(field outcome_event_id)" = "$(jsql "SELECT event_id FROM records WHERE action_ref = 'ledger.disclosed'")" ]
}

@test "Rejection path (the caller's retry after outcome): after a 21 ri-read shows the act open, a re-run open is act-in-flight (12); after the sweep, closed with recovery" {
	ri_instance
	opened k1 '{"pairing_datum":"pd-k1"}'
	inv=$(jq -r .invocation_id <<<"$A")
	RI_PAIRING_DATUM=pd-k1 ledger-disclose --store "$T/ledger.db" --subject s --recipient r >/dev/null
	ri_at 31                               # the stall: Close arrives past the lease
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 21 ]
	[ "$(state_of k1 "$inv")" = open ]
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k1)"
	[ "$status" -eq 12 ]
	[ "$(field invocation_id)" = "$inv" ]
	[ "$(records)" -eq "$n" ]
	command -v ri-sweep >/dev/null || skip "the sweep half needs ri-sweep"
	ri_at 33
	ri-sweep >/dev/null
	[ "$(state_of k1 "$inv")" = closed ]
	[ "$(rd k1 "$inv" | jq -r '.invocations[0].records[-1].payload.recovery')" = true ]
}

@test "close step 1.2, refuse step 1.4: Close or Refuse after Yield (a yielded caller) writes nothing and answers 21 or 22" {
	ri_instance
	opened k1
	ri-yield <<<"$(yield_req "$A")" >/dev/null
	n=$(records)
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 21 ]
	[ "$(field position)" = outcome ]
	[ "$(records)" -eq "$n" ]
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A")"
	[ "$status" -eq 22 ]
	[ "$(field position)" = refusal ]
	[ "$(records)" -eq "$n" ]
}

# tamper_intent OPEN_ANSWER -- as an attacker with file access: drop the
# append-only trigger, change one byte of the intent's payload, put it back
tamper_intent() {
	local ev
	ev=$(jq -r .intent_event_id <<<"$1")
	attacker_sql "UPDATE records SET payload = replace(payload, '\"data\":{}', '\"data\":{ }') WHERE event_id = '$ev'"
}

@test "close step 2.4, INTERFACE 30: a Close whose read of its intent meets a tampered intent writes nothing: 21 with cause integrity, the section untouched (who calls cannot be decided)" {
	ri_instance
	opened k1
	tamper_intent "$A"
	n=$(records)
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 21 ]
	[ "$(field position)" = outcome ]
	[ "$(field cause)" = integrity ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "$(jq -r .invocation_id <<<"$A")" ]
}

@test "INTERFACE 30: a Refuse whose re-read meets a tampered intent writes nothing: 22 with constituent_code and cause integrity" {
	ri_instance
	opened k1
	tamper_intent "$A"
	n=$(records)
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A")"
	[ "$status" -eq 22 ]
	[ "$(field position)" = refusal ]
	[ "$(field constituent_code)" = 3 ]
	[ "$(field cause)" = integrity ]
	[ "$(records)" -eq "$n" ]
}

# ---- Refuse ------------------------------------------------------------------

@test "refuse step 3.1, 3.9-3.10: Refuse lands ledger.refused with reason and constituent_code (0), state refused, section released" {
	ri_instance
	opened k1
	inv=$(jq -r .invocation_id <<<"$A")
	n=$(records)
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A" "$ALICE" 3)"
	[ "$status" -eq 0 ]
	ev=$(field refusal_event_id)
	[ -n "$ev" ]
	[ "$(records)" -eq $((n + 1)) ]
	[ "$(holder k1)" = "" ]
	run rd k1 "$inv"
	[ "$(jq -r '.invocations[0].state' <<<"$output")" = refused ]
	jq -e --arg ev "$ev" '.invocations[0].records[-1] |
	    .event_id == $ev and .action_ref == "ledger.refused" and .actor_ref == "alice" and
	    .payload.constituent_code == 3 and .payload.reason == "the store refused the write" and
	    .payload.invocation_id != null and .payload.intent_event_id != null' <<<"$output"
}

@test "refuse step 2.2-2.4: Refuse on an invocation whose outcome landed while the section is still held -> already-accounted (16) naming it, appends nothing" {
	ri_instance
	opened k1
	run --separate-stderr env RI_FAULT=close.outcome.after=die ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 137 ]
	[ "$(holder k1)" = "$(jq -r .invocation_id <<<"$A")" ]
	ev=$(jsql "SELECT event_id FROM records WHERE action_ref = 'ledger.disclosed'")
	n=$(records)
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A")"
	[ "$status" -eq 16 ]
	[ "$(field refused)" = already-accounted ]
	[ "$(field closing_event_id)" = "$ev" ]
	[ "$(records)" -eq "$n" ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = closed ]
}

@test "refuse step 1.2a-1.2b: Refuse after the lease expired -> recording-failure(refusal) (22) carrying constituent_code, nothing written, intent open" {
	# refuse steps 1, 1.1: Refuse asks remaining before anything else; refuse step 2 runs only with a lease
	ri_instance
	opened k1
	ri_at 31
	n=$(records)
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A" "$ALICE" 4)"
	[ "$status" -eq 22 ]
	[ "$(field refused)" = recording-failure ]
	[ "$(field position)" = refusal ]
	[ "$(field constituent_code)" = 4 ]
	[ "$(records)" -eq "$n" ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = open ]
}

@test "close 1, refuse step 3.7: a wrong credential at Refuse -> 22 carrying constituent_code and cause invalid-credential, nothing written, intent left open, the section untouched; the owner's refusal lands" {
	ri_instance
	opened k1
	n=$(records)
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A" ri1_wrong '"E_STORE"')"
	[ "$status" -eq 22 ]
	[ "$(field refused)" = recording-failure ]
	[ "$(field position)" = refusal ]
	[ "$(field constituent_code)" = E_STORE ]
	[ "$(field cause)" = invalid-credential ]
	[ "$(records)" -eq "$n" ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = open ]
	[ "$(holder k1)" = "$(jq -r .invocation_id <<<"$A")" ]
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A" "$ALICE" '"E_STORE"')"
	[ "$status" -eq 0 ]
}

@test "refuse step 3.7, 3.10: the owner revoked between Refuse's checks and its write -> 22 carrying constituent_code, nothing written, intent left open, section released" {
	ri_instance
	opened k1
	mkdir -p "$T/f"
	mkfifo "$T/f/refuse.after_reread"
	refuse_req "$A" "$ALICE" '"E_STORE"' >"$T/refuse.req"
	RI_FAULT=refuse.after_reread=pause RI_FAULT_DIR="$T/f" \
	    ri-refuse <"$T/refuse.req" >"$T/refuse.out" 2>"$T/refuse.err" 3>&- &
	BG=$!
	wait_for "$T/f/refuse.after_reread.reached"
	ri-actor revoke alice >/dev/null
	n=$(records)
	echo >"$T/f/refuse.after_reread"
	rc=0
	wait "$BG" || rc=$?
	BG=
	[ "$rc" -eq 22 ]
	[ "$(jq -r .constituent_code "$T/refuse.out")" = E_STORE ]
	[ "$(records)" -eq "$n" ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = open ]
	[ "$(holder k1)" = "" ]                # refuse step 3.10
}

@test "refuse step 3.5: refuse.refusal.before=fail (step-2) -> 22 carrying constituent_code, nothing written, intent left open" {
	ri_instance
	opened k1
	n=$(records)
	run --separate-stderr env RI_FAULT=refuse.refusal.before=fail ri-refuse <<<"$(refuse_req "$A")"
	[ "$status" -eq 22 ]
	[ "$(field position)" = refusal ]
	[ "$(field constituent_code)" = 3 ]
	[ "$(records)" -eq "$n" ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = open ]
}

@test "refuse step 3.3-3.4: refuse.refusal.after=fail (step-4) -> read back, success with an alert, one refusal (no retry)" {
	ri_instance
	opened k1
	n=$(records)
	run --separate-stderr env RI_FAULT=refuse.refusal.after=fail ri-refuse <<<"$(refuse_req "$A")"
	[ "$status" -eq 0 ]
	jq -e 'has("alert") and (.refusal_event_id | length > 0)' <<<"$output"
	[ "$(records)" -eq $((n + 1)) ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = refused ]
}

@test "refuse step 3.6: refuse.refusal.before=lose -> one read-back after journal_write_bound finds nothing -> 22, intent left open" {
	ri_instance fast
	opened k1
	n=$(records)
	run --separate-stderr env RI_FAULT=refuse.refusal.before=lose ri-refuse <<<"$(refuse_req "$A")"
	[ "$status" -eq 22 ]
	[ "$(field constituent_code)" = 3 ]
	[ "$(records)" -eq "$n" ]
	[ "$(state_of k1 "$(jq -r .invocation_id <<<"$A")")" = open ]
}

@test "refuse step 3.6: refuse.refusal.after=lose (landed, reply lost) -> read back after journal_write_bound, adopted (0), one refusal" {
	ri_instance fast
	opened k1
	n=$(records)
	run --separate-stderr env RI_FAULT=refuse.refusal.after=lose ri-refuse <<<"$(refuse_req "$A")"
	[ "$status" -eq 0 ]
	[ "$(field refusal_event_id)" = "$(jsql "SELECT event_id FROM records WHERE action_ref = 'ledger.refused'")" ]
	[ "$(records)" -eq $((n + 1)) ]
}

@test "refuse step 0.2: Refuse for a pair no Open returned writes nothing (22)" {
	ri_instance
	opened k1
	n=$(records)
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A" | jq -c '.invocation_id = "inv_00000000000000000000000000000000"')"
	[ "$status" -eq 22 ]
	[ "$(field position)" = refusal ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "$(jq -r .invocation_id <<<"$A")" ]
}

# ---- Yield -------------------------------------------------------------------

@test "yield 1, yield 4: Yield answers {\"ok\":true}, writes nothing, releases (the next open finds the intent in flight at once: 12, not a 30 s wait)" {
	ri_instance
	opened k1
	inv=$(jq -r .invocation_id <<<"$A")
	n=$(records)
	run --separate-stderr ri-yield <<<"$(yield_req "$A")"
	[ "$status" -eq 0 ]
	jq -e '. == {"ok": true}' <<<"$output"
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "" ]
	t=$(ms)
	run --separate-stderr timeout 20 ri-open <<<"$(open_req k1)"
	[ "$status" -eq 12 ]
	[ "$(field invocation_id)" = "$inv" ]
	[ $(( $(ms) - t )) -lt 5000 ]
	[ "$(state_of k1 "$inv")" = open ]     # yield 4: the intent is not closed
}

@test "yield 1, close 1: a Yield naming another invocation (no intent, so no actor) is invalid-credential (10), releases nothing and writes nothing (the holder's section stays held)" {
	ri_instance
	opened k1
	n=$(records)
	run --separate-stderr ri-yield <<<"$(yield_req "$A" | jq -c '.invocation_id = "inv_00000000000000000000000000000000"')"
	[ "$status" -eq 10 ]
	[ "$(field refused)" = invalid-credential ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "$(jq -r .invocation_id <<<"$A")" ]
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
}

@test "INTERFACE credentials: a credential is never stored in clear nor printed, even when it is refused" {
	ri_instance
	opened k1
	close_req "$A" | ri-close >/dev/null
	run --separate-stderr ri-open <<<"$(open_req k2 '{}' alice "${ALICE}x")"
	[ "$status" -eq 10 ]
	[[ "$output$stderr" != *"${ALICE}"* ]]
	run --separate-stderr ri-close <<<"$(close_req "$A" '{}' "${ALICE}y")"
	[[ "$output$stderr" != *"${ALICE}"* ]]
	sqlite3 "$T/journal.db" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
	! grep -a -q -F "$ALICE" "$T"/journal.db* || false
	! grep -a -q -F "$(cat "$T/reconciler.cred")" "$T"/journal.db*
}

# ---- Race --------------------------------------------------------------------

# race_worker KEY N OUT -- N rounds of open + close; one line per exit code
race_worker() {
	local i a rc
	for i in $(seq 1 "$2"); do
		a=$(open_req "$1" | ri-open 2>>"$3.err") && rc=0 || rc=$?
		echo "open $rc"
		if [ "$rc" -eq 0 ]; then
			close_req "$a" | ri-close 2>>"$3.err" >/dev/null && rc=0 || rc=$?
			echo "close $rc"
		fi
	done >"$3"
}

@test "open invocations 1, open step 2-3: 3 processes x 100 open+close on one act (loops: a third under make check and make test-pg) never hold two open intents at once; every loser got 12 or 14" {
	ri_instance fast
	ri_cfg '.instance.read_cap = 1000'
	n=$(loops 100)
	pids=()
	for p in 1 2 3; do
		race_worker same "$n" "$T/w$p" </dev/null 3>&- &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	opens=$(cat "$T"/w? | grep -c '^open 0$' || true)
	# every open answered 0, 12 or 14; every close of a granted open landed.
	# On PostgreSQL also 15, nothing written, when the server ended a session
	# a loaded machine left idle in its transaction past journal_write_bound
	# (300 ms here; the session's idle_in_transaction_session_timeout, issue
	# 13 item 4): each such 15 has its own journal-unavailable line
	ok='^(open (0|12|14)|close 0)$'
	if ri_pg_on; then
		ok='^(open (0|12|14|15)|close 0)$'
		[ "$(cat "$T"/w? | grep -c '^open 15$' || true)" -le "$(cat "$T"/w?.err | grep -c 'ri-open: journal-unavailable: ' || true)" ]
	fi
	bad=$(cat "$T"/w? | grep -v -E "$ok" || true)
	[ -z "$bad" ] || { echo "other answers: $(sort "$T"/w? | uniq -c | tr '\n' ' '); $(cat "$T"/w?.err)"; false; }
	[ "$(cat "$T"/w? | wc -l)" -eq $((3 * n + opens)) ]
	run rd same
	[ "$(jq '.invocations | length' <<<"$output")" -eq "$opens" ]
	jq -e '.binding_duplicate == false and ([.invocations[].binding_duplicate] | any | not)' <<<"$output"
	# every invocation but the newest is closed (the newest may be open)
	jq -e '[.invocations[1:][].state] | all(. == "closed")' <<<"$output"
	# one intent, one closing each
	jq -e '[.invocations[] | (.records | length) <= 2] | all' <<<"$output"
	# no interleaving: each intent lands after the previous invocation's closing
	jq -e '[.invocations[] | {i: .records[0].seq, c: (.records[1].seq // 1e18)}] | sort_by(.i) as $v |
	    [range(1; $v | length) | select($v[.].i < $v[. - 1].c)] | length == 0' <<<"$output"
}

@test "act section 1, open step 2: distinct act keys never block each other (3 processes on 3 keys all answer 0, 30 rounds each (loops); a held key does not delay another)" {
	ri_instance fast
	# The property is the act section's, keyed by the act (act section 1,
	# open step 2): distinct keys never answer 12 and never wait on a held
	# key.  The journal's one write lock
	# is shared by every key by design; under the fast shape's 200 ms lock
	# budget a disk stall on a VM refused a write with 14 about one run in
	# fifty (stop 28's CI), so this test gives the lock 900 ms (1 s less
	# the allowance: about the most Instance start 6 allows under the fast
	# shape's 3 s completion_bound; closure_latency and run_bound follow,
	# Instance start 8 and 7) and keeps the fast shape's act timings.
	ri_cfg '.instance.journal_write_bound = "1s" | .instance.read_bound = "300ms" | .instance.closure_latency = "3s" | .instance.run_bound = "8s"'
	opened held                            # held for 3 s of real time
	t=$(ms)
	run --separate-stderr ri-open <<<"$(open_req other)"
	[ "$status" -eq 0 ]
	[ $(( $(ms) - t )) -lt 1500 ]
	n=$(loops 30)
	pids=()
	for p in 1 2 3; do
		race_worker "key-$p" "$n" "$T/d$p" </dev/null 3>&- &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	# what failed, and why, when one does
	cat "$T"/d? | grep -v -E '^(open|close) 0$' | sort | uniq -c
	cat "$T"/d?.err
	# never the section's 12 (the count below holds it too; this names it)
	[ -z "$(grep -h -E '^open 12$' "$T"/d? || true)" ]
	[ "$(cat "$T"/d? | grep -c -E '^(open|close) 0$')" -eq $((6 * n)) ]
}

# ---- Bad requests -------------------------------------------------------------

@test "INTERFACE 65: not JSON, wrong types, unknown field, missing field, a non-object, oversize stdin -> 65 and nothing written" {
	ri_instance
	n=$(records)
	good=$(open_req k1)
	for req in 'not json' \
	    "$(jq -c '.act_key = 5' <<<"$good")" \
	    "$(jq -c '.intent_data = "x"' <<<"$good")" \
	    "$(jq -c '.surprise = true' <<<"$good")" \
	    "$(jq -c 'del(.actor_ref)' <<<"$good")" \
	    '[1,2]' \
	    '{"kind":"ledger"}{"kind":"ledger"}' \
	    ''; do
		run --separate-stderr ri-open <<<"$req"
		[ "$status" -eq 65 ] || { echo "request <$req> -> $status"; false; }
	done
	head -c 300000 /dev/zero | tr '\0' ' ' >"$T/big.req"
	printf '%s' "$good" >>"$T/big.req"
	run --separate-stderr ri-open <"$T/big.req"
	[ "$status" -eq 65 ]
	[ "$(records)" -eq "$n" ]
	[ "$(jsql 'SELECT count(*) FROM leases')" -eq 0 ]
}

@test "INTERFACE 65, Action wiring 1: unknown and mistyped fields: ri-close 21 and ri-refuse 22 with cause malformed (their position), ri-yield 65; nothing written, the section kept" {
	ri_instance
	opened k1
	n=$(records)
	run --separate-stderr ri-close <<<"$(close_req "$A" | jq -c '.extra = 1')"
	[ "$status" -eq 21 ]
	[ "$(field position)/$(field cause)" = outcome/malformed ]
	run --separate-stderr ri-close <<<"$(close_req "$A" | jq -c '.outcome_data = [1]')"
	[ "$status" -eq 21 ]
	[ "$(field position)/$(field cause)" = outcome/malformed ]
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A" | jq -c 'del(.reason)')"
	[ "$status" -eq 22 ]
	[ "$(field position)/$(field cause)/$(field constituent_code)" = refusal/malformed/3 ]
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A" | jq -c '.constituent_code = [3]')"
	[ "$status" -eq 22 ]
	[ "$(field position)/$(field cause)" = refusal/malformed ]
	run --separate-stderr ri-yield <<<"$(yield_req "$A" | jq -c '.extra = 1')"
	[ "$status" -eq 65 ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k1)" = "$(jq -r .invocation_id <<<"$A")" ]
}

@test "INTERFACE 64: a flag disagreeing with stdin (ri-open --act-key x -, stdin act_key y) is a usage error, nothing written" {
	ri_instance
	n=$(records)
	run --separate-stderr ri-open --act-key x - <<<"$(open_req y)"
	[ "$status" -eq 64 ]
	[ "$(records)" -eq "$n" ]
	[ "$(jsql 'SELECT count(*) FROM leases')" -eq 0 ]
	# agreeing flags are fine
	run --separate-stderr ri-open --act-key y --kind ledger - <<<"$(open_req y)"
	[ "$status" -eq 0 ]
}

@test "INTERFACE 11: an empty act_key or one over the cap is invalid-request (11), not a malformed request (65)" {
	ri_instance
	run --separate-stderr ri-open <<<"$(open_req '')"
	[ "$status" -eq 11 ]
	run --separate-stderr ri-open <<<"$(open_req "$(head -c 300 /dev/zero | tr '\0' k)")"
	[ "$status" -eq 11 ]
}

@test "issue 44 point 10: a required flag left out is a usage error (64) naming it, from every command given flags -- as from ri-run; a request on stdin that lacks the field stays malformed (65)" {
	ri_instance
	export RI_CREDENTIAL=$ALICE
	run --separate-stderr ri-open --act-key k --actor alice
	[ "$status" -eq 64 ]
	[[ "$stderr" == "ri-open: --kind is required"* ]]
	run --separate-stderr ri-run --act-key k --actor alice -- true
	[ "$status" -eq 64 ]
	[[ "$stderr" == "ri-run: --kind is required"* ]]
	run --separate-stderr ri-yield --kind ledger --act-key k
	[ "$status" -eq 64 ]
	[[ "$stderr" == "ri-yield: --invocation-id is required"* ]]
	run --separate-stderr ri-read --act-key k
	[ "$status" -eq 64 ]
	[[ "$stderr" == "ri-read: --kind is required"* ]]
	run --separate-stderr ri-open <<<'{"act_key":"k","actor_ref":"alice"}'
	[ "$status" -eq 65 ]
	[[ "$stderr" == *'the request lacks "kind"'* ]]
	# a positioned command answers on its position, whatever was missing
	run --separate-stderr ri-close --kind ledger
	[ "$status" -eq 21 ]
}

@test "refuse step 3.8: a refusal the journal refuses as too large (a reason over payload_cap) is recording-failure(refusal) (22) with the job's code, nothing written, the intent left open" {
	ri_instance
	opened r1
	n=$(records)
	big=$(head -c 70000 /dev/zero | tr '\0' r)
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A" | jq -c --arg r "$big" '.reason = $r')"
	[ "$status" -eq 22 ]
	[ "$(field position)" = refusal ]
	[ "$(field constituent_code)" = 3 ]
	[ "$(records)" -eq "$n" ]
	[ "$(rd r1 | jq -r '.invocations[0].state')" = open ]
}
