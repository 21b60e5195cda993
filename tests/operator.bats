#!/usr/bin/env bats
# operator.bats -- the operator's path (issue 14, friction 5): from a
# finding to a resolution in one command each -- ri-findings --open shows
# what still needs someone, ri-resolve finds the invocation from the act,
# ri-read looks a record up by the ids ri-audit names.  Real binaries, real
# journals; time moves only through RI_NOW.
#
# test-pg: backend

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"
load "$BATS_TEST_DIRNAME/lib/sweep"

teardown() { sweep_teardown; }

# instance [walkthrough|fast] -- ledger_instance and the operator bob (BOB)
instance() {
	ledger_instance "$@" && BOB=$(ri-actor add bob | jq -r .credential)
}

open_findings() { ri-findings --open | jq -r 'select(.scope == "act") | "\(.finding) \(.act_key)"' | sort; }

@test "friction 5: ri-resolve --kind K --act-key KEY --abandon CAUSE fills the ids of the one invocation that needs an operator; ri-findings --open no longer lists the act" {
	instance
	empty_orphan k1
	ri_at 33
	sweep
	[ "$(t escalated)" -eq 1 ]
	[ "$(open_findings)" = "escalated k1" ]
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --kind ledger --act-key k1 --actor bob \
	    --abandon "operator: the store holds no such disclosure"
	[ "$status" -eq 0 ]
	jq -e '.closing_event_id | startswith("evt_")' <<<"$output"
	ri-read --kind ledger --act-key k1 | jq -e '.invocations[0].state == "resolved" and .invocations[0].records[-1].action_ref == "ledger.abandoned" and
	    .invocations[0].records[-1].payload.resolved_by == "bob"'
	[ -z "$(open_findings)" ]
	# the register keeps the finding (findings 1), closed at the closing's instant
	ri-findings | jq -e 'select(.finding == "escalated") | .closed == true and
	    .closed_at == "2026-11-29T10:00:33.000Z"'
}

@test "friction 5: ri-resolve --outcome REF --outcome-data JSON and --escalate CAND... are the other dispositions; --outcome-data defaults to {}" {
	instance
	empty_orphan o1
	empty_orphan e1
	ri_at 33
	sweep
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --kind ledger --act-key o1 --actor bob \
	    --outcome ledger.disclosed --outcome-data '{"disclosure_id":"dsc-9"}'
	[ "$status" -eq 0 ]
	ri-read --kind ledger --act-key o1 | jq -e '.invocations[0].records[-1] |
	    .action_ref == "ledger.disclosed" and .payload.data == {"disclosure_id":"dsc-9"}'
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --kind ledger --act-key e1 --actor bob \
	    --escalate dsc-a dsc-b --escalate dsc-c
	[ "$status" -eq 0 ]
	ri-read --kind ledger --act-key e1 | jq -e '.invocations[0].records[-1].payload.store_candidates | sort ==
	    ["dsc-a","dsc-b","dsc-c"]'
	# two dispositions at once is a usage error naming the choice
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --kind ledger --act-key e1 --actor bob \
	    --abandon x --outcome ledger.disclosed
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"give exactly one of --abandon CAUSE, --outcome REF"* ]]
}

