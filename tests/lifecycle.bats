#!/usr/bin/env bats
# lifecycle.bats -- issue 41: a year in the life of an instance.  Every
# lawful change, done exactly as the pages say, leaves `ri-audit --probe`
# clean; an unlawful variant of each fails the check that names it.  Time
# moves on the env clock; the adopter's store is the example ledger.
#
# Spec: Check 2.1, 2.5, 3.5, 6.1, 6.3, 6.4, 6.5, 8.1.5, 8.1.6; resolve 9,
# 13, 15a, 16a, 21; journal 8-9; Binding 1-3; the lifecycle issue's rulings
# (bindings are history, one reading of retention, store checks judge what
# stands).  Adding a PostgreSQL host: tests/pg/multinode.bats.
#
# test-pg: backend

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

# ---- point 1: bindings are history ------------------------------------------

@test "issue 41 point 1, Check 2.5: the service identity rotated as ri-actor(1) says (a new identity added, the kind rebound, the old revoked) -- the outcome the old one recovered stays clean; one the old identity writes after the rotation fails 2.5" {
	orphan k
	later 33
	sweep
	[ "$(t closed)" -eq 1 ]
	clean
	ri-actor add ledger-reconciler-2 --service --credential-file "$T/r2.cred" >/dev/null
	ri_cfg '.kinds.ledger.service_identity = {"actor_ref": "ledger-reconciler-2", "credential_file": "r2.cred"}'
	# a writer meets the new binding and records it before its own record
	orphan k2
	later 33
	sweep
	[ "$(t closed)" -eq 1 ]
	[ "$(records "action_ref = 'audit.bound'")" -eq 1 ]
	clean
	# unlawful: the old identity, not yet revoked, closes an act after the
	# rotation (ri-forge: a raw append, no binding of its own)
	orphan k3
	inv=$(inv_of k3)
	iev=$(jsql "SELECT event_id FROM records WHERE invocation_id = '$inv' AND action_ref = 'ledger.intended'")
	"$RI_TOOLS/ri-forge" -c "$RI_CONFIG" --action-ref ledger.disclosed --actor ledger-reconciler \
	    --credential-file "$T/reconciler.cred" --data "$(jq -nc --arg i "$inv" --arg e "$iev" \
	    '{invocation_id:$i, intent_event_id:$e, kind:"ledger", act_key:"k3", recovery:true,
	      acting_actor_ref:"alice", data:{}}')" >/dev/null
	fails 2.5 "attested by ledger-reconciler, not by the service identity"
	ri-actor revoke ledger-reconciler >/dev/null
}

@test "issue 41 point 1, Check 2.5 (tla probe-bound-cached): a sweep run that read the bindings under ledger-reconciler, paused while the kind is rebound to ledger-reconciler-2 and an Open records the new binding, lands its outcome with the binding it was written under -- clean, never judged by the newer one" {
	orphan k
	later 33
	ri-actor add ledger-reconciler-2 --service --credential-file "$T/r2.cred" >/dev/null
	export RI_FAULT_DIR=$T/faults
	mkdir -p "$RI_FAULT_DIR"
	mkfifo "$RI_FAULT_DIR/sweep.after_take"
	RI_FAULT=sweep.after_take=pause ri-sweep >"$T/sweep.out" 2>"$T/sweep.err" </dev/null 3>&- &
	BG=$!
	wait_for "$RI_FAULT_DIR/sweep.after_take.reached"
	# the rotation, while the run (started under the old binding) waits
	ri_cfg '.kinds.ledger.service_identity = {"actor_ref": "ledger-reconciler-2", "credential_file": "r2.cred"}'
	o=$(open_req k2 | ri-open)
	[ "$(records "action_ref = 'audit.bound'")" -eq 1 ]
	echo >"$RI_FAULT_DIR/sweep.after_take"
	rc=0
	wait "$BG" || rc=$?
	BG=
	[ "$rc" -eq 0 ] || { echo "ri-sweep exited $rc: $(cat "$T/sweep.err")"; false; }
	TALLY=$(cat "$T/sweep.out")
	[ "$(t closed)" -eq 1 ]
	# ASSERT bindings are history: the outcome the old identity wrote
	# carries the binding it was written under (a second audit.bound, in
	# its transaction), so Check 2.5 judges it by that
	[ "$(records "action_ref = 'audit.bound'")" -eq 2 ]
	clean
	close_req "$o" '{"disclosure_id":"d2"}' | ri-close >/dev/null
}

