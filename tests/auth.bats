#!/usr/bin/env bats
# auth.bats -- who may write, and under what (issue 10; issue 16 item 1):
# every write authorised, not only authenticated.  Each test is one of the
# issue's scenarios, tried as a hostile colleague would, over the real
# binaries on a real journal: the refusal, what the journal, the sections
# and the register hold afterwards -- and that the owner's own close,
# refusal or yield still succeeds.
#
#   close 1, Check 2          only the intent's actor closes, refuses, yields
#   Invariant 5.4             Resolve is for human operators (caller kind)
#   Sweep never 2             the sweep writes only under a service actor
#   reconcile 3.18-3.19       a refused identity stops only its own kind
#   Action wiring 1, Inv. 8   post-commit answers carry their position
#   Instance start 3          writers enforce the start gate (key files,
#   Binding 2-3               bindings), refusals recorded once per cause
#   act section 11            lease waits capped at the longest lease
#   ri-run(1)                 the job dies with ri-run, inherits no spare fd
#
# Walkthrough numbers (tests/lib/common.bash) unless a test says "fast":
# lease 30 s, examine edge +32 s, sweep lease 15 s.  Time moves through
# RI_NOW.  alice opens; bob is another registered human.
#
# test-pg: backend

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"
load "$BATS_TEST_DIRNAME/lib/sweep"

setup() {
	BG=
}

teardown() {
	if [ -n "${BG:-}" ]; then
		kill "$BG" 2>/dev/null || true
		wait "$BG" 2>/dev/null || true
	fi
	if [ -n "${JOBPG:-}" ]; then
		kill -KILL -- "-$JOBPG" 2>/dev/null || true
	fi
	if [ -n "${T:-}" ] && [ -d "$T" ]; then
		chmod -R u+rwX "$T" 2>/dev/null || true
		rm -rf "$T"
	fi
}

# instance [walkthrough|fast] -- a fresh instance, an empty ledger store,
# and bob (BOB holds his credential)
instance() {
	ri_instance "${1:-walkthrough}"
	ledger-admin --store "$T/ledger.db" init >/dev/null
	BOB=$(ri-actor add bob | jq -r .credential)
}

# opened KEY [INTENT_DATA] -- alice's ri-open; the answer in $A, INV, IEV
opened() {
	A=$(open_req "$1" "${2:-{\}}" | ri-open) || { echo "ri-open $1 failed"; return 1; }
	INV=$(jq -r .invocation_id <<<"$A")
	IEV=$(jq -r .intent_event_id <<<"$A")
}

# as ACTOR CRED REQUEST -- the request re-signed: another actor_ref and credential
as() { jq -c --arg a "$1" --arg c "$2" '.actor_ref = $a | .credential = $c' <<<"$3"; }

refuse_req() {
	jq -c --arg c "${2:-$ALICE}" '{kind, act_key, invocation_id, intent_event_id, actor_ref} +
	    {credential:$c, reason:"the store refused the write", constituent_code:"E_STORE"}' <<<"$1"
}

yield_req() { jq -c --arg c "${2:-$ALICE}" '{kind, act_key, invocation_id, actor_ref} + {credential:$c}' <<<"$1"; }

holder() {
	jsql "SELECT coalesce(holder, '') FROM leases WHERE kind = '${2:-ledger}' AND act_key = '$1'"
}

field() { jq -r --arg f "$1" 'if has($f) then .[$f] else empty end' <<<"$output" 2>/dev/null; }

state_of() {
	ri-read <<<"{\"kind\":\"ledger\",\"act_key\":\"$1\",\"invocation_id\":\"$2\"}" 2>/dev/null |
	    jq -r '.invocations[0].state'
}

# refusals [KIND] -- the start-refused records (ri-findings lines), as an array
refusals() {
	ri-findings | jq -s -c --arg k "${1:-}" \
	    '[.[] | select(.finding == "start-refused" and (if $k == "" then true else .kind == $k end))]'
}

wait_for() {
	local i
	for i in $(seq 1 200); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	echo "timed out waiting for $1"
	return 1
}

ms() { date +%s%3N; }

# ---- close 1, Check 2: Close and Refuse are the intent's actor's --------------

