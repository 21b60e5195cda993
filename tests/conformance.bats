#!/usr/bin/env bats
# conformance.bats -- the remaining conformance items of the sweep, the
# probe, Read, Open and Resolve (the conformance-edges issue), each a
# scenario named by its rule, with the real binaries on a real journal.
#
# Walkthrough numbers: lease 30 s, examine edge +32 s, sweep lease 15 s,
# at-risk threshold 600 - 2x135 - 60 - 2 = 268 s.  bob is the operator.
#
# test-pg: backend

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"
load "$BATS_TEST_DIRNAME/lib/sweep"

setup() {
	ri_instance
	export RI_CREDENTIAL=$ALICE
	ledger-admin --store "$T/ledger.db" init >/dev/null
	BOB=$(ri-actor add bob | jq -r .credential)
	PIDS=()
}

teardown() {
	for f in "$T"/p*/*.reached; do
		[ -e "$f" ] && timeout 1 sh -c 'echo >"$1"' _ "${f%.reached}" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	if [ -n "${T:-}" ]; then rm -rf "$T"; fi
}

pause_dir() { mkdir -p "$T/$1" && mkfifo "$T/$1/$2" && echo "$T/$1"; }

# probe_script BODY -- the kind's probe becomes a script running BODY (sh)
probe_script() {
	printf '#!/bin/sh\ncat >/dev/null\n%s\n' "$1" >"$T/probe.sh"
	chmod +x "$T/probe.sh"
	ri_cfg ".kinds.ledger.probe = [\"$T/probe.sh\"]"
}

# yielded KEY [INTENT_DATA] -- an intent left open by a Yield; OPEN holds ri-open's answer
yielded() {
	OPEN=$(open_req "$1" "${2:-{\"pairing_datum\":\"pd-$1\"\}}" | ri-open) || return 1
	jq -c '{kind, act_key, invocation_id, actor_ref}' <<<"$OPEN" | ri-yield >/dev/null
}

finding_detail() { # FINDING INVOCATION
	ri-findings | jq -c -s --arg f "$1" --arg i "$2" \
	    '[.[] | select(.finding == $f and .invocation_id == $i)] | .[0].detail'
}

# unavailable_through_sweep -- one orphan, the current probe: the sweep
# writes nothing, counts it skipped, opens store-unavailable for the kind
unavailable_through_sweep() {
	yielded k
	n=$(act_records)
	ri_at 33
	sweep_degraded
	[ "$(t examined)" -eq 1 ] && [ "$(t skipped)" -eq 1 ] ||
	    { echo "not skipped: $TALLY"; return 1; }
	[ "$(act_records)" -eq "$n" ] || { echo "the sweep wrote for an unavailable probe"; return 1; }
	[ "$(ri-findings --open | jq -s '[.[] | select(.finding == "store-unavailable" and .kind == "ledger")] | length')" -eq 1 ]
}

# ---- reconcile 2e -------------------------------------------------------------

@test "reconcile 2e, reconcile step 5.1: a report-only kind's finding keeps the probe's answer when the act turns at risk -- the step-5.1 report never overwrites the closing steps' report" {
	ri_cfg '.kinds.ledger.service_identity = null'
	yielded k '{"pairing_datum":"pd-k","subject":"s","recipient":"r"}'
	inv=$(jq -r .invocation_id <<<"$OPEN")
	ledger-admin --store "$T/ledger.db" plant --pairing-datum pd-k --subject s --recipient r >/dev/null
	ri_at 40
	sweep
	[ "$(t reported)" -eq 1 ]
	d=$(finding_detail closure-at-risk "$inv")
	[ "$(jq -r .probe <<<"$d")" = committed ]
	[ "$(jq -r .at_risk <<<"$d")" = false ]
	ri_at 300                         # past the at-risk threshold (268 s)
	sweep
	d=$(finding_detail closure-at-risk "$inv")
	[ "$(jq -r .probe <<<"$d")" = committed ]
	[ "$(jq -r .outcome_data.disclosure_id <<<"$d")" != null ]
	[ "$(jq -r .at_risk <<<"$d")" = true ]
	grep -q 'reconcile step 5.1' <<<"$(jq -r .rule <<<"$d")"
}

# ---- reconcile step 3.20 -------------------------------------------------------

@test "reconcile step 3.20, Term outcome envelope: a committed answer whose outcome data (20,206 bytes) outgrew outcome_envelope (4,096) is escalated as outcome-unrecordable -- no recovery_intended, no outcome" {
	big=$(head -c 20000 /dev/zero | tr '\0' x)
	probe_script "printf '{\"answer\":\"committed\",\"outcome_action_ref\":\"ledger.disclosed\",\"outcome_data\":{\"blob\":\"%s\"}}' $big"
	yielded k
	ri_at 33
	run --separate-stderr ri-sweep
	TALLY=$output
	[ "$(t escalated)" -eq 1 ]
	[ "$status" -eq 2 ]                     # degraded: the escalation is a hard alert
	[ "$(t closed)" -eq 0 ]
	[ "$(records "action_ref = 'ledger.disclosed'")" -eq 0 ]
	[ "$(records "action_ref = 'ledger.recovery_intended'")" -eq 0 ]
	[ "$(jsql "SELECT $(payload_at cause) FROM records WHERE action_ref = 'ledger.escalated'")" = outcome-unrecordable ]
}

# ---- probe 3 ------------------------------------------------------------------

@test "probe 1, probe 3: undecidable with an empty candidate list is unavailable -- skipped, never an escalation naming nothing" {
	probe_script 'echo "{\"answer\":\"undecidable\",\"candidates\":[]}"'
	unavailable_through_sweep
	[ "$(records "action_ref = 'ledger.escalated'")" -eq 0 ]
}

@test "probe 1, probe 4-5, INTERFACE probe protocol, end to end through ri-sweep: a wrong outcome ref, an extra key, two objects, a non-zero exit, a lingering child holding stdout, a 2 s sleep -- each unavailable and skipped" {
	local bodies=(
		'echo "{\"answer\":\"committed\",\"outcome_action_ref\":\"ledger.sent\",\"outcome_data\":{}}"'
		'echo "{\"answer\":\"not-committed\",\"extra\":1}"'
		'echo "{\"answer\":\"not-committed\"}{\"answer\":\"not-committed\"}"'
		'echo "{\"answer\":\"not-committed\"}"; exit 3'
		'(sleep 3; echo late) & echo "{\"answer\":\"not-committed\"}"'
		'sleep 2; echo "{\"answer\":\"not-committed\"}"'
	)
	for b in "${bodies[@]}"; do
		teardown
		setup
		probe_script "$b"
		unavailable_through_sweep || { echo "probe body: $b"; false; }
	done
}

# ---- run bound 1 ---------------------------------------------------------------

@test "run bound 1, Reconcile refuses only journal-unavailable: a second sweep on the same node while one is in flight does not start -- exit 0 at once, a zero tally saying why; never a wait of run_bound and never 14" {
	yielded k
	ri_at 33
	d=$(pause_dir pa sweep.after_enumerate)
	RI_FAULT=sweep.after_enumerate=pause RI_FAULT_DIR=$d ri-sweep >"$T/a.out" 2>"$T/a.err" &
	PIDS+=("$!")
	wait_for "$d/sweep.after_enumerate.reached"
	start=$SECONDS
	run --separate-stderr ri-sweep
	[ "$status" -eq 0 ]
	[ $((SECONDS - start)) -lt 5 ]
	jq -e '.not_started and .examined == 0 and .closed == 0' <<<"$output" >/dev/null
	grep -q 'another run is in flight on this node; this one did not start' <<<"$stderr"
	# on another node the run starts
	echo >"$d/sweep.after_enumerate"
	rc=0
	wait "${PIDS[0]}" || rc=$?
	[ "$rc" -eq 3 ]                        # it escalated the act: an operator's
	[ "$(jq .escalated "$T/a.out")" -eq 1 ]
}

# ---- resolve 23 ---------------------------------------------------------------

@test "resolve 23, Primitive policy 27, 40: a disposition over the payload cap is refused by the substrate at the write -- read back, found nothing: recording-failure(resolution) (23) with a hard alert, nothing appended, the section released" {
	yielded k
	ri_at 33
	sweep
	n=$(records)
	big=$(head -c 66000 /dev/zero | tr '\0' x)
	ri_at 40
	req=$(jq -c --arg c "$BOB" --arg b "$big" '{kind, act_key, invocation_id, intent_event_id,
	    actor_ref:"bob", credential:$c,
	    disposition:{outcome:{outcome_action_ref:"ledger.disclosed", outcome_data:{blob:$b}}}}' <<<"$OPEN")
	run --separate-stderr ri-resolve <<<"$req"
	[ "$status" -eq 23 ]
	[ "$(jq -r .position <<<"$output")" = resolution ]
	[ "$(jq -r .alert <<<"$output")" != null ]
	[ "$(records)" -eq "$n" ]
	# released: a resolution that fits lands at once
	run --separate-stderr ri-resolve <<<"$(jq -c '.disposition = {abandoned:{cause:"quiet"}}' <<<"$req")"
	[ "$status" -eq 0 ]
}

@test "resolve 3, Actor Identity: Resolve by a revoked operator -- invalid-credential (10), nothing appended, the section released" {
	yielded k
	ri_at 33
	sweep
	ri-actor revoke bob >/dev/null
	n=$(records)
	ri_at 40
	req=$(jq -c --arg c "$BOB" '{kind, act_key, invocation_id, intent_event_id, actor_ref:"bob",
	    credential:$c, disposition:{abandoned:{cause:"quiet"}}}' <<<"$OPEN")
	run --separate-stderr ri-resolve <<<"$req"
	[ "$status" -eq 10 ]
	[ "$(records)" -eq "$n" ]
	[ "$(jsql "SELECT count(*) FROM leases WHERE act_key = 'k' AND holder IS NOT NULL")" -eq 0 ]
}

# ---- open step 4.1-4.2 ------------------------------------------------------------

@test "open step 4.1-4.2, journal write bound 1: an Open paused after its pre-check until less than journal_write_bound of its lease is left writes no intent -- it releases and answers section-unavailable (14)" {
	# the system clock, and the fast shape: a 3 s lease, journal_write_bound 300 ms
	ri_cfg '.clock = "system" | .instance.clock_offset_allowance = "100ms" | .instance.reconciliation_cadence = "10s" |
	    .instance.run_bound = "5s" | .instance.closure_latency = "1500ms" | .instance.journal_write_bound = "300ms" |
	    .instance.read_bound = "200ms" | .instance.compensation_window = "60s" | .kinds.ledger.completion_bound = "3s" |
	    .kinds.ledger.commit_round_trip = "100ms" | .kinds.ledger.probe_round_trip = "200ms"'
	n=$(records)
	d=$(pause_dir pa open.after_precheck)
	open_req k4 '{}' >"$T/a.json"
	RI_FAULT=open.after_precheck=pause RI_FAULT_DIR=$d ri-open <"$T/a.json" >"$T/a.out" 2>"$T/a.err" &
	a=$!
	PIDS+=("$a")
	wait_for "$d/open.after_precheck.reached"
	sleep 2.85                                # < 300 ms of the 3 s lease left
	echo >"$d/open.after_precheck"
	rc=0
	wait "$a" || rc=$?
	[ "$rc" -eq 14 ] || { echo "ri-open: $rc $(cat "$T/a.out" "$T/a.err")"; false; }
	[ "$(jq -r .refused "$T/a.out")" = section-unavailable ]
	[ "$(records)" -eq "$n" ]
	[ -z "$(jsql "SELECT coalesce(holder, '') FROM leases WHERE act_key = 'k4'")" ]
}

# ---- open step 5.3 --------------------------------------------------------------

@test "open step 5.3: with no journal fence an Open paused as it issues its intent wakes after a second Open took the section -- it answers section-unavailable (14) naming its orphaned intent, never 0; the second holds the section; the sweep closes the orphan" {
	ri_cfg '.instance.journal_fence = "none"'
	d=$(pause_dir pa open.intent.before)
	open_req k '{"pairing_datum":"pd-a"}' >"$T/a.json"
	RI_FAULT=open.intent.before=pause RI_FAULT_DIR=$d ri-open <"$T/a.json" >"$T/a.out" 2>"$T/a.err" &
	a=$!
	PIDS+=("$a")
	wait_for "$d/open.intent.before.reached"
	ri_at 31                          # A's lease (30 s) ran out
	B=$(open_req k '{"pairing_datum":"pd-b"}' | ri-open)
	echo >"$d/open.intent.before"
	rc=0
	wait "$a" || rc=$?
	[ "$rc" -eq 14 ]
	[ "$(jq -r .refused "$T/a.out")" = section-unavailable ]
	orphan=$(jq -r .intent_event_id "$T/a.out")
	[ "$(jsql "SELECT action_ref FROM records WHERE event_id = '$orphan'")" = ledger.intended ]
	grep -q "landed after this invocation's section was gone; do not commit" "$T/a.err"
	# the second invocation still holds the section and closes its own act
	close_req "$B" | ri-close >/dev/null
	# the orphan is the sweep's, like any other aged open intent
	ri_at 70
	sweep
	[ "$(t escalated)" -eq 1 ]
}

# ---- replay mismatch ------------------------------------------------------------

@test "replay mismatch (INTERFACE amendment): act-landed (13) carries replay_mismatch true when the landed intent's data differ from the caller's, false when only the pairing datum differs; ri-run says so on stderr" {
	ri_cfg '.kinds.ledger.repeatable = false'
	o=$(open_req k '{"pairing_datum":"pd-1","amount":5}' | ri-open)
	close_req "$o" | ri-close >/dev/null
	run --separate-stderr ri-open <<<"$(open_req k '{"pairing_datum":"pd-2","amount":5}')"
	[ "$status" -eq 13 ]
	[ "$(jq -r .replay_mismatch <<<"$output")" = false ]
	run --separate-stderr ri-open <<<"$(open_req k '{"pairing_datum":"pd-3","amount":7}')"
	[ "$status" -eq 13 ]
	[ "$(jq -r .replay_mismatch <<<"$output")" = true ]
	run --separate-stderr ri-run --kind ledger --act-key k --actor alice --intent-data '{"amount":7}' -- true
	[ "$status" -eq 13 ]
	grep -q 'replay mismatch' <<<"$stderr"
}

@test "replay mismatch: act-in-flight (12) carries replay_mismatch for the open intent's data" {
	yielded k '{"pairing_datum":"pd-1","amount":5}'      # in flight, its section released
	run --separate-stderr ri-open <<<"$(open_req k '{"pairing_datum":"pd-2","amount":5}')"
	[ "$status" -eq 12 ]
	[ "$(jq -r .replay_mismatch <<<"$output")" = false ]
	run --separate-stderr ri-open <<<"$(open_req k '{"pairing_datum":"pd-2","amount":6}')"
	[ "$status" -eq 12 ]
	[ "$(jq -r .replay_mismatch <<<"$output")" = true ]
}

# ---- read invocation 5 --------------------------------------------------------------

@test "read invocation 5: read_cap applies to the recovery and closing records -- the most recent read_cap of them after the intent, and the entry's more set" {
	ri_cfg '.instance.read_cap = 2'
	yielded k
	ri_at 33
	sweep                              # escalated
	jq -c --arg c "$BOB" '{kind, act_key, invocation_id, intent_event_id, actor_ref:"bob", credential:$c,
	    disposition:{abandoned:{cause:"quiet"}}}' <<<"$OPEN" | ri-resolve >/dev/null
	ri_at 300
	jq -c --arg c "$BOB" '{kind, act_key, invocation_id, intent_event_id, actor_ref:"bob", credential:$c,
	    disposition:{outcome:{outcome_action_ref:"ledger.disclosed", outcome_data:{}}}}' <<<"$OPEN" |
	    ri-resolve >/dev/null
	e=$(ri-read --kind ledger --act-key k </dev/null | jq -c '.invocations[0]')
	[ "$(jq -c '[.records[].action_ref]' <<<"$e")" = '["ledger.intended","ledger.abandoned","ledger.disclosed"]' ]
	[ "$(jq -r .more <<<"$e")" = true ]
	[ "$(jq -r .state <<<"$e")" = closed ]
}
