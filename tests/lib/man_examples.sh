# man_examples.sh -- run the EXAMPLES section of a man page as a test.
#
# Every .EX/.EE block inside a page's EXAMPLES section is plain shell, run
# in order, with `set -e -o pipefail`, against the demo instance man_setup
# prepares (the one ri(7) describes under EXAMPLES).  A line that is meant
# to fail says so itself, the way a script would:
#
#     ri-open --kind ledger ... </dev/null || test $? -eq 12
#
# and the harness holds it to that: the line must exit exactly 12 (exiting
# 0 fails the example too, so a refusal that stops happening is noticed).
#
#   man_setup            a fresh demo instance; cd "$T"
#   man_examples PAGE    the shell text of PAGE's EXAMPLES, roff escapes undone
#   man_script PAGE      that text as the script the test runs
#   man_run PAGE         run it (at most $MAN_EXAMPLE_TIMEOUT s, default 120);
#                        on failure print the script and its output
#   man_pages_with_examples   the pages under man/ that have an EXAMPLES section

MAN_DIR=${MAN_DIR:-$(cd "$BATS_TEST_DIRNAME/.." && pwd)/man}

# The demo instance of ri(7) EXAMPLES: tests/lib/common.bash's walkthrough
# instance (clock "env" starting at 2026-11-29T10:00:00Z, fault injection
# on, alice and ledger-reconciler registered), alice's credential in
# RI_CREDENTIAL, and the example ledger's store, created, in STORE.
man_setup() {
	ri_instance || return 1
	export RI_CREDENTIAL=$ALICE STORE=$T/ledger.db
	unset RI_FAULT_DIR
	ledger-admin --store "$STORE" init >/dev/null || return 1
	cd "$T" || return 1
}

# Undo the roff escapes an example may use: \- \(aq \(dq \(ga \(ti \(ha \&
# and \e (a backslash, undone last).
man_examples() {
	awk '
		/^\.SH/ { in_ex = ($0 ~ /^\.SH[ \t]+"?EXAMPLES"?[ \t]*$/); blk = 0; next }
		in_ex && /^\.EX/ { blk = 1; next }
		in_ex && /^\.EE/ { blk = 0; print ""; next }
		blk && /^\.\\"/ { next }
		blk { print }
	' "$1" | sed -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" -e 's/\\(dq/"/g' -e 's/\\(ga/`/g' \
	    -e 's/\\(ti/~/g' -e 's/\\(ha/^/g' -e 's/\\&//g' -e 's/\\e/\\/g'
}

man_script() {
	local line logical="" n=0
	# X || test $? -eq N, X possibly continued over lines: X ends before the
	# spaces, newlines and backslashes that lead to the ||.  Only the tail
	# is rewritten, so X may hold quotes that span lines:
	#   X && __rc=0 || __rc=$?; __expect N LINE "$__rc"
	local re='^(.*[^[:space:]\\])[[:space:]\\]*\|\|[[:space:]]*test[[:space:]]+\$\?[[:space:]]+-eq[[:space:]]+([0-9]+)[[:space:]]*$'

	printf 'set -e -o pipefail\n'
	printf '__expect() { [ "$3" -eq "$1" ] || { echo "man example line $2: expected exit $1, got $3" >&2; exit 1; }; }\n'
	while IFS= read -r line; do
		n=$((n + 1))
		logical+=$line
		if [[ $line == *\\ ]]; then
			logical+=$'\n'
			continue
		fi
		if [[ $logical =~ $re ]]; then
			printf '%s && __rc=0 || __rc=$?; __expect %s %d "$__rc"\n' \
			    "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "$n"
		else
			printf '%s\n' "$logical"
		fi
		logical=""
	done < <(man_examples "$1")
}

man_run() {
	local page=$MAN_DIR/$1

	[ -f "$page" ] || { echo "no page $page"; return 1; }
	man_script "$page" >"$T/example.sh"
	# an example that works on the SQLite file itself (the sqlite3 CLI,
	# journal.db, ri-backup) cannot run against a server (tests/lib/pg.bash)
	local file_word
	if ri_pg_on && file_word=$(grep -oE 'sqlite3|journal\.db|ri-backup' "$T/example.sh" | head -1) &&
	    [ -n "$file_word" ]; then
		skip "sqlite file (man example: $file_word)"
	fi
	if ! grep -qv '^\(set -e -o pipefail\|__expect() .*\)$' "$T/example.sh"; then
		echo "$1: no EXAMPLES to run"
		return 1
	fi
	# a page's examples take seconds; a hang is a failure, not a stuck suite
	if ! (cd "$T" && PS4='+ ' timeout -k 5 ${MAN_EXAMPLE_TIMEOUT:-120} bash -x "$T/example.sh" \
	    </dev/null >"$T/example.out" 2>&1); then
		echo "--- $1: the script that ran"
		cat -n "$T/example.sh"
		echo "--- its output"
		cat "$T/example.out"
		return 1
	fi
}

man_pages_with_examples() {
	grep -l '^\.SH "\{0,1\}EXAMPLES"\{0,1\}[[:space:]]*$' "$MAN_DIR"/*.[157] 2>/dev/null |
	    sed 's|.*/||' | sort
}