@test "close 1, Check 2 (scenario 1): bob's ri-close on alice's open invocation, his own credential, forged data -> 21 cause actor, nothing written, her section held; claiming to be alice -> 21 cause invalid-credential; her own close then lands her true outcome (0)" {
	instance
	opened k '{"pairing_datum":"pd-k"}'
	n=$(records)
	forged=$(as bob "$BOB" "$(close_req "$A" '{"disclosure_id":"forged"}')")
	run --separate-stderr ri-close <<<"$forged"
	[ "$status" -eq 21 ]
	[ "$(field refused)/$(field position)/$(field cause)" = recording-failure/outcome/actor ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k)" = "$INV" ]
	run --separate-stderr ri-close <<<"$(as alice "$BOB" "$(close_req "$A" '{"disclosure_id":"forged"}')")"
	[ "$status" -eq 21 ]
	[ "$(field cause)" = invalid-credential ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k)" = "$INV" ]
	run --separate-stderr ri-close <<<"$(close_req "$A" '{"disclosure_id":"true"}')"
	[ "$status" -eq 0 ]
	[ "$(field landed_by)" = invocation ]
	[ "$(records "action_ref = 'ledger.disclosed' AND actor_ref = 'alice'
	    AND $(payload_at data.disclosure_id) = 'true'")" -eq 1 ]
	[ "$(records "actor_ref = 'bob'")" -eq 0 ]
	run ri-audit
	[ "$status" -eq 0 ]
}

@test "close 1, Check 2 (scenario 2): bob's ri-refuse while alice's ri-run job runs -> 22 cause actor with constituent_code, nothing written; her job commits and her ri-run closes the act (0), state closed" {
	instance
	export RI_CREDENTIAL=$ALICE
	ri-run --answer "$T/run.out" --kind ledger --act-key k --actor alice -- sh -c 'touch "$0/started"
	    while [ ! -e "$0/go" ]; do sleep 0.05; done
	    exec ledger-disclose --store "$0/ledger.db" --subject k --recipient r --scope s' "$T" \
	    >/dev/null 2>"$T/run.err" 3>&- &
	BG=$!
	wait_for "$T/started"
	INV=$(inv_of k)
	IEV=$(jsql "SELECT event_id FROM records WHERE invocation_id = '$INV'")
	req=$(jq -nc --arg i "$INV" --arg e "$IEV" --arg c "$BOB" '{kind:"ledger", act_key:"k",
	    invocation_id:$i, intent_event_id:$e, actor_ref:"bob", credential:$c,
	    reason:"bob says the store refused", constituent_code:"E_BOB"}')
	n=$(records)
	run --separate-stderr ri-refuse <<<"$req"
	[ "$status" -eq 22 ]
	[ "$(field position)/$(field cause)/$(field constituent_code)" = refusal/actor/E_BOB ]
	[ "$(records)" -eq "$n" ]
	[ "$(holder k)" = "$INV" ]
	touch "$T/go"
	rc=0
	wait "$BG" || rc=$?
	BG=
	[ "$rc" -eq 0 ]
	[ "$(jq -r .landed_by "$T/run.out")" = invocation ]
	[ "$(state_of k "$INV")" = closed ]
	[ "$(records "action_ref = 'ledger.refused'")" -eq 0 ]
}

@test "close 1, close step 2 (scenario 6): a made-up intent_event_id -> ri-close 21 and ri-refuse 22, cause not-known, nothing written, the live holder's section held; another invocation's intent likewise; the holder's own close lands" {
	instance
	opened k2
	other=$IEV
	opened k
	n=$(records)
	for ev in evt_00000000000000000000000000000000 "$other"; do
		run --separate-stderr ri-close <<<"$(close_req "$A" | jq -c --arg e "$ev" '.intent_event_id = $e')"
		[ "$status" -eq 21 ]
		[ "$(field cause)" = not-known ]
		run --separate-stderr ri-refuse <<<"$(refuse_req "$A" | jq -c --arg e "$ev" '.intent_event_id = $e')"
		[ "$status" -eq 22 ]
		[ "$(field cause)" = not-known ]
		[ "$(records)" -eq "$n" ]
		[ "$(holder k)" = "$INV" ]
	done
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
}

@test "close 1: the owner's own ri-refuse still lands after a stranger's was refused (0, state refused)" {
	instance
	opened k
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A" | jq -c --arg c "$BOB" '.actor_ref = "bob" | .credential = $c')"
	[ "$status" -eq 22 ]
	[ "$(field cause)" = actor ]
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A")"
	[ "$status" -eq 0 ]
	[ "$(state_of k "$INV")" = refused ]
}

# ---- close 1: Yield -------------------------------------------------------------

