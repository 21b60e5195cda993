#!/usr/bin/env bats
# cron.bats -- quiet and honest under cron and systemd (issue 14, friction
# 6-8): ri-sweep --quiet says nothing on a clean run; a degraded run exits 2
# and says why on stderr; alerts carry the command's name; progress shows
# on a terminal only; text falls back to ASCII outside a UTF-8 locale;
# ri-init --example-config prints a config to edit.
#
# test-pg: no -- what cron and systemd see (exit codes, quiet output) is decided above the store

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"
load "$BATS_TEST_DIRNAME/lib/sweep"

teardown() { sweep_teardown; }

instance() { ledger_instance "$@"; }

# orphan KEY -- ri-run killed after the act: the store holds it, the journal not
orphan() {
	{ (RI_FAULT=run.after_act=die ri-run --kind ledger --act-key "$1" --actor alice -- \
	    ledger-disclose --store "$T/ledger.db" --subject "$1" --recipient r) >/dev/null 2>&1; } 2>/dev/null || true
}

@test "friction 6 (cron mails every minute): ri-sweep --quiet prints nothing at all on a clean run -- with nothing to do, and when it recovered an act" {
	instance
	run --separate-stderr ri-sweep --quiet
	[ "$status" -eq 0 ]
	[ -z "$output" ] && [ -z "$stderr" ]
	orphan q1
	ri_at 33
	run --separate-stderr ri-sweep --quiet
	[ "$status" -eq 0 ]
	[ -z "$output" ] && [ -z "$stderr" ]
	ri-read --kind ledger --act-key q1 | jq -e '.invocations[0].state == "closed"'
	# without --quiet the tally is there, as before
	sweep
	assert_partition
}

@test "friction 6 (a missing probe was exit 0, empty stderr): a store the probe cannot reach makes the run degraded -- exit 2, the kind and the probe's word on stderr, and --quiet prints" {
	instance
	orphan m1
	set_probe --store "$T/ledger.db"
	ri_cfg '.kinds.ledger.probe = ["/nonexistent/probe"]'
	ri_at 33
	sweep_degraded --quiet
	[ "$(t skipped)" -eq 1 ]
	[[ "$stderr" == *"ri-sweep: degraded: kind ledger: the probe could not reach the store for 1 act"* ]]
	jq -e '.degraded[0] | contains("kind ledger")' <<<"$TALLY"
}

@test "friction 6: a refused service credential makes the run degraded (exit 2) and says so with the command's name" {
	instance
	orphan c1
	chmod 644 "$T/reconciler.cred"
	ri_at 33
	sweep_degraded --quiet
	[ "$(t unreached)" -eq 1 ]
	[[ "$stderr" == "2026-11-29T10:00:33.000Z ri-sweep: the service identity ledger-reconciler of kind ledger is refused"* ]]
}

@test "friction 7 (2,000 orphans ran past run_bound silently): a run that outlasts run_bound is degraded and says by how much" {
	ri_instance fast
	export RI_CREDENTIAL=$ALICE
	# the smallest conforming numbers (ri-startcheck holds): run_bound 1.1 s
	ri_cfg '.instance.clock_offset_allowance = "10ms" | .instance.reconciliation_cadence = "1s" |
	    .instance.run_bound = "1100ms" | .instance.closure_latency = "500ms" |
	    .instance.journal_write_bound = "20ms" | .instance.read_bound = "20ms" |
	    .instance.compensation_window = "60s" | .instance.journal_fence = "none" |
	    .kinds.ledger.completion_bound = "100ms" | .kinds.ledger.commit_round_trip = "10ms" |
	    .kinds.ledger.probe_round_trip = "400ms"'
	ri-startcheck >/dev/null
	# a slow store: each probe takes 0.25 s and finds nothing
	printf '#!/bin/sh\ncat >/dev/null\nsleep 0.25\necho "{\\"answer\\":\\"not-committed\\"}"\n' >"$T/slow-probe"
	chmod +x "$T/slow-probe"
	ri_cfg ".kinds.ledger.probe = [\"$T/slow-probe\"]"
	for k in s1 s2 s3 s4 s5 s6; do ri-open --kind ledger --act-key "$k" --actor alice >/dev/null; done
	ri_at 1
	sweep_degraded --quiet
	[ "$(t examined)" -eq 6 ]
	jq -e '.degraded | any(contains("past run_bound 1.1 s"))' <<<"$TALLY"
	[[ "$stderr" == *"ri-sweep: degraded: the run took "*" s, past run_bound 1.1 s"* ]]
}

