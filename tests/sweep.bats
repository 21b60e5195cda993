#!/usr/bin/env bats
# sweep.bats -- the Reconcile contract (reconcile 1-7, steps 1.1-5.8) over the
# real binaries: every probe answer, every edge at its boundary instant, the
# report-only and mixed instances, a refused service credential, an unbound
# kind, a journal outage, two sweeps at once, a sweep racing a late Close
# under both journal fence values, and retention after the pass.
#
# The instance is the walkthrough's (tests/lib/common.bash): completion_bound
# 30 s, allowance 2 s -> examine edge +32 s, abandon edge +34 s; at-risk
# threshold 600 - 2x135 - 60 - 2 = 268 s; commit_fence none; journal_fence
# declared; the probe is ledger-probe over $T/ledger.db.  Time moves only
# through RI_NOW.  Every test that runs ri-sweep checks the partition
# identity on every tally it gets (assert_partition).
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

# findings_where JQ-CONDITION [ri-findings flags] -- how many register lines match
findings_where() {
	local cond=$1
	shift
	ri-findings "$@" | jq -s "[.[] | select($cond)] | length"
}

# read_entry KEY -- ri-read's first invocation entry for (ledger, KEY)
read_entry() { ri-read <<<"{\"kind\":\"ledger\",\"act_key\":\"$1\"}" | jq -c '.invocations[0]'; }

# ---- each probe answer ------------------------------------------------------

@test "probe committed: recovery_intended then the outcome, both under the service identity, counted closed (reconcile steps 3.2a-3.2c, 4.4)" {
	# probe 6: the outcome data is only what the store re-derived (the row's own fields)
	# reconcile steps 1, 2, 3, 3.1, 4: listed, taken, probed, closed, released; Invariant 5.3: the outcome's data is the store's row; Primitive policy 2, 11: each record names the act and the invocation; reconcile step 3.7, Sweep never 1: the job never runs again (one store row)
	orphan k
	ri_at 33
	sweep
	[ "$(t examined)" -eq 1 ]
	[ "$(t closed)" -eq 1 ]
	[ "$(sqlite3 "$T/journal.db" "SELECT group_concat(action_ref || '/' || actor_ref, ' ') FROM
	    (SELECT action_ref, actor_ref FROM records WHERE invocation_id = '$INV' ORDER BY seq)")" = \
	    "ledger.intended/alice ledger.recovery_intended/ledger-reconciler ledger.disclosed/ledger-reconciler" ]
	e=$(read_entry k)
	[ "$(jq -r .state <<<"$e")" = closed ]
	[ "$(jq -r '.records[2].payload.recovery' <<<"$e")" = true ]
	[ "$(jq -r '.records[2].payload.data.disclosure_id' <<<"$e")" = \
	    "$(ledger-admin --store "$T/ledger.db" list | jq -r .disclosure_id)" ]
	jq -e --arg i "$INV" '.records | all(.payload.kind == "ledger" and .payload.act_key == "k" and
	    .payload.invocation_id == $i)' <<<"$e"
	[ "$(ledger-admin --store "$T/ledger.db" count)" -eq 1 ]
	# reconcile step 4.4: the section is released
	[ -z "$(jsql "SELECT holder FROM leases WHERE act_key = 'k'")" ]
}

@test "probe not-committed under commit_fence none: escalated with cause not-observed, never abandoned, even past the abandon edge (reconcile step 3.5; commit 14a-14b)" {
	# Invariant 4.8, 4.9: without a commit fence, escalated, never abandoned
	empty_orphan k
	ri_at 40
	sweep
	[ "$(t examined)" -eq 1 ]
	[ "$(t escalated)" -eq 1 ]
	[ "$(t abandoned)" -eq 0 ]
	e=$(read_entry k)
	[ "$(jq -r .state <<<"$e")" = escalated ]
	[ "$(jq -r '.records[-1].action_ref' <<<"$e")" = ledger.escalated ]
	[ "$(jq -r '.records[-1].payload.cause' <<<"$e")" = not-observed ]
	[ "$(jq -r '.records[-1].actor_ref' <<<"$e")" = ledger-reconciler ]
	[ "$(records "action_ref = 'ledger.abandoned'")" -eq 0 ]
}

@test "probe not-committed under commit_fence declared: at +33.999 s skipped with nothing written; at +34 s (the abandon edge) abandoned with cause not-committed (reconcile steps 3.4, 3.6; Allowance 12; commit 13a)" {
	ri_cfg '.kinds.ledger.commit_fence = "declared"'
	empty_orphan k
	n=$(act_records)
	for at in 32 33.999; do
		ri_at $at
		sweep
		[ "$(t examined)" -eq 1 ]
		[ "$(t skipped)" -eq 1 ]
		[ "$(t abandoned)" -eq 0 ]
		[ "$(act_records)" -eq "$n" ]
	done
	ri_at 34
	sweep
	[ "$(t examined)" -eq 1 ]
	[ "$(t abandoned)" -eq 1 ]
	e=$(read_entry k)
	[ "$(jq -r .state <<<"$e")" = abandoned ]
	[ "$(jq -r '.records[-1].action_ref' <<<"$e")" = ledger.abandoned ]
	[ "$(jq -r '.records[-1].payload.cause' <<<"$e")" = not-committed ]
	[ "$(jq -r '.records[-1].actor_ref' <<<"$e")" = ledger-reconciler ]
	[ "$(jq -r '.records[-1].payload.resolved_by // "absent"' <<<"$e")" = absent ]
	[ "$(act_records)" -eq $((n + 1)) ]
}

