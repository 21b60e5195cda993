#!/usr/bin/env bats
# findings.bats -- the findings register (Composition state, findings 1-13)
# and its five conditions, as ri-sweep writes them and ri-findings prints
# them (JSON lines; --open, --kind): each condition opening, advancing,
# closing and recurring where it applies.
#
#   store-unavailable   instance, kind      reconcile step 3.13c
#   journal-unavailable instance, no kind   reconcile 1b, Invariant 4.4-4.5
#   closure-at-risk     act                 reconcile step 5.1, 2e
#   binding-duplicate   act                 reconcile steps 5.2-5.4
#   unbound-kind        act                 Binding 4
#   start-refused       instance, kind|none Binding 2-3, Instance start 3
#
# Walkthrough numbers (tests/lib/common.bash); time moves only through
# RI_NOW.  Every tally is checked against the partition identity.
#
# test-pg: backend

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"
load "$BATS_TEST_DIRNAME/lib/sweep"

setup() {
	ledger_instance
	BG=
}

teardown() { sweep_teardown; }

# ---- helpers --------------------------------------------------------------

# refused_sweep -- a run under a config that unbinds a kind with an open
# intent: 78, the tally on stdout, nothing written (Binding 2)
refused_sweep() {
	local n
	n=$(records)
	run --separate-stderr ri-sweep
	[ "$status" -eq 78 ] || { echo "ri-sweep exited $status, not 78: $output $stderr"; return 1; }
	TALLY=$output
	assert_partition "$TALLY"
	[ "$(records)" -eq "$n" ] || { echo "the refused run wrote $(( $(records) - n )) records"; return 1; }
}

store_down() { set_probe --store "$T/missing/ledger.db"; }
store_up() { set_probe --store "$T/ledger.db"; }

# F JQ-CONDITION [ri-findings flags] -- the matching register lines, as a JSON array
F() {
	local cond=$1
	shift
	ri-findings "$@" | jq -s -c "[.[] | select($cond)]"
}

# instant SECONDS -- T0 + SECONDS as ri prints it
instant() { date -u -d "@$(( (T0 / 1000) + $1 ))" +%Y-%m-%dT%H:%M:%S.000Z; }

# ---- store-unavailable ------------------------------------------------------