@test "yield 1, close 1 (scenario 3): ri-yield with only kind, act key and invocation id, or under bob's valid credential, or with a wrong one -> 10, nothing released; the owner's close still lands; the owner's own yield releases (0)" {
	instance
	opened k
	n=$(records)
	for req in "$(jq -c '{kind, act_key, invocation_id}' <<<"$A")" \
	    "$(yield_req "$A" "$BOB" | jq -c '.actor_ref = "bob"')" \
	    "$(yield_req "$A" ri1_wrong)"; do
		run --separate-stderr ri-yield <<<"$req"
		[ "$status" -eq 10 ] || { echo "$req -> $status"; false; }
		[ "$output" = '{"refused":"invalid-credential"}' ]
		[ "$(holder k)" = "$INV" ]
	done
	[ "$(records)" -eq "$n" ]
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
	opened k
	run --separate-stderr ri-yield <<<"$(yield_req "$A")"
	[ "$status" -eq 0 ]
	[ "$(holder k)" = "" ]
	# the credential from $RI_CREDENTIAL, as every command reads it
	opened k3
	run --separate-stderr env RI_CREDENTIAL="$ALICE" ri-yield <<<"$(jq -c '{kind, act_key, invocation_id, actor_ref}' <<<"$A")"
	[ "$status" -eq 0 ]
	[ "$(holder k3)" = "" ]
}

# ---- Invariant 5.4: Resolve is for humans ---------------------------------------

@test "Invariant 5.4, Term caller kind (scenario 4): the sweep's service credential at ri-resolve -> invalid-request cause caller-kind (11), nothing written, for an outcome and an abandonment alike; an actor registered --service likewise; bob resolves it (0)" {
	instance
	ri-actor add auditbot --service --credential-file "$T/auditbot.cred" >/dev/null
	opened k
	jq -c --arg c "$ALICE" '{kind, act_key, invocation_id, actor_ref} + {credential:$c}' <<<"$A" | ri-yield >/dev/null
	ri_at 40
	n=$(records)
	for who in "ledger-reconciler:$(cat "$T/reconciler.cred")" "auditbot:$(cat "$T/auditbot.cred")"; do
		for d in '{"outcome":{"outcome_action_ref":"ledger.disclosed","outcome_data":{"invented":true}}}' \
		    '{"abandoned":{"cause":"invented"}}'; do
			req=$(jq -c --arg a "${who%%:*}" --arg c "${who#*:}" --argjson d "$d" \
			    '{kind, act_key, invocation_id, intent_event_id} + {actor_ref:$a, credential:$c, disposition:$d}' <<<"$A")
			run --separate-stderr ri-resolve <<<"$req"
			[ "$status" -eq 11 ]
			[ "$output" = '{"refused":"invalid-request","cause":"caller-kind"}' ]
			[ "$(records)" -eq "$n" ]
			[ "$(holder k)" = "" ]
		done
	done
	req=$(jq -c --arg c "$BOB" '{kind, act_key, invocation_id, intent_event_id} +
	    {actor_ref:"bob", credential:$c, disposition:{abandoned:{cause:"operator: nothing in the store"}}}' <<<"$A")
	run --separate-stderr ri-resolve <<<"$req"
	[ "$status" -eq 0 ]
	run ri-audit
	[ "$status" -eq 0 ]
}

@test "Invariant 5.4, Check 5.1: ri-audit reports a closing whose resolved_by names a service actor (forged past ri-resolve), and passes the same act resolved by bob" {
	instance
	opened k
	forge() {
		"$RI_TOOLS/ri-forge" -c "$RI_CONFIG" --action-ref ledger.abandoned --actor "$1" \
		    --credential-file "$2" --data "$(jq -nc --arg i "$INV" --arg e "$IEV" --arg r "$1" \
		    '{invocation_id:$i, intent_event_id:$e, kind:"ledger", act_key:"k", recovery:true,
		      resolved_by:$r, acting_actor_ref:"alice", cause:"invented"}')" | jq -re .event_id
	}
	ev=$(forge ledger-reconciler "$T/reconciler.cred")
	run --separate-stderr ri-audit
	[ "$status" -eq 1 ]
	jq -e --arg ev "$ev" '.checks[] | select(.check == "5.1") | .status == "fail" and
	    any(.failures[]; (.event_ids | index($ev)) and (.message | contains("Resolve is for human operators")))' \
	    <<<"$output" >/dev/null
	# the same shape under a human operator is not reported
	rm -rf "$T"
	instance
	opened k
	printf '%s' "$BOB" >"$T/bob.cred"
	chmod 600 "$T/bob.cred"
	forge bob "$T/bob.cred" >/dev/null
	run --separate-stderr ri-audit
	jq -e '.checks[] | select(.check == "5.1") | .status == "pass"' <<<"$output" >/dev/null
}