@test "probe undecidable (a planted second row): escalated with cause undecidable naming both disclosure ids, and an escalated act finding; the sweep chooses neither (reconcile steps 3.8a-3.8c, 3.11, 3.12)" {
	# Invariant 3.5: several records match, so candidates are named and nothing is closed
	orphan k
	pd=$(ledger-admin --store "$T/ledger.db" list | jq -r .pairing_datum)
	ledger-admin --store "$T/ledger.db" plant --pairing-datum "$pd" >/dev/null
	want=$(ledger-admin --store "$T/ledger.db" list --pairing-datum "$pd" | jq -s -c '[.[].disclosure_id] | sort')
	[ "$(jq length <<<"$want")" -eq 2 ]
	ri_at 33
	sweep
	[ "$(t examined)" -eq 1 ]
	[ "$(t escalated)" -eq 1 ]
	[ "$(t closed)" -eq 0 ]
	e=$(read_entry k)
	[ "$(jq -r .state <<<"$e")" = escalated ]
	[ "$(jq -r '.records[-1].payload.cause' <<<"$e")" = undecidable ]
	[ "$(jq -c '.records[-1].payload.store_candidates | sort' <<<"$e")" = "$want" ]
	# no outcome the sweep did not read
	[ "$(records "invocation_id = '$INV' AND action_ref IN ('ledger.disclosed', 'ledger.recovery_intended')")" -eq 0 ]
	[ "$(findings_where ".finding == \"escalated\" and .scope == \"act\" and .invocation_id == \"$INV\"")" -eq 1 ]
}

@test "probe undecidable past intent_candidates_cap (cap 1, three rows): the escalation carries {count, first, last} (reconcile steps 3.9-3.10; Term intent candidates cap)" {
	ri_cfg '.instance.intent_candidates_cap = 1'
	orphan k      # Open's sizing still passes under the smaller cap
	pd=$(ledger-admin --store "$T/ledger.db" list | jq -r .pairing_datum)
	ledger-admin --store "$T/ledger.db" plant --pairing-datum "$pd" >/dev/null
	ledger-admin --store "$T/ledger.db" plant --pairing-datum "$pd" >/dev/null
	ids=$(ledger-admin --store "$T/ledger.db" list --pairing-datum "$pd" | jq -s -c '[.[].disclosure_id] | sort')
	ri_at 33
	sweep
	[ "$(t escalated)" -eq 1 ]
	sc=$(read_entry k | jq -c '.records[-1].payload.store_candidates')
	[ "$(jq -c 'keys' <<<"$sc")" = '["count","first","last"]' ]
	[ "$(jq -r .count <<<"$sc")" -eq 3 ]
	[ "$(jq -r .first <<<"$sc")" = "$(jq -r 'first' <<<"$ids")" ]
	[ "$(jq -r .last <<<"$sc")" = "$(jq -r 'last' <<<"$ids")" ]
}

# timed_sweep_at SECONDS -- ri-sweep at T0 + SECONDS, whatever its exit;
# ELAPSED: its wall time in whole seconds
timed_sweep_at() {
	ri_at "$1"
	local t0=$SECONDS
	sweep_any
	ELAPSED=$((SECONDS - t0))
}

# assert_untouched N WHY -- the run examined act k and skipped it: nothing
# written (N act records before), nothing closed, escalated or abandoned,
# the act still open; else "ASSERT WHY" (the negative controls match it)
assert_untouched() {
	[ "$(t examined)" -eq 1 ]
	{ [ "$(t skipped)" -eq 1 ] && [ "$(t closed)" -eq 0 ] && [ "$(t escalated)" -eq 0 ] && [ "$(t abandoned)" -eq 0 ] &&
	  [ "$(act_records)" -eq "$1" ] && [ "$(read_entry k | jq -r .state)" = open ]; } ||
	    { echo "ASSERT $2"; false; }
}

# unavailable_case ARG... -- the probe becomes ledger-probe ARG...; the sweep
# writes nothing, counts skipped, and opens store-unavailable for the kind.
unavailable_case() {
	orphan k
	set_probe "$@"
	n=$(act_records)
	timed_sweep_at 33
	assert_untouched "$n" "probe 4-5: the sweep closed an act whose store was unavailable"
	assert_degraded
	[ "$(findings_where '.finding == "store-unavailable" and .scope == "instance" and .kind == "ledger" and (.closed | not)')" -eq 1 ]
}

@test "probe unavailable -- the store path does not exist: nothing written, skipped, store-unavailable for the kind (reconcile steps 3.13a-3.13c, 3.14; probe 4-5)" {
	# Invariant 5.10: a store it cannot read is never closed
	unavailable_case --store /nonexistent/ledger.db
}

@test "probe unavailable -- the probe hangs past probe_round_trip (1 s): killed, nothing written, skipped, store-unavailable (reconcile step 3.13; INTERFACE: probe protocol timeout)" {
	unavailable_case --store "$T/ledger.db" --hang
	[ "$ELAPSED" -le 5 ]
	# the probe's process group was killed, not left behind
	! pgrep -f -- "$T/ledger.db --hang" >/dev/null
}

@test "probe unavailable -- the probe crashes (SIGSEGV): nothing written, skipped, store-unavailable (reconcile step 3.13; probe 4)" {
	unavailable_case --store "$T/ledger.db" --crash
}

@test "probe unavailable -- the probe prints junk: nothing written, skipped, store-unavailable (reconcile step 3.13; probe 1)" {
	unavailable_case --store "$T/ledger.db" --junk
}

@test "probe unavailable -- the probe floods 10 MB of a committed-shaped answer: nothing written, skipped, store-unavailable (reconcile step 3.13; INTERFACE: output over the envelope)" {
	unavailable_case --store "$T/ledger.db" --flood
	[ "$(records "action_ref = 'ledger.disclosed'")" -eq 0 ]
}

# datum_none_case [BATCH] -- an orphan done under a nonce, then its kind
# rebound with pairing_datum none: the probe (which reads the intent's
# datum, not the config) answers committed, which such a kind's probe must
# never do; the sweep takes it for unavailable and writes nothing.
datum_none_case() {
	orphan k
	ri_cfg '.kinds.ledger.pairing_datum = "none"'
	if [ -n "${1:-}" ]; then
		set_probe --store "$T/ledger.db" --batch
		ri_cfg '.kinds.ledger.probe_batch = true'
	fi
	# the probe does answer committed for this act
	[ "$(read_entry k | jq -c '{kind: "ledger", act_key: "k", intent: .records[0].payload}' |
	    ledger-probe --store "$T/ledger.db" | jq -r .answer)" = committed ]
	n=$(act_records)
	timed_sweep_at 33
	assert_untouched "$n" "pairing datum 6a: a committed answer for a kind whose pairing datum is none was taken"
	assert_degraded
	grep -q "the probe answered committed for a kind whose pairing datum is none" <<<"$stderr" ||
	    { echo "stderr does not say why: $stderr"; false; }
}

