#!/usr/bin/env bats
# resolve.bats -- the Resolve contract (resolve 1-28) over the real binaries:
# the operator's close under the operator's own credential, every refusal
# with its exit code and cause, supersession (Which closing stands), the late
# Close that adopts another writer's outcome (close step 2.2), and the
# recording-failure(resolution) arms through the resolve.closing fault point.
#
# Walkthrough numbers unless a test says "fast" (tests/lib/common.bash):
# examine edge +32 s, sweep lease 12 + 3 = 15 s.  bob is the operator.
# Time moves only through RI_NOW.  Tests that run ri-sweep assert the
# partition identity on every tally.
#
# test-pg: backend

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"
load "$BATS_TEST_DIRNAME/lib/sweep"

setup() {
	BG=
}

teardown() { sweep_teardown; }

# instance [walkthrough|fast] -- ledger_instance and the operator bob (BOB)
instance() {
	ledger_instance "$@" && BOB=$(ri-actor add bob | jq -r .credential)
}

# ---- helpers --------------------------------------------------------------

# act KEY -- {kind, act_key, invocation_id, intent_event_id} of the newest
# invocation on (ledger, KEY), from the journal
act() {
	intent_of "kind = 'ledger' AND act_key = '$1'"
}

# req ACT DISPOSITION [ACTOR] [CREDENTIAL] -- an ri-resolve request
req() {
	jq -c --argjson d "$2" --arg a "${3:-bob}" --arg c "${4:-$BOB}" \
	    '{kind, act_key, invocation_id, intent_event_id, actor_ref:$a, credential:$c, disposition:$d}' <<<"$1"
}

ABANDON='{"abandoned":{"cause":"operator: the store has been quiet"}}'
OUTCOME='{"outcome":{"outcome_action_ref":"ledger.disclosed","outcome_data":{"disclosure_id":"dsc-operator"}}}'
ESCALATE='{"escalated":{"candidates":["dsc-a","dsc-b"]}}'

# resolve ACT DISPOSITION [ACTOR] [CRED] -- run ri-resolve; status/output/stderr
resolve() {
	run --separate-stderr ri-resolve <<<"$(req "$@")"
}

# yielded KEY -- ri-open then ri-yield: the intent stands open, the section is free
yielded() {
	local open
	open=$(open_req "$1" "{\"pairing_datum\":\"pd-$1\"}" | ri-open) || return 1
	jq -c --arg c "$ALICE" '{kind, act_key, invocation_id, actor_ref} + {credential:$c}' <<<"$open" |
	    ri-yield >/dev/null || return 1
	ACT=$(act "$1")
}

# resolve_orphan KEY -- an empty orphan (tests/lib/sweep.bash); ACT holds its act
resolve_orphan() {
	empty_orphan "$1" && ACT=$(act "$1")
}

# escalated KEY... -- empty orphans the sweep at +33 s escalates (not-observed);
# esc_of KEY reads the escalation's event id
escalated() {
	local k
	for k in "$@"; do resolve_orphan "$k"; done
	ri_at 33
	sweep
	[ "$(t escalated)" -eq "$#" ]
}

esc_of() {
	jsql "SELECT event_id FROM records WHERE kind = 'ledger' AND act_key = '$1'
	    AND action_ref = 'ledger.escalated' ORDER BY seq DESC LIMIT 1"
}

# record_of KEY EVENT_ID -- that record's ri-read form
record_of() {
	ri-read <<<"{\"kind\":\"ledger\",\"act_key\":\"$1\"}" |
	    jq -c --arg e "$2" '.invocations[0].records[] | select(.event_id == $e)'
}

entry_of() { ri-read <<<"{\"kind\":\"ledger\",\"act_key\":\"$1\"}" | jq -c '.invocations[0]'; }

# ---- disposition ------------------------------------------------------------