# ---- Sweep never 2; reconcile steps 3.18-3.19 ------------------------------------

@test "Sweep never 2 (scenario 5): a human named as the kind's service_identity -> the sweep writes nothing for the kind (its act unreached), surfaces service-credential-refused at once; ri-startcheck agrees; the service actor back, the next run closes the act" {
	instance
	ri-actor add carol --credential-file "$T/carol.cred" >/dev/null     # a human
	orphan k
	ri_cfg '.kinds.ledger.service_identity = {"actor_ref":"carol","credential_file":"carol.cred"}'
	run ri-startcheck
	[ "$status" -eq 1 ]
	grep -q "carol is registered as a human" <<<"$output"
	ri_at 33
	n=$(act_records)
	sweep_any
	[ "$(t unreached)" -eq 1 ]
	[ "$(t examined)" -eq 0 ]
	assert_degraded
	[ "$(act_records)" -eq "$n" ]
	[ "$(records "actor_ref = 'carol'")" -eq 0 ]
	ri-findings | jq -se '[.[] | select(.finding == "service-credential-refused" and .kind == "ledger"
	    and (.closed | not) and (.detail.why | contains("registered as a human")))] | length == 1' >/dev/null
	ri_cfg '.kinds.ledger.service_identity = {"actor_ref":"ledger-reconciler","credential_file":"reconciler.cred"}'
	sweep
	[ "$(t closed)" -eq 1 ]
	[ "$(t unreached)" -eq 0 ]
	[ "$(state_of k "$INV")" = closed ]
}

@test "reconcile steps 3.18-3.19, Term unreached (issue 16 item 1): kind ledger's service identity revoked, kind ledger2 holding its own -> ledger2's orphan closed, ledger's unreached, only ledger's identity surfaced; the run still seals, and purges" {
	instance
	ri-actor add ledger2-reconciler --service --credential-file "$T/reconciler2.cred" >/dev/null
	ri_cfg '.kinds.ledger2 = .kinds.ledger |
	    .kinds.ledger2.service_identity = {"actor_ref":"ledger2-reconciler","credential_file":"reconciler2.cred"}'
	orphan old ledger2
	ri_at 33
	sweep                                   # old closed under ledger2's identity
	[ "$(t closed)" -eq 1 ]
	ri-actor revoke ledger-reconciler >/dev/null
	ri_at $((400 * 86400 + 100))            # old's records are past their retention
	orphan a
	orphan b ledger2
	ri_at $((400 * 86400 + 140))
	sweep_degraded
	[ "$(t closed)" -eq 1 ]
	[ "$(t unreached)" -eq 1 ]
	[ "$(t examined)" -eq 1 ]
	[ "$(state_of a "$(inv_of a)")" = open ]
	[ "$(records "kind = 'ledger2' AND act_key = 'b' AND action_ref = 'ledger2.disclosed'")" -eq 1 ]
	[ "$(jq -r .purged <<<"$TALLY")" -ge 1 ]
	[ "$(jq -r .sealed_seq <<<"$TALLY")" -ge 1 ]
	f=$(ri-findings | jq -sc '[.[] | select(.finding == "service-credential-refused")]')
	[ "$(jq -r 'map(.kind) | join(",")' <<<"$f")" = ledger ]
}

@test "Sweep never 2, Instance start 3 (scenario 10): a world-readable service credential file, or a FIFO in its place, refuses that kind's identity at once (unreached), never blocks the run" {
	instance
	orphan k
	ri_at 33
	chmod 644 "$T/reconciler.cred"
	run --separate-stderr timeout 20 ri-sweep
	[ "$status" -eq 2 ]
	TALLY=$output
	[ "$(t unreached)" -eq 1 ]
	grep -q "group- or world-accessible" <<<"$stderr"
	mv "$T/reconciler.cred" "$T/reconciler.keep"
	mkfifo -m 600 "$T/reconciler.cred"
	start=$(ms)
	run --separate-stderr timeout 20 ri-sweep
	[ "$status" -eq 2 ]                     # degraded: the identity refused
	[ $(( $(ms) - start )) -lt 10000 ]
	TALLY=$output
	[ "$(t unreached)" -eq 1 ]
	rm "$T/reconciler.cred"
	mv "$T/reconciler.keep" "$T/reconciler.cred"
	chmod 600 "$T/reconciler.cred"
	sweep
	[ "$(t closed)" -eq 1 ]
}