@test "pairing datum 6a: a probe answering committed for a kind whose pairing datum is none is unavailable -- skipped, nothing written, the act stays open (probe 4-5; reconcile step 3.13)" {
	datum_none_case
}

@test "pairing datum 6a: the same under the batch probe, a line at a time (probe_batch; probe 1, 4-5)" {
	datum_none_case batch
}

# ---- each edge at its boundary instant --------------------------------------

@test "examine edge: at +31.999 s the intent is in flight and not examined; at +32 s it is examined and closed (reconcile step 1.2; Term examine edge; Invariant 7.1)" {
	# reconcile step 1.3; Allowance 3, 6: an applied comparison of the run's now with the journal's stamp, which leaves the in-flight intent out of the pass; Primitive policy 18: one reading per run
	orphan k
	ri_at 31.999
	sweep
	[ "$(t examined)" -eq 0 ]
	[ "$(records "invocation_id = '$INV'")" -eq 1 ]
	ri_at 32
	sweep
	[ "$(t examined)" -eq 1 ]
	[ "$(t closed)" -eq 1 ]
}

@test "horizon edge (retention 700 s): at recorded_at + 700 s - 2 s - 1 ms the intent is still examined; at recorded_at + 698 s it is not (reconcile step 1.2; Term horizon edge; journal 8)" {
	# Invariant 7.2: examined only before its horizon edge
	ri_cfg '.kinds.ledger.retention_period = "700s"'   # condition 2: 30 + 2 + 600 = 632 < 700
	run ri-startcheck
	[ "$status" -eq 0 ]
	orphan k
	set_probe --store /nonexistent/ledger.db        # keep it open: skipped, never closed
	n=$(act_records)
	ri_at 697.999
	sweep_degraded
	[ "$(t examined)" -eq 1 ]
	[ "$(t skipped)" -eq 1 ]
	ri_at 698
	sweep
	[ "$(t examined)" -eq 0 ]
	[ "$(act_records)" -eq "$n" ]
}

@test "at-risk threshold (268 s): a skipped intent at age 267.999 s has no closure-at-risk finding; at 268 s it does (reconcile step 5.1; Term at risk threshold)" {
	orphan k
	set_probe --store /nonexistent/ledger.db
	ri_at 267.999
	sweep_degraded
	[ "$(t skipped)" -eq 1 ]
	[ "$(findings_where '.finding == "closure-at-risk"')" -eq 0 ]
	ri_at 268
	sweep_degraded
	[ "$(t skipped)" -eq 1 ]
	[ "$(findings_where ".finding == \"closure-at-risk\" and .scope == \"act\" and .invocation_id == \"$INV\" and .act_key == \"k\" and .kind == \"ledger\"")" -eq 1 ]
}

# ---- report-only and mixed instances ------------------------------------------

@test "service identity null (report-only): the sweep takes the section, probes, writes nothing, counts reported, and surfaces closure-at-risk with the probe's answer (reconcile 2a-2f; service identity 1; Check 3.5)" {
	ri_cfg '.kinds.ledger.service_identity = null'
	run ri-startcheck
	[ "$status" -eq 0 ]
	orphan k
	tok=$(jsql "SELECT token FROM leases WHERE act_key = 'k'")
	n=$(act_records)
	ri_at 33
	sweep
	[ "$(t examined)" -eq 1 ]
	[ "$(t reported)" -eq 1 ]
	[ "$(t closed)" -eq 0 ]
	[ "$(t skipped)" -eq 0 ]
	[ "$(act_records)" -eq "$n" ]
	[ "$(read_entry k | jq -r .state)" = open ]
	# 2a, 2c: the section was taken (a new grant) and released
	[ "$(jsql "SELECT token FROM leases WHERE act_key = 'k'")" -gt "$tok" ]
	[ -z "$(jsql "SELECT holder FROM leases WHERE act_key = 'k'")" ]
	# 2b, 2e: the probe ran, its result is on the compliance surface
	f=$(ri-findings | jq -c "select(.finding == \"closure-at-risk\" and .invocation_id == \"$INV\")")
	[ "$(jq -s length <<<"$f")" -eq 1 ]
	[ "$(jq -r .detail.probe <<<"$f")" = committed ]
	[ "$(jq -r .detail.outcome_data.disclosure_id <<<"$f")" = \
	    "$(ledger-admin --store "$T/ledger.db" list | jq -r .disclosure_id)" ]
	# a later run reports it again and still writes nothing, without duplicating the finding
	ri_at 100
	sweep
	[ "$(t reported)" -eq 1 ]
	[ "$(act_records)" -eq "$n" ]
	[ "$(findings_where ".finding == \"closure-at-risk\" and .invocation_id == \"$INV\"")" -eq 1 ]
}

@test "a mixed instance: kind ledger is closed, kind ledger2 (service identity null, same probe) is reported, and the counts sum over both (reconcile 3-5)" {
	ri_cfg '.kinds.ledger2 = (.kinds.ledger | .service_identity = null)'
	orphan a ledger
	inv_a=$INV
	orphan b ledger2
	inv_b=$INV
	ri_at 33
	sweep
	[ "$(t examined)" -eq 2 ]
	[ "$(t closed)" -eq 1 ]
	[ "$(t reported)" -eq 1 ]
	[ "$(records "invocation_id = '$inv_a' AND action_ref = 'ledger.disclosed'")" -eq 1 ]
	[ "$(records "invocation_id = '$inv_b'")" -eq 1 ]
	[ "$(ri-read <<<'{"kind":"ledger2","act_key":"b"}' | jq -r '.invocations[0].state')" = open ]
	[ "$(findings_where ".finding == \"closure-at-risk\" and .kind == \"ledger2\" and .invocation_id == \"$inv_b\"")" -eq 1 ]
}

# ---- the service identity's credential refused --------------------------------

@test "the service credential revoked, two orphans: refused before any take and surfaced at once (instance finding, alert), nothing written for any act, both unreached, none examined (reconcile steps 3.18-3.19; Sweep never 2; Term unreached)" {
	orphan a
	inv_a=$INV
	orphan b
	inv_b=$INV
	run ri-actor revoke ledger-reconciler
	[ "$status" -eq 0 ]
	n=$(act_records)
	ri_at 33
	sweep_degraded
	[ "$(t examined)" -eq 0 ]
	[ "$(t unreached)" -eq 2 ]
	[ "$(t closed)" -eq 0 ]
	[ "$(jq -r '.alert // ""' <<<"$TALLY")" != "" ]
	[[ "$(t alert)" == *ledger-reconciler* ]]
	[ "$(act_records)" -eq "$n" ]
	[ "$(records "invocation_id IN ('$inv_a', '$inv_b')")" -eq 2 ]
	[ "$(findings_where '.finding == "service-credential-refused" and .scope == "instance" and .kind == "ledger" and (.closed | not)')" -eq 1 ]
}

