#!/usr/bin/env bats
# report.bats -- an auditor's report to look at (issue 14, friction 9 and
# item 7): ri-audit --text ends with a tally, names act keys and prints the
# head as --expect-head takes it; ri-audit --html FILE writes one
# self-contained page whose figures are the JSON answer's.
#
# test-pg: no -- the HTML rendering of an audit the other suites run on both backends

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"
load "$BATS_TEST_DIRNAME/lib/sweep"

teardown() {
	if [ -n "${T:-}" ]; then rm -rf "$T"; fi
}

# a journal with something in every figure: clean closings, a recovery, an
# escalation that still needs an operator, a store outage, and (after
# flip_mac) a failing check naming an act
populate() {
	ri_instance
	export RI_CREDENTIAL=$ALICE
	ledger-admin --store "$T/ledger.db" init >/dev/null
	ri-run --kind ledger --act-key clean --actor alice -- \
	    ledger-disclose --store "$T/ledger.db" --subject s --recipient clean >/dev/null
	{ (RI_FAULT=run.after_act=die ri-run --kind ledger --act-key crash --actor alice -- \
	    ledger-disclose --store "$T/ledger.db" --subject s --recipient crash) >/dev/null 2>&1; } 2>/dev/null || true
	{ (RI_FAULT=run.after_open=die ri-run --kind ledger --act-key lost --actor alice -- true) >/dev/null 2>&1; } 2>/dev/null || true
	mv "$T/ledger.db" "$T/ledger.away"
	ri_at 40
	ri-sweep >/dev/null 2>&1 || true         # degraded: the store is away
	mv "$T/ledger.away" "$T/ledger.db"
	ri_at 100
	sweep
}

flip_mac() {
	local hex first
	hex=$(sqlite3 "$T/journal.db" "SELECT hex(mac) FROM records WHERE seq = $1")
	first=$(printf '%02X' $(( 0x${hex:0:2} ^ 0x01 )))
	sqlite3 "$T/journal.db" "DROP TRIGGER IF EXISTS records_append_only_update;
	    UPDATE records SET mac = X'$first${hex:2}' WHERE seq = $1;"
}

# x FILE XPATH -- the string value of XPATH in the page (namespaces ignored
# by local-name())
x() { xmllint --xpath "string($2)" "$1"; }

@test "friction 9: ri-audit --text names the head as SEQ:HASH (what --expect-head takes), names each failure's act, and ends with a tally" {
	populate
	run --separate-stderr ri-audit --text
	[ "$status" -eq 0 ]
	head=$(ri-audit | jq -r '"\(.head.seq):\(.head.hash)"')
	[[ "${lines[0]}" == *"head $head"* ]]
	[[ "${lines[-1]}" =~ ^23\ checks:\ [0-9]+\ pass,\ 0\ FAIL,\ 0\ INCOMPLETE,\ [0-9]+\ not\ applicable\;\ 1\ act\ needs\ an\ operator$ ]]
	grep -q "needs an operator: act ledger lost" <<<"$output"
	run --separate-stderr ri-audit --expect-head "$head"
	[ "$status" -eq 0 ]
	flip_mac "$(jsql "SELECT seq FROM records WHERE act_key = 'clean' AND action_ref = 'ledger.disclosed'")"
	run --separate-stderr ri-audit --text
	[ "$status" -eq 1 ]
	grep -q "fails its MAC; act ledger clean; invocation inv_" <<<"$output"
	grep -Eq '^8\.1\.3 +FAIL' <<<"$output"
	# the MAC, and the schema whose append-only trigger the edit dropped
	[[ "${lines[-1]}" =~ ^23\ checks:\ [0-9]+\ pass,\ [1-9][0-9]*\ FAIL, ]]
}