# ---- Action wiring 1, Invariant 8: post-commit answers carry their position --------

@test "Action wiring 1, Invariant 8.4 (scenario 9): after the commit ri-close answers 21 (never 78, 65 or 64) -- config changed so a condition fails, config unreadable, a malformed outcome_data, an unknown flag, a stray argument -- each with a cause; ri-refuse likewise 22; --help and --version 0; the owner's close lands once the config is back" {
	instance
	opened k
	cp "$RI_CONFIG" "$T/ri.good"
	check() {                               # STATUS POSITION CAUSE
		[ "$status" -eq "$1" ] || { echo "exit $status, not $1: $output ${stderr:-}"; return 1; }
		[ "$(field refused)/$(field position)/$(field cause)" = "recording-failure/$2/$3" ] ||
		    { echo "answer: $output"; return 1; }
	}
	ri_cfg '.instance.closure_latency = "5s"'          # condition 5 fails
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	check 21 outcome config
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A")"
	check 22 refusal config
	[ "$(field constituent_code)" = "" ]                # the request was never read
	echo '{ not json' >"$RI_CONFIG"
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	check 21 outcome config
	run --separate-stderr ri-close -c "$T/nonexistent.json" <<<"$(close_req "$A")"
	check 21 outcome config
	cp "$T/ri.good" "$RI_CONFIG"
	run --separate-stderr ri-close <<<"$(close_req "$A" | jq -c '.outcome_data = "text"')"
	check 21 outcome malformed
	run --separate-stderr ri-close <<<'not json'
	check 21 outcome malformed
	run --separate-stderr ri-close --colour blue <<<"$(close_req "$A")"
	check 21 outcome usage
	run --separate-stderr ri-close stray <<<"$(close_req "$A")"
	check 21 outcome usage
	run --separate-stderr ri-close --kind other - <<<"$(close_req "$A")"
	check 21 outcome usage
	run --separate-stderr ri-refuse <<<"$(refuse_req "$A" | jq -c 'del(.reason)')"
	check 22 refusal malformed
	[ "$(field constituent_code)" = E_STORE ]
	run --separate-stderr ri-refuse --colour blue <<<"$(refuse_req "$A")"
	check 22 refusal usage
	run ri-close --help
	[ "$status" -eq 0 ]
	run ri-refuse --version
	[ "$status" -eq 0 ]
	# other commands keep 64/65/78
	run --separate-stderr ri-open --colour blue
	[ "$status" -eq 64 ]
	[ "$(holder k)" = "$INV" ]
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
}

# ---- Instance start 3, Binding 2-3: the writers' start gate -----------------------

@test "Instance start 3 (scenario 10): a mode-0666 seal key refuses every writer (78, naming it; ri-close 21 cause config), recorded once as start-refused (seal-key); 0600 again, the writers run and the next sweep closes the record" {
	instance
	opened k
	chmod 666 "$T/seal.key"
	n=$(records)
	for i in 1 2; do
		run --separate-stderr ri-open <<<"$(open_req "k$i")"
		[ "$status" -eq 78 ]
		grep -q "seal.key: mode 666 is wider than group read (0640)" <<<"$stderr"
	done
	run --separate-stderr ri-sweep
	[ "$status" -eq 78 ]
	run --separate-stderr env RI_CREDENTIAL="$ALICE" ri-run --kind ledger --act-key r --actor alice -- true
	[ "$status" -eq 78 ]
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 21 ]
	[ "$(field cause)" = config ]
	# nor does ri-seal sign with it
	run --separate-stderr ri-seal
	[ "$status" -eq 78 ]
	grep -q "seal.key: mode 666" <<<"$stderr"
	[ "$(records)" -eq "$n" ]
	[ "$(holder k)" = "$INV" ]
	r=$(refusals)
	[ "$(jq length <<<"$r")" -eq 1 ]
	[ "$(jq -r '.[0].kind' <<<"$r")" = null ]
	[ "$(jq -r '.[0].detail.causes | keys | join(",")' <<<"$r")" = seal-key ]
	chmod 600 "$T/seal.key"
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
	sweep
	[ "$(refusals | jq '[.[] | select(.closed | not)] | length')" -eq 0 ]
}