@test "the service credential revoked mid-run: the first write is refused (that act skipped, examined), surfaced at once, nothing written, the next act of the kind unreached (reconcile steps 3.18-3.19; Term unreached)" {
	orphan a
	inv_a=$INV
	orphan b
	inv_b=$INV
	n=$(act_records)
	export RI_FAULT_DIR=$T/faults
	mkdir -p "$RI_FAULT_DIR"
	mkfifo "$RI_FAULT_DIR/sweep.after_probe"
	ri_at 33
	RI_FAULT=sweep.after_probe=pause ri-sweep >"$T/sweep.out" 2>"$T/sweep.err" </dev/null 3>&- &
	BG=$!
	wait_for "$RI_FAULT_DIR/sweep.after_probe.reached"
	ri-actor revoke ledger-reconciler >/dev/null
	echo >"$RI_FAULT_DIR/sweep.after_probe"
	rc=0
	wait "$BG" || rc=$?
	BG=
	[ "$rc" -eq 2 ]                 # degraded: the identity refused
	TALLY=$(cat "$T/sweep.out")
	assert_partition
	[ "$(t examined)" -eq 1 ]
	[ "$(t skipped)" -eq 1 ]
	[ "$(t unreached)" -eq 1 ]
	[ "$(t closed)" -eq 0 ]
	[ "$(act_records)" -eq "$n" ]
	[ "$(findings_where '.finding == "service-credential-refused" and .scope == "instance" and .kind == "ledger" and (.closed | not)')" -eq 1 ]
}

# ---- an unbound kind ----------------------------------------------------------

@test "Binding 2-6: an open intent of a kind removed from the config refuses the run (78, nothing written: no closing, purge or seal; the bound kind's act unreached), yet is surfaced (tally surfaced, unbound-kind act finding), never closed, outside the partition; the refusal is on the register once (reconcile step 1.6; Term surfaced)" {
	ri_cfg '.kinds.ledger2 = .kinds.ledger'
	orphan k ledger2                     # committed in the store: a sweep could close it
	K=$INV
	orphan b                             # a bound kind's orphan: the run must not close it either
	ri_cfg 'del(.kinds.ledger2)'
	ri_at 33
	n=$(records)
	run --separate-stderr ri-sweep
	[ "$status" -eq 78 ]
	TALLY=$output
	assert_partition
	[ "$(t surfaced)" -eq 1 ]
	[ "$(t unreached)" -eq 1 ]
	[ "$(t examined)" -eq 0 ]
	[ "$(t closed)" -eq 0 ]
	[ "$(records)" -eq "$n" ]
	[ "$(findings_where ".finding == \"unbound-kind\" and .scope == \"act\" and .kind == \"ledger2\" and .act_key == \"k\" and .invocation_id == \"$K\"")" -eq 1 ]
	[ "$(findings_where '.finding == "start-refused" and .scope == "instance" and .kind == "ledger2" and (.detail.causes | has("binding"))')" -eq 1 ]
	# once per run, never closed, one record each
	ri_at 500
	run --separate-stderr ri-sweep
	[ "$status" -eq 78 ]
	TALLY=$output
	[ "$(t surfaced)" -eq 1 ]
	[ "$(t examined)" -eq 0 ]
	[ "$(records)" -eq "$n" ]
	[ "$(findings_where '.finding == "unbound-kind"')" -eq 1 ]
	[ "$(findings_where '.finding == "start-refused"')" -eq 1 ]
	# bound again: the run goes on and closes both; the refusal closes
	ri_cfg '.kinds.ledger2 = .kinds.ledger'
	sweep
	[ "$(t closed)" -eq 2 ]
	[ "$(findings_where '.finding == "start-refused" and .closed')" -eq 1 ]
}

# ---- the journal unavailable --------------------------------------------------

@test "the journal unavailable: ri-sweep exits 15 and writes nothing, journal-unavailable opens; back, the finding closes with last_seen at the outage run; a later outage opens a new record (reconcile 1a-1c; findings 10a, 11)" {
	orphan k
	away() { for f in journal.db journal.db-wal journal.db-shm; do [ ! -e "$T/$f" ] || mv "$T/$f" "$T/$f.away"; done; }
	back() { for f in journal.db journal.db-wal journal.db-shm; do [ ! -e "$T/$f.away" ] || mv "$T/$f.away" "$T/$f"; done; }
	sum_before=$(cat "$T"/journal.db* 2>/dev/null | sha256sum)
	away
	ri_at 40
	run --separate-stderr ri-sweep
	[ "$status" -eq 15 ]
	[ "$(jq -r .refused <<<"$output")" = journal-unavailable ]
	[ "$(jq 'has("examined")' <<<"$output")" = false ]     # no tally, so no partition to hold
	[ ! -e "$T/journal.db" ]                               # nothing created in its place
	back
	[ "$(cat "$T"/journal.db* 2>/dev/null | sha256sum)" = "$sum_before" ]
	[ "$(records "invocation_id = '$INV'")" -eq 1 ]
	f=$(ri-findings | jq -c 'select(.finding == "journal-unavailable")')
	[ "$(jq -s length <<<"$f")" -eq 1 ]
	[ "$(jq -r .scope <<<"$f")" = instance ]
	[ "$(jq -r .kind <<<"$f")" = null ]
	[ "$(jq -r .closed <<<"$f")" = false ]
	outage_run=$(jq -r .first_seen <<<"$f")

	ri_at 50
	sweep
	[ "$(t closed)" -eq 1 ]
	f=$(ri-findings | jq -c 'select(.finding == "journal-unavailable")')
	[ "$(jq -r .closed <<<"$f")" = true ]
	[ "$(jq -r .last_seen <<<"$f")" = "$outage_run" ]
	[ "$(jq -r .last_seen_at <<<"$f")" = 2026-11-29T10:00:40.000Z ]

	away
	ri_at 70
	run ri-sweep
	[ "$status" -eq 15 ]
	back
	ri_at 80
	sweep
	ri-findings | jq -s -c '[.[] | select(.finding == "journal-unavailable")]' >"$T/ju.json"
	[ "$(jq length "$T/ju.json")" -eq 2 ]
	[ "$(jq -r '[.[].closed] | all' "$T/ju.json")" = true ]
	[ "$(jq -r '.[0].first_seen_at, .[0].last_seen_at' "$T/ju.json" | tr '\n' ' ')" = \
	    "2026-11-29T10:00:40.000Z 2026-11-29T10:00:40.000Z " ]
	[ "$(jq -r '.[1].first_seen_at, .[1].last_seen_at' "$T/ju.json" | tr '\n' ' ')" = \
	    "2026-11-29T10:01:10.000Z 2026-11-29T10:01:10.000Z " ]
	[ "$(jq -r '.[0].first_seen != .[1].first_seen' "$T/ju.json")" = true ]
}