@test "issue 41 point 1, Check 3.1/3.5: a kind made report-only after the sweep closed an act in time -- the act is judged by the binding of its time (3.1, clean), not by today's (3.5)" {
	orphan k
	later 33
	sweep
	[ "$(t closed)" -eq 1 ]
	ri_cfg '.kinds.ledger.service_identity = null'
	ri-open <<<"$(open_req k2)" >/dev/null            # records the report-only binding
	later 700
	audit_probe
	jq -e '.checks[] | select(.check == "3.5") | all(.failures[]; .invocation_id != "'"$(inv_of k)"'")' <<<"$AUDIT" >/dev/null
	jq -e '.checks[] | select(.check == "3.1") | .status == "pass"' <<<"$AUDIT" >/dev/null
}

@test "issue 41 point 1, Check 6.4: the commit fence withdrawn after the sweep abandoned an act under it -- clean; a sweep abandonment written after the withdrawal fails 6.4" {
	ri_cfg '.kinds.ledger.commit_fence = "declared"'
	empty_orphan k                                    # the act never ran: not-committed
	later 40
	sweep
	[ "$(t abandoned)" -eq 1 ]
	clean
	ri_cfg '.kinds.ledger.commit_fence = "none"'
	ri-open <<<"$(open_req k2)" >/dev/null            # records the binding without a fence
	clean
	# unlawful: a sweep abandonment after the fence was withdrawn
	empty_orphan k3
	inv=$(inv_of k3)
	iev=$(jsql "SELECT event_id FROM records WHERE invocation_id = '$inv' AND action_ref = 'ledger.intended'")
	"$RI_TOOLS/ri-forge" -c "$RI_CONFIG" --action-ref ledger.recovery_intended --actor ledger-reconciler \
	    --credential-file "$T/reconciler.cred" --data "$(jq -nc --arg i "$inv" --arg e "$iev" \
	    '{invocation_id:$i, intent_event_id:$e, kind:"ledger", act_key:"k3", plan:"abandon", acting_actor_ref:"alice"}')" >/dev/null
	"$RI_TOOLS/ri-forge" -c "$RI_CONFIG" --action-ref ledger.abandoned --actor ledger-reconciler \
	    --credential-file "$T/reconciler.cred" --data "$(jq -nc --arg i "$inv" --arg e "$iev" \
	    '{invocation_id:$i, intent_event_id:$e, kind:"ledger", act_key:"k3", recovery:true,
	      acting_actor_ref:"alice", cause:"not-committed"}')" >/dev/null
	fails 6.4 "declared no commit fence when it was written"
}

@test "issue 41 point 1, Check 8.1.8: an outcome added to the kind -- records of it after the binding that added it are clean; one appended before any binding held it fails 8.1.8" {
	ri_cfg '.kinds.ledger.outcomes = ["disclosed", "withdrawn"]'
	o=$(ri-open <<<"$(open_req k)")
	ri-close <<<"$(jq -c --arg c "$ALICE" '{kind, act_key, invocation_id, intent_event_id, actor_ref} +
	    {credential:$c, outcome_action_ref:"ledger.withdrawn", outcome_data:{}}' <<<"$o")" >/dev/null
	clean
	# unlawful: a withdrawn outcome forged onto a journal whose bindings
	# never held it (a second instance, the outcome added to its config
	# without any writer recording it)
	ri_cfg '.kinds.ledger.outcomes = ["disclosed", "withdrawn", "retracted"]'
	o=$(ri-open <<<"$(open_req k2)")
	ri_cfg '.kinds.ledger.outcomes = ["disclosed", "withdrawn", "retracted", "voided"]'
	inv=$(jq -r .invocation_id <<<"$o")
	iev=$(jq -r .intent_event_id <<<"$o")
	"$RI_TOOLS/ri-forge" -c "$RI_CONFIG" --action-ref ledger.voided --actor alice \
	    --data "$(jq -nc --arg i "$inv" --arg e "$iev" '{invocation_id:$i, intent_event_id:$e, kind:"ledger",
	    act_key:"k2", data:{}}')" >/dev/null
	fails 8.1.8 "does not read it as"
}

