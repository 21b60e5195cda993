#!/usr/bin/env bats
# man_examples.bats -- the man pages' EXAMPLES are tests: each page's .EX
# blocks run, in order, against a fresh demo instance (ri(7) EXAMPLES says
# what it holds), and fail on any non-zero exit a line did not ask for
# with a trailing `|| test $? -eq N` (tests/lib/man_examples.sh).  The
# pages must also render without a groff warning.
#
# test-pg: no -- the pages' examples, run as written (on SQLite, the default)

bats_require_minimum_version 1.5.0

load lib/common
source "$BATS_TEST_DIRNAME/lib/man_examples.sh"

setup() {
	T=
}

teardown() {
	cd "$BATS_TEST_DIRNAME" || true
	if [ -n "$T" ]; then rm -rf "$T"; fi
}

# The pages this file runs; the coverage test below keeps it complete.
PAGES_RUN="ri.7 ri.json.5 ri-init.1 ri-actor.1 ri-startcheck.1 ri-run.1 ri-open.1
ri-close.1 ri-refuse.1 ri-yield.1 ri-sweep.1 ri-resolve.1 ri-read.1 ri-findings.1
ri-seal.1 ri-audit.1 ri-runbook.7 ri-backup.1"

@test "man: every page with EXAMPLES has a test here, and every page named here exists" {
	local have want
	have=$(man_pages_with_examples)
	want=$(printf '%s\n' $PAGES_RUN | sort)
	[ -n "$have" ]
	if [ "$have" != "$want" ]; then
		diff <(echo "$want") <(echo "$have") || true
		return 1
	fi
}