@test "item 7: ri-audit --html FILE is one well-formed, self-contained XHTML page -- inline SVG, no script, nothing fetched -- and its figures are the JSON answer's" {
	command -v xmllint >/dev/null || skip "xmllint is not installed (apt-get install libxml2-utils)"
	populate
	flip_mac "$(jsql "SELECT seq FROM records WHERE act_key = 'clean' AND action_ref = 'ledger.disclosed'")"
	run --separate-stderr ri-audit --html "$T/report.html"
	[ "$status" -eq 1 ]
	J=$output
	xmllint --noout "$T/report.html"
	# self-contained: no script, no stylesheet or image fetched, no link out
	! grep -qi '<script' "$T/report.html" || false
	! grep -Eqi '(src|href)=' "$T/report.html"
	! grep -Eqi '@import|url\(' "$T/report.html" || false
	[ "$(x "$T/report.html" "count(//*[local-name()='svg'])")" -ge 2 ]
	# the tally and the head
	[ "$(x "$T/report.html" "//*[@id='tally']/@data-pass")" = "$(jq .tally.pass <<<"$J")" ]
	[ "$(x "$T/report.html" "//*[@id='tally']/@data-fail")" = "$(jq .tally.fail <<<"$J")" ]
	[ "$(x "$T/report.html" "//*[@id='tally']/@data-not-applicable")" = "$(jq '.tally["not-applicable"]' <<<"$J")" ]
	[ "$(x "$T/report.html" "//*[@id='tally']/@data-incomplete")" = "$(jq .tally.incomplete <<<"$J")" ]
	[ "$(x "$T/report.html" "//*[@id='head']")" = "$(jq -r '"\(.head.seq):\(.head.hash)"' <<<"$J")" ]
	# every check: its verdict and how many records it names
	for c in $(jq -r '.checks[].check' <<<"$J"); do
		[ "$(x "$T/report.html" "//*[@data-check='$c']/@data-status")" = "$(jq -r --arg c "$c" '.checks[] | select(.check == $c) | .status' <<<"$J")" ]
		[ "$(x "$T/report.html" "//*[@data-check='$c']/@data-failures")" = "$(jq -r --arg c "$c" '.checks[] | select(.check == $c) | .failures | length' <<<"$J")" ]
	done
	for e in $(jq -r '.checks[].failures[].event_ids[]' <<<"$J"); do grep -q "$e" "$T/report.html"; done
	# the histogram: each bucket's bar is the answer's count
	for i in 0 1 2 3 4 5; do
		[ "$(x "$T/report.html" "(//*[local-name()='svg'][@data-kind='ledger']/*[local-name()='rect'])[$((i + 1))]/@data-count")" = \
		    "$(jq ".latency[0].buckets[$i].count" <<<"$J")" ]
	done
	[ "$(x "$T/report.html" "//*[@data-kind='ledger'][@data-closed]/@data-closed")" = "$(jq '.latency[0].closed' <<<"$J")" ]
	[ "$(jq '.latency[0].closed' <<<"$J")" -ge 3 ]
	# the timeline: one span per outage, one mark per finding
	[ "$(jq '.outages | length' <<<"$J")" -ge 1 ]
	[ "$(x "$T/report.html" "count(//*[local-name()='rect'][@class='outage'])")" = "$(jq '.outages | length' <<<"$J")" ]
	[ "$(x "$T/report.html" "count(//*[local-name()='circle'][@class='finding'])")" = "$(jq '.findings | length' <<<"$J")" ]
	# the acts that still need an operator
	[ "$(x "$T/report.html" "//*[@id='needs']/@data-count")" = "$(jq '.needs_operator | length' <<<"$J")" ]
	[ "$(jq -r '.needs_operator[0].act_key' <<<"$J")" = lost ]
	grep -q "$(jq -r '.needs_operator[0].invocation_id' <<<"$J")" "$T/report.html"
}

@test "item 7: --html writes the page whole or not at all; an unwritable path is a config error (78) and leaves nothing" {
	populate
	run --separate-stderr ri-audit --html "$T/no/such/dir/report.html"
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"--html $T/no/such/dir/report.html"* ]]
	[ ! -e "$T/no" ]
	run --separate-stderr ri-audit --html "$T/r.html" --text
	[ "$status" -eq 0 ]
	[ -s "$T/r.html" ]
	[ -z "$(ls "$T" | grep '\.tmp\.')" ]
}

@test "issue 44 point 10: the HTML audit shows a resolved escalation as closed, the slowest closure in seconds, at most 100 rows a table (the rest counted), and no line that repeats an act key for a command" {
	ri_instance
	export RI_CREDENTIAL=$ALICE
	ledger-admin --store "$T/ledger.db" init >/dev/null
	# 130 intents whose jobs never wrote: the sweep escalates every one
	(umask 077; printf '%s\n' "$ALICE" >"$T/alice.cred")
	"$RI_TOOLS/ri-fill" --actor alice --credential-file "$T/alice.cred" --closed 1 --open 130 \
	    --prefix "$(head -c 200 /dev/zero | tr '\0' k)" >/dev/null
	ri_at 33
	sweep
	[ "$(t escalated)" -eq 130 ]
	BOB=$(ri-actor add bob | jq -r .credential)
	inv=$(ri-findings --open | jq -r 'select(.finding == "escalated") | .invocation_id' | head -1)
	RI_CREDENTIAL=$BOB ri-resolve --invocation-id "$inv" --actor bob --abandon "OPS-5" >/dev/null
	ri_at 60
	ri-audit >"$T/audit.json" || true
	jq -e --arg i "$inv" '[.findings[] | select(.invocation_id == $i)][0].closed_at == "2026-11-29T10:00:33.000Z"' "$T/audit.json"
	ri-audit --html "$T/r.html" >/dev/null || true
	xmllint --noout "$T/r.html"
	# the resolved one's findings count closed, the others open -- as the
	# JSON answer says; the open come first
	open=$(jq '[.findings[] | select(.closed_at == null)] | length' "$T/audit.json")
	closed=$(jq '[.findings[] | select(.closed_at != null)] | length' "$T/audit.json")
	[ "$closed" -ge 1 ] && [ "$open" -ge 129 ]
	[ "$(x "$T/r.html" "//*[local-name()='table'][@id='findings']/@data-open")" -eq "$open" ]
	[ "$(x "$T/r.html" "//*[local-name()='table'][@id='findings']/@data-closed")" -eq "$closed" ]
	[ "$(x "$T/r.html" "count(//*[local-name()='table'][@id='findings']//*[local-name()='tr'][@class='open'])")" -eq 100 ]
	[ "$(x "$T/r.html" "//*[local-name()='p'][@id='findings-more']/@data-more")" -eq $((open + closed - 100)) ]
	# capped: 100 rows, and the rest counted
	[ "$(x "$T/r.html" "count(//*[local-name()='table'][@id='needs']//*[local-name()='tr'][@class='need'])")" -eq 100 ]
	[ "$(x "$T/r.html" "//*[local-name()='p'][@id='needs-more']/@data-more")" -eq 29 ]
	# seconds, not raw milliseconds
	! grep -q 'took [0-9]* ms' "$T/r.html"
	grep -q 'the slowest took [0-9.]* s' "$T/r.html" || grep -q 'the slowest took [0-9]* min' "$T/r.html"
	# --text: one act key a line, and the command names the invocation alone
	run --separate-stderr ri-audit --text
	grep -q "ri-resolve --probe --invocation-id inv_" <<<"$output"
	! grep -q -- "--act-key" <<<"$output"
	[ "$(grep -c '^needs an operator: act' <<<"$output")" -eq 100 ]
	grep -q '^needs an operator: 29 more' <<<"$output"
	[ "$(wc -c <"$T/r.html")" -lt 300000 ]
}