@test "friction 5: when several invocations of the act need an operator, ri-resolve lists them on stdout and exits 64; --invocation-id picks one; none at all says so" {
	instance
	ri_cfg '.kinds.ledger.service_identity = null'
	# report-only: aged intents stay open for an operator (open step 3.8)
	ri-open --kind ledger --act-key k --actor alice >/dev/null
	ri_at 40
	ri-open --kind ledger --act-key k --actor alice >/dev/null 2>&1
	ri_at 80
	n=$(records)
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --kind ledger --act-key k --actor bob --abandon gone
	[ "$status" -eq 64 ]
	[ "$(records)" -eq "$n" ]
	jq -e '.needs_operator | length == 2 and all(.[]; .why == "open" and .state == "open")' <<<"$output"
	[[ "$stderr" == *"2 invocations of (ledger, k) need an operator"*"--invocation-id ID"* ]]
	inv=$(jq -r '.needs_operator[0].invocation_id' <<<"$output")
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --kind ledger --act-key k --actor bob \
	    --invocation-id "$inv" --abandon gone
	[ "$status" -eq 0 ]
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --kind ledger --act-key k --actor bob --abandon gone
	[ "$status" -eq 0 ]
	# issue 44 point 8: bob's command again answers his landed resolution,
	# exit 0, nothing written (retry-safe)
	ev=$(jq -r .closing_event_id <<<"$output")
	n=$(records)
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --kind ledger --act-key k --actor bob --abandon gone
	[ "$status" -eq 0 ]
	[ "$(jq -r .closing_event_id <<<"$output")" = "$ev" ]
	[ "$(records)" -eq "$n" ]
	# nothing resolved by alice, nothing needing an operator: says so
	RI_CREDENTIAL=$ALICE run --separate-stderr ri-resolve --kind ledger --act-key k --actor alice --abandon gone
	[ "$status" -eq 64 ]
	[ "$output" = '{"needs_operator":[]}' ]
	[[ "$stderr" == *"no invocation of (ledger, k) needs an operator"* ]]
}

@test "friction 5: act findings close when their act is closed -- a closure-at-risk whose act the sweep later recovers leaves ri-findings --open; instance findings stand until a run no longer sees them" {
	instance
	# the store is away: the sweep cannot close the orphan (store-unavailable)
	{ (RI_FAULT=run.after_act=die ri-run --kind ledger --act-key r1 --actor alice -- \
	    ledger-disclose --store "$T/ledger.db" --subject r1 --recipient r) >/dev/null 2>&1; } 2>/dev/null || true
	mv "$T/ledger.db" "$T/ledger.away"
	ri_at 590
	run --separate-stderr ri-sweep
	[ "$status" -eq 2 ]
	ri-findings --open | jq -se 'map(.finding) | sort == ["closure-at-risk","store-unavailable"]'
	mv "$T/ledger.away" "$T/ledger.db"
	ri_at 650
	sweep
	[ "$(t closed)" -eq 1 ]
	[ -z "$(ri-findings --open)" ]
	[ "$(ri-findings | jq -s 'length')" -eq 2 ]
}

@test "friction 5: ri-read --invocation-id ID and --event-id EV need no kind or key -- the ids ri-audit names are enough; a substrate record is answered alone" {
	instance
	ri-run --kind ledger --act-key x1 --actor alice -- true >/dev/null
	inv=$(jsql "SELECT invocation_id FROM records WHERE action_ref = 'ledger.intended'")
	out=$(jsql "SELECT event_id FROM records WHERE action_ref = 'ledger.disclosed'")
	run --separate-stderr ri-read --invocation-id "$inv"
	[ "$status" -eq 0 ]
	jq -e --arg i "$inv" '.invocations | length == 1 and .[0].invocation_id == $i and .[0].state == "closed"' <<<"$output"
	run --separate-stderr ri-read --event-id "$out"
	[ "$status" -eq 0 ]
	jq -e --arg e "$out" --arg i "$inv" '.record.event_id == $e and .invocations[0].invocation_id == $i' <<<"$output"
	reg=$(jsql "SELECT event_id FROM records WHERE action_ref = 'audit.actor_registered' LIMIT 1")
	run --separate-stderr ri-read --event-id "$reg"
	[ "$status" -eq 0 ]
	jq -e '.record.action_ref == "audit.actor_registered" and .invocations == []' <<<"$output"
	run --separate-stderr ri-read --event-id evt_00000000000000000000000000000000
	[ "$status" -eq 17 ]
	run --separate-stderr ri-read --invocation-id inv_00000000000000000000000000000000
	[ "$status" -eq 17 ]
	# an event of another act than the one named is not-known
	run --separate-stderr ri-read --kind ledger --act-key other --event-id "$out"
	[ "$status" -eq 17 ]
	# a kind without its act key, all flags: a usage error naming the flag
	# (issue 44 point 10: a missing flag is 64 in every command)
	run --separate-stderr ri-read --kind ledger
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"--act-key"* ]]
}