# ---- two sweeps at once -------------------------------------------------------

@test "two sweeps at once (--node a, --node b) over 200 orphans (loops: a third under make check and make test-pg): each act closed exactly once, the closed counts sum to the orphans, closed_already makes up the rest (reconcile 7; Invariant 2.3; sweep closed ids 1)" {
	# Invariant 2: one writer per act, whatever runs at once
	# 200 crashed ri-runs take ~2 s on SQLite (measured), so make test uses
	# the full 200; a third under the sanitizers and on PostgreSQL (loops).
	# Observed: the two runs serialise act by act on the section; the trailing
	# run finds each act already closed, so one tally usually carries all the
	# closings and the other all the closed_already.  The assertions hold for
	# any interleaving.
	N=$(loops 200)
	for i in $(seq 1 "$N"); do orphan "o$i"; done
	[ "$(jsql "SELECT count(*) FROM open_intents")" -eq $N ]
	ri_at 33
	ri-sweep --node a >"$T/a.json" 2>"$T/a.err" </dev/null 3>&- & pa=$!
	ri-sweep --node b >"$T/b.json" 2>"$T/b.err" </dev/null 3>&- & pb=$!
	ra=0; rb=0
	wait $pa || ra=$?
	wait $pb || rb=$?
	[ "$ra" -eq 0 ]
	[ "$rb" -eq 0 ]
	a=$(cat "$T/a.json"); b=$(cat "$T/b.json")
	echo "node a: $a"; echo "node b: $b"
	assert_partition "$a"
	assert_partition "$b"
	[ $(( $(jq .closed <<<"$a") + $(jq .closed <<<"$b") )) -eq $N ]
	for j in "$a" "$b"; do
		[ "$(jq '.closed + .closed_already == .examined' <<<"$j")" = true ]
		[ "$(jq '.skipped + .escalated + .abandoned' <<<"$j")" -eq 0 ]
	done
	[ "$(records "action_ref = 'ledger.disclosed'")" -eq $N ]
	[ "$(jsql "SELECT count(*) FROM (SELECT invocation_id FROM records
	    WHERE action_ref IN ('ledger.disclosed', 'ledger.abandoned', 'ledger.escalated', 'ledger.refused')
	    GROUP BY invocation_id HAVING count(*) > 1) AS dup")" -eq 0 ]
	for i in $(seq 1 $N); do
		e=$(read_entry "o$i")
		[ "$(jq -r '.state + " " + (.binding_duplicate | tostring)' <<<"$e")" = "closed false" ] ||
		    { echo "o$i: $e"; false; }
	done
	# and the next run's duplicate scan finds nothing
	ri_at 40
	sweep
	[ "$(t examined)" -eq 0 ]
	[ "$(findings_where '.finding == "binding-duplicate"')" -eq 0 ]
}

# ---- a sweep racing a late Close ----------------------------------------------

# race -- open (inv) at T0; ri-close at +10 s (its own frozen RI_NOW) pauses
# after its step-2 re-read (close.after_reread); the store gets the committed
# row; the sweep at +33 s takes the expired section and closes the act; then
# the paused close is released.  CLOSE_RC / CLOSE_OUT hold its end.
#
# With the env clock each process keeps the RI_NOW it was started with, so
# the paused close still reads +10 s when it wakes: by its own clock its lease
# (to +30 s) and its per-write terminus are fine.  What the journal fence
# refuses it on is the holder: the sweep's take (at +33 s, after expiry by the
# sweep's clock) replaced the invocation as holder, and the fence admits a
# write only from the current holder.  Under journal_fence none nothing checks
# that, and the late append lands beside the sweep's outcome.
race() {
	open=$(open_req race '{"pairing_datum":"pd-race"}' | ri-open)
	INV=$(jq -r .invocation_id <<<"$open")
	export RI_FAULT_DIR=$T/faults
	mkdir -p "$RI_FAULT_DIR"
	mkfifo "$RI_FAULT_DIR/close.after_reread"
	ri_at 10
	RI_FAULT=close.after_reread=pause ri-close <<<"$(close_req "$open" '{"disclosure_id":"dsc-late"}')" \
	    >"$T/close.out" 2>"$T/close.err" 3>&- &
	BG=$!
	wait_for "$RI_FAULT_DIR/close.after_reread.reached"
	# the act did commit (the stalled process's write reached the store)
	RI_PAIRING_DATUM=pd-race ledger-disclose --store "$T/ledger.db" --subject race --recipient r --scope s >/dev/null
	ri_at 33
	sweep
	[ "$(t examined)" -eq 1 ]
	[ "$(t closed)" -eq 1 ]
	echo >"$RI_FAULT_DIR/close.after_reread"
	CLOSE_RC=0
	wait "$BG" || CLOSE_RC=$?
	BG=
	CLOSE_OUT=$(cat "$T/close.out")
}