@test "disposition must be exactly one of outcome, abandoned, escalated: zero keys, two keys, an unknown key, a foreign action ref -> 11 malformed with nothing appended; not JSON -> 65 (resolve 1, 27; INTERFACE: 65)" {
	instance
	yielded k
	ri_at 40
	n=$(act_records)
	for d in '{}' \
	    '{"abandoned":{"cause":"x"},"outcome":{"outcome_action_ref":"ledger.disclosed","outcome_data":{}}}' \
	    '{"forgotten":{"cause":"x"}}' \
	    '{"outcome":{"outcome_action_ref":"ledger.refused","outcome_data":{}}}' \
	    '{"abandoned":{}}' \
	    '{"escalated":{"candidates":"dsc-a"}}'; do
		resolve "$ACT" "$d"
		[ "$status" -eq 11 ] || { echo "$d: exit $status $output"; false; }
		[ "$(jq -r .refused <<<"$output")" = invalid-request ]
		[ "$(jq -r .cause <<<"$output")" = malformed ] || { echo "$d: $output"; false; }
	done
	run --separate-stderr ri-resolve <<<'{"kind":"ledger", this is not JSON'
	[ "$status" -eq 65 ]
	run --separate-stderr ri-resolve <<<"$(req "$ACT" '"abandoned"')"
	[ "$status" -eq 65 ]
	[ "$(act_records)" -eq "$n" ]
	# and the well-formed one is admitted
	resolve "$ACT" "$ABANDON"
	[ "$status" -eq 0 ]
}

# ---- credential -------------------------------------------------------------

@test "the operator's credential is validated only at the write: a wrong one -> 10, nothing appended, the section released (the retry with the right one succeeds at once); refusals decided earlier win over it (resolve 2-3)" {
	# resolve 22: the section is released after the (refused) write
	instance
	yielded k
	ri_at 40
	n=$(act_records)
	resolve "$ACT" "$ABANDON" bob "$ALICE"          # alice's credential for bob
	[ "$status" -eq 10 ]
	[ "$(jq -r .refused <<<"$output")" = invalid-credential ]
	[ "$(act_records)" -eq "$n" ]
	[ -z "$(jsql "SELECT holder FROM leases WHERE act_key = 'k'")" ]
	resolve "$ACT" "$ABANDON" bob ri1_0000000000000000000000000000000000000000000000000000000000000000
	[ "$status" -eq 10 ]
	[ "$(act_records)" -eq "$n" ]
	# released: the take does not wait out a 15 s operator lease
	start=$SECONDS
	resolve "$ACT" "$ABANDON"
	[ "$status" -eq 0 ]
	[ $((SECONDS - start)) -lt 10 ]
	[ "$(act_records)" -eq $((n + 1)) ]

	# an outcome may supersede the abandonment: with a wrong credential it
	# reaches the write, and the write refuses it
	resolve "$ACT" "$OUTCOME" bob "$ALICE"
	[ "$status" -eq 10 ]
	[ "$(act_records)" -eq $((n + 1)) ]

	# nothing validates the credential before the write: an act already
	# accounted for answers 16, an unknown one 17, an in-flight one too-young,
	# each with a wrong credential
	run ri-run --kind ledger --act-key clean --actor alice -- \
	    ledger-disclose --store "$T/ledger.db" --subject clean --recipient r --scope s
	[ "$status" -eq 0 ]
	resolve "$(act clean)" "$ABANDON" bob "$ALICE"
	[ "$status" -eq 16 ]
	resolve "$(act clean | jq -c '.invocation_id = "inv_00000000000000000000000000000000"')" "$ABANDON" bob "$ALICE"
	[ "$status" -eq 17 ]
	yielded young
	resolve "$ACT" "$ABANDON" bob "$ALICE"
	[ "$status" -eq 11 ]
	[ "$(jq -r .cause <<<"$output")" = too-young ]
}

# ---- section-unavailable ----------------------------------------------------

@test "section-unavailable (14): a live invocation holds the section; the take waits at most the holder's remaining lease (fast: 3 s) and writes nothing (resolve 4-6; act section 5)" {
	instance fast
	open=$(open_req k '{"pairing_datum":"pd-k"}' | ri-open)
	ACT=$(act k)
	n=$(act_records)
	start=$SECONDS
	resolve "$ACT" "$OUTCOME"
	elapsed=$((SECONDS - start))
	[ "$status" -eq 14 ]
	[ "$(jq -r .refused <<<"$output")" = section-unavailable ]
	[ "$elapsed" -ge 2 ]
	[ "$elapsed" -le 8 ]
	[ "$(act_records)" -eq "$n" ]
	# the invocation still holds it and can close
	run ri-close <<<"$(close_req "$open" '{"disclosure_id":"dsc-k"}')"
	[ "$status" -eq 0 ]
	[ "$(jq -r .landed_by <<<"$output")" = invocation ]
}

