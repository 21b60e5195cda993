#!/usr/bin/env bats
# lifecycle.bats -- issue 41: a year in the life of an instance.  Every
# lawful change, done exactly as the pages say, leaves `ri-audit --probe`
# clean; an unlawful variant of each fails the check that names it.  Time
# moves on the env clock; the adopter's store is the example ledger.
#
# Spec: Check 2.5, 3.5, 6.1, 6.3, 6.4, 6.5, 8.1.5; resolve 9, 13, 15a, 16a,
# 21; journal 8-9; Binding 1; the lifecycle issue's rulings (bindings are
# history, one reading of retention, store checks judge what stands).

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"
load "$BATS_TEST_DIRNAME/lib/sweep"

setup() {
	ledger_instance
	BOB=$(ri-actor add bob | jq -r .credential)
}

teardown() {
	sweep_teardown
}

# audit_probe -- ri-audit --probe; AUDIT holds its answer
audit_probe() {
	run --separate-stderr ri-audit --probe
	AUDIT=$output
}

# clean -- the audit passes, every check
clean() {
	audit_probe
	[ "$status" -eq 0 ] || { echo "ri-audit --probe exited $status: $(jq -c '[.checks[] | select(.status != "pass" and .status != "not-applicable")]' <<<"$AUDIT")"; return 1; }
}

# fails CHECK [TEXT] -- the audit fails CHECK (its message holding TEXT)
fails() {
	audit_probe
	[ "$status" -eq 1 ] || { echo "ri-audit --probe exited $status, expected 1"; return 1; }
	jq -e --arg c "$1" --arg m "${2:-}" '.checks[] | select(.check == $c) | .status == "fail" and
	    any(.failures[]; .message | contains($m))' <<<"$AUDIT" >/dev/null ||
	    { echo "check $1 did not fail${2:+ with '$2'}: $(jq -c '[.checks[] | select(.status == "fail")]' <<<"$AUDIT")"; return 1; }
}

# later SECONDS -- move the env clock on
later() {
	RI_NOW=$((RI_NOW + $1 * 1000))
	export RI_NOW
}

# resolve KEY DISPOSITION -- bob resolves KEY's newest invocation
resolve() {
	local act
	act=$(intent_of "kind = 'ledger' AND act_key = '$1'")
	run --separate-stderr ri-resolve <<<"$(jq -c --argjson d "$2" --arg c "$BOB" \
	    '{kind, act_key, invocation_id, intent_event_id, actor_ref:"bob", credential:$c, disposition:$d}' <<<"$act")"
	[ "$status" -eq 0 ] || { echo "ri-resolve exited $status: $output $stderr"; return 1; }
}

# undecidable KEY -- an orphan whose store holds two rows for its pairing
# datum, escalated by the sweep; D1 and D2 are the rows' ids
undecidable() {
	orphan "$1"
	PD=$(ledger-admin --store "$T/ledger.db" list | jq -r "select(.subject == \"$1\") | .pairing_datum")
	ledger-admin --store "$T/ledger.db" plant --pairing-datum "$PD" >/dev/null
	read -r D1 D2 < <(ledger-admin --store "$T/ledger.db" list --pairing-datum "$PD" |
	    jq -sr '[.[].disclosure_id] | sort | join(" ")')
	[ -n "$D2" ]
	later 33
	sweep
	[ "$(t escalated)" -eq 1 ]
}

# outcome_for ID -- an operator's outcome disposition naming store row ID
outcome_for() {
	ledger-admin --store "$T/ledger.db" list | jq -c --arg id "$1" 'select(.disclosure_id == $id) |
	    {outcome: {outcome_action_ref: "ledger.disclosed",
	     outcome_data: {disclosure_id, recipient, subject}}}'
}

# ---- point 2: an undecidable escalation has a resolution that leaves the audit clean

@test "issue 41 point 2, Check 6.1, 6.5: an undecidable escalation resolved with an outcome the store offered is clean -- before and after the duplicate row is removed from the store; an outcome naming no candidate fails 6.1" {
	undecidable k
	clean
	resolve k "$(outcome_for "$D1")"
	# 6.1: the operator chose among what the store offered (undecidable,
	# a candidate names its data); 6.5: the superseded escalation is
	# judged through the closing that superseded it
	clean
	jq -e '.checks[] | select(.check == "6.1") | .notes | keys | any(contains("among the store'"'"'s candidates"))' <<<"$AUDIT" >/dev/null
	# the store corrected since: the duplicate row removed
	sqlite3 "$T/ledger.db" "DELETE FROM disclosures WHERE disclosure_id = '$D2'"
	clean
	# unlawful: an operator's outcome the store never offered
	undecidable k2
	resolve k2 '{"outcome":{"outcome_action_ref":"ledger.disclosed","outcome_data":{"disclosure_id":"dsc-invented"}}}'
	fails 6.1 "does not corroborate"
}

@test "issue 41 point 2, Check 6.3: an undecidable escalation resolved by an operator's abandonment, once the store holds no such act (both rows were test data and are gone), is clean; abandoning while the store holds them fails 6.3" {
	undecidable k
	# unlawful first: the store still holds both rows
	resolve k '{"abandoned":{"cause":"operator: the act did not happen"}}'
	fails 6.3 "abandoned, but the store answers undecidable"
	# the store corrected (the rows were test data): the same abandonment
	# now stands on what the store says
	sqlite3 "$T/ledger.db" "DELETE FROM disclosures WHERE pairing_datum = '$PD'"
	clean
}