@test "Instance start 3 (scenario 10): a FIFO as the integrity key or as \$RI_CREDENTIAL_FILE never blocks a writer: 78 at once, naming it; a group-readable credential file is refused the same way; each cause recorded once" {
	instance
	mv "$T/journal.key" "$T/journal.keep"
	mkfifo -m 600 "$T/journal.key"
	start=$(ms)
	run --separate-stderr timeout 20 ri-open <<<"$(open_req k)"
	[ "$status" -eq 78 ]
	grep -q "journal.key: not a regular file" <<<"$stderr"
	[ $(( $(ms) - start )) -lt 10000 ]
	rm "$T/journal.key"
	mv "$T/journal.keep" "$T/journal.key"
	mkfifo -m 600 "$T/alice.fifo"
	start=$(ms)
	run --separate-stderr timeout 20 env RI_CREDENTIAL_FILE="$T/alice.fifo" ri-open <<<"$(open_req k | jq -c 'del(.credential)')"
	[ "$status" -eq 78 ]
	[ $(( $(ms) - start )) -lt 10000 ]
	printf '%s\n' "$ALICE" >"$T/alice.cred"
	chmod 640 "$T/alice.cred"
	run --separate-stderr env RI_CREDENTIAL_FILE="$T/alice.cred" ri-open <<<"$(open_req k | jq -c 'del(.credential)')"
	[ "$status" -eq 78 ]
	grep -q "alice.cred: mode 640" <<<"$stderr"
	[ "$(jq -r '[.[].detail.causes | keys[]] | sort | join(",")' <<<"$(refusals)")" = credential-file,integrity-key ]
	# the key's refusal was recorded where no key could be read: shown
	# unverified, its own row, never merged into a MACed one
	[ "$(jq -r '[.[] | select(.detail.causes["integrity-key"]) | .verified] | join(",")' <<<"$(refusals)")" = false ]
	chmod 600 "$T/alice.cred"
	run --separate-stderr env RI_CREDENTIAL_FILE="$T/alice.cred" ri-open <<<"$(open_req k | jq -c 'del(.credential)')"
	[ "$status" -eq 0 ]
}

@test "Instance start 3, Binding 3: refusals met where the integrity key cannot be read are recorded once per cause, unauthenticated -- ri-findings still 0 and ri-audit still clean (8.1.3 notes them) once the key is back; a MAC-less row of any other finding still fails both" {
	instance
	mv "$T/journal.key" "$T/journal.keep"
	for _ in 1 2 3; do
		run --separate-stderr ri-open <<<"$(open_req k)"
		[ "$status" -eq 78 ]
	done
	mv "$T/journal.keep" "$T/journal.key"
	# one row, not one per attempt, and it carries no MAC at all
	[ "$(sqlite3 "$T/findings.db" "SELECT count(*) FROM findings WHERE finding = 'start-refused' AND mac IS NULL")" -eq 1 ]
	run --separate-stderr ri-findings
	[ "$status" -eq 0 ] || { echo "ri-findings $status: $stderr"; false; }
	jq -se 'any(.[]; .finding == "start-refused" and (.verified | not))' <<<"$output" >/dev/null
	run --separate-stderr ri-audit
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	jq -e '.checks[] | select(.check == "8.1.3") | .notes | keys[] | test("could not be read")' <<<"$output" >/dev/null
	# keyed again, the next refusal starts its own MACed row
	chmod 660 "$T/seal.key"                 # (0640 is a key shared with its group: issue 44)
	run --separate-stderr ri-open <<<"$(open_req k)"
	[ "$status" -eq 78 ]
	chmod 600 "$T/seal.key"
	[ "$(sqlite3 "$T/findings.db" "SELECT count(*) FROM findings WHERE finding = 'start-refused' AND mac IS NOT NULL")" -eq 1 ]
	# the leniency is the keyless refusal's alone: a MAC-less row of any
	# other finding is tamper (issue 11 attack 5)
	sqlite3 "$T/findings.db" "INSERT INTO findings(finding, scope, first_seen, first_seen_at, run_id)
	    VALUES ('journal-unavailable', 'instance', 'run_forged', 0, 'run_forged')"
	run --separate-stderr ri-findings
	[ "$status" -eq 30 ]
	run --separate-stderr ri-audit
	[ "$status" -eq 1 ]
}

@test "Instance start 3: a key file owned by another user refuses the writer (78, naming the owner)" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to give the key to another user"
	instance
	chown 65534 "$T/seal.key"
	run --separate-stderr ri-open <<<"$(open_req k)"
	[ "$status" -eq 78 ]
	grep -q "seal.key: owned by uid 65534, not by the caller" <<<"$stderr"
	chown 0 "$T/seal.key"
	run --separate-stderr ri-open <<<"$(open_req k)"
	[ "$status" -eq 0 ]
}