@test "store-unavailable (instance, kind): opens on the first run that sees it, last_seen advances on the next, closes on a run that no longer sees it (last_seen kept), and a recurrence opens a new record (findings 5, 7-12; reconcile step 3.13c)" {
	# findings 6: the register's lines are the listed conditions only (the schema's enum); findings 13: the test reads them by name, never by order
	orphan a
	store_down
	ri_at 33
	sweep_degraded
	run1=$RUN
	[ "$(t skipped)" -eq 1 ]
	f=$(F '.finding == "store-unavailable"')
	[ "$(jq length <<<"$f")" -eq 1 ]
	[ "$(jq -r '.[0].scope' <<<"$f")" = instance ]
	[ "$(jq -r '.[0].kind' <<<"$f")" = ledger ]
	[ "$(jq -r '.[0].act_key, .[0].invocation_id' <<<"$f" | tr '\n' ' ')" = "null null " ]
	[ "$(jq -r '.[0].first_seen' <<<"$f")" = "$run1" ]
	[ "$(jq -r '.[0].last_seen' <<<"$f")" = "$run1" ]
	[ "$(jq -r '.[0].first_seen_at' <<<"$f")" = "$(instant 33)" ]
	[ "$(jq -r '.[0].closed' <<<"$f")" = false ]

	# advance: same record, last seen moves, first seen does not
	ri_at 40
	sweep_degraded
	run2=$RUN
	f=$(F '.finding == "store-unavailable"')
	[ "$(jq length <<<"$f")" -eq 1 ]
	[ "$(jq -r '.[0].first_seen' <<<"$f")" = "$run1" ]
	[ "$(jq -r '.[0].first_seen_at' <<<"$f")" = "$(instant 33)" ]
	[ "$(jq -r '.[0].last_seen' <<<"$f")" = "$run2" ]
	[ "$(jq -r '.[0].last_seen_at' <<<"$f")" = "$(instant 40)" ]
	[ "$(jq -r '.[0].closed' <<<"$f")" = false ]

	# the store is back: the act closes, the record closes with last seen at run 2
	store_up
	ri_at 50
	sweep
	[ "$(t closed)" -eq 1 ]
	f=$(F '.finding == "store-unavailable"')
	[ "$(jq length <<<"$f")" -eq 1 ]
	[ "$(jq -r '.[0].closed' <<<"$f")" = true ]
	[ "$(jq -r '.[0].last_seen' <<<"$f")" = "$run2" ]
	[ "$(jq -r '.[0].last_seen_at' <<<"$f")" = "$(instant 40)" ]
	[ "$(jq -r '.[0].closed_at' <<<"$f")" = "$(instant 50)" ]

	# a recurrence: a new record, its own span
	orphan b                         # recorded at +50 s
	store_down
	ri_at 90
	sweep_degraded
	run4=$RUN
	f=$(F '.finding == "store-unavailable"')
	[ "$(jq length <<<"$f")" -eq 2 ]
	[ "$(jq -r '.[0].closed, .[1].closed' <<<"$f" | tr '\n' ' ')" = "true false " ]
	[ "$(jq -r '.[1].first_seen' <<<"$f")" = "$run4" ]
	[ "$(jq -r '.[1].first_seen_at' <<<"$f")" = "$(instant 90)" ]
	[ "$(jq -r '.[0].last_seen_at' <<<"$f")" = "$(instant 40)" ]     # the old span is untouched
}

# ---- journal-unavailable ----------------------------------------------------

@test "journal-unavailable (instance, no kind): the outage's start and end -- first_seen_at at the first outage run, last_seen_at at the last, closed by the first run that reads the journal (Invariant 4.4-4.5; reconcile 1b; findings 5, 9, 10a)" {
	orphan a
	away() { for f in journal.db journal.db-wal journal.db-shm; do [ ! -e "$T/$f" ] || mv "$T/$f" "$T/$f.away"; done; }
	back() { for f in journal.db journal.db-wal journal.db-shm; do [ ! -e "$T/$f.away" ] || mv "$T/$f.away" "$T/$f"; done; }
	away
	for at in 40 50; do
		ri_at $at
		run --separate-stderr ri-sweep
		[ "$status" -eq 15 ]
		[ "$(jq -r .refused <<<"$output")" = journal-unavailable ]
	done
	f=$(F '.finding == "journal-unavailable"')
	[ "$(jq length <<<"$f")" -eq 1 ]
	[ "$(jq -r '.[0].scope' <<<"$f")" = instance ]
	[ "$(jq -r '.[0].kind' <<<"$f")" = null ]
	[ "$(jq -r '.[0].first_seen_at' <<<"$f")" = "$(instant 40)" ]
	[ "$(jq -r '.[0].last_seen_at' <<<"$f")" = "$(instant 50)" ]
	[ "$(jq -r '.[0].closed' <<<"$f")" = false ]
	# never as the outage's intents (Invariant 4.4)
	[ "$(F '.scope == "act"' | jq length)" -eq 0 ]
	back
	ri_at 60
	sweep
	[ "$(t closed)" -eq 1 ]
	f=$(F '.finding == "journal-unavailable"')
	[ "$(jq length <<<"$f")" -eq 1 ]
	[ "$(jq -r '.[0].closed' <<<"$f")" = true ]
	[ "$(jq -r '.[0].first_seen_at' <<<"$f")" = "$(instant 40)" ]
	[ "$(jq -r '.[0].last_seen_at' <<<"$f")" = "$(instant 50)" ]
	[ "$(jq -r '.[0].closed_at' <<<"$f")" = "$(instant 60)" ]
	# --kind excludes a finding with no kind
	[ "$(F 'true' --kind ledger | jq '[.[] | select(.finding == "journal-unavailable")] | length')" -eq 0 ]
}