# ---- point 4: retention has one reading ----------------------------------------

@test "issue 41 point 4, journal 8-9: retention_period shortened (400d -> 1d) while an orphan written under 400d waits out a store outage -- two days on, the store back, the sweep still examines and closes it (its bound period); ri-startcheck says the shorter period applies to new records; the audit is clean" {
	orphan k
	set_probe --store "$T/gone/ledger.db"                 # the store unreachable: unavailable
	later 33
	run --separate-stderr ri-sweep
	[ "$status" -eq 2 ]                                    # degraded: the store is down
	[ "$(jq -r .skipped <<<"$output")" -eq 1 ]
	ri_cfg '.kinds.ledger.retention_period = "1d"'
	run --separate-stderr ri-startcheck --json
	warned=$output                                         # judged last: the sweep's edge first
	later 86400
	run --separate-stderr ri-sweep                         # still down: the act still in its partition
	[ "$(jq -r .skipped <<<"$output")" -eq 1 ]
	[ "$status" -eq 2 ]
	later 86400
	set_probe --store "$T/ledger.db"                       # the store is back
	sweep
	[ "$(t examined)" -eq 1 ]
	[ "$(t closed)" -eq 1 ]
	run --separate-stderr ri-read --kind ledger --act-key k
	[ "$(jq -r '.invocations[0].state' <<<"$output")" = closed ]
	clean
	jq -e '.warnings | any(contains("retention_period") and contains("new records only"))' <<<"$warned" >/dev/null
}

@test "issue 41 point 4, Check 8.1.5: a payload destroyed before its stored retention end (400d, though the period is 1d now) fails 8.1.5" {
	orphan k
	later 33
	sweep
	ri_cfg '.kinds.ledger.retention_period = "1d"'
	ri-open <<<"$(open_req k2)" >/dev/null
	later 172800
	inv=$(inv_of k)
	attacker_sql "UPDATE records SET payload = NULL, salt = NULL WHERE invocation_id = '$inv'"
	fails 8.1.5 "before its retention ended"
}

@test "issue 41 point 4, Term retention end (tla -buggy-purge-today): retention_period shortened (400d -> 1d) -- two days on, the sweep's purge keeps the payloads written under 400d (their stored retention end) and destroys those written under 1d; the audit is clean" {
	orphan k
	later 33
	sweep
	[ "$(t closed)" -eq 1 ]
	ri_cfg '.kinds.ledger.retention_period = "1d"'
	ri-open <<<"$(open_req k2)" >/dev/null
	later 172800
	sweep
	old=$(inv_of k)
	new=$(inv_of k2)
	kept=$(jsql "SELECT count(*) FROM records WHERE invocation_id = '$old' AND payload IS NULL")
	[ "$kept" -eq 0 ] || { echo "purged before their stored retention end: $kept records of $old"; false; }
	[ "$(jsql "SELECT count(*) FROM records WHERE invocation_id = '$new' AND payload IS NULL")" -eq 1 ]
	clean
}

# ---- the outside auditor: no config, the journal's own bindings -----------------

@test "issue 41 (bindings are history), issue 44 point 5: an outside auditor handed a copy, the witness and the public key -- no config -- audits it by the bindings the journal records, across a rotation; a tampered copy fails" {
	orphan k
	later 33
	sweep
	ri-actor add ledger-reconciler-2 --service --credential-file "$T/r2.cred" >/dev/null
	ri_cfg '.kinds.ledger.service_identity = {"actor_ref": "ledger-reconciler-2", "credential_file": "r2.cred"}'
	orphan k2
	later 33
	sweep
	ri-backup "$T/copy.db" >/dev/null
	mkdir "$T/auditor"
	cp "$T/copy.db" "$T/journal.key.witness" "$T/seal.key.pub" "$T/auditor/"
	cd "$T/auditor"
	run --separate-stderr env -u RI_CONFIG ri-audit --journal copy.db --witness journal.key.witness \
	    --public-key seal.key.pub
	[ "$status" -eq 0 ] || { echo "$status $stderr $(jq -c '[.checks[] | select(.status == "fail")]' <<<"$output")"; false; }
	[ "$(jq -r .records <<<"$output")" -gt 10 ]
	# a byte of a payload changed in the copy
	sqlite3 copy.db "DROP TRIGGER records_append_only_update; UPDATE records SET payload = replace(payload, 'k2', 'kX') WHERE act_key = 'k2'"
	run --separate-stderr env -u RI_CONFIG ri-audit --journal copy.db --witness journal.key.witness \
	    --public-key seal.key.pub
	[ "$status" -eq 1 ]
}

