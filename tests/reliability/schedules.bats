#!/usr/bin/env bats
# Deterministic interleavings (the CNF-13 method): a process is paused at a
# named boundary (RI_FAULT=<point>=pause blocks it until the test writes the
# FIFO $RI_FAULT_DIR/<point>), so orders that load rarely hits are scripted
# exactly.  Each schedule asserts Invariant 2 (one closing, one open intent)
# under journal_fence "declared", and under "none" that the duplicate is
# surfaced (journal fence none 1-6).
#
# Each process has its own frozen env clock, so a paused process keeps the
# instant it started with, while the test moves RI_NOW for the others.
#
# test-pg: backend

load "$BATS_TEST_DIRNAME/../lib/common"

setup() {
	ri_instance fast
	ledger-admin --store "$T/ledger.db" init >/dev/null
	export RI_CREDENTIAL=$ALICE
}

teardown() {
	# never leave a paused process behind: a writer that finds no reader
	# within a second gives up
	for f in "$T"/p*/*.reached; do
		[ -e "$f" ] && timeout 1 sh -c 'echo >"$1"' _ "${f%.reached}" 2>/dev/null
	done
	true
}

# pause_dir NAME POINT -- a FIFO for POINT under $T/NAME; prints the dir
pause_dir() {
	mkdir -p "$T/$1" && mkfifo "$T/$1/$2" && echo "$T/$1"
}

reached() { # DIR POINT -- wait (at most 10 s) until the process paused there
	for _ in $(seq 100); do
		[ -e "$1/$2.reached" ] && return 0
		sleep 0.1
	done
	return 1
}

reached_or_gone() { # DIR POINT PID -- wait until it paused there or ended
	for _ in $(seq 200); do
		[ -e "$1/$2.reached" ] && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

release() { # DIR POINT
	echo >"$1/$2"
}

closings() { # the number of closing records naming the only invocation of act KEY
	ri-read --kind ledger --act-key "$1" </dev/null |
	    jq '[.invocations[].records[] | select(.action_ref | test("\\.(disclosed|refused|abandoned|escalated)$"))] | length'
}

# open KEY -- an intent, and the act committed in the store, as a job would
open_and_act() {
	open_req "$1" '{"pairing_datum":"pd-'"$1"'","subject":"s","recipient":"r"}' | ri-open >"$T/open-$1.json"
	ledger-admin --store "$T/ledger.db" plant --pairing-datum "pd-$1" --subject s --recipient r >/dev/null
}

@test "close step 2 + journal fence: Close paused between its re-read and its write while the lease expires and the sweep closes -- one closing (Invariant 2.1)" {
	open_and_act k1
	d=$(pause_dir pc close.after_reread)
	close_req "$(cat "$T/open-k1.json")" '{"disclosure_id":"late"}' >"$T/close.json"
	RI_FAULT=close.after_reread=pause RI_FAULT_DIR=$d ri-close <"$T/close.json" >"$T/close.out" 2>&1 &
	pid=$!
	reached "$d" close.after_reread
	ri_at 10
	run ri-sweep
	[ "$status" -eq 0 ]
	[ "$(jq .closed <<<"$output")" -eq 1 ]
	release "$d" close.after_reread
	wait "$pid" && false || rc=$?
	# the late write is fenced out: the sweep holds the section now
	[ "$rc" -eq 21 ]
	[ "$(closings k1)" -eq 1 ]
	run ri-audit
	[ "$status" -eq 0 ]
}

@test "journal fence none 1-3: the same schedule without a fence leaves two closings, and both surfaces report the duplicate" {
	ri_cfg '.instance.journal_fence = "none"'
	open_and_act k1
	d=$(pause_dir pc close.after_reread)
	close_req "$(cat "$T/open-k1.json")" '{"disclosure_id":"late"}' >"$T/close.json"
	RI_FAULT=close.after_reread=pause RI_FAULT_DIR=$d ri-close <"$T/close.json" >/dev/null 2>&1 &
	pid=$!
	reached "$d" close.after_reread
	ri_at 10
	ri-sweep >/dev/null
	release "$d" close.after_reread
	wait "$pid" || true
	# journal fence none 1a: both records stay
	[ "$(closings k1)" -eq 2 ]
	# read invocation 7: the entry-level binding duplicate (closings key)
	run ri-read --kind ledger --act-key k1 </dev/null
	[ "$(jq '.invocations[0].binding_duplicate' <<<"$output")" = true ]
	# reconcile step 5.2-5.4: the next run's scan over the delta surfaces it
	ri_at 11
	ri-sweep >/dev/null
	run ri-findings
	grep -q '"finding":"binding-duplicate"' <<<"$output"
	# and the auditor's Check 2.1 reports it
	run ri-audit
	[ "$status" -eq 1 ]
	[ "$(jq -r '.checks[] | select(.check == "2.1") | .status' <<<"$output")" = fail ]
}

@test "close step 2.2: Close paused after its standing check, the sweep closing meanwhile -- the re-read adopts the sweep's outcome (journal fence none)" {
	ri_cfg '.instance.journal_fence = "none"'
	open_and_act k1
	d=$(pause_dir pc close.after_remaining)
	close_req "$(cat "$T/open-k1.json")" '{"disclosure_id":"late"}' >"$T/close.json"
	RI_FAULT=close.after_remaining=pause RI_FAULT_DIR=$d ri-close <"$T/close.json" >"$T/close.out" 2>/dev/null &
	pid=$!
	reached "$d" close.after_remaining
	ri_at 10
	ri-sweep >/dev/null
	release "$d" close.after_remaining
	wait "$pid"
	[ "$(jq -r .landed_by "$T/close.out")" = sweep ]
	[ "$(closings k1)" -eq 1 ]
}

sweep_points=(sweep.after_enumerate sweep.after_take sweep.after_reread sweep.after_probe sweep.between_writes)

@test "reconcile 7, Invariant 2.3: two sweeps interleaved at every pair of boundaries on one act close it exactly once" {
	for pa in "${sweep_points[@]}"; do
		for pb in "${sweep_points[@]}"; do
			# a fresh world per schedule: one orphan, committed in the store
			ri_instance fast
			ledger-admin --store "$T/ledger.db" init >/dev/null
			export RI_CREDENTIAL=$ALICE
			(RI_FAULT=run.after_act=die ri-run --kind ledger --act-key k1 --actor alice -- \
			    ledger-disclose --store "$T/ledger.db" --subject s --recipient r) >/dev/null 2>&1 || true
			ri_at 10
			da=$(pause_dir pa "$pa") db=$(pause_dir pb "$pb")
			RI_FAULT=$pa=pause RI_FAULT_DIR=$da ri-sweep --node a >"$T/a.json" 2>/dev/null &
			A=$!
			reached "$da" "$pa"
			RI_FAULT=$pb=pause RI_FAULT_DIR=$db ri-sweep --node b >"$T/b.json" 2>/dev/null &
			B=$!
			# B pauses at its point, or waits on A's section, or finds
			# nothing to do; give it a moment either way
			sleep 0.3
			release "$da" "$pa"
			wait "$A"
			if reached_or_gone "$db" "$pb" "$B"; then release "$db" "$pb"; fi
			wait "$B"
			for t in "$T/a.json" "$T/b.json"; do
				jq -e '.closed + .abandoned + .escalated + .reported + .skipped + .closed_already == .examined' "$t" >/dev/null
			done
			# a run that skipped leaves the act for the next; then one closing
			ri_at 20
			ri-sweep >/dev/null
			[ "$(closings k1)" -eq 1 ] || { echo "A at $pa, B at $pb: $(closings k1) closings"; false; }
			run ri-audit --probe
			[ "$status" -eq 0 ] || { echo "A at $pa, B at $pb: audit failed: $output"; false; }
			rm -rf "$T"
		done
	done
}

@test "resolve 4-8: an operator's Resolve racing the sweep -- the sweep waits out the operator's section, one closing stands" {
	open_and_act k1
	ri-yield <"$T/open-k1.json" >/dev/null
	BOB=$(ri-actor add bob | jq -r .credential)
	inv=$(jq -r .invocation_id "$T/open-k1.json") ev=$(jq -r .intent_event_id "$T/open-k1.json")
	ri_at 10
	d=$(pause_dir pr resolve.after_reread)
	jq -nc --arg i "$inv" --arg e "$ev" --arg c "$BOB" '{kind:"ledger", act_key:"k1", invocation_id:$i,
	    intent_event_id:$e, actor_ref:"bob", credential:$c,
	    disposition:{outcome:{outcome_action_ref:"ledger.disclosed", outcome_data:{disclosure_id:"op"}}}}' |
	    RI_FAULT=resolve.after_reread=pause RI_FAULT_DIR=$d ri-resolve >"$T/resolve.out" 2>/dev/null &
	pid=$!
	reached "$d" resolve.after_reread
	# the sweep cannot take the section the operator holds; it waits at
	# most the operator's remaining lease and skips the act
	run ri-sweep
	[ "$(jq .skipped <<<"$output")" -eq 1 ]
	release "$d" resolve.after_reread
	wait "$pid"
	[ "$(closings k1)" -eq 1 ]
	ri_at 11
	run ri-sweep
	[ "$(jq .examined <<<"$output")" -eq 0 ]
	[ "$(closings k1)" -eq 1 ]
}

@test "journal fence 3, open step 4: Open racing a late-landing intent -- the late write is fenced out, one open intent" {
	d=$(pause_dir po open.intent.before)
	open_req k1 '{}' | RI_FAULT=open.intent.before=pause RI_FAULT_DIR=$d ri-open >"$T/late.out" 2>/dev/null &
	pid=$!
	reached "$d" open.intent.before
	# the late opener passed its gate and then stalled past its lease
	ri_at 4
	open_req k1 '{}' | ri-open >"$T/next.out"
	release "$d" open.intent.before
	wait "$pid" && false || rc=$?
	[ "$rc" -eq 20 ]
	run ri-read --kind ledger --act-key k1 </dev/null
	[ "$(jq '.invocations | length' <<<"$output")" -eq 1 ]
	[ "$(jq '.binding_duplicate' <<<"$output")" = false ]
}

@test "journal fence none 5-6, Which closing stands 9: without a fence the late intent lands -- two open intents, surfaced as the intents key" {
	ri_cfg '.instance.journal_fence = "none"'
	d=$(pause_dir po open.intent.before)
	open_req k1 '{}' | RI_FAULT=open.intent.before=pause RI_FAULT_DIR=$d ri-open >/dev/null 2>&1 &
	pid=$!
	reached "$d" open.intent.before
	ri_at 4
	open_req k1 '{}' | ri-open >/dev/null
	release "$d" open.intent.before
	# open step 5.3: the late intent lands, but its Open no longer holds
	# the section -- 14, so its caller never commits
	wait "$pid" && false || rc=$?
	[ "$rc" -eq 14 ]
	run ri-read --kind ledger --act-key k1 </dev/null
	[ "$(jq '.invocations | length' <<<"$output")" -eq 2 ]
	# read invocation 8: the act-level binding duplicate
	[ "$(jq '.binding_duplicate' <<<"$output")" = true ]
	ri_at 10
	# both intents aged with no store record: escalated, for an operator (3)
	run ri-sweep
	[ "$status" -eq 3 ]
	run ri-findings
	grep -q '"key":"intents"' <<<"$output"
}

@test "act section 1-2, open step 2.2-2.3: a dead opener's section is never freed by its death -- the next Open waits the holder's remaining lease and lands nothing (journal fence none, so only the lease stands)" {
	ri_cfg '.instance.journal_fence = "none"'
	# the first opener dies holding the section, before its intent
	(open_req k1 '{}' | RI_FAULT=open.after_take=die ri-open) >/dev/null 2>&1 || true
	start=$(date +%s%N)
	run bash -c "open_req k1 '{}' | ri-open"
	elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
	[ "$status" -eq 14 ]
	# it waited, but never longer than the holder's remaining lease (3 s)
	[ "$elapsed" -ge 2500 ]
	[ "$elapsed" -lt 6000 ]
	[ "$(records "action_ref = 'ledger.intended'")" -eq 0 ]
}

@test "act section 11, open step 2.2, issue 15 target 4: a take waiting on a live holder's section wakes at the holder's release -- a change of the journal -- never in naps" {
	command -v strace >/dev/null || skip "strace is not installed"
	# the watch is on the SQLite journal's WAL; a PostgreSQL take backs off
	[ -z "${RI_TEST_PG_HOST:-}" ] || skip "sqlite file (the wait watches journal.db-wal)"
	A=$(open_req k1 '{}' | ri-open)
	open_req k1 '{}' >"$T/second.json"
	# the holder yields half a second into the second Open's wait
	( sleep 0.5; jq -c '{kind, act_key, invocation_id, actor_ref}' <<<"$A" | ri-yield >/dev/null ) &
	bats_require_minimum_version 1.5.0
	run --separate-stderr strace -f -qq -e trace=nanosleep,clock_nanosleep,poll -o "$T/wait.st" \
	    ri-open <"$T/second.json"
	wait
	# it took the released section and found the open intent in flight
	[ "$status" -eq 12 ] || { echo "ri-open: exit $status: $stderr"; false; }
	# the wait was a poll that the release ended, not naps
	[ "$(grep -c 'nanosleep(' "$T/wait.st")" -eq 0 ]
	grep -q '^[0-9]* *poll(' "$T/wait.st"
}

@test "act section 14, open step 2: a second Open while the first is between its gate and its write waits and lands nothing -- one intent (journal fence none)" {
	ri_cfg '.instance.journal_fence = "none"'
	d=$(pause_dir po open.intent.before)
	open_req k1 '{}' | RI_FAULT=open.intent.before=pause RI_FAULT_DIR=$d ri-open >"$T/first.out" 2>/dev/null &
	pid=$!
	reached "$d" open.intent.before
	run bash -c "open_req k1 '{}' | ri-open"
	[ "$status" -eq 14 ]
	release "$d" open.intent.before
	wait "$pid"
	run ri-read --kind ledger --act-key k1 </dev/null
	[ "$(jq '.invocations | length' <<<"$output")" -eq 1 ]
}
