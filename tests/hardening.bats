#!/usr/bin/env bats
# hardening.bats -- issue 40: every file, lock, clock and output a hostile
# neighbour can touch fails closed and fast.  Each test is named by the
# issue's point and was seen to fail before its fix.  The neighbour is a
# local user who can write where ri's files live (a FIFO or a symlink in
# place of a file, a lock held, rows written without a key) and holds no
# key.  Time moves only through RI_NOW; nothing waits on a clock: every
# command a FIFO could hang runs under timeout(1), and a hang is its 124.

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"
load "$BATS_TEST_DIRNAME/lib/sweep"

setup() {
	ledger_instance
	BG=
	exec 9>&-
}

teardown() {
	exec 9>&-
	sweep_teardown
}

SCHEMAS=$(cd "$BATS_TEST_DIRNAME/../schemas" && pwd)

# fast CMD... -- CMD under a 20 s guard: a command a FIFO hangs exits 124
fast() {
	run --separate-stderr timeout 20 "$@"
}

# fifo_for PATH -- the file at PATH moved aside (PATH.orig), a FIFO in its place
fifo_for() {
	mv "$1" "$1.orig"
	mkfifo "$1"
}

# schema_valid SCHEMA FILE -- FILE's JSON is valid against schemas/SCHEMA.json
# (skipped without python3-jsonschema, as tests/schemas.bats is)
schema_valid() {
	python3 -c 'from jsonschema import Draft202012Validator' 2>/dev/null || return 0
	python3 "$BATS_TEST_DIRNAME/lib/validate.py" "$SCHEMAS/$1.json" <"$2"
}

# ---- point 1: an audit that could not read something never passes ----------

@test "issue 40 point 1: a findings register that is there but cannot be read (not a database) leaves Checks 3.1 and 3.5 incomplete -- ri-audit exits 1, the tally counts them, the answer is schema-valid; a missing register is still not-applicable" {
	o=$(open_req k1 | ri-open)
	close_req "$o" | ri-close >/dev/null
	run --separate-stderr ri-audit
	[ "$status" -eq 0 ]
	mv "$T/findings.db" "$T/findings.keep"
	printf 'not a database, whatever its name says\n' >"$T/findings.db"
	run --separate-stderr ri-audit
	printf '%s\n' "$output" >"$T/audit.json"
	# ASSERT ri-audit: a check it could not complete is incomplete, exit 1
	[ "$status" -eq 1 ]
	jq -e '.checks[] | select(.check == "3.1") | .status == "incomplete"' "$T/audit.json"
	jq -e '.checks[] | select(.check == "3.5") | .status == "incomplete"' "$T/audit.json"
	jq -e '.checks[] | select(.check == "3.1") | .incomplete[0] | test("findings register")' "$T/audit.json"
	jq -e '.tally.incomplete == 2 and .tally.fail == 0' "$T/audit.json"
	schema_valid ri-audit.answer "$T/audit.json"
	# --text and --html say so too
	run --separate-stderr ri-audit --text --html "$T/report.html"
	[ "$status" -eq 1 ]
	grep -q '^3.1 *INCOMPLETE' <<<"$output"
	grep -q 'data-incomplete="2"' "$T/report.html"
	# no register at all is what it was: 3.5 not applicable, a clean audit
	rm "$T/findings.db"
	run --separate-stderr ri-audit
	[ "$status" -eq 0 ]
	jq -e '.checks[] | select(.check == "3.5") | .status == "not-applicable"' <<<"$output"
}