# ---- closure-at-risk --------------------------------------------------------

@test "closure-at-risk (act): set once at the first run past the threshold, never duplicated or moved by later runs, one record per invocation (findings 7, 8, 12; reconcile step 5.1)" {
	orphan a
	inv_a=$INV
	orphan b
	inv_b=$INV
	store_down
	ri_at 300
	sweep_degraded
	first=$RUN
	for at in 360 420 480; do
		ri_at $at
		sweep_degraded
		[ "$(t skipped)" -eq 2 ]
	done
	f=$(F '.finding == "closure-at-risk"')
	[ "$(jq length <<<"$f")" -eq 2 ]
	[ "$(jq -c '[.[].invocation_id] | sort' <<<"$f")" = "$(jq -nc --arg a "$inv_a" --arg b "$inv_b" '[$a, $b] | sort')" ]
	[ "$(jq -c '[.[].scope] | unique' <<<"$f")" = '["act"]' ]
	[ "$(jq -c '[.[].first_seen] | unique' <<<"$f")" = "[\"$first\"]" ]
	[ "$(jq -c '[.[].first_seen_at] | unique' <<<"$f")" = "[\"$(instant 300)\"]" ]
	# an act finding carries no last seen and no span
	[ "$(jq -c '[.[].last_seen] | unique' <<<"$f")" = '[null]' ]
	[ "$(jq -c '[.[].act_key] | sort' <<<"$f")" = '["a","b"]' ]
}

# ---- binding-duplicate ------------------------------------------------------

@test "binding-duplicate (act), closings key: under journal_fence none a Close paused past its lease lands beside the operator's outcome; the sweep's scan surfaces it once, ri-read flags the entry (journal fence none 1-5; reconcile steps 5.2-5.5; read invocation 7; findings 12)" {
	ri_cfg '.instance.journal_fence = "none"'
	BOB=$(ri-actor add bob | jq -r .credential)
	open=$(open_req k '{"pairing_datum":"pd-k"}' | ri-open)
	INV=$(jq -r .invocation_id <<<"$open")
	export RI_FAULT_DIR=$T/faults
	mkdir -p "$RI_FAULT_DIR"
	mkfifo "$RI_FAULT_DIR/close.after_reread"
	ri_at 10
	RI_FAULT=close.after_reread=pause ri-close <<<"$(close_req "$open" '{"disclosure_id":"dsc-inv"}')" \
	    >"$T/close.out" 2>"$T/close.err" 3>&- &
	BG=$!
	wait_for "$RI_FAULT_DIR/close.after_reread.reached"
	# the operator, at +40 s by the operator's seam, closes it with an outcome
	ri_at 40
	run ri-resolve <<<"$(jq -c --arg c "$BOB" '{kind, act_key, invocation_id, intent_event_id, actor_ref:"bob",
	    credential:$c, disposition:{outcome:{outcome_action_ref:"ledger.disclosed", outcome_data:{disclosure_id:"dsc-op"}}}}' <<<"$open")"
	[ "$status" -eq 0 ]
	echo >"$RI_FAULT_DIR/close.after_reread"
	rc=0
	wait "$BG" || rc=$?
	BG=
	[ "$rc" -eq 0 ]                  # no fence: the late append lands (journal fence none 1a)
	[ "$(records "invocation_id = '$INV' AND action_ref = 'ledger.disclosed'")" -eq 2 ]
	[ "$(F '.finding == "binding-duplicate"' | jq length)" -eq 0 ]   # nothing surfaces it but the sweep
	ri_at 50
	sweep
	f=$(F '.finding == "binding-duplicate"')
	[ "$(jq length <<<"$f")" -eq 1 ]
	[ "$(jq -r '.[0].scope' <<<"$f")" = act ]
	[ "$(jq -r '.[0].kind' <<<"$f")" = ledger ]
	[ "$(jq -r '.[0].act_key' <<<"$f")" = k ]
	[ "$(jq -r '.[0].invocation_id' <<<"$f")" = "$INV" ]
	[ "$(jq -r '.[0].detail.key' <<<"$f")" = closings ]
	[ "$(jq -r '.[0].first_seen' <<<"$f")" = "$RUN" ]
	r=$(ri-read <<<'{"kind":"ledger","act_key":"k"}')
	[ "$(jq -r '.invocations[0].binding_duplicate' <<<"$r")" = true ]
	[ "$(jq -r '.binding_duplicate' <<<"$r")" = false ]
	# later runs do not duplicate it
	for at in 100 200; do
		ri_at $at
		sweep
	done
	[ "$(F '.finding == "binding-duplicate"' | jq length)" -eq 1 ]
}

