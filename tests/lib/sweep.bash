# sweep.bash -- what the suites that run ri-sweep share: every tally they
# get is checked for the partition identity (Term partition).

assert_partition() {
	local j=${1:-$TALLY}
	jq -e 'has("examined") and
	    (.closed + .abandoned + .escalated + .reported + .skipped + .closed_already) == .examined' \
	    <<<"$j" >/dev/null || { echo "partition identity broken: $j"; return 1; }
}

# sweep [ARGS...] -- a run that finished: exit 0, or 3 exactly when it left
# acts to an operator (needs_operator, ri-sweep(1) EXIT STATUS)
sweep() {
	run --separate-stderr ri-sweep "$@"
	local want=0
	if jq -e '.needs_operator > 0' <<<"$output" >/dev/null 2>&1; then want=3; fi
	[ "$status" -eq "$want" ] || { echo "ri-sweep exited $status, want $want: $output $stderr"; return 1; }
	TALLY=$output
	RUN=$(jq -r .run_id <<<"$TALLY")
	assert_partition "$TALLY"
}

# t FIELD -- a field of the last tally
t() { jq -r ".$1" <<<"$TALLY"; }

# act_records -- journal records other than the substrate's own audit.*
# (a sweep also seals the journal: an audit.sealed record is not a write
# for any act)
act_records() { records "kind <> 'audit'"; }

# inv_of KEY [KIND] -- the newest invocation id opened on (KIND, KEY)
inv_of() {
	jsql "SELECT invocation_id FROM records WHERE kind = '${2:-ledger}'
	    AND act_key = '$1' AND action_ref = '${2:-ledger}.intended' ORDER BY seq DESC LIMIT 1"
}

# ledger_instance [walkthrough|fast] -- a fresh instance (ri_instance),
# alice's credential in the environment, an empty ledger store
ledger_instance() {
	ri_instance "${1:-walkthrough}" || return 1
	export RI_CREDENTIAL=$ALICE
	ledger-admin --store "$T/ledger.db" init >/dev/null
}

# sweep_teardown -- the background process a test started (BG), then $T
sweep_teardown() {
	if [ -n "${BG:-}" ]; then
		kill "$BG" 2>/dev/null || true
		wait "$BG" 2>/dev/null || true
	fi
	if [ -n "${T:-}" ]; then rm -rf "$T"; fi
}

# killed_run POINT KEY [KIND] -- ri-run killed by the fault run.POINT=die:
# after_act (between the act and Close: the store has the row) or
# after_open (before the act: the store is empty).  The intent stands
# open; INV holds its invocation id.
killed_run() {
	local kind=${3:-ledger} rc=0
	{ ( RI_CREDENTIAL=${RI_CREDENTIAL:-$ALICE} RI_FAULT=run.$1=die ri-run --kind "$kind" --act-key "$2" \
	    --actor alice -- ledger-disclose --store "$T/ledger.db" --subject "$2" --recipient r --scope s ) \
	    >/dev/null 2>&1 </dev/null; } 2>/dev/null || rc=$?
	[ "$rc" -eq 137 ] || { echo "$1 $2: ri-run exited $rc, expected the fault's SIGKILL"; return 1; }
	INV=$(inv_of "$2" "$kind")
	[ -n "$INV" ]
}

# orphan KEY [KIND] -- an act done and never closed
orphan() { killed_run after_act "$@"; }
# empty_orphan KEY [KIND] -- an intent whose act never ran
empty_orphan() { killed_run after_open "$@"; }

# set_probe ARG... -- the ledger kind's probe argv becomes ledger-probe ARG...
set_probe() {
	local argv
	argv=$(printf '%s\n' "$RI_EXAMPLES/ledger-probe" "$@" | jq -R . | jq -s -c .)
	ri_cfg ".kinds.ledger.probe = $argv"
}

# wait_for FILE -- up to 10 s for a fault point's ".reached" marker
wait_for() {
	local i
	for i in $(seq 1 200); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	echo "timed out waiting for $1"
	return 1
}

# sweep_degraded -- a run that ended degraded (ri-sweep(1) EXIT STATUS 2):
# the tally with "degraded" reasons, and stderr saying why
sweep_degraded() {
	sweep_any "$@"
	assert_degraded
}

# sweep_any -- a run whatever its exit: TALLY, RUN, $status and $stderr
# set, so a test can judge what the run did (the mechanism it proves)
# before how it ended (assert_degraded)
sweep_any() {
	run --separate-stderr ri-sweep "$@"
	TALLY=$output
	RUN=$(jq -r .run_id <<<"$TALLY" 2>/dev/null)
}

assert_degraded() {
	[ "$status" -eq 2 ] || { echo "ri-sweep exited $status, not 2 (degraded): $TALLY $stderr"; return 1; }
	assert_partition "$TALLY"
	jq -e '.degraded | length > 0' <<<"$TALLY" >/dev/null || { echo "no degraded reasons: $TALLY"; return 1; }
	[ -n "$stderr" ] || { echo "a degraded run said nothing on stderr"; return 1; }
}
