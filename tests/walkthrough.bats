#!/usr/bin/env bats
# walkthrough.bats -- the spec's "Walkthrough -- a disclosure, three ways"
# (the clean run, the crash, the stall) and "The refusal", over the real
# binaries with the example adopter: ledger-disclose is the act, run under
# ri-run; ledger-probe is the kind's probe; ledger-admin inspects the store.
#
# The instance carries the walkthrough's numbers (tests/lib/common.bash):
# completion_bound 30 s, allowance 2 s -> examine edge +32 s, abandon edge
# +34 s; commit_fence none; service identity ledger-reconciler.  Time moves
# only through RI_NOW (ri_at SECONDS).
#
# test-pg: backend

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"
load "$BATS_TEST_DIRNAME/lib/sweep"

setup() {
	ri_instance
	export RI_CREDENTIAL=$ALICE
}

teardown() {
	if [ -n "${T:-}" ]; then rm -rf "$T"; fi
}

# read_act KEY -- ri-read's answer for (ledger, KEY)
read_act() { ri-read <<<"{\"kind\":\"ledger\",\"act_key\":\"$1\"}"; }

# disclose KEY [ri-run flags...] -- one disclosure of (KEY, bob, full) under ri-run
disclose() {
	local key=$1
	shift
	ri-run --answer-fd 1 --kind ledger --act-key "$key" --actor alice \
	    --intent-data "{\"subject\":\"$key\",\"recipient\":\"bob\",\"scope\":\"full\"}" \
	    --pre-commit-exit 2,3,4 "$@" -- \
	    ledger-disclose --store "$T/ledger.db" --subject "$key" --recipient bob --scope full
}

@test "the clean run: one intent, one outcome, landed_by invocation, nothing for the sweep (Walkthrough: the clean run; close step 4.3)" {
	# close steps 1, 3, 4: the lease checked, the outcome written, the answer returned
	run --separate-stderr disclose alice/bob/full
	[ "$status" -eq 0 ]
	[ "$(jq -r .landed_by <<<"$output")" = invocation ]
	out_ev=$(jq -r .outcome_event_id <<<"$output")

	read_act alice/bob/full >"$T/read.json"
	[ "$(jq '.invocations | length' "$T/read.json")" -eq 1 ]
	[ "$(jq -r '.invocations[0].state' "$T/read.json")" = closed ]
	[ "$(jq -r '.invocations[0].binding_duplicate' "$T/read.json")" = false ]
	[ "$(jq -c '[.invocations[0].records[].action_ref]' "$T/read.json")" = '["ledger.intended","ledger.disclosed"]' ]
	[ "$(jq -r '.invocations[0].records[1].event_id' "$T/read.json")" = "$out_ev" ]
	# one writer: the outcome is alice's own, no recovery
	[ "$(jq -r '.invocations[0].records[1].actor_ref' "$T/read.json")" = alice ]
	[ "$(jq -r '.invocations[0].records[1].payload.recovery // "absent"' "$T/read.json")" = absent ]
	# the outcome data is what the act printed, equal to the store's row
	dsc=$(ledger-admin --store "$T/ledger.db" list | jq -r .disclosure_id)
	[ "$(jq -r '.invocations[0].records[1].payload.data.disclosure_id' "$T/read.json")" = "$dsc" ]
	[ "$(records "kind='ledger'")" -eq 2 ]

	ri_at 33
	sweep
	[ "$(t examined)" -eq 0 ]
	[ "$(records "kind='ledger'")" -eq 2 ]
}