@test "binding-duplicate (act), intents key: under journal_fence none an Open paused before its intent write lands beside a newer Open's intent; two open intents surface as the intents key and ri-read's act-level flag (Which closing stands 9; reconcile step 5.3; read invocation 8; journal fence none 5)" {
	ri_cfg '.instance.journal_fence = "none"'
	export RI_FAULT_DIR=$T/faults
	mkdir -p "$RI_FAULT_DIR"
	mkfifo "$RI_FAULT_DIR/open.intent.before"
	open_req k '{"pairing_datum":"pd-a"}' | RI_FAULT=open.intent.before=pause ri-open \
	    >"$T/a.out" 2>"$T/a.err" 3>&- &
	BG=$!
	wait_for "$RI_FAULT_DIR/open.intent.before.reached"
	ri_at 40                         # the first holder's lease ended at +30 s
	run ri-open <<<"$(open_req k '{"pairing_datum":"pd-b"}')"
	[ "$status" -eq 0 ]
	echo >"$RI_FAULT_DIR/open.intent.before"
	rc=0
	wait "$BG" || rc=$?
	BG=
	# open step 5.3: its intent landed, but it no longer holds the section
	[ "$rc" -eq 14 ]
	[ "$(jq -r .intent_event_id "$T/a.out")" != null ]
	[ "$(records "action_ref = 'ledger.intended' AND act_key = 'k'")" -eq 2 ]
	r=$(ri-read <<<'{"kind":"ledger","act_key":"k"}')
	[ "$(jq -r .binding_duplicate <<<"$r")" = true ]
	ri_at 41
	sweep
	f=$(F '.finding == "binding-duplicate"')
	[ "$(jq length <<<"$f")" -ge 1 ]
	[ "$(jq -c '[.[].detail.key] | unique' <<<"$f")" = '["intents"]' ]
	[ "$(jq -c '[.[].act_key] | unique' <<<"$f")" = '["k"]' ]
}

@test "the same race under journal_fence declared: the paused Open's intent is fenced out (20), one open intent, no binding duplicate (journal fence 3; Invariant 2.1)" {
	export RI_FAULT_DIR=$T/faults
	mkdir -p "$RI_FAULT_DIR"
	mkfifo "$RI_FAULT_DIR/open.intent.before"
	open_req k '{"pairing_datum":"pd-a"}' | RI_FAULT=open.intent.before=pause ri-open \
	    >"$T/a.out" 2>"$T/a.err" 3>&- &
	BG=$!
	wait_for "$RI_FAULT_DIR/open.intent.before.reached"
	ri_at 40
	run ri-open <<<"$(open_req k '{"pairing_datum":"pd-b"}')"
	[ "$status" -eq 0 ]
	echo >"$RI_FAULT_DIR/open.intent.before"
	rc=0
	wait "$BG" || rc=$?
	BG=
	[ "$rc" -eq 20 ]
	[ "$(jq -r .position <"$T/a.out")" = intent ]
	[ "$(records "action_ref = 'ledger.intended' AND act_key = 'k'")" -eq 1 ]
	[ "$(ri-read <<<'{"kind":"ledger","act_key":"k"}' | jq -r .binding_duplicate)" = false ]
	ri_at 80
	sweep
	[ "$(F '.finding == "binding-duplicate"' | jq length)" -eq 0 ]
}