@test "issue 44 point 3: an escalation is for a person -- the run exits 3 (it did its work, an act needs an operator), one timestamped line per act on stderr, and --quiet prints its tally; the next run is silent" {
	instance
	for k in e1 e2; do
		{ (RI_FAULT=run.after_open=die ri-run --kind ledger --act-key "$k" --actor alice -- true) >/dev/null 2>&1; } 2>/dev/null || true
	done
	ri_at 33
	run --separate-stderr ri-sweep --quiet
	[ "$status" -eq 3 ]
	jq -e '.escalated == 2 and .needs_operator == 2 and .at == "2026-11-29T10:00:33.000Z"' <<<"$output"
	# one line an act, and one that sums up; every one says when
	[ "${#stderr_lines[@]}" -eq 3 ]
	for l in "${stderr_lines[@]}"; do [[ "$l" == "2026-11-29T10:00:33.000Z ri-sweep: "* ]]; done
	[[ "${stderr_lines[0]}" == *"ri-sweep: needs an operator: kind ledger, act e"[12]": invocation inv_"*" escalated (not-observed)"* ]]
	[[ "${stderr_lines[2]}" == *"ri-sweep: 2 acts need an operator"* ]]
	ri_at 100
	run --separate-stderr ri-sweep --quiet
	[ "$status" -eq 0 ]
	[ -z "$output" ] && [ -z "$stderr" ]
}

@test "issue 44 point 3: the shipped cron line -- stdout (every tally, stamped with its instant) to the log, stderr left to cron's mail: empty on a clean run, a line per act that needs an operator" {
	instance
	line=$(grep '^\* \* \* \* \*' "$BATS_TEST_DIRNAME/../examples/cron.d/ri-sweep")
	# minute hour day month weekday user command: the command is cron's shell's
	cmd=$(awk '{ $1 = $2 = $3 = $4 = $5 = $6 = ""; sub(/^ +/, ""); print }' <<<"$line")
	[[ "$cmd" != *"2>"* ]]                  # stderr is never sent to the log
	cmd=${cmd//\/etc\/ri\/ri.json/$RI_CONFIG}
	cmd=${cmd//\/var\/log\/ri\/ri-sweep.log/$T/ri-sweep.log}
	[[ "$cmd" == "ri-sweep -c $RI_CONFIG >>$T/ri-sweep.log" ]]
	sh -c "$cmd" 2>"$T/mail"
	[ ! -s "$T/mail" ]
	{ (RI_FAULT=run.after_open=die ri-run --kind ledger --act-key m1 --actor alice -- true) >/dev/null 2>&1; } 2>/dev/null || true
	ri_at 33
	rc=0
	sh -c "$cmd" 2>"$T/mail" || rc=$?
	[ "$rc" -eq 3 ]
	grep -q '^2026-11-29T10:00:33.000Z ri-sweep: needs an operator: kind ledger, act m1: ' "$T/mail"
	[ "$(wc -l <"$T/ri-sweep.log")" -eq 2 ]
	jq -se '.[0].at == "2026-11-29T10:00:00.000Z" and .[1].at == "2026-11-29T10:00:33.000Z" and
	    .[1].needs_operator == 1' "$T/ri-sweep.log"
}

@test "friction 6 ('ri: ALERT:' said nobody's name): a protocol writer's hard alert names the command" {
	instance
	ri_cfg '.kinds.ledger.service_identity = null'
	ri-open --kind ledger --act-key a1 --actor alice >/dev/null
	ri_at 40
	run --separate-stderr ri-open --kind ledger --act-key a1 --actor alice
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"ri-open: ALERT: invocation inv_"*"aged and left open for an operator"* ]]
}