@test "Binding 2-3 (scenario 11): under a config that unbinds a kind with open intents ri-open, ri-run and ri-yield refuse (78), ri-close 21 cause config; the refusal is recorded once, with the kind and its reason; bound again, the owner's close lands" {
	instance
	ri_cfg '.kinds.ledger2 = .kinds.ledger'
	A2=$(open_req g | jq -c '.kind = "ledger2"' | ri-open)
	opened k
	ri_cfg 'del(.kinds.ledger2)'
	n=$(records)
	run --separate-stderr ri-open <<<"$(open_req k2)"
	[ "$status" -eq 78 ]
	grep -q "kind ledger2 is not bound but has open intents" <<<"$stderr"
	run --separate-stderr ri-open <<<"$(open_req k3)"
	[ "$status" -eq 78 ]
	run --separate-stderr env RI_CREDENTIAL="$ALICE" ri-run --kind ledger --act-key r --actor alice -- true
	[ "$status" -eq 78 ]
	run --separate-stderr ri-yield <<<"$(yield_req "$A")"
	[ "$status" -eq 78 ]
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 21 ]
	[ "$(field cause)" = config ]
	[ "$(records)" -eq "$n" ]
	r=$(refusals ledger2)
	[ "$(jq length <<<"$r")" -eq 1 ]
	[ "$(jq -r '.[0].detail.causes.binding.rule' <<<"$r")" = "Binding 2-3" ]
	ri_cfg '.kinds.ledger2 = .kinds.ledger'
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ] || { echo "$output $stderr"; false; }
	run --separate-stderr ri-close <<<"$(close_req "$A2" | jq -c '.outcome_action_ref = "ledger2.disclosed"')"
	[ "$status" -eq 0 ]
	# closed: unbinding it is no longer refused
	ri_cfg 'del(.kinds.ledger2)'
	run --separate-stderr ri-open <<<"$(open_req k2)"
	[ "$status" -eq 0 ]
}

# ---- act section 11: lease waits capped --------------------------------------------

# lease_ahead KEY MS -- the act's lease row edited to expire MS ahead of the
# env clock, as a hostile colleague with file access but no key would: the
# row fails its MAC (an integrity failure, never a wait)
lease_ahead() {
	sqlite3 "$T/journal.db" "UPDATE leases SET expires_at = $RI_NOW + $2 WHERE kind = 'ledger' AND act_key = '$1'"
}

# opened_ahead KEY SECS -- alice's ri-open from a host whose clock runs SECS
# ahead: a validly MACed lease row that expires SECS past this host's now
# (the env clock back at 0 after it)
opened_ahead() {
	ri_at "$2"
	opened "$1"
	ri_at 0
}

@test "act section 11 (scenario 7): a lease row that expires in ten days -- validly MACed by a host whose clock ran ahead -- is an integrity failure at once, never a wait: ri-open 15, ri-resolve 23, each cause integrity; nothing written; the owner's own close lands" {
	instance
	opened_ahead k $((10 * 86400))
	n=$(records)
	start=$(ms)
	run --separate-stderr timeout 10 ri-open <<<"$(open_req k)"
	[ "$status" -eq 15 ]
	[ "$output" = '{"refused":"journal-unavailable","cause":"integrity"}' ]
	grep -q "beyond the longest lease this config grants" <<<"$stderr"
	[ "$(records)" -eq "$n" ]
	run --separate-stderr timeout 10 ri-resolve <<<"$(jq -c --arg c "$BOB" '{kind, act_key, invocation_id, intent_event_id} +
	    {actor_ref:"bob", credential:$c, disposition:{abandoned:{cause:"quiet"}}}' <<<"$A")"
	[ "$status" -eq 23 ]
	[ "$(field position)/$(field cause)" = resolution/integrity ]
	[ "$(records)" -eq "$n" ]
	[ $(( $(ms) - start )) -lt 20000 ]
	# the owner's host, its own clock: the owner's section, the owner's close
	ri_at $((10 * 86400 + 1))
	run --separate-stderr ri-close <<<"$(close_req "$A")"
	[ "$status" -eq 0 ]
}