# ---- the rest of the year: actors, retention lengthened, a kind retired, a duplicate

# act KEY [ACTOR] [CRED] [KIND] -- an act done and closed by ri-run
act() {
	RI_CREDENTIAL=${3:-$ALICE} ri-run --kind "${4:-ledger}" --act-key "$1" --actor "${2:-alice}" -- \
	    ledger-disclose --store "$T/ledger.db" --subject "$1" --recipient r --scope s >/dev/null
}

@test "issue 41, lifecycle: actors revoked and added (ri-actor(1)) -- alice's acts, alice revoked, carol added, carol's acts and alice's orphan recovered after her revocation: clean (Check 8.1.6, 1.1); alice writing after her revocation from a host whose clock lags it is refused (a journal that took it fails Check 8.1.6)" {
	act k1
	orphan k2                                         # alice's, left open
	later 10
	ri-actor revoke alice >/dev/null
	revoked=$RI_NOW
	CAROL=$(ri-actor add carol | jq -r .credential)
	later 10
	act k3 carol "$CAROL"
	later 33
	sweep                                              # alice's orphan recovered after her revocation
	[ "$(t closed)" -eq 1 ]
	# ASSERT Check 8.1.6: every record's actor registered and not revoked at its recorded_at
	clean
	run --separate-stderr env RI_CREDENTIAL="$ALICE" ri-open <<<"$(open_req k4)"
	[ "$status" -eq 10 ]                              # the store refuses her now
	# unlawful: alice writes after her revocation from a host whose clock
	# still reads before it (1 s behind, inside the allowance).  recorded_at
	# never goes backwards, so her record would land after the revocation:
	# the store judges her credential at that instant and refuses it -- a
	# journal that took it fails 8.1.6 (the negative control
	# RI_NC_CRED_AT_NOW judges at the host's clock, and this catches it)
	n=$(records)
	run --separate-stderr env RI_NOW=$((revoked - 1000)) RI_CREDENTIAL="$ALICE" ri-open <<<"$(open_req k5)"
	# ASSERT Check 8.1.6: every record's actor registered and not revoked at its recorded_at
	[ "$status" -eq 10 ] || { fails 8.1.6 "actor alice was revoked before this record" &&
	    echo "the store landed a revoked actor's record (ri-open $status): Check 8.1.6 fails: $stderr"; false; }
	[ "$(records)" -eq "$n" ]
	clean
}

@test "issue 41, lifecycle: retention_period lengthened (1d -> 400d) -- records written under 1d are purged at their stored end (recorded_at + 1d), those written under 400d kept: clean (Term retention end, Check 8.1.5); a payload written under 400d destroyed at the old 1d end fails Check 8.1.5" {
	ri_cfg '.kinds.ledger.retention_period = "1d"'
	orphan k
	later 33
	sweep
	[ "$(t closed)" -eq 1 ]
	clean
	ri_cfg '.kinds.ledger.retention_period = "400d"'
	act k2                                            # records the 400d binding
	[ "$(records "action_ref = 'audit.bound'")" -ge 1 ]
	clean
	old=$(inv_of k)
	new=$(inv_of k2)
	later 40000                                       # before k's stored end: kept
	sweep
	[ "$(jsql "SELECT count(*) FROM records WHERE invocation_id = '$old' AND payload IS NULL")" -eq 0 ]
	later 132800                                      # past it
	sweep
	# ASSERT the one reading of retention: the stored end, not today's period
	[ "$(jsql "SELECT count(*) FROM records WHERE invocation_id = '$old' AND payload IS NOT NULL")" -eq 0 ]
	[ "$(jsql "SELECT count(*) FROM records WHERE invocation_id = '$new' AND payload IS NULL")" -eq 0 ]
	clean
	# unlawful: k2's payloads destroyed at the old period's end
	attacker_sql "UPDATE records SET payload = NULL, salt = NULL WHERE invocation_id = '$new'"
	# ASSERT Check 8.1.5
	fails 8.1.5 "before its retention ended"
}