@test "a sweep racing a late ri-close under journal_fence declared: the sweep's take replaced the holder, the paused close's write is fenced out (21), the act has exactly one closing (Invariant 2.1; journal fence 1, 3; act section 10)" {
	race
	[ "$CLOSE_RC" -eq 21 ]
	[ "$(jq -r .refused <<<"$CLOSE_OUT")" = recording-failure ]
	[ "$(jq -r .position <<<"$CLOSE_OUT")" = outcome ]
	[ "$(records "invocation_id = '$INV' AND action_ref = 'ledger.disclosed'")" -eq 1 ]
	[ "$(jsql "SELECT actor_ref FROM records WHERE invocation_id = '$INV' AND action_ref = 'ledger.disclosed'")" = ledger-reconciler ]
	e=$(read_entry race)
	[ "$(jq -r .state <<<"$e")" = closed ]
	[ "$(jq -r .binding_duplicate <<<"$e")" = false ]
	ri_at 40
	sweep
	[ "$(findings_where '.finding == "binding-duplicate"')" -eq 0 ]
}

@test "the same race under journal_fence none leaves two closings; the next sweep's duplicate scan surfaces binding-duplicate (key closings) and ri-read sets binding_duplicate on the entry (journal fence none 1-5; reconcile steps 5.2, 5.4, 5.7; read invocation 7)" {
	ri_cfg '.instance.journal_fence = "none"'
	race
	[ "$CLOSE_RC" -eq 0 ]
	[ "$(jq -r .landed_by <<<"$CLOSE_OUT")" = invocation ]
	[ "$(records "invocation_id = '$INV' AND action_ref = 'ledger.disclosed'")" -eq 2 ]
	ri_at 40
	sweep
	f=$(ri-findings | jq -c "select(.finding == \"binding-duplicate\")")
	[ "$(jq -s length <<<"$f")" -eq 1 ]
	[ "$(jq -r .scope <<<"$f")" = act ]
	[ "$(jq -r .invocation_id <<<"$f")" = "$INV" ]
	[ "$(jq -r .act_key <<<"$f")" = race ]
	[ "$(jq -r .detail.key <<<"$f")" = closings ]
	r=$(ri-read <<<'{"kind":"ledger","act_key":"race"}')
	[ "$(jq -r '.invocations[0].binding_duplicate' <<<"$r")" = true ]
	[ "$(jq -r '.binding_duplicate' <<<"$r")" = false ]           # the intents key: one intent
	[ "$(jq '[.invocations[0].records[] | select(.action_ref == "ledger.disclosed")] | length' <<<"$r")" -eq 2 ]
	# reported once: a later run does not duplicate the finding
	ri_at 100
	sweep
	[ "$(findings_where '.finding == "binding-duplicate"')" -eq 1 ]
}

# ---- retention after the pass -------------------------------------------------

@test "retention after the pass (retention 700 s): a sweep at +701 s purges the closed act's intent payload -- tally purged, ri-read not-known; at +734 s its closings go too (read invocation 12; open invocations 7; Audit Trail Invariant 4)" {
	ri_cfg '.kinds.ledger.retention_period = "700s"'
	orphan k
	ri_at 33
	sweep
	[ "$(t closed)" -eq 1 ]
	[ "$(read_entry k | jq -r .state)" = closed ]
	ri_at 701
	sweep
	[ "$(t examined)" -eq 0 ]
	[ "$(jq -r '.purged // 0' <<<"$TALLY")" -ge 1 ]
	[ "$(jsql "SELECT count(*) FROM records WHERE payload IS NULL AND invocation_id = '$INV' AND action_ref = 'ledger.intended'")" -eq 1 ]
	run --separate-stderr ri-read <<<'{"kind":"ledger","act_key":"k"}'
	[ "$status" -eq 17 ]
	[ "$(jq -r .refused <<<"$output")" = not-known ]
	ri_at 734
	sweep
	[ "$(jq -r '.purged // 0' <<<"$TALLY")" -eq 2 ]
	[ "$(records "invocation_id = '$INV' AND payload IS NOT NULL")" -eq 0 ]
}

# ---- the re-read, the take, the fence at the sweep's own writes -------------

@test "a closing that lands between step 1 and the take (the operator's, while the run is paused after enumerating) is counted closed_already, and the run writes nothing for it (reconcile steps 2.4-2.6; sweep closed ids 1)" {
	BOB=$(ri-actor add bob | jq -r .credential)
	empty_orphan k
	act=$(intent_of "invocation_id = '$INV'")
	export RI_FAULT_DIR=$T/faults
	mkdir -p "$RI_FAULT_DIR"
	mkfifo "$RI_FAULT_DIR/sweep.after_enumerate"
	ri_at 33
	RI_FAULT=sweep.after_enumerate=pause ri-sweep >"$T/sweep.out" 2>"$T/sweep.err" </dev/null 3>&- &
	BG=$!
	wait_for "$RI_FAULT_DIR/sweep.after_enumerate.reached"
	run ri-resolve <<<"$(jq -c --arg c "$BOB" '. + {actor_ref:"bob", credential:$c,
	    disposition:{abandoned:{cause:"operator"}}}' <<<"$act")"
	[ "$status" -eq 0 ]
	n=$(act_records)
	echo >"$RI_FAULT_DIR/sweep.after_enumerate"
	rc=0
	wait "$BG" || rc=$?
	BG=
	[ "$rc" -eq 0 ]
	TALLY=$(cat "$T/sweep.out")
	assert_partition
	[ "$(t examined)" -eq 1 ]
	[ "$(t closed_already)" -eq 1 ]
	[ "$(t escalated)" -eq 0 ]
	[ "$(act_records)" -eq "$n" ]
	[ "$(read_entry k | jq -r '.state + " " + (.binding_duplicate | tostring)')" = "resolved false" ]
}

@test "a take that fails after waiting out the holder's lease (an operator holds the section; fast: sweep lease 1.8 s) is counted skipped, nothing written (reconcile steps 2.1-2.3)" {
	rm -rf "$T"
	ri_instance fast
	export RI_CREDENTIAL=$ALICE
	ledger-admin --store "$T/ledger.db" init >/dev/null
	BOB=$(ri-actor add bob | jq -r .credential)
	empty_orphan k
	act=$(intent_of "invocation_id = '$INV'")
	export RI_FAULT_DIR=$T/faults
	mkdir -p "$RI_FAULT_DIR"
	mkfifo "$RI_FAULT_DIR/resolve.after_take"
	ri_at 3.2                                  # past the examine edge (3 s + 100 ms)
	RI_FAULT=resolve.after_take=pause ri-resolve <<<"$(jq -c --arg c "$BOB" '. + {actor_ref:"bob",
	    credential:$c, disposition:{abandoned:{cause:"operator"}}}' <<<"$act")" \
	    >"$T/resolve.out" 2>"$T/resolve.err" 3>&- &
	BG=$!
	wait_for "$RI_FAULT_DIR/resolve.after_take.reached"
	n=$(act_records)
	start=$SECONDS
	sweep
	[ $((SECONDS - start)) -le 6 ]
	[ "$(t examined)" -eq 1 ]
	[ "$(t skipped)" -eq 1 ]
	[ "$(act_records)" -eq "$n" ]
	echo >"$RI_FAULT_DIR/resolve.after_take"
	rc=0
	wait "$BG" || rc=$?
	BG=
	[ "$rc" -eq 0 ]
	[ "$(read_entry k | jq -r .state)" = resolved ]
}