@test "no intents key under service identity null: an Open past an aged open intent leaves both open (open step 3.8a-3.8b) and neither ri-read nor the sweep reports a binding duplicate (journal fence none 6; Which closing stands 10; read invocation 9a)" {
	ri_cfg '.kinds.ledger.service_identity = null'
	orphan k
	old=$INV
	ri_at 40
	run --separate-stderr ri-open <<<"$(open_req k '{"pairing_datum":"pd-new"}')"
	[ "$status" -eq 0 ]
	new=$(jq -r .invocation_id <<<"$output")
	[ "$new" != "$old" ]
	# Open itself surfaces the old intent (open step 3.8c), before any sweep
	[ "$(F ".finding == \"closure-at-risk\" and .invocation_id == \"$old\"" | jq length)" -eq 1 ]
	r=$(ri-read <<<'{"kind":"ledger","act_key":"k"}')
	[ "$(jq -c '[.invocations[].state]' <<<"$r")" = '["open","open"]' ]
	[ "$(jq -r .binding_duplicate <<<"$r")" = false ]
	ri_at 80
	sweep
	[ "$(t reported)" -eq 2 ]
	[ "$(F '.finding == "binding-duplicate"' | jq length)" -eq 0 ]
	# the old intent is on the surface for an operator (open step 3.8c, reconcile 2e)
	[ "$(F ".finding == \"closure-at-risk\" and .invocation_id == \"$old\"" | jq length)" -eq 1 ]
}

# ---- unbound-kind -----------------------------------------------------------

@test "unbound-kind (act): an open intent of a kind no longer bound is surfaced once per run as one record with kind and act key, never closed, by runs that write nothing else (Binding 2-5; findings 12)" {
	ri_cfg '.kinds.ledger2 = .kinds.ledger'
	orphan k ledger2
	ri_cfg 'del(.kinds.ledger2)'
	for at in 33 100 200; do
		ri_at $at
		refused_sweep
		[ "$(t surfaced)" -eq 1 ]
	done
	f=$(F '.finding == "unbound-kind"')
	[ "$(jq length <<<"$f")" -eq 1 ]
	[ "$(jq -r '.[0].scope, .[0].kind, .[0].act_key, .[0].invocation_id' <<<"$f" | tr '\n' ' ')" = \
	    "act ledger2 k $INV " ]
	[ "$(records "invocation_id = '$INV'")" -eq 1 ]
	# Binding 3: the refusal itself is on the register, once
	[ "$(F 'true' --kind ledger2 | jq -c '[.[].finding]')" = '["start-refused","unbound-kind"]' ]
}

@test "unbound-kind is bounded by the instance's longest retention: past it the intent is no longer surfaced, nor does it refuse the run (Binding 2, 6)" {
	# findings 2: a finding naming no kind, and Binding 6's pass, reach back the longest retention period
	ri_cfg '.kinds.ledger.retention_period = "700s" | .kinds.ledger2 = .kinds.ledger'
	orphan k ledger2
	ri_cfg 'del(.kinds.ledger2)'
	ri_at 699.999
	refused_sweep
	[ "$(t surfaced)" -eq 1 ]
	ri_at 700
	sweep
	[ "$(t surfaced)" -eq 0 ]
}

# ---- the listing ------------------------------------------------------------