@test "friction 7 (silent long work): on a terminal ri-audit and ri-sweep show progress on stderr -- records/s, acts done of total; never in a pipe or a log" {
	command -v script >/dev/null || skip "script(1) is not installed"
	instance
	for k in p1 p2 p3; do orphan "$k"; done
	ri_at 33
	script -qec "ri-sweep >/dev/null" /dev/null >"$T/tty.out"
	grep -q "ri-sweep: 3 of 3 acts done (" "$T/tty.out"
	grep -q "acts/s" "$T/tty.out"
	script -qec "ri-audit >/dev/null" /dev/null >"$T/tty.out"
	grep -q "ri-audit: [0-9]* of [0-9]* records done ([0-9]* records/s" "$T/tty.out"
	# not a terminal: not a byte of it
	run --separate-stderr ri-audit
	[ -z "$stderr" ]
	orphan p4
	ri_at 70
	run --separate-stderr ri-sweep
	[ -z "$stderr" ]
}

@test "friction 8 (UTF-8 under LC_ALL=C): outside a UTF-8 locale ri-startcheck prints x and >=, JSON stays UTF-8" {
	instance
	LC_ALL=C run ri-startcheck
	[ "$status" -eq 0 ]
	[[ "$output" == *"30 + 2x2 + 2x60 + 3x135 = 559 s < 600 s"* ]]
	[[ "$output" == *"135 s >= max(30, 12 + 3) + 12 = 42 s"* ]]
	! LC_ALL=C ri-startcheck | LC_ALL=C grep -q $'[\x80-\xff]'
	LC_ALL=C.UTF-8 run ri-startcheck
	[[ "$output" == *"2×2"* ]]
	LC_ALL=C ri-startcheck --json | jq -e '.kinds[0].conditions[0].arithmetic | contains("2×2")'
}

@test "friction 8: ri-init --example-config prints a working ri.json to edit -- it validates, and ri-startcheck's conditions hold for it" {
	run --separate-stderr ri-init --example-config
	[ "$status" -eq 0 ]
	T=$(mktemp -d)
	printf '%s\n' "$output" >"$T/ri.json"
	diff "$T/ri.json" "$BATS_TEST_DIRNAME/../examples/ri.json.example"
	jq -e '.kinds.ledger.service_identity.actor_ref == "ledger-reconciler"' "$T/ri.json"
	run ri-startcheck -c "$T/ri.json" --json
	jq -e '[.kinds[].conditions[].pass] | all' <<<"$output"
	# and it never touches a file: no journal was created where it points
	[ ! -e /var/lib/ri/journal.db ] || true
}

@test "issue 44 point 10: what ri-sweep says to a person names no rule label of the specification -- an overrun, a run not started, an unreachable store, an unbound kind" {
	instance
	# an overrunning run and a run that finds another in flight
	ri_cfg '.instance.run_bound = "1ms"'
	run --separate-stderr ri-sweep
	ri_cfg '.instance.run_bound = "135s"'
	out1=$stderr
	orphan l1
	set_probe --store "$T/missing/ledger.db"
	ri_at 33
	run --separate-stderr ri-sweep
	out2=$stderr
	set_probe --store "$T/ledger.db"
	ri_cfg '.kinds.other = .kinds.ledger'
	ri-open --kind other --act-key u1 --actor alice >/dev/null
	ri_cfg 'del(.kinds.other)'
	run --separate-stderr ri-sweep
	out3=$stderr
	all="$out1 $out2 $out3"
	[[ "$all" == *"past run_bound"* ]] && [[ "$all" == *"could not reach the store"* ]] && [[ "$all" == *"not bound but has open intents"* ]]
	! grep -E '(run bound|reconcile step|Binding|Sweep never|open step) [0-9]' <<<"$all"
}