@test "a sweep whose closing write is issued after an operator took the expired section is fenced out: absorbed into skipped, one closing stands (journal fence 3-4; Invariant 2.1-2.2)" {
	# act section 6: the run's release of a section the operator now holds answers not-held, which the run discards
	BOB=$(ri-actor add bob | jq -r .credential)
	empty_orphan k
	act=$(intent_of "invocation_id = '$INV'")
	export RI_FAULT_DIR=$T/faults
	mkdir -p "$RI_FAULT_DIR"
	# past the gate, before the append of its escalation (empty store, no commit fence)
	mkfifo "$RI_FAULT_DIR/sweep.closing.before"
	ri_at 33
	RI_FAULT=sweep.closing.before=pause ri-sweep >"$T/sweep.out" 2>"$T/sweep.err" </dev/null 3>&- &
	BG=$!
	wait_for "$RI_FAULT_DIR/sweep.closing.before.reached"
	# the run's lease (15 s from +33 s) has ended by the operator's seam at +60 s
	ri_at 60
	run ri-resolve <<<"$(jq -c --arg c "$BOB" '. + {actor_ref:"bob", credential:$c,
	    disposition:{abandoned:{cause:"operator"}}}' <<<"$act")"
	[ "$status" -eq 0 ]
	echo >"$RI_FAULT_DIR/sweep.closing.before"
	rc=0
	wait "$BG" || rc=$?
	BG=
	[ "$rc" -eq 0 ]
	TALLY=$(cat "$T/sweep.out")
	assert_partition
	[ "$(t examined)" -eq 1 ]
	[ "$(t skipped)" -eq 1 ]
	[ "$(t escalated)" -eq 0 ]
	[ "$(records "invocation_id = '$INV' AND action_ref IN ('ledger.escalated', 'ledger.abandoned', 'ledger.disclosed')")" -eq 1 ]
	[ "$(read_entry k | jq -r '.state + " " + (.binding_duplicate | tostring)')" = "resolved false" ]
}

@test "report-only: every run's probe result reaches the compliance surface -- a later run whose probe answers differently (unavailable, then committed) is reported too (reconcile 2e; service identity 1b)" {
	ri_cfg '.kinds.ledger.service_identity = null'
	orphan k
	set_probe --store /nonexistent/ledger.db
	ri_at 33
	sweep_degraded
	[ "$(t reported)" -eq 1 ]
	[ "$(findings_where ".finding == \"closure-at-risk\" and .invocation_id == \"$INV\" and .detail.probe == \"unavailable\"")" -eq 1 ]
	# the store is back and now re-derives the outcome: the operator must be able to see that
	set_probe --store "$T/ledger.db"
	ri_at 100
	sweep
	[ "$(t reported)" -eq 1 ]
	ri-findings | jq -c "select(.invocation_id == \"$INV\")"
	[ "$(findings_where ".invocation_id == \"$INV\" and .detail.probe == \"committed\"")" -ge 1 ]
}

@test "an unreadable service credential file is not a silent skip: the run that cannot write under the service identity says so (an alert in the tally) (reconcile steps 3.18, 3.20; INTERFACE: hard alert)" {
	empty_orphan k
	rm -f "$T/reconciler.cred"
	n=$(act_records)
	ri_at 33
	sweep_degraded
	# Sweep never 2: no identity to write under -- the act is unreached
	[ "$(t examined)" -eq 0 ]
	[ "$(t unreached)" -eq 1 ]
	[ "$(act_records)" -eq "$n" ]
	echo "tally: $TALLY"
	ri-findings
	[ -n "$(jq -r '.alert // empty' <<<"$TALLY")" ]
}

# ---- the batch probe ("probe_batch": true; issue 15, target 4) ---------------

# batch_probe ARG... -- the ledger kind's probe becomes the batch ledger-probe
# (one process, one request and one answer a line), its process ids logged
# to $T/probe.pids; ARG... are its misbehaviour knobs
batch_probe() {
	set_probe --store "$T/ledger.db" --batch --pidlog "$T/probe.pids" "$@"
	ri_cfg '.kinds.ledger.probe_batch = true'
	: >"$T/probe.pids"
}

# probes -- how many probe processes the runs started
probes() { wc -l <"$T/probe.pids"; }

# batch_orphans N -- N acts done and never closed, keys b1..bN
batch_orphans() {
	local i
	for i in $(seq 1 "$1"); do orphan "b$i"; done
}

@test "batch probe: five orphans, one probe process answers them all a line each, each act closed on its own store row; ri-audit --probe judges them with one more (reconcile step 3.2; probe 1; issue 15, target 4)" {
	batch_orphans 5
	batch_probe
	ri_at 33
	sweep
	[ "$(t examined)" -eq 5 ]
	[ "$(t closed)" -eq 5 ]
	[ "$(probes)" -eq 1 ]
	for i in 1 2 3 4 5; do
		e=$(read_entry "b$i")
		[ "$(jq -r .state <<<"$e")" = closed ]
		[ "$(jq -r '.records[2].payload.data.subject' <<<"$e")" = "b$i" ]
	done
	# its process group is gone with the run
	if pgrep -f -- "--pidlog $T/probe.pids" >/dev/null; then echo "a batch probe outlived its run"; false; fi
	run --separate-stderr ri-audit --probe
	[ "$status" -eq 0 ]
	[ "$(jq -r '.checks[] | select(.check == "6.1") | .status' <<<"$output")" = pass ]
	[ "$(probes)" -eq 2 ]
}