@test "man: every page renders without a groff warning (groff -man -ww)" {
	local p out bad=0
	command -v groff >/dev/null || skip "groff is not installed"
	for p in "$MAN_DIR"/*.[157]; do
		out=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
		if [ -n "$out" ]; then
			echo "$p: $out"
			bad=1
		fi
	done
	[ "$bad" -eq 0 ]
}

@test "man: every page has NAME, DESCRIPTION and SEE ALSO, and every ri page it cites exists" {
	local p ref bad=0
	for p in "$MAN_DIR"/*.[157]; do
		grep -q '^\.SH NAME' "$p" || { echo "$p: no NAME"; bad=1; }
		grep -q '^\.SH DESCRIPTION' "$p" || { echo "$p: no DESCRIPTION"; bad=1; }
		grep -q '^\.SH "\{0,1\}SEE ALSO' "$p" || { echo "$p: no SEE ALSO"; bad=1; }
		for ref in $(grep -o 'ri\(\\-[a-z]*\)*\(\.json\)\{0,1\} *([157])' "$p" | tr -d ' \\' | sort -u); do
			local name=${ref%(*} sec=${ref#*(}
			sec=${sec%)}
			[ -f "$MAN_DIR/$name.$sec" ] || { echo "$p cites $ref: no $name.$sec"; bad=1; }
		done
	done
	[ "$bad" -eq 0 ]
}

@test "man: the harness holds an expected failure to its code, and fails a line that fails unasked (negative control)" {
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/ri-man.XXXXXX")
	local MAN_DIR=$T page=$T/x.1
	write_page() {
		printf '.TH X 1\n.SH NAME\nx \\- y\n.SH EXAMPLES\n.EX\n%s\n.EE\n.SH SEE ALSO\nx\n' "$1" >"$page"
	}
	# a line asking for 3 that exits 3 passes, even with a quote and the
	# command spanning lines
	write_page $'echo \\(aqa\nb\\(aq | sh \\-c \\(aqexit 3\\(aq \\e\n    || test $? \\-eq 3\ntouch ran'
	run man_run x.1
	[ "$status" -eq 0 ]
	[ -e "$T/ran" ]
	# ... exiting 0 instead fails
	write_page 'true || test $? \-eq 3'
	run ! man_run x.1
	# ... exiting 4 instead fails
	write_page 'sh \-c \(aqexit 4\(aq || test $? \-eq 3'
	run ! man_run x.1
	# a line failing unasked fails the page, and later lines do not run
	rm -f "$T/ran"
	write_page $'false\ntouch ran'
	run ! man_run x.1
	[ ! -e "$T/ran" ]
	# a pipeline fails when its first command does
	write_page 'false | cat'
	run ! man_run x.1
}

@test "ri(7): the EXAMPLES run" {
	man_setup
	man_run ri.7
}

@test "ri.json(5): the EXAMPLES run" {
	man_setup
	man_run ri.json.5
}

@test "ri-init(1): the EXAMPLES run" {
	man_setup
	man_run ri-init.1
}

@test "ri-actor(1): the EXAMPLES run" {
	man_setup
	man_run ri-actor.1
}

@test "ri-startcheck(1): the EXAMPLES run" {
	man_setup
	man_run ri-startcheck.1
}

@test "ri-run(1): the EXAMPLES run" {
	man_setup
	man_run ri-run.1
}

@test "ri-open(1): the EXAMPLES run" {
	man_setup
	man_run ri-open.1
}

@test "ri-close(1): the EXAMPLES run" {
	man_setup
	man_run ri-close.1
}

@test "ri-refuse(1): the EXAMPLES run" {
	man_setup
	man_run ri-refuse.1
}

@test "ri-yield(1): the EXAMPLES run" {
	man_setup
	man_run ri-yield.1
}

@test "ri-sweep(1): the EXAMPLES run" {
	man_setup
	man_run ri-sweep.1
}

@test "ri-resolve(1): the EXAMPLES run" {
	man_setup
	man_run ri-resolve.1
}

@test "ri-read(1): the EXAMPLES run" {
	man_setup
	man_run ri-read.1
}

@test "ri-findings(1): the EXAMPLES run" {
	man_setup
	man_run ri-findings.1
}

@test "ri-seal(1): the EXAMPLES run" {
	man_setup
	man_run ri-seal.1
}

@test "ri-audit(1): the EXAMPLES run" {
	man_setup
	man_run ri-audit.1
}

@test "ri-runbook(7): the EXAMPLES run -- an operator from a finding to a resolution" {
	man_setup
	man_run ri-runbook.7
}

@test "ri-backup(1): the EXAMPLES run" {
	man_setup
	man_run ri-backup.1
}

@test "issue 44 point 9: the rule index ri-rules(7) is current and complete -- every rule label cited in lib/, cmd/, man/ or tests/ has a statement, every one enforced is tested and every one tested is enforced; a citation in code with no test, in a test with no code, or with no statement fails the check" {
	top=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
	run "$top/tools/rules-index" --check
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -q '^\.B open step 3\.9$' "$top/man/ri-rules.7"
	# the same tree, broken three ways (the labels built here, so that
	# this test cites none of them itself)
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/ri-rules.XXXXXX")
	cp -r "$top/lib" "$top/cmd" "$top/man" "$top/tests" "$top/examples" "$top/docs" "$top/tools" "$top/Makefile" "$T/"
	c=Check p=pairing pp=Primitive
	echo "/* $pp policy 6: cited here, tested nowhere */" >>"$T/lib/util/clock.c"
	printf '@test "%s datum 4: cited by a test, enforced nowhere" {\n\ttrue\n}\n' "$p" >>"$T/tests/run.bats"
	echo "/* $c 4.9: no such statement */" >>"$T/lib/util/clock.h"
	RI_RULES_TOP=$T run "$T/tools/rules-index" --check
	[ "$status" -eq 1 ]
	[[ "$output" == *"$pp policy 6: enforced (lib/util/clock.c:"*") and tested nowhere"* ]]
	[[ "$output" == *"$p datum 4: tested (tests/run.bats: \"$p datum 4: cited by a test, enforced nowhere\") and enforced nowhere"* ]]
	[[ "$output" == *"$c 4.9: cited, with no statement in docs/rules"* ]]
	[[ "$output" == *"man/ri-rules.7 is not what tools/rules-index --write makes of the tree"* ]]
}

@test "issue 42: lib/'s layers -- tests/tools/layers passes the tree, and fails an upward import and a circle, naming each" {
	top=$BATS_TEST_DIRNAME/..
	run "$top/tests/tools/layers" "$top/lib"
	[ "$status" -eq 0 ]
	[[ "$output" == *"all downward, no circle"* ]]
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/ri-layers.XXXXXX")
	cp -r "$top/lib" "$T/lib"
	# the store reaching up to the protocol
	sed -i '0,/^#include "/s##\#include "protocol/proto.h"\n&#' "$T/lib/store/heads.c"
	run "$top/tests/tools/layers" "$T/lib"
	[ "$status" -eq 1 ]
	[[ "$output" == *"store/heads.c: upward import of protocol/proto.h (store -> protocol)"* ]]
	# two util modules that include each other: a circle, even in one layer
	cp -r "$top/lib/." "$T/lib/"
	sed -i '0,/^#include "/s##\#include "util/clock.h"\n&#' "$T/lib/util/vocab.c"
	sed -i '0,/^#include "/s##\#include "util/vocab.h"\n&#' "$T/lib/util/clock.h"
	run "$top/tests/tools/layers" "$T/lib"
	[ "$status" -eq 1 ]
	[[ "$output" == *"circle: "*"util/clock"*"util/vocab"* ]]
	rm -rf "$T"
}