# ---- issue 44 point 8: an escalation resolved in two commands, retry-safe ---------

# state KEY -- records, leases and the grant counter: what a write would move
journal_state() { jsql "SELECT (SELECT count(*) FROM records) || ' ' || (SELECT sum(grants) FROM heads) || ' ' ||
    (SELECT count(*) FROM leases WHERE holder IS NOT NULL)"; }

# pd KEY -- the pairing datum of the act's newest intent
pd() { ri-read --kind ledger --act-key "$1" | jq -r '.invocations[0].records[0].payload.data.pairing_datum'; }

@test "issue 44 point 8: ri-resolve --probe shows what the store answers for the act and the dispositions that supports -- committed, undecidable, not-committed, unavailable -- and takes no section, writes nothing" {
	instance
	for k in c1 u1 n1; do empty_orphan "$k"; done
	ri_at 33
	sweep
	[ "$(t escalated)" -eq 3 ]
	# the paused writes land after all: one row for c1, two for u1
	ledger-admin --store "$T/ledger.db" plant --pairing-datum "$(pd c1)" --subject c1 --recipient r --scope s >/dev/null
	for i in 1 2; do
		ledger-admin --store "$T/ledger.db" plant --pairing-datum "$(pd u1)" --subject u1 --recipient "r$i" --scope s >/dev/null
	done
	before=$(journal_state)
	# no credential needed: RI_CREDENTIAL unset
	run --separate-stderr env -u RI_CREDENTIAL ri-resolve --probe --invocation-id "$(inv_of c1)"
	[ "$status" -eq 0 ]
	jq -e --arg i "$(inv_of c1)" '.invocation_id == $i and .kind == "ledger" and .act_key == "c1" and
	    .state == "escalated" and .needs_operator == "escalated" and .probe.answer == "committed" and
	    .probe.outcome_action_ref == "ledger.disclosed" and
	    .supports == [{"disposition":"outcome", "why":.supports[0].why,
	        "with":{"outcome":{"outcome_action_ref":"ledger.disclosed","outcome_data":.probe.outcome_data}}}]' <<<"$output"
	# the supported disposition is ready for --disposition
	with=$(jq -c '.supports[0].with' <<<"$output")
	run --separate-stderr ri-resolve --probe --kind ledger --act-key u1
	[ "$status" -eq 0 ]
	jq -e '.probe.answer == "undecidable" and (.probe.candidates | length) == 2 and
	    ([.supports[].disposition] == ["outcome", "escalated"]) and (.supports[0] | has("with") | not) and
	    .supports[1].with.escalated.candidates == .probe.candidates' <<<"$output"
	run --separate-stderr ri-resolve --probe --kind ledger --act-key n1
	jq -e '.probe.answer == "not-committed" and .supports[0].disposition == "abandoned" and
	    (.supports[0].with.abandoned.cause | type) == "string"' <<<"$output"
	set_probe --store "$T/missing/ledger.db"
	run --separate-stderr ri-resolve --probe --kind ledger --act-key n1
	[ "$status" -eq 0 ]
	jq -e '.probe.answer == "unavailable" and .supports == [] and (.probe.why | length) > 0' <<<"$output"
	set_probe --store "$T/ledger.db"
	[ "$(journal_state)" = "$before" ]
	# then one command closes it, with what the probe printed
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --invocation-id "$(inv_of c1)" --actor bob --disposition "$with"
	[ "$status" -eq 0 ]
	ri-read --kind ledger --act-key c1 | jq -e '.invocations[0].state == "closed"'
	# an unknown invocation: 17; a disposition with --probe: 64
	run --separate-stderr ri-resolve --probe --invocation-id inv_00000000000000000000000000000000
	[ "$status" -eq 17 ]
	run --separate-stderr ri-resolve --probe --invocation-id "$(inv_of n1)" --abandon x
	[ "$status" -eq 64 ]
}

@test "issue 44 point 8: ri-resolve --invocation-id ID alone finds the kind, the act key and the intent; a --kind or --act-key that disagrees is 64, an unknown id 17, nothing written" {
	instance
	empty_orphan a1
	ri_at 33
	sweep
	inv=$(inv_of a1)
	n=$(records)
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --invocation-id "$inv" --actor bob --act-key other --abandon x
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"--act-key other disagrees with the invocation's own (a1)"* ]]
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --invocation-id inv_00000000000000000000000000000000 \
	    --actor bob --abandon x
	[ "$status" -eq 17 ]
	jq -e '. == {"refused":"not-known"}' <<<"$output"
	[ "$(records)" -eq "$n" ]
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --invocation-id "$inv" --actor bob --abandon "OPS-3: quiet"
	[ "$status" -eq 0 ]
	ri-read --invocation-id "$inv" | jq -e '.invocations[0] | .state == "resolved" and
	    .records[-1].payload.act_key == "a1" and .records[-1].payload.resolved_by == "bob"'
}

