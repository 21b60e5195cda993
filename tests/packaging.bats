#!/usr/bin/env bats
# packaging.bats -- what a packager and a first-time user touch: make
# install/uninstall under DESTDIR, the demo's output off a terminal and its
# --keep, the config template.

bats_require_minimum_version 1.5.0

top=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
RI_BIN=${RI_BIN:-$top/bin}
export PATH="$RI_BIN:$PATH"

setup() {
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/ri-pkg.XXXXXX")
}

teardown() {
	[ -n "${T:-}" ] && rm -rf "$T"
}

@test "make install (PREFIX, DESTDIR) ships the commands, pages, schemas, examples, units and the config template, never a test tool; make uninstall removes every file it installed" {
	run make -s -C "$top" install PREFIX=/usr DESTDIR="$T/root"
	[ "$status" -eq 0 ]
	r=$T/root/usr
	for c in "$top"/cmd/ri-*.c; do
		n=$(basename "$c" .c)
		[ -x "$r/bin/$n" ] || { echo "missing $n"; false; }
		ls "$r"/share/man/man*/"$n".* >/dev/null || { echo "no page for $n"; false; }
	done
	[ -f "$r/share/man/man7/ri.7" ]
	[ -f "$r/share/man/man5/ri.json.5" ]
	[ -f "$r/share/ri/schemas/common.json" ]
	jq -e .instance "$r/share/ri/ri.json.example" >/dev/null
	[ -f "$r/share/doc/ri/examples/systemd/ri-sweep.timer" ]
	[ -f "$r/share/doc/ri/examples/cron.d/ri-sweep" ]
	[ -f "$r/share/doc/ri/examples/logrotate/ri" ]
	[ -x "$r/share/doc/ri/examples/bin/ledger-probe" ]
	[ -f "$r/share/doc/ri/LICENSE" ]
	[ "$(find "$T/root" -name 'ri-forge' -o -name 'ri-fill' | wc -l)" -eq 0 ]
	run make -s -C "$top" uninstall PREFIX=/usr DESTDIR="$T/root"
	[ "$status" -eq 0 ]
	[ "$(find "$T/root" -type f | wc -l)" -eq 0 ]
}

@test "the config template passes all five conditions of instance start as shipped (ri-startcheck fails only on the files ri-init has yet to create)" {
	sed "s#/etc/ri/private#$T#g; s#/var/lib/ri#$T#g" "$top/examples/ri.json.example" >"$T/ri.json"
	run --separate-stderr ri-startcheck -c "$T/ri.json" --json
	[ "$status" -eq 1 ]
	jq -e '[.kinds[].conditions[].pass] | all' <<<"$output" >/dev/null
}

@test "the demo: plain text when its output is not a terminal (no escape sequences), ends with the auditor's report, and --keep leaves the instance" {
	run --separate-stderr env TMPDIR="$T" "$top/examples/demo.sh" --keep
	[ "$status" -eq 0 ]
	! grep -q $'\033' <<<"$output" || false
	grep -q '^2.1 *pass' <<<"$output"
	kept=$(ls -d "$T"/ri-demo.* | head -1)
	[ -f "$kept/journal.db" ]
	run "$top/examples/demo.sh" --nonsense
	[ "$status" -eq 64 ]
}