# ---- already-accounted, not-known, purged -------------------------------------

@test "already-accounted (16): an outcome (the invocation's, or the sweep's) or a refusal naming the id -> 16 with its closing_event_id, nothing appended (resolve 9)" {
	instance
	# the invocation's outcome
	run ri-run --answer-fd 1 --kind ledger --act-key clean --actor alice -- \
	    ledger-disclose --store "$T/ledger.db" --subject clean --recipient r --scope s
	[ "$status" -eq 0 ]
	out_ev=$(jq -r .outcome_event_id <<<"$output")
	# a refusal (the store's fence refuses the real job on its pre-commit arm)
	RI_PAIRING_DATUM=manual RI_FENCING_TOKEN=99 \
	    ledger-disclose --store "$T/ledger.db" --subject refd --recipient r --scope s >/dev/null
	run ri-run --kind ledger --act-key refd --actor alice --pre-commit-exit 2,3,4 -- \
	    ledger-disclose --store "$T/ledger.db" --subject refd --recipient r --scope s
	[ "$status" -eq 3 ]
	ref_ev=$(jsql "SELECT event_id FROM records WHERE action_ref = 'ledger.refused'")
	# the sweep's recovered outcome
	rc=0
	{ ( RI_FAULT=run.after_act=die ri-run --kind ledger --act-key swept --actor alice -- \
	    ledger-disclose --store "$T/ledger.db" --subject swept --recipient r --scope s ) \
	    >/dev/null 2>&1 </dev/null; } 2>/dev/null || rc=$?
	[ "$rc" -eq 137 ]
	ri_at 33
	sweep
	[ "$(t closed)" -eq 1 ]
	sw_ev=$(jsql "SELECT event_id FROM records WHERE act_key = 'swept' AND action_ref = 'ledger.disclosed'")

	ri_at 40
	n=$(act_records)
	for pair in "clean $out_ev" "refd $ref_ev" "swept $sw_ev"; do
		set -- $pair
		for d in "$ABANDON" "$OUTCOME" "$ESCALATE"; do
			resolve "$(act "$1")" "$d"
			[ "$status" -eq 16 ] || { echo "$1 $d: exit $status $output"; false; }
			[ "$(jq -r .refused <<<"$output")" = already-accounted ]
			[ "$(jq -r .closing_event_id <<<"$output")" = "$2" ]
		done
	done
	[ "$(act_records)" -eq "$n" ]
}

@test "not-known (17): an unknown invocation id, an intent_event_id that is not this invocation's intent, a made-up intent_event_id -> 17, nothing appended (resolve 10-11)" {
	instance
	yielded a
	A=$ACT
	yielded b
	B=$ACT
	ri_at 40
	n=$(act_records)
	for bad in "$(jq -c '.invocation_id = "inv_00000000000000000000000000000000"' <<<"$A")" \
	    "$(jq -c --arg e "$(jq -r .intent_event_id <<<"$B")" '.intent_event_id = $e' <<<"$A")" \
	    "$(jq -c '.intent_event_id = "evt_00000000000000000000000000000000"' <<<"$A")" \
	    "$(jq -c '.act_key = "b"' <<<"$A")"; do
		resolve "$bad" "$ABANDON"
		[ "$status" -eq 17 ] || { echo "$bad: exit $status $output"; false; }
		[ "$(jq -r .refused <<<"$output")" = not-known ]
	done
	[ "$(act_records)" -eq "$n" ]
}

@test "purged: an open intent whose payload retention destroyed -> 11 invalid-request(purged), not not-known, for every disposition (resolve 11-12, 27)" {
	instance
	ri_cfg '.kinds.ledger.retention_period = "700s"'
	yielded k
	ri_at 701
	sweep
	[ "$(jq -r '.purged // 0' <<<"$TALLY")" -ge 1 ]
	n=$(act_records)
	for d in "$ABANDON" "$OUTCOME" "$ESCALATE"; do
		resolve "$ACT" "$d"
		[ "$status" -eq 11 ] || { echo "$d: exit $status $output"; false; }
		[ "$(jq -r .cause <<<"$output")" = purged ]
	done
	[ "$(act_records)" -eq "$n" ]
}