@test "ri-findings: one JSON object per line; --open lists standing instance findings and the act findings whose act still needs someone, never a closed one; --kind filters (INTERFACE: ri-findings; findings 4, 13)" {
	ri_cfg '.kinds.ledger2 = .kinds.ledger'
	orphan u ledger2
	U=$INV
	orphan a
	ri_cfg 'del(.kinds.ledger2)'
	ri_at 300
	refused_sweep                      # Binding 2-4: unbound-kind(u), start-refused(ledger2)
	# an operator closes u under the kind bound again, then it is unbound (Binding 2)
	ri_cfg '.kinds.ledger2 = .kinds.ledger'
	BOB=$(ri-actor add bob | jq -r .credential)
	jq -nc --arg i "$U" --arg e "$(jsql "SELECT event_id FROM records
	    WHERE invocation_id = '$U' AND action_ref = 'ledger2.intended'")" --arg c "$BOB" \
	    '{kind:"ledger2", act_key:"u", invocation_id:$i, intent_event_id:$e, actor_ref:"bob",
	      credential:$c, disposition:{abandoned:{cause:"operator: nothing in the store"}}}' |
	    ri-resolve >/dev/null
	ri_cfg 'del(.kinds.ledger2)'
	store_down
	sweep_degraded                     # store-unavailable(ledger), closure-at-risk(a)
	store_up
	ri_at 360
	sweep                              # a closes; store-unavailable closes
	[ "$(t closed)" -eq 1 ]
	orphan b
	store_down
	ri_at 400
	sweep_degraded                     # store-unavailable opens again (b)
	ri-findings >"$T/all.jsonl"
	# every line is exactly one JSON object, and each is exactly one of act, instance
	[ "$(wc -l <"$T/all.jsonl")" -eq "$(jq -s length "$T/all.jsonl")" ]
	[ "$(jq -s -c '[.[].scope] | unique' "$T/all.jsonl")" = '["act","instance"]' ]
	[ "$(jq -s '[.[] | select(.finding == "store-unavailable")] | length' "$T/all.jsonl")" -eq 2 ]

	ri-findings --open >"$T/open.jsonl"
	[ "$(jq -s '[.[] | select(.scope == "instance" and .closed)] | length' "$T/open.jsonl")" -eq 0 ]
	[ "$(jq -s '[.[] | select(.finding == "store-unavailable")] | length' "$T/open.jsonl")" -eq 1 ]
	# an act finding stands while its act needs someone: a's closed with it
	[ "$(jq -s '[.[] | select(.scope == "act")] | length' "$T/open.jsonl")" -eq \
	    "$(jq -s '[.[] | select(.scope == "act" and (.closed | not))] | length' "$T/all.jsonl")" ]
	[ "$(jq -s '[.[] | select(.scope == "act" and .closed)] | length' "$T/all.jsonl")" -ge 1 ]
	# u was resolved by an operator: its unbound-kind finding no longer stands
	[ "$(jq -s '[.[] | select(.finding == "unbound-kind")] | length' "$T/open.jsonl")" -eq 0 ]
	# a's closure-at-risk closed with a (the sweep at +360 closed it)
	[ "$(jq -s '[.[] | select(.finding == "closure-at-risk")] | length' "$T/open.jsonl")" -eq 0 ]
	[ "$(jq -s '[.[] | select(.finding == "closure-at-risk" and .closed)] | length' "$T/all.jsonl")" -ge 1 ]

	[ "$(ri-findings --kind ledger | jq -s -c '[.[].kind] | unique')" = '["ledger"]' ]
	[ "$(ri-findings --kind ledger2 | jq -s -c '[.[].finding]')" = '["start-refused","unbound-kind"]' ]
	[ "$(ri-findings --open --kind ledger2 | jq -s -c '[.[].finding]')" = '[]' ]
	[ "$(ri-findings --open --kind ledger | jq -s -c '[.[] | select(.scope == "instance") | .closed]')" = '[false]' ]
	[ -z "$(ri-findings --kind nosuchkind)" ]
}

# ---- issue 41 point 6: every answer valid, a typo a usage error, --check --------