@test "act section 11 (scenario 7), the integrity issue: the row edited by a keyless writer fails its MAC -- ri-open 15, ri-sweep 15 with the act skipped (twice: its run lock is free again at once), ri-resolve 23, each cause integrity, never a wait; nothing written" {
	instance
	opened k
	lease_ahead k $((10 * 86400 * 1000))
	n=$(records)
	start=$(ms)
	run --separate-stderr timeout 10 ri-open <<<"$(open_req k)"
	[ "$status" -eq 15 ]
	[ "$output" = '{"refused":"journal-unavailable","cause":"integrity"}' ]
	grep -q "MAC" <<<"$stderr"
	[ "$(records)" -eq "$n" ]
	ri_at 33
	for i in 1 2; do
		run --separate-stderr timeout 10 ri-sweep
		[ "$status" -eq 15 ]
		[ "$(field refused)/$(field cause)" = journal-unavailable/integrity ]
		[ "$(jq -r .skipped <<<"$output")" -eq 1 ]
	done
	[ "$(records "action_ref LIKE 'ledger.%' AND action_ref <> 'ledger.intended'")" -eq 0 ]
	run --separate-stderr timeout 10 ri-resolve <<<"$(jq -c --arg c "$BOB" '{kind, act_key, invocation_id, intent_event_id} +
	    {actor_ref:"bob", credential:$c, disposition:{abandoned:{cause:"quiet"}}}' <<<"$A")"
	[ "$status" -eq 23 ]
	[ "$(field position)/$(field cause)" = resolution/integrity ]
	[ $(( $(ms) - start )) -lt 20000 ]
}

@test "act section 11: the cap is the longest lease this config grants plus the allowance (fast: 3 s + 100 ms): a row exactly that far ahead is waited out, then 14; 1 ms further is 15 cause integrity at once" {
	instance fast
	# the holder's lease (3 s) taken on a clock 100 ms ahead: its row
	# expires 3100 ms past this host's now
	opened_ahead k 0.1
	start=$(ms)
	run --separate-stderr ri-open <<<"$(open_req k)"
	[ "$status" -eq 14 ]
	[ $(( $(ms) - start )) -ge 3000 ]
	ri_at -0.001
	start=$(ms)
	run --separate-stderr ri-open <<<"$(open_req k)"
	[ "$status" -eq 15 ]
	[ "$(field cause)" = integrity ]
	[ $(( $(ms) - start )) -lt 2500 ]
}

# ---- ri-run(1): the job dies with ri-run ---------------------------------------------

@test "ri-run(1) (scenario 8): SIGKILL of ri-run mid-job kills the job's whole process group at once -- the job's next action, and a background child's, never happen; the intent stays open for the sweep" {
	instance
	export RI_CREDENTIAL=$ALICE
	ri-run --kind ledger --act-key k --actor alice -- sh -c 'echo $$ >"$0/pgid"
	    (sleep 2; touch "$0/child-after") &
	    touch "$0/started"; sleep 2; touch "$0/after"' "$T" >/dev/null 2>&1 3>&- &
	pid=$!
	wait_for "$T/started"
	JOBPG=$(cat "$T/pgid")
	kill -0 -- "-$JOBPG"                    # the job's group is alive
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null || true
	for i in $(seq 1 40); do
		kill -0 -- "-$JOBPG" 2>/dev/null || break
		sleep 0.05
	done
	! kill -0 -- "-$JOBPG" 2>/dev/null || false       # the group is gone within 2 s
	JOBPG=
	sleep 3
	[ ! -e "$T/after" ]
	[ ! -e "$T/child-after" ]
	[ "$(state_of k "$(inv_of k)")" = open ]
}

@test "ri-run(1): the job inherits no descriptor beyond stdin, stdout, stderr and its outcome descriptor 3 -- not the outcome pipe's spare end, not the journal's, not one ri-run itself inherited (fd 9); a normal run leaves no watchdog behind" {
	instance
	export RI_CREDENTIAL=$ALICE
	ri-run --kind ledger --act-key k --actor alice -- \
	    sh -c 'echo $$ >"$0/pid.tmp"; mv "$0/pid.tmp" "$0/pid"; exec sleep 2' "$T" \
	    >"$T/run.out" 9>"$T/extra" 3>&- &
	BG=$!
	wait_for "$T/pid"
	[ "$(ls /proc/"$(cat "$T/pid")"/fd | sort -n | tr '\n' ' ')" = "0 1 2 3 " ]
	# fd 3 is the outcome pipe, not anything ri-run inherited
	[[ "$(readlink /proc/"$(cat "$T/pid")"/fd/3)" == pipe:* ]]
	# ri-run itself did inherit fd 9
	[ -e "/proc/$BG/fd/9" ]
	rc=0
	wait "$BG" || rc=$?
	BG=
	[ "$rc" -eq 0 ]
	# no process of ri-run's (the watchdog) outlives it
	! pgrep -f "ri-run --kind ledger --act-key k --actor alice -- sh -c echo" >/dev/null
}