# ---- too-young, already-abandoned, candidates-over-cap ------------------------

@test "too-young: abandoned for an in-flight intent at +10 s and +31.999 s -> 11 too-young, nothing appended; at +32 s (the examine edge, by the operator's now) admitted (resolve 18-19, 27)" {
	instance
	yielded k
	n=$(act_records)
	for at in 10 31.999; do
		ri_at $at
		resolve "$ACT" "$ABANDON"
		[ "$status" -eq 11 ] || { echo "+$at: exit $status $output"; false; }
		[ "$(jq -r .cause <<<"$output")" = too-young ]
	done
	[ "$(act_records)" -eq "$n" ]
	ri_at 32
	resolve "$ACT" "$ABANDON"
	[ "$status" -eq 0 ]
	[ "$(entry_of k | jq -r .state)" = resolved ]
}

@test "too-young guards abandoned only: an outcome disposition for an in-flight intent (+10 s) is admitted (resolve 14a, 18)" {
	instance
	yielded k
	ri_at 10
	resolve "$ACT" "$OUTCOME"
	[ "$status" -eq 0 ]
	[ "$(entry_of k | jq -r .state)" = closed ]
}

@test "already-abandoned: abandoned (or escalated) over a standing sweep abandonment or operator abandonment -> 11 already-abandoned, nothing appended; an outcome over it is admitted and names it (resolve 16a, 17, 27)" {
	instance
	ri_cfg '.kinds.ledger.commit_fence = "declared"'
	# the sweep's abandonment (past the abandon edge, empty store)
	resolve_orphan sw
	SW=$ACT
	ri_at 34
	sweep
	[ "$(t abandoned)" -eq 1 ]
	# the operator's abandonment
	yielded op                       # recorded at +34 s
	OP=$ACT
	ri_at 70
	resolve "$OP" "$ABANDON"
	[ "$status" -eq 0 ]
	OPEV=$(jq -r .closing_event_id <<<"$output")
	[ "$(entry_of op | jq -r .state)" = resolved ]
	[ "$(entry_of sw | jq -r .state)" = abandoned ]
	n=$(act_records)
	for a in "$SW" "$OP"; do
		for d in "$ABANDON" "$ESCALATE"; do
			resolve "$a" "$d"
			if [ "$a" = "$OP" ] && [ "$d" = "$ABANDON" ]; then
				# the very resolution that landed: its answer again
				# (issue 44 point 8, retry-safe)
				[ "$status" -eq 0 ] && [ "$(jq -r .closing_event_id <<<"$output")" = "$OPEV" ]
				continue
			fi
			[ "$status" -eq 11 ] || { echo "$a $d: exit $status $output"; false; }
			[ "$(jq -r .cause <<<"$output")" = already-abandoned ]
		done
	done
	[ "$(act_records)" -eq "$n" ]
	for key in sw op; do
		ab=$(jsql "SELECT event_id FROM records WHERE act_key = '$key' AND action_ref = 'ledger.abandoned'")
		resolve "$(act $key)" "$OUTCOME"
		[ "$status" -eq 0 ]
		rec=$(record_of $key "$(jq -r .closing_event_id <<<"$output")")
		[ "$(jq -r .payload.supersedes <<<"$rec")" = "$ab" ]
		[ "$(entry_of $key | jq -r '.state + " " + (.binding_duplicate | tostring)')" = "closed false" ]
	done
}

@test "candidates-over-cap: an escalated disposition naming 17 candidates with intent_candidates_cap 16 -> 11 candidates-over-cap, nothing appended; 16 are admitted (resolve 28, 27)" {
	instance
	yielded k
	ri_at 40
	n=$(act_records)
	c17=$(jq -nc '{escalated:{candidates:[range(17) | "dsc-\(.)"]}}')
	c16=$(jq -nc '{escalated:{candidates:[range(16) | "dsc-\(.)"]}}')
	resolve "$ACT" "$c17"
	[ "$status" -eq 11 ]
	[ "$(jq -r .cause <<<"$output")" = candidates-over-cap ]
	[ "$(act_records)" -eq "$n" ]
	resolve "$ACT" "$c16"
	[ "$status" -eq 0 ]
	rec=$(record_of k "$(jq -r .closing_event_id <<<"$output")")
	[ "$(jq -r .action_ref <<<"$rec")" = ledger.escalated ]
	[ "$(jq '.payload.store_candidates | length' <<<"$rec")" -eq 16 ]
}