@test "issue 41, lifecycle: a kind retired -- ledger2's acts all closed, then removed from the config: clean, its records judged by the bindings the journal recorded (bindings are history); removing a kind that still has an open intent: ri-sweep exits 78 and writes nothing, ri-startcheck refuses (Binding 2, 3)" {
	ri_cfg '.kinds.ledger2 = .kinds.ledger'
	act k alice "$ALICE" ledger2
	orphan k2 ledger2
	later 33
	sweep
	[ "$(t closed)" -eq 1 ]
	clean
	ri_cfg 'del(.kinds.ledger2)'
	run --separate-stderr ri-startcheck
	[ "$status" -eq 0 ] || { echo "ri-startcheck: $status $output $stderr"; false; }
	later 60
	sweep
	# ASSERT bindings are history: the retired kind's records judged by the journal's bindings
	clean
	# unlawful: ledger3 retired with an open intent
	ri_cfg '.kinds.ledger3 = .kinds.ledger'
	orphan k3 ledger3
	ri_cfg 'del(.kinds.ledger3)'
	later 33
	n=$(records)
	run --separate-stderr ri-sweep
	# ASSERT Binding 2: refused, nothing written
	[ "$status" -eq 78 ]
	[ "$(records)" -eq "$n" ]
	run --separate-stderr ri-startcheck
	[ "$status" -ne 0 ]
	[[ "$output$stderr" == *ledger3* ]]
}

@test "issue 41, lifecycle: a binding duplicate (journal fence none: a Close paused past the sweep's escalation and an operator's abandonment) resolved with ri-resolve naming every standing head -- clean; left unresolved it fails Check 2.1" {
	ri_cfg '.instance.journal_fence = "none"'
	o=$(open_req k '{"pairing_datum":"pd-k"}' | ri-open)
	export RI_FAULT_DIR=$T/faults
	mkdir -p "$RI_FAULT_DIR"
	mkfifo "$RI_FAULT_DIR/close.after_reread"
	close_req "$o" '{"disclosure_id":"late"}' >"$T/close.json"
	RI_FAULT=close.after_reread=pause ri-close <"$T/close.json" >"$T/close.out" 2>&1 3>&- &
	BG=$!
	wait_for "$RI_FAULT_DIR/close.after_reread.reached"
	later 33
	sweep
	[ "$(t escalated)" -eq 1 ]
	later 7
	resolve k '{"abandoned":{"cause":"operator: the store holds no such act"}}'
	echo >"$RI_FAULT_DIR/close.after_reread"
	wait "$BG" || true
	BG=
	[ "$(ri-read --kind ledger --act-key k </dev/null | jq -r '.invocations[0].binding_duplicate')" = true ]
	# unlawful: the duplicate left standing
	# ASSERT Check 2.1: no two standing chains of closings on one invocation
	fails 2.1
	later 60
	heads=$(ri-read --kind ledger --act-key k </dev/null | jq -c '[.invocations[0].records[] |
	    select(.action_ref == "ledger.disclosed" or .action_ref == "ledger.abandoned") | .event_id] | sort')
	resolve k '{"abandoned":{"cause":"operator: the store holds no such act"}}'
	fix=$(jq -r .closing_event_id <<<"$output")
	sup=$(ri-read --kind ledger --act-key k </dev/null | jq -c --arg e "$fix" '.invocations[0].records[] |
	    select(.event_id == $e) | .payload.supersedes | sort')
	[ "$sup" = "$heads" ]
	[ "$(ri-read --kind ledger --act-key k </dev/null | jq -r '.invocations[0].binding_duplicate')" = false ]
	# ASSERT Check 2.1, 6.3: one chain stands, the store answers not-committed
	clean
}