@test "issue 44 point 8: re-running a resolution that landed answers its closing again, exit 0, nothing written (retry-safe) -- by the invocation, by the act, and as a request; another disposition or operator is still refused" {
	instance
	CAROL=$(ri-actor add carol | jq -r .credential)
	empty_orphan r1
	ri_at 33
	sweep
	inv=$(inv_of r1)
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --invocation-id "$inv" --actor bob \
	    --outcome ledger.disclosed --outcome-data '{"disclosure_id":"dsc-7"}'
	[ "$status" -eq 0 ]
	ev=$(jq -r .closing_event_id <<<"$output")
	n=$(records)
	for how in "--invocation-id $inv" "--kind ledger --act-key r1"; do
		# shellcheck disable=SC2086
		RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve $how --actor bob \
		    --outcome ledger.disclosed --outcome-data '{"disclosure_id":"dsc-7"}'
		[ "$status" -eq 0 ] || { echo "$how: exit $status $output $stderr"; false; }
		[ "$output" = "{\"closing_event_id\":\"$ev\"}" ]
	done
	req=$(ri-read --invocation-id "$inv" | jq -c --arg c "$BOB" '.invocations[0] | {kind: "ledger", act_key: "r1",
	    invocation_id, intent_event_id: .records[0].event_id, actor_ref: "bob", credential: $c,
	    disposition: {outcome: {outcome_action_ref: "ledger.disclosed", outcome_data: {disclosure_id: "dsc-7"}}}}')
	run --separate-stderr ri-resolve <<<"$req"
	[ "$status" -eq 0 ]
	[ "$output" = "{\"closing_event_id\":\"$ev\"}" ]
	[ "$(records)" -eq "$n" ]
	# the same command with a wrong credential learns nothing: 10
	run --separate-stderr ri-resolve <<<"$(jq -c '.credential = "ri1_wrong"' <<<"$req")"
	[ "$status" -eq 10 ]
	# other data, or another operator: what stands accounts for it (16)
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --invocation-id "$inv" --actor bob \
	    --outcome ledger.disclosed --outcome-data '{"disclosure_id":"dsc-8"}'
	[ "$status" -eq 16 ]
	RI_CREDENTIAL=$CAROL run --separate-stderr ri-resolve --invocation-id "$inv" --actor carol \
	    --outcome ledger.disclosed --outcome-data '{"disclosure_id":"dsc-7"}'
	[ "$status" -eq 16 ]
	[ "$(records)" -eq "$n" ]
}