# ---- supersedes, the operator's record ----------------------------------------

@test "over a standing escalation every disposition names it in supersedes: outcome -> closed, abandoned -> resolved, escalated -> escalated; none is a binding duplicate (resolve 13, 15a; Which closing stands 2, state projection)" {
	instance
	escalated eo ea ee
	ri_at 40
	for pair in "eo $OUTCOME closed" "ea $ABANDON resolved" "ee $ESCALATE escalated"; do
		key=${pair%% *}
		state=${pair##* }
		d=${pair#* }
		d=${d% *}
		esc=$(esc_of "$key")
		[ -n "$esc" ]
		resolve "$(act "$key")" "$d"
		[ "$status" -eq 0 ] || { echo "$key: exit $status $output"; false; }
		rec=$(record_of "$key" "$(jq -r .closing_event_id <<<"$output")")
		[ "$(jq -r .payload.supersedes <<<"$rec")" = "$esc" ] || { echo "$key: $rec"; false; }
		e=$(entry_of "$key")
		[ "$(jq -r .state <<<"$e")" = "$state" ] || { echo "$key: $e"; false; }
		[ "$(jq -r .binding_duplicate <<<"$e")" = false ]
	done
	ri_at 100
	sweep
	[ "$(ri-findings | jq -s '[.[] | select(.finding == "binding-duplicate")] | length')" -eq 0 ]
}

@test "the operator's closing: under bob's credential, recovery true, resolved_by bob, acting_actor_ref the intent's actor, no supersedes when nothing stood, and no recovery_intended (resolve 14a, 21)" {
	instance
	yielded k
	ri_at 40
	resolve "$ACT" "$OUTCOME"
	[ "$status" -eq 0 ]
	ev=$(jq -r .closing_event_id <<<"$output")
	e=$(entry_of k)
	[ "$(jq -c '[.records[].action_ref]' <<<"$e")" = '["ledger.intended","ledger.disclosed"]' ]
	rec=$(record_of k "$ev")
	[ "$(jq -r .actor_ref <<<"$rec")" = bob ]
	[ "$(jq -r .payload.recovery <<<"$rec")" = true ]
	[ "$(jq -r .payload.resolved_by <<<"$rec")" = bob ]
	[ "$(jq -r .payload.acting_actor_ref <<<"$rec")" = alice ]
	[ "$(jq -r '.payload.supersedes // "absent"' <<<"$rec")" = absent ]
	[ "$(jq -r .payload.invocation_id <<<"$rec")" = "$(jq -r .invocation_id <<<"$ACT")" ]
	[ "$(jq -r .payload.intent_event_id <<<"$rec")" = "$(jq -r .intent_event_id <<<"$ACT")" ]
	[ "$(jq -c .payload.data <<<"$rec")" = '{"disclosure_id":"dsc-operator"}' ]
	[ "$(records "action_ref = 'ledger.recovery_intended'")" -eq 0 ]
	[ "$(jq -r .state <<<"$e")" = closed ]
}

@test "the chain: the sweep escalates, an operator abandons naming it, a later resolve writes an outcome naming the abandonment -> one standing closing, state closed, no binding duplicate on any surface (Which closing stands 2, 4, 5; resolve 15a, 16a)" {
	instance
	escalated k
	esc=$(esc_of k)
	ri_at 40
	resolve "$(act k)" "$ABANDON"
	[ "$status" -eq 0 ]
	ab=$(jq -r .closing_event_id <<<"$output")
	[ "$(record_of k "$ab" | jq -r .payload.supersedes)" = "$esc" ]
	[ "$(entry_of k | jq -r .state)" = resolved ]
	ri_at 300
	resolve "$(act k)" "$OUTCOME"
	[ "$status" -eq 0 ]
	out=$(jq -r .closing_event_id <<<"$output")
	[ "$(record_of k "$out" | jq -r .payload.supersedes)" = "$ab" ]
	r=$(ri-read <<<'{"kind":"ledger","act_key":"k"}')
	[ "$(jq -r '.invocations[0].state' <<<"$r")" = closed ]
	[ "$(jq -r '.invocations[0].binding_duplicate' <<<"$r")" = false ]
	[ "$(jq -r '.binding_duplicate' <<<"$r")" = false ]
	# read invocation 6: the superseded records are still shown
	[ "$(jq -c '[.invocations[0].records[].action_ref]' <<<"$r")" = \
	    '["ledger.intended","ledger.escalated","ledger.abandoned","ledger.disclosed"]' ]
	# the sweep's duplicate scan reads supersession transitively too
	ri_at 360
	sweep
	[ "$(t examined)" -eq 0 ]
	[ "$(ri-findings | jq -s '[.[] | select(.finding == "binding-duplicate")] | length')" -eq 0 ]
	# and a fourth closing is refused: an outcome stands
	resolve "$(act k)" "$ABANDON"
	[ "$status" -eq 16 ]
	[ "$(jq -r .closing_event_id <<<"$output")" = "$out" ]
}

# ---- a late Close adopting another writer's outcome -----------------------------
#
# A Close that has passed step 1 (its remaining) and is paused before its
# step-2 re-read (close.after_remaining) holds a lease that, in the env
# clock, expires at +30 s.  Each process reads its own RI_NOW, so an operator
# (or a sweep) running at +40 s takes the expired section and writes; the
# paused Close then wakes, re-reads, and must adopt that outcome instead of
# writing a second one.  This is how close step 2.2d/2.2e are reachable: a
# Close that STARTS after the other writer released finds remaining = none
# and answers 21 at step 1 instead.

# paused_close KEY -- open KEY at T0, start ri-close at +10 s paused after step 1
paused_close() {
	OPEN=$(open_req "$1" "{\"pairing_datum\":\"pd-$1\"}" | ri-open)
	ACT=$(act "$1")
	export RI_FAULT_DIR=$T/faults
	mkdir -p "$RI_FAULT_DIR"
	mkfifo "$RI_FAULT_DIR/close.after_remaining"
	ri_at 10
	RI_FAULT=close.after_remaining=pause ri-close <<<"$(close_req "$OPEN" '{"disclosure_id":"dsc-invocation"}')" \
	    >"$T/close.out" 2>"$T/close.err" 3>&- &
	BG=$!
	wait_for "$RI_FAULT_DIR/close.after_remaining.reached"
}

# release_close -- wake the paused close; CLOSE_RC / CLOSE_OUT
release_close() {
	echo >"$RI_FAULT_DIR/close.after_remaining"
	CLOSE_RC=0
	wait "$BG" || CLOSE_RC=$?
	BG=
	CLOSE_OUT=$(cat "$T/close.out")
}

@test "a late ri-close that finds the operator's outcome adopts it and answers landed_by operator, writing nothing (close steps 2.2a-2.2d)" {
	instance
	paused_close k
	ri_at 40
	resolve "$ACT" "$OUTCOME"
	[ "$status" -eq 0 ]
	op_ev=$(jq -r .closing_event_id <<<"$output")
	release_close
	[ "$CLOSE_RC" -eq 0 ]
	[ "$(jq -r .landed_by <<<"$CLOSE_OUT")" = operator ]
	[ "$(jq -r .outcome_event_id <<<"$CLOSE_OUT")" = "$op_ev" ]
	[ "$(records "act_key = 'k' AND action_ref = 'ledger.disclosed'")" -eq 1 ]
}

@test "a late ri-close that finds the sweep's recovered outcome adopts it and answers landed_by sweep (close step 2.2e)" {
	instance
	paused_close k
	RI_PAIRING_DATUM=pd-k ledger-disclose --store "$T/ledger.db" --subject k --recipient r --scope s >/dev/null
	ri_at 33
	sweep
	[ "$(t closed)" -eq 1 ]
	sw_ev=$(jsql "SELECT event_id FROM records WHERE act_key = 'k' AND action_ref = 'ledger.disclosed'")
	release_close
	# its re-read under the section reads past its first read's snapshot
	# (RI_NC_REREAD_IN_SNAPSHOT: on PostgreSQL it misses the sweep's
	# outcome, writes its own, and the journal fence refuses that)
	[ "$CLOSE_RC" -eq 0 ] || { echo "the late ri-close did not adopt the sweep's outcome: exit $CLOSE_RC, $CLOSE_OUT; $(cat "$T/close.err")"; false; }
	[ "$(jq -r .landed_by <<<"$CLOSE_OUT")" = sweep ]
	[ "$(jq -r .outcome_event_id <<<"$CLOSE_OUT")" = "$sw_ev" ]
	[ "$(records "act_key = 'k' AND action_ref = 'ledger.disclosed'")" -eq 1 ]
}

@test "a late ri-close that finds the operator's abandonment does not adopt it: 21, nothing written (close step 2.3)" {
	instance
	paused_close k
	ri_at 40
	resolve "$ACT" "$ABANDON"
	[ "$status" -eq 0 ]
	n=$(act_records)
	release_close
	[ "$CLOSE_RC" -eq 21 ]
	[ "$(jq -r .position <<<"$CLOSE_OUT")" = outcome ]
	[ "$(act_records)" -eq "$n" ]
	[ "$(entry_of k | jq -r .state)" = resolved ]
}

# ---- recording-failure(resolution) --------------------------------------------

@test "recording-failure(resolution): the closing write fails before landing (step-2, step-3) -> 23, nothing appended, the section released, retry-safe (resolve 23, 26)" {
	instance
	yielded k
	ri_at 40
	n=$(act_records)
	for f in fail fail3; do
		run --separate-stderr env RI_FAULT=resolve.closing.before=$f ri-resolve <<<"$(req "$ACT" "$ABANDON")"
		[ "$status" -eq 23 ] || { echo "$f: exit $status $output"; false; }
		[ "$(jq -r .refused <<<"$output")" = recording-failure ]
		[ "$(jq -r .position <<<"$output")" = resolution ]
		[ "$(act_records)" -eq "$n" ]
	done
	resolve "$ACT" "$ABANDON"
	[ "$status" -eq 0 ]
	[ "$(act_records)" -eq $((n + 1)) ]
}

@test "recording-failure(resolution): a lost reply whose read-back finds nothing (fast) -> 23, nothing appended (resolve 26; Primitive policy 37)" {
	instance fast
	yielded k
	n=$(act_records)
	run --separate-stderr env RI_FAULT=resolve.closing.before=lose ri-resolve <<<"$(req "$ACT" "$OUTCOME")"
	[ "$status" -eq 23 ]
	[ "$(jq -r .position <<<"$output")" = resolution ]
	[ "$(act_records)" -eq "$n" ]
}

@test "a lost reply whose record landed (fast): read back after journal_write_bound -> success with that record, exactly one closing (resolve 26 a contrario; Primitive policy 34-36)" {
	instance fast
	yielded k
	n=$(act_records)
	run --separate-stderr env RI_FAULT=resolve.closing.after=lose ri-resolve <<<"$(req "$ACT" "$OUTCOME")"
	[ "$status" -eq 0 ]
	ev=$(jq -r .closing_event_id <<<"$output")
	[ "$(act_records)" -eq $((n + 1)) ]
	[ "$(jsql "SELECT event_id FROM records WHERE act_key = 'k' AND action_ref = 'ledger.disclosed'")" = "$ev" ]
}

@test "step-4 after the closing landed (resolve.closing.after=fail): read back, success with a hard alert, no retry -- exactly one closing (resolve 24-25)" {
	instance
	yielded k
	ri_at 40
	n=$(act_records)
	run --separate-stderr env RI_FAULT=resolve.closing.after=fail ri-resolve <<<"$(req "$ACT" "$ABANDON")"
	[ "$status" -eq 0 ]
	[ -n "$(jq -r '.alert // empty' <<<"$output")" ]
	[ -n "$stderr" ]
	ev=$(jq -r .closing_event_id <<<"$output")
	[ "$(act_records)" -eq $((n + 1)) ]
	[ "$(jsql "SELECT event_id FROM records WHERE act_key = 'k' AND action_ref = 'ledger.abandoned'")" = "$ev" ]
}