@test "issue 41 point 6: every line ri-findings prints validates against schemas/ri-findings.line.json -- act findings closed by an operator's resolution, open ones, instance findings open and closed; --open and --kind too" {
	SCHEMA=$BATS_TEST_DIRNAME/../schemas/ri-findings.line.json
	VALIDATE=$BATS_TEST_DIRNAME/lib/validate.py
	BOB=$(ri-actor add bob | jq -r .credential)
	# store-unavailable, opened then closed; two escalations, one resolved
	orphan a
	store_down
	ri_at 33
	sweep_any
	store_up
	empty_orphan e1
	empty_orphan e2
	ri_at 70
	sweep
	[ "$(t escalated)" -eq 2 ]
	RI_CREDENTIAL=$BOB ri-resolve --kind ledger --act-key e1 --actor bob --abandon "OPS-1" >/dev/null
	run --separate-stderr ri-findings
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -ge 3 ]
	# the resolved escalation is an act finding that closed
	jq -se 'any(.[]; .finding == "escalated" and .scope == "act" and .closed and (.closed_at | type) == "string")' <<<"$output"
	jq -se 'any(.[]; .finding == "store-unavailable" and .closed)' <<<"$output"
	printf '%s\n' "$output" | python3 "$VALIDATE" "$SCHEMA"
	for flags in "--open" "--kind ledger" "--open --kind ledger"; do
		# shellcheck disable=SC2086
		ri-findings $flags | python3 "$VALIDATE" "$SCHEMA"
	done
	[ "$(ri-findings --open | jq -s 'map(select(.finding == "escalated")) | length')" -eq 1 ]
}

@test "issue 41 point 6: --kind naming no bound kind and no finding is a usage error (64), never an empty success; a kind the config no longer binds but a finding names still lists" {
	run --separate-stderr ri-findings --open --kind TYPO
	[ "$status" -eq 64 ]
	[ -z "$output" ]
	[[ "$stderr" == "ri-findings: --kind TYPO: no such kind"* ]]
	run --separate-stderr ri-findings --kind TYPO --check
	[ "$status" -eq 64 ]
	# a bound kind with nothing to say: 0, nothing printed
	run --separate-stderr ri-findings --kind ledger
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	# an unbound kind's finding: the kind is known by its finding
	ri_cfg '.kinds.other = .kinds.ledger'
	ri-open --kind other --act-key u1 --actor alice >/dev/null
	ri_cfg 'del(.kinds.other)'
	ri_at 40
	refused_sweep
	run --separate-stderr ri-findings --kind other
	[ "$status" -eq 0 ]
	jq -se 'length >= 1 and all(.[]; .kind == "other")' <<<"$output"
}

@test "issue 41 point 6: --check exits 1 while a finding is open and 0 when none is, printing nothing on stdout (a monitoring script's test); --text says the same for people" {
	run --separate-stderr ri-findings --check
	[ "$status" -eq 0 ]
	[ -z "$output" ] && [ -z "$stderr" ]
	empty_orphan c1
	ri_at 33
	sweep
	run --separate-stderr ri-findings --check
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[[ "$stderr" == "ri-findings: 1 finding open (ri-findings --open --text lists it)" ]]
	run --separate-stderr ri-findings --check --kind ledger
	[ "$status" -eq 1 ]
	run --separate-stderr ri-findings --open --text
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == "2026-11-29T10:00:33.000Z  escalated "*" OPEN "*" ledger c1 inv_"*"  cause: not-observed" ]]
	run --separate-stderr ri-findings --text --check
	[ "$status" -eq 64 ]
	BOB=$(ri-actor add bob | jq -r .credential)
	RI_CREDENTIAL=$BOB ri-resolve --kind ledger --act-key c1 --actor bob --abandon "OPS-2" >/dev/null
	run --separate-stderr ri-findings --check
	[ "$status" -eq 0 ]
	run ri-findings --text
	[[ "$output" == *"escalated "*" closed 2026-11-29T10:00:33.000Z  ledger c1 "* ]]
}