@test "the crash: in flight at +20 s the sweep examines nothing; at +33 s the probe reads committed and the sweep writes recovery_intended then ledger.disclosed (Walkthrough: the crash; reconcile steps 1.2, 3.2; Invariant 7.1)" {
	run -137 env RI_FAULT=run.after_act=die ri-run --kind ledger --act-key alice/bob/full --actor alice \
	    --intent-data '{"subject":"alice","recipient":"bob","scope":"full"}' --pre-commit-exit 2,3,4 -- \
	    ledger-disclose --store "$T/ledger.db" --subject alice --recipient bob --scope full
	# the act committed, its record is owed
	[ "$(ledger-admin --store "$T/ledger.db" count)" -eq 1 ]
	inv=$(read_act alice/bob/full | jq -r '.invocations[0].invocation_id')
	intent_ev=$(read_act alice/bob/full | jq -r '.invocations[0].records[0].event_id')
	[ "$(read_act alice/bob/full | jq -r '.invocations[0].state')" = open ]

	# +20 s: still in flight (examine edge = +32 s) -- nothing examined, nothing written
	ri_at 20
	sweep
	[ "$(t examined)" -eq 0 ]
	[ "$(records "invocation_id='$inv'")" -eq 1 ]

	# +33 s: past the examine edge -- probe, recovery_intended, outcome
	ri_at 33
	sweep
	[ "$(t examined)" -eq 1 ]
	[ "$(t closed)" -eq 1 ]

	read_act alice/bob/full >"$T/read.json"
	[ "$(jq -r '.invocations[0].state' "$T/read.json")" = closed ]
	[ "$(jq -c '[.invocations[0].records[].action_ref]' "$T/read.json")" = \
	    '["ledger.intended","ledger.recovery_intended","ledger.disclosed"]' ]
	# both under the service identity, acting for alice
	[ "$(jq -c '[.invocations[0].records[1:][] | .actor_ref] | unique' "$T/read.json")" = '["ledger-reconciler"]' ]
	[ "$(jq -c '[.invocations[0].records[1:][] | .payload.acting_actor_ref] | unique' "$T/read.json")" = '["alice"]' ]
	[ "$(jq -r '.invocations[0].records[1].payload.plan' "$T/read.json")" = ledger.disclosed ]
	[ "$(jq -r '.invocations[0].records[2].payload.recovery' "$T/read.json")" = true ]
	[ "$(jq -r '.invocations[0].records[2].payload.intent_event_id' "$T/read.json")" = "$intent_ev" ]
	[ "$(jq -r '.invocations[0].records[2].payload.invocation_id' "$T/read.json")" = "$inv" ]
	# the outcome carries only what the store re-derives: its own row
	ledger-admin --store "$T/ledger.db" list >"$T/row.json"
	[ "$(jq -c '.invocations[0].records[2].payload.data' "$T/read.json")" = \
	    "$(jq -c '{disclosure_id, recipient, subject}' "$T/row.json")" ]
	# accounted for: nothing on the findings register
	[ -z "$(ri-findings)" ]

	# a later run finds nothing left
	ri_at 95
	sweep
	[ "$(t examined)" -eq 0 ]
}

