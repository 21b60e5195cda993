#!/usr/bin/env bats
# schemas.bats -- schemas/*.json against what the commands really print.
#
# Every command is driven into each answer shape that is cheap to reach
# (success, the main refusals, alerts), and each real stdout is validated
# against its schema with python3-jsonschema (draft 2020-12, the $refs into
# common.json resolved through tests/lib/validate.py).  Every answer is also
# shown to be closed: the same object with one unlisted field is rejected.
# The configs (the one ri_instance writes, the INTERFACE.md example) must
# validate against config.json, and invalid configs must be rejected by the
# schema and by ri-startcheck (78) alike.
#
# Without python3-jsonschema every test skips, saying so -- nothing passes
# unchecked.
#
# test-pg: no -- the shapes of what the commands print, built above the store

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"
load "$BATS_TEST_DIRNAME/lib/sweep"

SCHEMAS=$(cd "$BATS_TEST_DIRNAME/../schemas" && pwd)
VALIDATE=$BATS_TEST_DIRNAME/lib/validate.py

setup() {
	if ! python3 -c 'import jsonschema; from jsonschema import Draft202012Validator' 2>/dev/null; then
		skip "python3-jsonschema with draft 2020-12 (jsonschema >= 4.0) is not installed (apt-get install python3-jsonschema): the schemas cannot be checked"
	fi
	ri_instance
	export RI_CREDENTIAL=$ALICE
	ledger-admin --store "$T/ledger.db" init >/dev/null
	BG=
	# one validator for the whole test (vpy, below)
	VSERVE=$T/vserve
	mkdir "$VSERVE" && mkfifo "$VSERVE/req" "$VSERVE/ans" || return 1
	python3 "$VALIDATE" --serve "$VSERVE/req" "$VSERVE/ans" </dev/null 3>&- &
	VPID=$!
}

teardown() {
	if [ -n "${BG:-}" ]; then
		kill "$BG" 2>/dev/null || true
		wait "$BG" 2>/dev/null || true
	fi
	if [ -n "${VPID:-}" ]; then
		kill "$VPID" 2>/dev/null || true
		wait "$VPID" 2>/dev/null || true
	fi
	if [ -n "${T:-}" ]; then
		chmod -R u+rwX "$T" 2>/dev/null || true
		rm -rf "$T"
	fi
}

# ---- helpers ----------------------------------------------------------------

# vpy [--invalid | --closed] SCHEMA -- validate.py over stdin, its exit
# code and its reasons, asked of the test's validator server (setup): one
# python a test, where a python a call cost ~0.5 s of CPU (its start and
# jsonschema's import) -- most of this suite's time under make test.  The
# requests are files and FIFOs, so a pipeline's subshell may ask too; one at
# a time (flock)
vpy() {
	local mode=- doc rc
	case $1 in --invalid|--closed) mode=$1; shift ;; esac
	kill -0 "$VPID" 2>/dev/null || { echo "vpy: the validator server is gone" >&2; return 2; }
	doc=$(mktemp "$VSERVE/doc.XXXXXX") || return 2
	cat >"$doc"
	# both FIFOs opened read-write, which never blocks: a server gone
	# mid-request leaves the read to time out (exit 2), never a hang; the
	# request's end stays open until the answer, so its line is not lost
	rc=$( (
		flock 9
		exec 7<>"$VSERVE/req" 8<>"$VSERVE/ans"
		printf '%s\t%s\t%s\n' "$mode" "$1" "$doc" >&7
		read -r -t 60 -u 8 a || a=2
		echo "${a:-2}"
	) 9>"$VSERVE/lock")
	cat "$doc.err" >&2 2>/dev/null
	rm -f "$doc" "$doc.err"
	return "${rc:-2}"
}