# batch_case KNOB -- three orphans; the probe misbehaves (KNOB) at its
# second request: that act alone is unavailable (nothing written for it,
# skipped, store-unavailable), the others are closed, and a fresh process
# answers the act after it
batch_case() {
	batch_orphans 3
	batch_probe "$@" --at 2
	timed_sweep_at 33
	[ "$(t examined)" -eq 3 ]
	# the sweep asks in the order the intents landed: b2's was the second line
	{ [ "$(t closed)" -eq 2 ] && [ "$(t skipped)" -eq 1 ] && [ "$(t escalated)" -eq 0 ] && [ "$(t abandoned)" -eq 0 ] &&
	  [ "$(records "action_ref = 'ledger.disclosed'")" -eq 2 ] && [ "$(read_entry b2 | jq -r .state)" = open ] &&
	  [ "$(read_entry b1 | jq -r .state)" = closed ] && [ "$(read_entry b3 | jq -r .state)" = closed ]; } ||
	    { echo "ASSERT probe 1, 4-5 per line: the act whose line was no answer was closed: $TALLY"; false; }
	assert_degraded
	[ "$(probes)" -eq 2 ]
	[ "$(findings_where '.finding == "store-unavailable" and .scope == "instance" and .kind == "ledger" and (.closed | not)')" -eq 1 ]
	if pgrep -f -- "--pidlog $T/probe.pids" >/dev/null; then echo "a batch probe outlived its run"; false; fi
}

@test "batch probe: a line that is not JSON is unavailable for that act alone; the next act is put to a fresh process (probe 1, 4; reconcile step 3.13)" {
	batch_case --junk
}

@test "batch probe: an answer naming another act key is unavailable, never taken for the act asked (probe 1; reconcile step 3.13)" {
	batch_case --wrong-key
}

@test "batch probe: two lines for one request are no answer (probe 1; reconcile step 3.13)" {
	batch_case --two-lines
}

@test "batch probe: the probe dying mid-batch (SIGSEGV) leaves that act unavailable; a fresh process answers the rest (probe 4; reconcile step 3.13)" {
	batch_case --crash
}

@test "batch probe: a line not answered within probe_round_trip (1 s) is unavailable; the process group is killed and a fresh one answers the rest (reconcile step 3.13; INTERFACE: probe protocol timeout)" {
	batch_case --hang
	[ "$ELAPSED" -le 6 ]
}

@test "batch probe: an unavailable line is an answer -- three acts, the store missing: each skipped, nothing written, and the one process serves them all (probe 4-5; reconcile step 3.13)" {
	batch_orphans 3
	batch_probe
	set_probe --store "$T/missing/ledger.db" --batch --pidlog "$T/probe.pids"
	n=$(act_records)
	ri_at 33
	sweep_any
	assert_degraded
	[ "$(t examined)" -eq 3 ]
	[ "$(t skipped)" -eq 3 ]
	[ "$(act_records)" -eq "$n" ]
	[ "$(probes)" -eq 1 ]
}

@test "batch probe: probe_batch must be true or false -- any command refuses the config (exit 78)" {
	ri_cfg '.kinds.ledger.probe_batch = "yes"'
	run --separate-stderr ri-sweep
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"probe_batch"*"true or false"* ]]
}

@test "reconcile step 3.16: the sweep's closing lands but its retention placement fails (sweep.closing.after=fail, step-4): read back, counted closed with a hard alert, one closing -- never written twice" {
	orphan k
	ri_at 33
	RI_FAULT=sweep.closing.after=fail sweep_any
	[ "$status" -eq 2 ]                     # the hard alert: a degraded run
	[ "$(t closed)" -eq 1 ]
	jq -e '.alert | contains("landed without its retention placement")' <<<"$TALLY"
	[ "$(records "act_key = 'k' AND action_ref = 'ledger.disclosed'")" -eq 1 ]
	[ "$(read_entry k | jq -r .state)" = closed ]
}

@test "reconcile step 2.7, 3.17, journal write bound 1: a run paused until less than journal_write_bound of its sweep lease is left writes nothing -- skipped, left for the next run, which closes the act" {
	# the system clock, and a fast shape whose probe_round_trip (2 s) a
	# loaded machine meets: under make check's sanitizers a 200 ms bound
	# timed the probe out, and the run skipped on that path instead of the
	# one this test is about (instance start 8: 3 s > 0.2 + 2 x 0.3 + 2 s;
	# every command checks the conditions, so a config that broke them
	# would refuse the run, 78).  Sweep lease: closure_latency 3 s +
	# journal_write_bound 300 ms.  No journal fence: the store's fence
	# would refuse the late write anyway, and then this
	# test could not tell whether the sweep's own gate (journal write
	# bound 1) held (RI_NC_NO_WRITE_BOUND_GATE).
	ri_cfg '.clock = "system" | .instance.journal_fence = "none" | .instance.clock_offset_allowance = "100ms" | .instance.reconciliation_cadence = "10s" |
	    .instance.run_bound = "7s" | .instance.closure_latency = "3s" | .instance.journal_write_bound = "300ms" |
	    .instance.read_bound = "200ms" | .instance.compensation_window = "60s" | .kinds.ledger.completion_bound = "3s" |
	    .kinds.ledger.commit_round_trip = "100ms" | .kinds.ledger.probe_round_trip = "2s"'
	orphan k
	sleep 3.2                               # past the examine edge (3 s + 100 ms)
	for point in sweep.after_reread sweep.after_probe; do
		d=$T/p-$point
		mkdir -p "$d"
		mkfifo "$d/$point"
		n=$(act_records)
		RI_FAULT=$point=pause RI_FAULT_DIR=$d ri-sweep >"$T/s.out" 2>"$T/s.err" &
		BG=$!
		wait_for "$d/$point.reached"
		sleep 3.15                      # < 300 ms of the 3.3 s lease left
		echo >"$d/$point"
		rc=0
		wait "$BG" || rc=$?
		BG=
		[ "$rc" -eq 0 ] || { echo "$point: ri-sweep $rc: $(cat "$T/s.out" "$T/s.err")"; false; }
		jq -e '.examined == 1 and .skipped == 1 and .closed == 0' "$T/s.out"
		[ "$(act_records)" -eq "$n" ]   # nothing written
	done
	sweep
	[ "$(t closed)" -eq 1 ]
}