@test "the stall: at +31 s ri-close answers 21 and writes nothing; at +33 s an empty store escalates not-observed; an operator abandons it -> resolved (Walkthrough: the stall; close step 1.2; reconcile step 3.5; commit 14; resolve 15, 20)" {
	ledger-admin --store "$T/ledger.db" init >/dev/null
	open=$(open_req alice/bob/full '{"subject":"alice","recipient":"bob","scope":"full","pairing_datum":"pd-stall"}' | ri-open)
	inv=$(jq -r .invocation_id <<<"$open")
	before=$(act_records)

	# the invocation reaches Close after its lease: nothing written, 21
	ri_at 31
	run --separate-stderr ri-close <<<"$(close_req "$open" '{"disclosure_id":"dsc-late"}')"
	[ "$status" -eq 21 ]
	[ "$(jq -r .refused <<<"$output")" = recording-failure ]
	[ "$(jq -r .position <<<"$output")" = outcome ]
	[ "$(act_records)" -eq "$before" ]

	# the store never applied the write: not-committed, and with no fence
	# that is not final -- escalated with cause not-observed
	ri_at 33
	sweep
	[ "$(t examined)" -eq 1 ]
	[ "$(t escalated)" -eq 1 ]
	[ "$(t abandoned)" -eq 0 ]
	esc=$(jsql "SELECT event_id FROM records WHERE invocation_id='$inv' AND action_ref='ledger.escalated'")
	[ -n "$esc" ]
	read_act alice/bob/full >"$T/read.json"
	[ "$(jq -r '.invocations[0].state' "$T/read.json")" = escalated ]
	[ "$(jq -r '.invocations[0].records[-1].payload.cause' "$T/read.json")" = not-observed ]
	[ "$(jq -r '.invocations[0].records[-1].actor_ref' "$T/read.json")" = ledger-reconciler ]
	[ "$(records "action_ref='ledger.abandoned'")" -eq 0 ]

	# the operator, once the store has been quiet long enough
	BOB=$(ri-actor add bob | jq -r .credential)
	ri_at 700
	req=$(jq -c --arg c "$BOB" '{kind, act_key, invocation_id, intent_event_id, actor_ref:"bob",
	    credential:$c, disposition:{abandoned:{cause:"store quiet for ten minutes"}}}' <<<"$open")
	run --separate-stderr ri-resolve <<<"$req"
	[ "$status" -eq 0 ]
	ab=$(jq -r .closing_event_id <<<"$output")
	read_act alice/bob/full >"$T/read.json"
	[ "$(jq -r '.invocations[0].state' "$T/read.json")" = resolved ]
	[ "$(jq -r '.invocations[0].binding_duplicate' "$T/read.json")" = false ]
	rec=$(jq -c --arg e "$ab" '.invocations[0].records[] | select(.event_id == $e)' "$T/read.json")
	[ "$(jq -r .action_ref <<<"$rec")" = ledger.abandoned ]
	[ "$(jq -r .actor_ref <<<"$rec")" = bob ]
	[ "$(jq -r .payload.resolved_by <<<"$rec")" = bob ]
	[ "$(jq -r .payload.supersedes <<<"$rec")" = "$esc" ]
	[ "$(jq -r .payload.cause <<<"$rec")" = "store quiet for ten minutes" ]

	ri_at 760
	sweep
	[ "$(t examined)" -eq 0 ]
}

@test "the refusal: a pre-commit exit 3 lands ledger.refused with the reason; ri-run exits 3; the sweep examines nothing for it (Walkthrough: the refusal; commit 2-3; refuse step 3.1)" {
	# a newer holder's fence token is already in the store: the real job
	# refuses on its pre-commit arm (exit 3, stale fencing token)
	RI_PAIRING_DATUM=manual RI_FENCING_TOKEN=99 \
	    ledger-disclose --store "$T/ledger.db" --subject alice/bob/full --recipient bob --scope full >/dev/null
	run --separate-stderr disclose alice/bob/full
	[ "$status" -eq 3 ]
	[ "$(ledger-admin --store "$T/ledger.db" count)" -eq 1 ]   # only the manual row

	read_act alice/bob/full >"$T/read.json"
	[ "$(jq -r '.invocations[0].state' "$T/read.json")" = refused ]
	[ "$(jq -c '[.invocations[0].records[].action_ref]' "$T/read.json")" = '["ledger.intended","ledger.refused"]' ]
	[ "$(jq -r '.invocations[0].records[1].actor_ref' "$T/read.json")" = alice ]
	[ "$(jq -r '.invocations[0].records[1].payload.constituent_code' "$T/read.json")" = 3 ]
	[ -n "$(jq -r '.invocations[0].records[1].payload.reason' "$T/read.json")" ]
	n=$(act_records)

	# nothing for the sweep, at any age inside the horizon
	for at in 33 300 3600; do
		ri_at $at
		sweep
		[ "$(t examined)" -eq 0 ]
	done
	[ "$(act_records)" -eq "$n" ]
	[ -z "$(ri-findings)" ]
}