# valid SCHEMA [DOC...] -- each DOC (else stdin, JSON lines) is valid against
# schemas/SCHEMA.json; the validator prints why not
valid() {
	local schema=$SCHEMAS/$1.json
	shift
	if [ $# -gt 0 ]; then
		printf '%s\n' "$@" | vpy "$schema"
	else
		vpy "$schema"
	fi
}

# invalid SCHEMA [DOC...] -- each DOC (else stdin) is rejected by the schema
invalid() {
	local schema=$SCHEMAS/$1.json
	shift
	if [ $# -gt 0 ]; then
		printf '%s\n' "$@" | vpy --invalid "$schema"
	else
		vpy --invalid "$schema"
	fi
}

# answers SCHEMA STATUS [JQ-CONDITION] -- after `run --separate-stderr CMD`:
# the exit status is STATUS (- for any), stdout is exactly one JSON object
# for which JQ-CONDITION holds, valid against schemas/SCHEMA.json, and the
# schema is closed: the object plus an unlisted field is rejected.  Leaves
# the object in $ANS.
answers() {
	local schema=$1 want=$2 cond=${3:-true}
	if [ "$want" != - ] && [ "$status" -ne "$want" ]; then
		echo "exit $status, expected $want; stdout: $output; stderr: ${stderr:-}"
		return 1
	fi
	if [ "${#lines[@]}" -ne 1 ]; then
		echo "expected one line on stdout, got ${#lines[@]}: $output; stderr: ${stderr:-}"
		return 1
	fi
	jq -e "type == \"object\" and ($cond)" <<<"$output" >/dev/null ||
	    { echo "does not hold: $cond -- of $output"; return 1; }
	printf '%s\n' "$output" | vpy --closed "$SCHEMAS/$schema.json" ||
	    { echo "not valid against $schema.json, or not closed: $output"; return 1; }
	ANS=$output
}

# each_line SCHEMA [JQ-CONDITION] -- after `run --separate-stderr CMD` (exit
# 0): at least one line, every line a JSON object valid against the schema
each_line() {
	local schema=$1 cond=${2:-true}
	[ "$status" -eq 0 ] || { echo "exit $status: $output ${stderr:-}"; return 1; }
	[ "${#lines[@]}" -ge 1 ] || { echo "no lines"; return 1; }
	valid "$schema" <<<"$output" || return 1
	jq -se "all(.[]; $cond)" <<<"$output" >/dev/null || { echo "does not hold of every line: $cond"; return 1; }
}

partition='(.closed + .abandoned + .escalated + .reported + .skipped + .closed_already) == .examined'

inv_req() {
	jq -c '{kind, act_key, invocation_id, intent_event_id, actor_ref}' <<<"$1"
}
refuse_req() {
	jq -c --argjson cc "${2:-3}" '{kind, act_key, invocation_id, intent_event_id, actor_ref} +
	    {reason: "the store said no", constituent_code: $cc}' <<<"$1"
}
resolve_req() {
	jq -c --argjson d "$2" '{kind, act_key, invocation_id, intent_event_id, actor_ref} +
	    {disposition: $d}' <<<"$1"
}

# flip_mac SEQ -- XOR the first byte of record SEQ's MAC, as an attacker with
# file access would (the append-only triggers dropped first, and put back)
flip_mac() {
	local hex first
	hex=$(sqlite3 "$T/journal.db" "SELECT hex(mac) FROM records WHERE seq = $1") || return 1
	[ ${#hex} -eq 64 ] || return 1
	first=$(printf '%02X' $(( 0x${hex:0:2} ^ 0x01 )))
	attacker_sql "UPDATE records SET mac = X'$first${hex:2}' WHERE seq = $1;"
}
seq_of() {
	jsql "SELECT seq FROM records WHERE act_key = '$1' AND action_ref = '${2:-ledger.intended}'"
}
# tamper_heads -- the journal's authenticated heads no longer verify
tamper_heads() {
	sqlite3 "$T/journal.db" "UPDATE heads SET mac = zeroblob(32)"
}
journal_away() { mv "$T/journal.db" "$T/journal.away"; }
journal_back() { mv "$T/journal.away" "$T/journal.db"; }

# orphan KEY [POINT] -- ri-run killed at run.POINT (default after_act)
orphan() { killed_run "${2:-after_act}" "$1"; }

wait_for() {
	local i
	for i in $(seq 1 200); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	echo "timed out waiting for $1"
	return 1
}

# ---- the schemas themselves -------------------------------------------------

@test "every schema passes the draft 2020-12 metaschema, names itself in \$id, resolves its \$refs, describes every property, and is listed in schemas/README.md" {
	run python3 "$VALIDATE" --check-schemas "$SCHEMAS"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	n=0
	for f in "$SCHEMAS"/*.json; do
		b=${f##*/}
		[ "$(jq -r '."$schema"' "$f")" = https://json-schema.org/draft/2020-12/schema ]
		[ "$(jq -r '."$id"' "$f")" = "https://ri.invalid/schemas/$b" ] || { echo "$b: \$id"; false; }
		jq -e '(.title | type == "string") and (.description | type == "string")' "$f" >/dev/null ||
		    { echo "$b: no title or description"; false; }
		undescribed=$(jq -c '[.. | objects
		    | select(.type? == "object" and (.properties? | type) == "object")
		    | .properties | to_entries[] | select(.value | type == "object" and (has("description") | not)) | .key]' "$f")
		[ "$undescribed" = '[]' ] || { echo "$b: properties without a description: $undescribed"; false; }
		grep -qF "\`$b\`" "$SCHEMAS/README.md" || { echo "$b is not in schemas/README.md"; false; }
		n=$((n + 1))
	done
	[ "$n" -ge 26 ]
}

@test "the validator is not vacuous: a broken \$ref, empty input and a wrong shape all fail -- alone and through the test's validator server (vpy)" {
	mkdir "$T/sch"
	cp "$SCHEMAS"/*.json "$T/sch/"
	jq '.properties.kind["$ref"] = "common.json#/$defs/no-such-def"' "$SCHEMAS/ri-read.request.json" \
	    >"$T/sch/ri-read.request.json"
	run python3 "$VALIDATE" --check-schemas "$T/sch"
	[ "$status" -eq 1 ]
	run python3 "$VALIDATE" "$SCHEMAS/ri-read.request.json" </dev/null
	[ "$status" -eq 1 ]
	invalid ri-read.request '{"kind":"ledger"}' '{"kind":"ledger","act_key":"k","x":1}' '{"kind":"audit","act_key":"k"}'
	valid ri-read.request '{"kind":"ledger","act_key":"k"}'
	# the server's verdicts are the validator's: each mode fails where it must
	run vpy "$SCHEMAS/ri-read.request.json" <<<'{"kind":"ledger"}'
	[ "$status" -eq 1 ]
	[[ $output == *"'act_key' is a required property"* ]]
	run vpy --invalid "$SCHEMAS/ri-read.request.json" <<<'{"kind":"ledger","act_key":"k"}'
	[ "$status" -eq 1 ]
	run vpy --closed "$SCHEMAS/probe.answer.json" <<<'[1]'
	[ "$status" -eq 1 ]
	run vpy "$SCHEMAS/ri-read.request.json" </dev/null
	[ "$status" -eq 1 ]
	run vpy "$SCHEMAS/ri-read.request.json" <<<'not json'
	[ "$status" -eq 1 ]
	# and with the server gone, a clear 2, never a pass or a hang
	kill "$VPID"
	wait "$VPID" || true
	run vpy "$SCHEMAS/ri-read.request.json" <<<'{"kind":"ledger","act_key":"k"}'
	[ "$status" -eq 2 ]
	[[ $output == *"the validator server is gone"* ]]
}

# ---- the config -------------------------------------------------------------

@test "config.json accepts the config ri_instance writes, the INTERFACE.md example, and variants the commands accept" {
	valid config <"$RI_CONFIG"
	# INTERFACE.md, "The config (ri.json)", verbatim
	cat >"$T/interface.json" <<'JSON'
{
  "journal": "/var/lib/ri/journal.db",
  "findings": "/var/lib/ri/findings.db",
  "integrity_key_file": "/etc/ri/journal.key",
  "seal_key_file": "/etc/ri/seal.key",
  "clock": "system",
  "instance": {
    "clock_offset_allowance": "2s",
    "reconciliation_cadence": "60s",
    "run_bound": "135s",
    "closure_latency": "12s",
    "journal_write_bound": "3s",
    "read_bound": "2s",
    "compensation_window": "10m",
    "intent_candidates_cap": 16,
    "read_cap": 20,
    "reference_length_cap": 256,
    "payload_cap": 65536,
    "journal_fence": "declared"
  },
  "kinds": {
    "ledger": {
      "outcomes": ["disclosed"],
      "repeatable": true,
      "completion_bound": "30s",
      "commit_round_trip": "1s",
      "probe_round_trip": "1s",
      "retention_period": "400d",
      "commit_fence": "none",
      "pairing_datum": "nonce",
      "outcome_envelope": 4096,
      "retry_terminus": "lease",
      "probe": ["/usr/local/libexec/probe-disclosure", "--store", "/var/lib/ledger.db"],
      "service_identity": { "actor_ref": "ledger-reconciler", "credential_file": "/etc/ri/reconciler.cred" }
    }
  }
}
JSON
	valid config <"$T/interface.json"
	# what the commands accept, the schema accepts (ri-startcheck: 0 or 1, never 78)
	for f in '.kinds.ledger.service_identity = null' \
	    '.kinds.ledger.retry_terminus = {"counted": 3}' \
	    'del(.kinds.ledger.retry_terminus) | del(.instance.journal_fence)' \
	    'del(.clock) | del(.fault_injection)' \
	    '.instance.clock_offset_allowance = 0' \
	    '.instance.clock_offset_allowance = "0ms"' \
	    '.kinds.ledger.completion_bound = 30000' \
	    '.kinds.ledger.outcomes = ["disclosed", "re-sent"]' \
	    '.kinds["ledger_2-b"] = .kinds.ledger' \
	    '.kinds.ledger.commit_fence = "declared" | .kinds.ledger.pairing_datum = "now"' \
	    '.instance.journal_fence = "none" | .kinds.ledger.pairing_datum = "none"' \
	    '.instance.reference_length_cap = 8 | .instance.payload_cap = 1048576'; do
		jq "$f" "$RI_CONFIG" >"$T/ok.json"
		jq -c . "$T/ok.json" >>"$T/ok.jsonl"
		run ri-startcheck -c "$T/ok.json"
		[ "$status" -ne 78 ] || { echo "ri-startcheck refuses ($f): $output"; false; }
	done
	valid config <"$T/ok.jsonl"
	[ "$(wc -l <"$T/ok.jsonl")" -eq 12 ]
}

@test "config.json rejects invalid configs, and ri-startcheck refuses each of them (78)" {
	for f in '. + {"unknown_key": 1}' \
	    '.instance.extra = 1' \
	    '.kinds.ledger.extra = 1' \
	    'del(.journal)' \
	    '.journal = ""' \
	    'del(.instance.read_cap)' \
	    '.clock = "ntp"' \
	    '.fault_injection = "yes"' \
	    '.instance.run_bound = "135"' \
	    '.instance.run_bound = "1.5s"' \
	    '.instance.run_bound = "-5s"' \
	    '.kinds.ledger.completion_bound = 0' \
	    '.kinds.ledger.completion_bound = "0s"' \
	    '.instance.payload_cap = 100' \
	    '.instance.reference_length_cap = 4' \
	    '.instance.read_cap = 0' \
	    '.instance.journal_fence = true' \
	    '.kinds = {}' \
	    '.kinds.audit = .kinds.ledger' \
	    '.kinds["le.dger"] = .kinds.ledger' \
	    '.kinds.ledger.outcomes = []' \
	    '.kinds.ledger.outcomes = ["refused"]' \
	    '.kinds.ledger.outcomes = ["a.b"]' \
	    '.kinds.ledger.outcomes = ["disclosed", "disclosed"]' \
	    '.kinds.ledger.repeatable = "yes"' \
	    '.kinds.ledger.retry_terminus = {"counted": 0}' \
	    '.kinds.ledger.retry_terminus = "forever"' \
	    '.kinds.ledger.commit_fence = "maybe"' \
	    '.kinds.ledger.pairing_datum = "uuid"' \
	    '.kinds.ledger.outcome_envelope = 0' \
	    '.kinds.ledger.probe = []' \
	    '.kinds.ledger.probe = [""]' \
	    '.kinds.ledger.probe = "ledger-probe"' \
	    '.kinds.ledger.probe_batch = "yes"' \
	    'del(.kinds.ledger.service_identity)' \
	    '.kinds.ledger.service_identity = {"actor_ref": "ledger-reconciler"}' \
	    '.kinds.ledger.service_identity.extra = 1'; do
		jq "$f" "$RI_CONFIG" >"$T/bad.json"
		jq -c . "$T/bad.json" >>"$T/bad.jsonl"
		run --separate-stderr ri-startcheck -c "$T/bad.json" --json
		[ "$status" -eq 78 ] || { echo "ri-startcheck exits $status on: $f"; false; }
		[ -z "$output" ]
	done
	# the schema rejects every one (validate.py names any it accepts)
	invalid config <"$T/bad.jsonl"
	[ "$(wc -l <"$T/bad.jsonl")" -eq 37 ]
}

# ---- set-up tools -----------------------------------------------------------

@test "ri-init: its answer (absolute paths, a 32-hex instance id)" {
	mkdir "$T/new"
	jq '.journal = "j.db" | .findings = "f.db" | del(.["witness"]) | .integrity_key_file = "keys/k" |
	    .seal_key_file = "keys/s"' "$RI_CONFIG" >"$T/new/ri.json"
	mkdir "$T/new/keys"
	run --separate-stderr ri-init -c "$T/new/ri.json"
	answers ri-init.answer 0 ".journal == \"$T/new/j.db\" and .seal_public_key_file == \"$T/new/keys/s.pub\""
	# refusing to overwrite prints nothing on stdout
	run --separate-stderr ri-init -c "$T/new/ri.json"
	[ "$status" -eq 64 ]
	[ -z "$output" ]
}

@test "ri-actor: add (with the credential, and with --credential-file), list lines, revoke (and revoke again)" {
	run --separate-stderr ri-actor add bob
	answers ri-actor.add.answer 0 '.actor_ref == "bob" and (.credential | type) == "string"'
	run --separate-stderr ri-actor add carol --service --credential-file "$T/carol.cred"
	answers ri-actor.add.answer 0 '. == {"actor_ref": "carol"}'
	run --separate-stderr ri-actor revoke bob
	answers ri-actor.revoke.answer 0 '. == {"actor_ref": "bob", "revoked": true}'
	run --separate-stderr ri-actor revoke bob
	answers ri-actor.revoke.answer 0 '. == {"actor_ref": "bob", "revoked": true}'
	run --separate-stderr ri-actor list
	each_line ri-actor.list.line
	[ "${#lines[@]}" -eq 4 ]
	jq -se '[.[] | select(.actor_ref == "bob")][0].revoked_at | type == "string"' <<<"$output" >/dev/null
	jq -se '[.[] | select(.actor_ref == "carol")][0] | .type == "service" and .revoked_at == null' <<<"$output" >/dev/null
	# a wrong list line is rejected
	invalid ri-actor.list.line '{"actor_ref":"x","type":"robot","created_at":"2026-11-29T10:00:00.000Z","revoked_at":null}' \
	    '{"actor_ref":"x","type":"human","created_at":"2026-11-29T10:00:00Z","revoked_at":null}'
}

@test "ri-seal: its answer" {
	run --separate-stderr ri-seal
	answers ri-seal.answer 0 '.seq == .sealed_seq + 1 and .witnessed'
	# a record tampered since the previous seal: never sealed
	ri-open <<<"$(open_req sl1)" >/dev/null
	flip_mac "$(seq_of sl1)"
	run --separate-stderr ri-seal
	answers ri-seal.answer 15 '. == {"refused": "journal-unavailable", "cause": "integrity"}'
}

@test "ri-backup, ri-sweep --rebuild and ri-init --accept-restore: their answers (issue 11)" {
	run --separate-stderr ri-backup "$T/copy.db"
	answers ri-backup.answer 0 ".backup == \"$T/copy.db\" and .witnessed"
	run --separate-stderr ri-sweep --rebuild
	answers ri-sweep.answer 0 '.open_intents == 0 and .leases_reset == 0'
	o=$(ri-open <<<"$(open_req rb1)")
	ri-seal >/dev/null
	rm -f "$T"/journal.db-wal "$T"/journal.db-shm
	cp "$T/copy.db" "$T/journal.db"
	run --separate-stderr ri-sweep --rebuild
	answers ri-sweep.answer 15 '. == {"refused": "journal-unavailable", "cause": "integrity"}'
	run --separate-stderr ri-init --accept-restore --why "a drill"
	answers ri-init.answer 0 '.accepted_restore and .why == "a drill" and .lost_seq > .restored_seq'
	run --separate-stderr ri-backup "$T/copy.db"
	[ "$status" -eq 64 ]
	[ -z "$output" ]
}

# ---- requests ---------------------------------------------------------------

@test "requests: what the tests send is valid against the request schemas and accepted; an unknown field is rejected by both (65)" {
	req=$(open_req q1 '{"amount":5,"pairing_datum":"n-1"}')
	valid ri-open.request "$req"
	run --separate-stderr ri-open <<<"$req"
	answers ri-open.answer 0
	open=$ANS
	# ri-open's answer, whole, merged on: close, refuse, yield accept it
	valid ri-close.request "$(close_req "$open")" \
	    "$(jq -c '. + {outcome_action_ref: "ledger.disclosed", outcome_data: {}}' <<<"$open")" \
	    "$(jq -c '. + {outcome_action_ref: "ledger.disclosed", outcome_data: {}, alert: "x"}' <<<"$open")"
	valid ri-refuse.request "$(refuse_req "$open")" "$(jq -c '. + {reason: "r", constituent_code: "E4"}' <<<"$open")"
	valid ri-yield.request "$open" "$(jq -c '{kind, act_key, invocation_id, actor_ref}' <<<"$open")"
	# close 1: only the intent's actor yields, so the request names it
	invalid ri-yield.request "$(jq -c '{kind, act_key, invocation_id}' <<<"$open")"
	valid ri-read.request '{"kind":"ledger","act_key":"q1"}' \
	    "$(jq -c '{kind, act_key, invocation_id}' <<<"$open")"
	valid ri-resolve.request "$(resolve_req "$open" '{"abandoned":{"cause":"c"}}')" \
	    "$(resolve_req "$open" '{"escalated":{"candidates":["a","b"]}}')" \
	    "$(resolve_req "$open" '{"outcome":{"outcome_action_ref":"ledger.disclosed","outcome_data":{"x":1}}}')"
	invalid ri-resolve.request "$(resolve_req "$open" '{"abandoned":{"cause":"c"},"escalated":{"candidates":[]}}')" \
	    "$(resolve_req "$open" '{"outcome":{"outcome_action_ref":"ledger.disclosed"}}')" \
	    "$(resolve_req "$open" '{}')"
	run --separate-stderr ri-close <<<"$(jq -c '. + {outcome_action_ref: "ledger.disclosed", outcome_data: {}}' <<<"$open")"
	answers ri-close.answer 0 '.landed_by == "invocation"'
	# unknown fields: the schema and the command refuse alike
	for cmd in ri-open ri-close ri-refuse ri-yield ri-read ri-resolve; do
		case $cmd in
		ri-open) r=$req ;;
		ri-close) r=$(close_req "$open") ;;
		ri-refuse) r=$(refuse_req "$open") ;;
		ri-yield) r=$open ;;
		ri-read) r='{"kind":"ledger","act_key":"q1"}' ;;
		ri-resolve) r=$(resolve_req "$open" '{"abandoned":{"cause":"c"}}') ;;
		esac
		bad=$(jq -c '. + {"colour": "blue"}' <<<"$r")
		invalid "${cmd}.request" "$bad"
		run --separate-stderr "$cmd" <<<"$bad"
		case $cmd in
		# Action wiring 1: after the commit, on the position's arm
		ri-close) answers ri-close.answer 21 '.position == "outcome" and .cause == "malformed"' ;;
		ri-refuse) answers ri-refuse.answer 22 '.position == "refusal" and .cause == "malformed" and .constituent_code == 3' ;;
		*)
			[ "$status" -eq 65 ] || { echo "$cmd: exit $status"; false; }
			[ -z "$output" ]
			;;
		esac
	done
}

# ---- ri-open ----------------------------------------------------------------

@test "ri-open: the open result (with commit_fence_deadline when declared) and each refusal" {
	run --separate-stderr ri-open <<<"$(open_req o1)"
	answers ri-open.answer 0 'has("commit_fence_deadline") | not'
	held=$ANS
	# section-unavailable (14): the section is held (the take waits out the
	# holder's remaining lease in real time, so let little of it remain)
	ri_at 29.5
	run --separate-stderr ri-open <<<"$(open_req o1)"
	answers ri-open.answer 14 '. == {"refused": "section-unavailable"}'
	# act-in-flight (12): yielded, but the intent is in flight
	ri-yield <<<"$held" >/dev/null
	run --separate-stderr ri-open <<<"$(open_req o1)"
	answers ri-open.answer 12 ".refused == \"act-in-flight\" and .invocation_id == $(jq .invocation_id <<<"$held")"
	# invalid-credential (10)
	run --separate-stderr ri-open <<<"$(open_req o2 '{}' alice not-her-credential)"
	answers ri-open.answer 10 '. == {"refused": "invalid-credential"}'
	# invalid-request (11): each cause
	run --separate-stderr ri-open <<<"$(open_req o3 | jq -c '.kind = "nope"')"
	answers ri-open.answer 11 '. == {"refused": "invalid-request", "cause": "unbound-kind"}'
	run --separate-stderr ri-open <<<"$(open_req "$(printf 'k%.0s' $(seq 300))")"
	answers ri-open.answer 11 '. == {"refused": "invalid-request", "cause": "malformed"}'
	run --separate-stderr ri-open <<<"$(open_req o4 '{}' ledger-reconciler x)"
	answers ri-open.answer 11 '. == {"refused": "invalid-request", "cause": "service-identity"}'
	run --separate-stderr ri-open <<<"$(open_req o5 "$(jq -nc '{blob: ("x" * 70000)}')")"
	answers ri-open.answer 11 '. == {"refused": "invalid-request", "cause": "payload-cap"}'
	# recording-failure, position intent (20)
	run --separate-stderr env RI_FAULT=open.intent.before=fail ri-open <<<"$(open_req o6)"
	answers ri-open.answer 20 '. == {"refused": "recording-failure", "position": "intent"}'
	# act-landed (13): a non-repeatable act already landed
	ri_cfg '.kinds.ledger.repeatable = false'
	o=$(ri-open <<<"$(open_req o7)")
	ri-close <<<"$(close_req "$o")" >/dev/null
	run --separate-stderr ri-open <<<"$(open_req o7)"
	answers ri-open.answer 13 '.refused == "act-landed" and (.outcome_event_id | type) == "string"'
	# commit fence declared: the deadline comes with the answer
	ri_cfg '.kinds.ledger.commit_fence = "declared"'
	run --separate-stderr ri-open <<<"$(open_req o8)"
	answers ri-open.answer 0 '.commit_fence_deadline < .lease_expires_at'
}

@test "ri-open: journal-unavailable (15), plain and with cause integrity" {
	journal_away
	run --separate-stderr ri-open <<<"$(open_req j1)"
	answers ri-open.answer 15 '. == {"refused": "journal-unavailable"}'
	journal_back
	tamper_heads
	run --separate-stderr ri-open <<<"$(open_req j2)"
	answers ri-open.answer 15 '. == {"refused": "journal-unavailable", "cause": "integrity"}'
}

@test "ri-open: an aged open intent of a report-only kind -- success with an alert, surfaced as closure-at-risk by Open" {
	ri_cfg '.kinds.ledger.service_identity = null'
	first=$(ri-open <<<"$(open_req r1 '{"pairing_datum":"pd-1"}')")
	ri_at 100
	run --separate-stderr ri-open <<<"$(open_req r1 '{"pairing_datum":"pd-2"}')"
	answers ri-open.answer 0 "(.alert | contains($(jq .invocation_id <<<"$first")))"
	run --separate-stderr ri-findings
	each_line ri-findings.line '.finding == "closure-at-risk" and (.first_seen | startswith("open:"))'
}

# ---- ri-close, ri-refuse, ri-yield ------------------------------------------

@test "ri-close: the close result (plain and with an alert) and recording-failure(outcome) (plain, with an alert, with cause integrity, journal gone)" {
	o=$(ri-open <<<"$(open_req c1)")
	run --separate-stderr ri-close <<<"$(close_req "$o" '{"disclosure_id":"dsc-1"}')"
	answers ri-close.answer 0 '.landed_by == "invocation" and (has("alert") | not)'
	# the section is gone: nothing written, the record is the sweep's
	run --separate-stderr ri-close <<<"$(close_req "$o")"
	answers ri-close.answer 21 '. == {"refused": "recording-failure", "position": "outcome"}'
	# landed without its retention placement: success with a hard alert
	o=$(ri-open <<<"$(open_req c2)")
	run --separate-stderr env RI_FAULT=close.outcome.before=noretention ri-close <<<"$(close_req "$o")"
	answers ri-close.answer 0 '.landed_by == "invocation" and (.alert | length) > 0'
	# an outcome outside the vocabulary: recording-failure with an alert
	o=$(ri-open <<<"$(open_req c3)")
	run --separate-stderr ri-close <<<"$(close_req "$o" | jq -c '.outcome_action_ref = "ledger.bogus"')"
	answers ri-close.answer 21 '.refused == "recording-failure" and .position == "outcome" and (.alert | length) > 0'
	# the re-read fails verification
	o=$(ri-open <<<"$(open_req c4)")
	flip_mac "$(seq_of c4)"
	run --separate-stderr ri-close <<<"$(close_req "$o")"
	answers ri-close.answer 21 '. == {"refused": "recording-failure", "position": "outcome", "cause": "integrity"}'
	# the journal is gone
	o=$(ri-open <<<"$(open_req c5)")
	journal_away
	run --separate-stderr ri-close <<<"$(close_req "$o")"
	answers ri-close.answer 21 '. == {"refused": "recording-failure", "position": "outcome"}'
}

@test "ri-refuse: the refusal recorded (plain and with an alert), already-accounted, recording-failure(refusal) (plain, with cause integrity, journal gone)" {
	o=$(ri-open <<<"$(open_req f1)")
	run --separate-stderr ri-refuse <<<"$(refuse_req "$o" 3)"
	answers ri-refuse.answer 0 '(.refusal_event_id | type) == "string" and (has("alert") | not)'
	# the section is gone: the constituent's code is echoed
	run --separate-stderr ri-refuse <<<"$(refuse_req "$o" '"E-STALE"')"
	answers ri-refuse.answer 22 '. == {"refused": "recording-failure", "position": "refusal", "constituent_code": "E-STALE"}'
	o=$(ri-open <<<"$(open_req f2)")
	run --separate-stderr env RI_FAULT=refuse.refusal.before=noretention ri-refuse <<<"$(refuse_req "$o")"
	answers ri-refuse.answer 0 '(.alert | length) > 0'
	# Close landed and died holding the section: already-accounted
	o=$(ri-open <<<"$(open_req f3)")
	rc=0
	{ RI_FAULT=close.outcome.after=die ri-close <<<"$(close_req "$o")" >/dev/null 2>&1; } 2>/dev/null || rc=$?
	[ "$rc" -eq 137 ]
	run --separate-stderr ri-refuse <<<"$(refuse_req "$o")"
	answers ri-refuse.answer 16 '.refused == "already-accounted" and (.closing_event_id | type) == "string"'
	o=$(ri-open <<<"$(open_req f4)")
	flip_mac "$(seq_of f4)"
	run --separate-stderr ri-refuse <<<"$(refuse_req "$o" 4)"
	answers ri-refuse.answer 22 '. == {"refused": "recording-failure", "position": "refusal", "constituent_code": 4, "cause": "integrity"}'
	o=$(ri-open <<<"$(open_req f5)")
	journal_away
	run --separate-stderr ri-refuse <<<"$(refuse_req "$o" 2)"
	answers ri-refuse.answer 22 '. == {"refused": "recording-failure", "position": "refusal", "constituent_code": 2}'
}

@test "ri-yield: {\"ok\": true}, and with an alert when the release cannot be written" {
	o=$(ri-open <<<"$(open_req y1)")
	run --separate-stderr ri-yield <<<"$o"
	answers ri-yield.answer 0 '. == {"ok": true}'
	o=$(ri-open <<<"$(open_req y2)")
	journal_away
	run --separate-stderr ri-yield <<<"$(inv_req "$o")"
	answers ri-yield.answer 0 '.ok and (.alert | length) > 0'
	invalid ri-yield.answer '{"ok": false}' '{"refused": "invalid-request", "cause": "malformed"}'
}

# ---- ri-resolve -------------------------------------------------------------

@test "ri-resolve: each disposition recorded (an outcome superseding an abandonment) and each refusal" {
	# Capability requirement 9, 10: a journal read that fails verification is 23, never not-known (tamper_heads, below)
	o=$(ri-open <<<"$(open_req v1)")
	ri-yield <<<"$o" >/dev/null
	# too-young (11): still in flight by the operator's now
	run --separate-stderr ri-resolve <<<"$(resolve_req "$o" '{"abandoned":{"cause":"never ran"}}')"
	answers ri-resolve.answer 11 '. == {"refused": "invalid-request", "cause": "too-young"}'
	# not-known (17)
	run --separate-stderr ri-resolve <<<"$(resolve_req "$o" '{"abandoned":{"cause":"x"}}' | jq -c '.intent_event_id = "evt_nope"')"
	answers ri-resolve.answer 17 '. == {"refused": "not-known"}'
	# malformed, candidates-over-cap (11)
	run --separate-stderr ri-resolve <<<"$(resolve_req "$o" '{}')"
	answers ri-resolve.answer 11 '. == {"refused": "invalid-request", "cause": "malformed"}'
	run --separate-stderr ri-resolve <<<"$(resolve_req "$o" "$(jq -nc '{escalated: {candidates: [range(17) | "dsc-\(.)"]}}')")"
	answers ri-resolve.answer 11 '. == {"refused": "invalid-request", "cause": "candidates-over-cap"}'
	# invalid-credential (10)
	run --separate-stderr ri-resolve <<<"$(resolve_req "$o" '{"escalated":{"candidates":[]}}' | jq -c '.credential = "wrong"')"
	answers ri-resolve.answer 10 '. == {"refused": "invalid-credential"}'
	ri_at 300
	run --separate-stderr ri-resolve <<<"$(resolve_req "$o" '{"abandoned":{"cause":"the job never ran; ticket OPS-1"}}')"
	answers ri-resolve.answer 0 '(.closing_event_id | type) == "string"'
	# already-abandoned (11)
	run --separate-stderr ri-resolve <<<"$(resolve_req "$o" '{"escalated":{"candidates":["dsc-1"]}}')"
	answers ri-resolve.answer 11 '. == {"refused": "invalid-request", "cause": "already-abandoned"}'
	run --separate-stderr ri-resolve <<<"$(resolve_req "$o" '{"outcome":{"outcome_action_ref":"ledger.disclosed","outcome_data":{"disclosure_id":"dsc-9"}}}')"
	answers ri-resolve.answer 0
	# already-accounted (16)
	run --separate-stderr ri-resolve <<<"$(resolve_req "$o" '{"abandoned":{"cause":"x"}}')"
	answers ri-resolve.answer 16 ".refused == \"already-accounted\" and .closing_event_id == $(jq .closing_event_id <<<"$ANS")"
	# escalated
	o=$(ri-open <<<"$(open_req v2)")
	ri-yield <<<"$o" >/dev/null
	ri_at 600
	run --separate-stderr ri-resolve <<<"$(resolve_req "$o" '{"escalated":{"candidates":["dsc-a","dsc-b"]}}')"
	answers ri-resolve.answer 0
	# section-unavailable (14): an invocation holds the section (half a second left)
	o=$(ri-open <<<"$(open_req v3)")
	ri_at 629.5
	run --separate-stderr ri-resolve <<<"$(resolve_req "$o" '{"abandoned":{"cause":"x"}}')"
	answers ri-resolve.answer 14 '. == {"refused": "section-unavailable"}'
	# recording-failure(resolution) with cause integrity (23)
	o=$(ri-open <<<"$(open_req v4)")
	ri-yield <<<"$o" >/dev/null
	ri_at 900
	tamper_heads
	run --separate-stderr ri-resolve <<<"$(resolve_req "$o" '{"abandoned":{"cause":"x"}}')"
	answers ri-resolve.answer 23 '. == {"refused": "recording-failure", "position": "resolution", "cause": "integrity"}'
}

@test "issue 44 point 8: ri-resolve --probe's answers (committed, undecidable, not-committed, unavailable), and a resolution answered again" {
	orphan pc                               # the row exists: committed
	orphan pu                               # two rows carry its datum: undecidable
	pd=$(ri-read --kind ledger --act-key pu | jq -r '.invocations[0].records[0].payload.data.pairing_datum')
	ledger-admin --store "$T/ledger.db" plant --pairing-datum "$pd" >/dev/null
	orphan pn after_open                    # no row: not-committed
	ri_at 300
	for k in pc pu pn; do
		run --separate-stderr ri-resolve --probe --kind ledger --act-key "$k"
		answers ri-resolve.answer 0 '(.probe.answer | IN("committed", "undecidable", "not-committed")) and
		    (.supports | length) >= 1'
	done
	set_probe --store "$T/missing.db"
	run --separate-stderr ri-resolve --probe --kind ledger --act-key pn
	answers ri-resolve.answer 0 '.probe.answer == "unavailable" and .supports == []'
	invalid ri-resolve.answer "$(jq -c '.probe.answer = "maybe"' <<<"$ANS")" "$(jq -c 'del(.supports)' <<<"$ANS")"
	BOB=$(ri-actor add bob | jq -r .credential)
	for i in 1 2; do
		RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --invocation-id "$(inv_of pn)" --actor bob --abandon "OPS-4"
		answers ri-resolve.answer 0 '(.closing_event_id | type) == "string"'
	done
}

# ---- ri-read ----------------------------------------------------------------

@test "ri-read: reports in every state (recovered, escalated with candidates over the cap, abandoned, refused, resolved, superseded, open) and each refusal" {
	ri_cfg '.kinds.ledger.commit_fence = "declared" | .instance.intent_candidates_cap = 2'
	orphan rec                              # the row exists: recovered
	orphan aband after_open                 # no row, fence declared: abandoned
	orphan esc                              # three rows carry its datum: undecidable
	pd=$(sqlite3 "$T/journal.db" "SELECT json_extract(payload, '$.data.pairing_datum') FROM records
	    WHERE act_key = 'esc' AND action_ref = 'ledger.intended'")
	ledger-admin --store "$T/ledger.db" plant --pairing-datum "$pd" >/dev/null
	ledger-admin --store "$T/ledger.db" plant --pairing-datum "$pd" >/dev/null
	o=$(ri-open <<<"$(open_req ref)")
	ri-refuse <<<"$(refuse_req "$o")" >/dev/null
	o=$(ri-open <<<"$(open_req res)")
	ri-yield <<<"$o" >/dev/null
	ri_at 300
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 3 "$partition and .closed == 1 and .abandoned == 1 and .escalated == 2 and .needs_operator == 2"
	ri-resolve <<<"$(resolve_req "$o" '{"outcome":{"outcome_action_ref":"ledger.disclosed","outcome_data":{"disclosure_id":"dsc-op"}}}')" >/dev/null
	o=$(ri-open <<<"$(open_req open)")
	declare -A want=([rec]=closed [aband]=abandoned [esc]=escalated [ref]=refused [res]=closed [open]=open)
	for k in rec aband esc ref res open; do
		run --separate-stderr ri-read <<<"{\"kind\":\"ledger\",\"act_key\":\"$k\"}"
		answers ri-read.answer 0 ".invocations[0].state == \"${want[$k]}\""
	done
	run --separate-stderr ri-read <<<'{"kind":"ledger","act_key":"rec"}'
	answers ri-read.answer 0 '[.invocations[0].records[].payload | select(.plan != null) | .plan] == ["ledger.disclosed"]'
	run --separate-stderr ri-read <<<'{"kind":"ledger","act_key":"esc"}'
	answers ri-read.answer 0 '.invocations[0].records[-1].payload.store_candidates.count == 3'
	run --separate-stderr ri-read <<<'{"kind":"ledger","act_key":"res"}'
	answers ri-read.answer 0 '.invocations[0].records[-1].payload | has("supersedes") and .resolved_by == "alice"'
	# resolved: an operator's abandonment
	o=$(ri-open <<<"$(open_req opab)")
	ri-yield <<<"$o" >/dev/null
	ri_at 600
	ri-resolve <<<"$(resolve_req "$o" '{"abandoned":{"cause":"x"}}')" >/dev/null
	run --separate-stderr ri-read <<<"$(jq -c '{kind, act_key, invocation_id}' <<<"$o")"
	answers ri-read.answer 0 '.invocations[0].state == "resolved" and (.invocations | length) == 1'
	# refusals
	run --separate-stderr ri-read <<<'{"kind":"ledger","act_key":"never"}'
	answers ri-read.answer 17 '. == {"refused": "not-known"}'
	# Read Invocation refuses only not-known and journal-unavailable: a kind
	# never bound has no readable intent
	run --separate-stderr ri-read <<<'{"kind":"nope","act_key":"k"}'
	answers ri-read.answer 17 '. == {"refused": "not-known"}'
	journal_away
	run --separate-stderr ri-read <<<'{"kind":"ledger","act_key":"rec"}'
	answers ri-read.answer 15 '. == {"refused": "journal-unavailable"}'
	journal_back
	flip_mac "$(seq_of ref ledger.refused)"
	run --separate-stderr ri-read <<<'{"kind":"ledger","act_key":"ref"}'
	answers ri-read.answer 30 '. == {"refused": "journal-unavailable", "cause": "integrity"}'
}

# ---- ri-run -----------------------------------------------------------------

@test "ri-run: ri-close's answer, ri-refuse's answer on a pre-commit exit, recording-failure on an unknown end, and Open's refusals" {
	run --separate-stderr ri-run --answer-fd 1 --kind ledger --act-key u1 --actor alice --pre-commit-exit 2,3,4 -- \
	    ledger-disclose --store "$T/ledger.db" --subject s --recipient r
	answers ri-run.answer 0 '.landed_by == "invocation"'
	run --separate-stderr ri-run --answer-fd 1 --kind ledger --act-key u2 --actor alice --pre-commit-exit 2,3,4 -- sh -c 'exit 3'
	answers ri-run.answer 3 '(.refusal_event_id | type) == "string"'
	run --separate-stderr ri-run --answer-fd 1 --kind ledger --act-key u3 --actor alice --pre-commit-exit 2,3,4 -- sh -c 'exit 5'
	answers ri-run.answer 21 '. == {"refused": "recording-failure", "position": "outcome"}'
	run --separate-stderr ri-run --answer-fd 1 --kind ledger --act-key u4 --actor alice -- sh -c "echo 'not json' >&3"
	answers ri-run.answer 21 '. == {"refused": "recording-failure", "position": "outcome"}'
	run --separate-stderr ri-run --answer-fd 1 --kind ledger --act-key u7 --actor alice --outcome-stdout -- echo '{"a":1}'
	answers ri-run.answer 0 '.landed_by == "invocation"'
	run --separate-stderr ri-run --answer-fd 1 -n --kind ledger --act-key u3 --actor alice -- true
	answers ri-run.answer 12 '.refused == "act-in-flight"'
	# Open refused: the command is not run
	run --separate-stderr ri-run --answer-fd 1 --kind ledger --act-key u3 --actor alice -- touch "$T/ran"
	answers ri-run.answer 12 '.refused == "act-in-flight"'
	[ ! -e "$T/ran" ]
	RI_CREDENTIAL=wrong run --separate-stderr ri-run --answer-fd 1 --kind ledger --act-key u5 --actor alice -- true
	answers ri-run.answer 10 '. == {"refused": "invalid-credential"}'
	# unbound kind: the shape is checked here; its exit status (INTERFACE: 11)
	# is not asserted -- see the report on ri-run's early returns
	run --separate-stderr ri-run --answer-fd 1 --kind nope --act-key u6 --actor alice -- true
	answers ri-run.answer - '. == {"refused": "invalid-request", "cause": "unbound-kind"}'
	# issue 44: --answer FILE holds the same answer; the job's output is not in it
	run --separate-stderr ri-run --answer "$T/a.json" --kind ledger --act-key u8 --actor alice -- echo job
	[ "$output" = job ]
	run cat "$T/a.json"
	answers ri-run.answer - '.landed_by == "invocation"'
	# issue 40 point 9: --intent-data-file's object is the intent's data
	echo '{"subject":"s"}' >"$T/intent.json"
	run --separate-stderr ri-run --answer-fd 1 --intent-data-file "$T/intent.json" --kind ledger \
	    --act-key u9 --actor alice -- true
	answers ri-run.answer 0 '.landed_by == "invocation"'
}

# ---- ri-sweep ---------------------------------------------------------------

@test "ri-sweep: tallies -- empty and sealed, closed and escalated, report-only, purged" {
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 0 "$partition and .examined == 0 and .sealed_seq >= 1 and (has(\"refused\") | not)"
	orphan s1
	run --separate-stderr ri-run --kind ledger --act-key s2 --actor alice -- sh -c 'exit 5'
	ri_at 300
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 3 "$partition and .closed == 1 and .escalated == 1 and .needs_operator == 1"
	ri_cfg '.kinds.ledger.service_identity = null'
	orphan s3
	ri_at 600
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 0 "$partition and .reported == 1"
	ri_at $((400 * 86400 + 1000))
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 0 "$partition and .purged >= 1"
}

@test "ri-sweep: surfaced (unbound kind: refused, 78), the service credential unreadable (unreached, alert), and the duplicate scan failing verification (tally + refused, 15)" {
	ri_cfg '.kinds.gone = .kinds.ledger'
	ri-open <<<"$(open_req g1 | jq -c '.kind = "gone"')" >/dev/null
	orphan s4
	ri_cfg 'del(.kinds.gone)'
	ri_at 300
	# Binding 2-4: the run surfaces the unbound kind's intent and writes nothing
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 78 "$partition and .surfaced == 1 and .unreached == 1 and .examined == 0 and (.alert | length) > 0 and (has(\"sealed_seq\") | not)"
	ri_cfg '.kinds.gone = .kinds.ledger'
	# reconcile steps 3.18-3.19: the identity refused, its kinds' acts
	# unreached; the substrate still seals
	mv "$T/reconciler.cred" "$T/reconciler.away"
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 2 "$partition and .unreached == 2 and .examined == 0 and (.alert | length) > 0 and has(\"sealed_seq\") and (.degraded | length) > 0"
	mv "$T/reconciler.away" "$T/reconciler.cred"
	o=$(ri-open <<<"$(open_req s5)")
	ri-close <<<"$(close_req "$o")" >/dev/null
	flip_mac "$(seq_of s5 ledger.disclosed)"
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 15 "$partition and .refused == \"journal-unavailable\" and .cause == \"integrity\" and (has(\"sealed_seq\") | not)"
	invalid ri-sweep.answer "$(jq -c 'del(.cause)' <<<"$ANS")" "$(jq -c '. + {sealed_seq: 9}' <<<"$ANS")"
}

@test "ri-sweep: journal-unavailable (15) when the journal is gone" {
	journal_away
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 15 '. == {"refused": "journal-unavailable"}'
}

# ---- ri-findings ------------------------------------------------------------

@test "ri-findings: every finding the register records, as lines -- the five conditions, escalated, service-credential-refused and start-refused" {
	ri_cfg '.instance.journal_fence = "none" |
	    .kinds.down = .kinds.ledger | .kinds.down.probe = ["ledger-probe", "--store", "'"$T"'/missing/ledger.db"] |
	    .kinds.ro = .kinds.ledger | .kinds.ro.service_identity = null |
	    .kinds.gone = .kinds.ledger'
	# closings key duplicate: a Close paused past its lease lands beside the operator's outcome
	open=$(ri-open <<<"$(open_req dup '{"pairing_datum":"pd-dup"}')")
	export RI_FAULT_DIR=$T/faults
	mkdir -p "$RI_FAULT_DIR"
	mkfifo "$RI_FAULT_DIR/close.after_reread"
	ri_at 10
	RI_FAULT=close.after_reread=pause ri-close <<<"$(close_req "$open" '{"disclosure_id":"dsc-inv"}')" \
	    >"$T/close.out" 2>"$T/close.err" 3>&- &
	BG=$!
	wait_for "$RI_FAULT_DIR/close.after_reread.reached"
	ri_at 40
	ri-resolve <<<"$(resolve_req "$open" '{"outcome":{"outcome_action_ref":"ledger.disclosed","outcome_data":{"disclosure_id":"dsc-op"}}}')" >/dev/null
	echo >"$RI_FAULT_DIR/close.after_reread"
	wait "$BG"
	BG=
	run --separate-stderr ri-read <<<'{"kind":"ledger","act_key":"dup"}'
	answers ri-read.answer 0 '.invocations[0].binding_duplicate'
	# an open intent for each of: down (store-unavailable), ro (report-only:
	# closure-at-risk), gone (unbound-kind), and one escalation
	ri-open <<<"$(open_req d1 | jq -c '.kind = "down"')" >/dev/null
	ri-open <<<"$(open_req r1 | jq -c '.kind = "ro"')" >/dev/null
	ri-open <<<"$(open_req g1 | jq -c '.kind = "gone"')" >/dev/null
	ri-run --kind ledger --act-key e1 --actor alice -- sh -c 'exit 5' >/dev/null 2>&1 || true
	ri_cfg 'del(.kinds.gone)'
	ri_at 300
	# Binding 2-4: unbound-kind and start-refused, nothing written
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 78 "$partition and .surfaced == 1 and .examined == 0"
	ri_cfg '.kinds.gone = .kinds.ledger'
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 2 "$partition and .escalated == 2 and .reported == 1 and .skipped == 1"
	# journal-unavailable: a run with the journal gone, then one that reads it
	journal_away
	ri_at 360
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 15
	journal_back
	# service-credential-refused: the credential cannot be read
	ri-open <<<"$(open_req c1)" >/dev/null
	ri_at 700
	mv "$T/reconciler.cred" "$T/reconciler.away"
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 2 "$partition and (.alert | length) > 0"
	mv "$T/reconciler.away" "$T/reconciler.cred"
	run --separate-stderr ri-findings
	each_line ri-findings.line
	names=$(jq -sc '[.[].finding] | unique' <<<"$output")
	[ "$names" = '["binding-duplicate","closure-at-risk","escalated","journal-unavailable","service-credential-refused","start-refused","store-unavailable","unbound-kind"]' ] ||
	    { echo "findings: $names"; false; }
	jq -se 'any(.[]; .finding == "journal-unavailable" and .closed and .kind == null)' <<<"$output" >/dev/null
	run --separate-stderr ri-findings --open --kind ledger
	each_line ri-findings.line '.kind == "ledger" and (.closed | not)'
	# wrong lines are rejected
	line=$(ri-findings | jq -c 'select(.finding == "escalated")' | head -1)
	invalid ri-findings.line "$(jq -c '.scope = "instance"' <<<"$line")" "$(jq -c '.invocation_id = null' <<<"$line")" \
	    "$(jq -c '.closed = true' <<<"$line")" "$(jq -c 'del(.detail)' <<<"$line")" "$(jq -c '.finding = "lost"' <<<"$line")"
	line=$(ri-findings | jq -c 'select(.finding == "journal-unavailable")' | head -1)
	invalid ri-findings.line "$(jq -c '.kind = "ledger"' <<<"$line")" "$(jq -c '.closed = false' <<<"$line")" \
	    "$(jq -c '.act_key = "k"' <<<"$line")"
}

# ---- issue 14: the operator's path, degraded runs, the report ----------------

@test "issue 14 shapes: ri-read by --event-id (with record) and --invocation-id, ri-resolve's needs_operator (64), a degraded sweep (2), ri-audit's figures (needs_operator, latency, outages, findings, failures naming their act)" {
	orphan n1
	run --separate-stderr ri-run --kind ledger --act-key n2 --actor alice -- sh -c 'exit 5'
	ev=$(seq_of n1)
	ev=$(jsql "SELECT event_id FROM records WHERE seq = $ev")
	run --separate-stderr ri-read --event-id "$ev"
	answers ri-read.answer 0 ".record.event_id == \"$ev\" and (.invocations | length) == 1"
	valid ri-read.request "{\"event_id\":\"$ev\"}" '{"invocation_id":"inv_00000000000000000000000000000000"}'
	invalid ri-read.request '{"kind":"ledger"}' '{"invocation_id":"inv_00000000000000000000000000000000","kind":"ledger"}'
	reg=$(jsql "SELECT event_id FROM records WHERE action_ref = 'audit.actor_registered' LIMIT 1")
	run --separate-stderr ri-read --event-id "$reg"
	answers ri-read.answer 0 '.invocations == [] and .record.action_ref == "audit.actor_registered"'
	# a degraded run: the store is away
	mv "$T/ledger.db" "$T/ledger.away"
	ri_at 300
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 2 "$partition and .skipped >= 1 and (.degraded | length) >= 1"
	mv "$T/ledger.away" "$T/ledger.db"
	ri_at 400
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 3 "$partition and .needs_operator == 1"
	# n2 escalated: nothing needs resolving on n1, one invocation on n2
	BOB=$(ri-actor add bob | jq -r .credential)
	RI_CREDENTIAL=$BOB run --separate-stderr ri-resolve --kind ledger --act-key n1 --actor bob --abandon x
	answers ri-resolve.answer 64 '.needs_operator == []'
	run --separate-stderr ri-audit
	answers ri-audit.answer 0 '(.needs_operator | length) == 1 and .needs_operator[0].why == "escalated" and
	    (.latency[0].buckets | length) == 6 and (.findings | length) >= 2 and (.outages | length) >= 1 and
	    .tally.fail == 0'
	flip_mac "$(seq_of n1 ledger.disclosed)"
	run --separate-stderr ri-audit
	answers ri-audit.answer 1 '[.checks[].failures[] | select(.act_key == "n1")] | length >= 1'
	invalid ri-audit.answer "$(jq -c 'del(.tally)' <<<"$ANS")" "$(jq -c '.latency[0].buckets |= .[1:]' <<<"$ANS")"
}

# ---- ri-audit ---------------------------------------------------------------

@test "ri-audit: a clean journal (with sealed_seq, notes under --probe, --public-key) and a failing one (1)" {
	orphan a1
	ri_at 300
	ri-sweep >/dev/null
	run --separate-stderr ri-audit
	answers ri-audit.answer 0 '.sealed_seq >= 1 and all(.checks[]; .status != "fail") and
	    ([.checks[] | select(.status == "not-applicable") | .check] == ["6.1", "6.3", "6.5"])'
	run --separate-stderr ri-audit --probe
	answers ri-audit.answer 0 '.checks[] | select(.check == "6.1") | .status == "pass" and .notes["judged by the probe"] == 1'
	run --separate-stderr ri-audit --public-key "$T/seal.key.pub"
	answers ri-audit.answer 0 '.checks[] | select(.check == "8.1.3") | .status == "not-applicable" and (.note | length) > 0'
	flip_mac "$(seq_of a1 ledger.disclosed)"
	run --separate-stderr ri-audit
	answers ri-audit.answer 1 '[.checks[] | select(.status == "fail") | .check] | index("8.1.3") != null'
	invalid ri-audit.answer "$(jq -c '(.checks[] | select(.status == "fail") | .failures) |= []' <<<"$ANS")" \
	    "$(jq -c 'del(.head)' <<<"$ANS")" \
	    "$(jq -c '(.checks[] | select(.status == "pass")) |= . + {truncated: true}' <<<"$ANS")"
}

# ---- ri-startcheck ----------------------------------------------------------

@test "ri-startcheck --json: ok (0), a failing condition (1), an unbound kind with open intents (1), a group-writable key (1), a journal failing verification (30)" {
	run --separate-stderr ri-startcheck --json
	answers ri-startcheck.answer 0 '.ok and (.warnings | length) == 2 and
	    ([.capabilities[].check] | index("kinds.ledger.probe") != null)'
	ri_cfg '.kinds.ledger.service_identity = null'
	run --separate-stderr ri-startcheck --json
	answers ri-startcheck.answer 0 '.ok'
	ri_cfg '.instance.closure_latency = "5s"'
	run --separate-stderr ri-startcheck --json
	answers ri-startcheck.answer 1 '(.ok | not) and ([.kinds[0].conditions[] | select(.pass | not) | .number] == [5])'
	ri_cfg '.instance.closure_latency = "12s" | .kinds.gone = .kinds.ledger'
	ri-open <<<"$(open_req g1 | jq -c '.kind = "gone"')" >/dev/null
	ri_cfg 'del(.kinds.gone)'
	run --separate-stderr ri-startcheck --json
	answers ri-startcheck.answer 1 '[.capabilities[] | select(.pass | not) | .check] == ["bindings"]'
	chmod 0660 "$T/journal.key"             # 0640 is a key shared with its group (issue 44)
	run --separate-stderr ri-startcheck --json
	answers ri-startcheck.answer 1 '[.capabilities[] | select(.pass | not) | .check] | index("integrity-key") != null'
	chmod 0600 "$T/journal.key"
	tamper_heads
	run --separate-stderr ri-startcheck --json
	answers ri-startcheck.answer 30 '(.ok | not) and ([.capabilities[] | select(.pass | not) | .check] | index("journal") != null)'
}

# ---- the probe protocol -----------------------------------------------------

@test "probe protocol: the request as the sweep sends it, and the example probe's four answers" {
	argv=$(jq -nc --arg s "cat > $T/probe-req.json; echo {\\\"answer\\\":\\\"unavailable\\\"}" '["sh", "-c", $s]')
	ri_cfg ".kinds.ledger.probe = $argv"
	orphan p1
	ri_at 300
	run --separate-stderr ri-sweep
	answers ri-sweep.answer 2 "$partition and .skipped == 1"
	[ -s "$T/probe-req.json" ]
	valid probe.request <"$T/probe-req.json"
	jq -e '.kind == "ledger" and .act_key == "p1" and .intent.act_key == "p1" and
	    (.intent.data.pairing_datum | startswith("pd_")) and (.intent | has("intent_event_id") | not)' \
	    "$T/probe-req.json" >/dev/null
	req=$(jq -c . "$T/probe-req.json")
	invalid probe.request "$(jq -c '. + {x: 1}' <<<"$req")" "$(jq -c 'del(.intent)' <<<"$req")"
	pd=$(jq -r .intent.data.pairing_datum <<<"$req")
	# the example probe, on the request the sweep sent
	probe() { ledger-probe --store "${2:-$T/ledger.db}" <<<"$1"; }
	run --separate-stderr probe "$req"
	answers probe.answer 0 '.answer == "committed" and .outcome_action_ref == "ledger.disclosed"'
	run --separate-stderr probe "$(jq -c '.intent.data.pairing_datum = "pd_nobody"' <<<"$req")"
	answers probe.answer 0 '. == {"answer": "not-committed"}'
	ledger-admin --store "$T/ledger.db" plant --pairing-datum "$pd" >/dev/null
	run --separate-stderr probe "$req"
	answers probe.answer 0 '.answer == "undecidable" and (.candidates | length) == 2'
	run --separate-stderr probe "$req" "$T/missing/ledger.db"
	answers probe.answer 0 '. == {"answer": "unavailable"}'
	invalid probe.answer '{"answer":"committed","outcome_action_ref":"ledger.disclosed"}' \
	    '{"answer":"not-committed","candidates":[]}' '{"answer":"maybe"}' '{"answer":"undecidable"}'
	# the batch probe (issue 15): a line a request, each naming its act key
	two=$req$'\n'$(jq -c '.act_key = "p2" | .intent.act_key = "p2" | .intent.data.pairing_datum = "pd_nobody"' <<<"$req")
	run --separate-stderr ledger-probe --store "$T/ledger.db" --batch <<<"$two"
	[ "$status" -eq 0 ] && [ "${#lines[@]}" -eq 2 ]
	for l in "${lines[@]}"; do
		printf '%s\n' "$l" | vpy --closed "$SCHEMAS/probe.batch.answer.json"
	done
	jq -se '(.[0] | .act_key == "p1" and .answer == "undecidable") and .[1] == {"act_key": "p2", "answer": "not-committed"}' \
	    <<<"$output" >/dev/null
	invalid probe.batch.answer '{"answer":"not-committed"}' '{"answer":"not-committed","act_key":""}' \
	    '{"answer":"unavailable","act_key":"p1","why":"x"}'
	# a request line over the 8 MiB request cap: the lines before it are
	# answered, it is refused (exit 2, its usage error) at the cap
	run --separate-stderr bash -c 'printf "%s\n" "$1"; head -c 9000000 /dev/zero | tr "\0" x; echo' _ "$req"
	run --separate-stderr ledger-probe --store "$T/ledger.db" --batch <<<"$output"
	[ "$status" -eq 2 ] && [ "${#lines[@]}" -eq 1 ] && grep -q "request is over 8388608 bytes" <<<"$stderr"
}
