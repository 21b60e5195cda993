#!/usr/bin/env bats
# packaging.bats -- what a packager and a first-time user touch: make
# install/uninstall under DESTDIR and PREFIX, the systemd units and the
# config template (they agree, and systemd-analyze verify passes), the
# demo's output off a terminal and its --keep.
#
# One install serves the file (setup_file): a real one, at a PREFIX of its
# own, with binaries of its own (BINDIR, EXBINDIR, GEN under it) -- the
# tree's bin/ keeps its /usr/local build, which the suites running beside
# this one use; its last test uninstalls it.
#
# test-pg: no -- make install, the installed tree and the first run of a newcomer (SQLite, the default)

bats_require_minimum_version 1.5.0

top=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
RI_BIN=${RI_BIN:-$top/bin}
export PATH="$RI_BIN:$PATH"

# P: the PREFIX; D: the DESTDIR the install stages into; $P is then a
# symbolic link to $D$P, so the paths the installed files name are real
setup_file() {
	P=$BATS_FILE_TMPDIR/p D=$BATS_FILE_TMPDIR/root
	export P D
	make -s -j2 -C "$top" install PREFIX="$P" DESTDIR="$D" BINDIR="$BATS_FILE_TMPDIR/b/bin" \
	    EXBINDIR="$BATS_FILE_TMPDIR/b/ex" GEN="$BATS_FILE_TMPDIR/b/gen" STATIC=0 \
	    >"$BATS_FILE_TMPDIR/install.log" 2>&1 || { cat "$BATS_FILE_TMPDIR/install.log" >&2; return 1; }
	ln -s "$D$P" "$P"
}

setup() {
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/ri-pkg.XXXXXX")
}

teardown() {
	[ -n "${T:-}" ] && rm -rf "$T"
}

@test "make install (PREFIX, DESTDIR) ships the commands, pages, schemas, units, the config template and the example adopter -- no binary under share/doc, never a test tool" {
	r=$D$P
	for c in "$top"/cmd/ri-*.c; do
		n=$(basename "$c" .c)
		[ -x "$r/bin/$n" ] || { echo "missing $n"; false; }
		ls "$r"/share/man/man*/"$n".* >/dev/null || { echo "no page for $n"; false; }
	done
	[ -f "$r/share/man/man7/ri.7" ]
	[ -f "$r/share/man/man5/ri.json.5" ]
	[ -f "$r/share/ri/schemas/common.json" ]
	jq -e .instance "$r/share/ri/ri.json.example" >/dev/null
	[ -f "$r/lib/systemd/system/ri-sweep.timer" ]
	[ -f "$r/lib/systemd/system/ri-sweep.service" ]
	[ -f "$r/share/doc/ri/examples/cron.d/ri-sweep" ]
	[ -f "$r/share/doc/ri/examples/logrotate/ri" ]
	[ -f "$r/share/doc/ri/examples/ledger-probe.c" ]
	[ -x "$r/libexec/ri/ledger-probe" ]
	[ -x "$r/libexec/ri/demo.sh" ]
	[ -f "$r/share/doc/ri/LICENSE" ]
	# issue 44 point 10: no executable, no ELF file under share/doc
	[ -z "$(find "$r/share" -type f -perm /111)" ]
	[ "$(find "$D" -name 'ri-forge' -o -name 'ri-fill' | wc -l)" -eq 0 ]
}

@test "no shipped build can switch a safety mechanism off: the installed commands and programs, and the ones the suites run, read no RI_NC (lib/util/nc.h: only tests/negative/run's -DRI_NC_RUNTIME build does)" {
	r=$D$P
	n=0
	for f in "$r"/bin/ri-* "$r"/libexec/ri/* "$RI_BIN"/ri-*; do
		n=$((n + 1))
		! grep -a -q RI_NC "$f" || { echo "$f can switch a negative control (RI_NC): a -DRI_NC_RUNTIME build"; false; }
	done
	[ "$n" -gt 20 ]
}

@test "issue 44 point 10 (PREFIX): every installed file that names a path names it under PREFIX -- the config template, ri-init --example-config, the units, the cron line, the demo; nothing says /usr/local" {
	r=$D$P
	bad=$(grep -rl -I --exclude='*.md' --exclude=NEWS --exclude-dir=man /usr/local "$r" || true)
	[ -z "$bad" ] || { echo "/usr/local in: $bad"; false; }
	jq -e --arg p "$P" '.kinds.ledger.probe[0] == "\($p)/libexec/ri/ledger-probe"' "$r/share/ri/ri.json.example"
	"$r/bin/ri-init" --example-config | jq -e --arg p "$P" '.kinds.ledger.probe[0] == "\($p)/libexec/ri/ledger-probe"'
	grep -qxF "ExecStart=$P/bin/ri-sweep -c /etc/ri/ri.json" "$r/lib/systemd/system/ri-sweep.service"
	grep -q "^PATH=$P/bin:" "$r/share/doc/ri/examples/cron.d/ri-sweep"
	grep -qxF "	bin=$P/bin examples=\$here" "$r/libexec/ri/demo.sh"
}

@test "issue 44 point 2: the systemd units and the example config agree -- keys, credential and ri.json read-only under /etc/ri, everything a run writes (journal, register, witness) under /var/lib/ri, which StateDirectory= keeps writable under ProtectSystem=strict" {
	cfg=$top/examples/ri.json.example
	unit=$top/examples/systemd/ri-sweep.service
	# what a run writes: the state directory
	for k in journal findings witness; do
		jq -e --arg k "$k" '.[$k] | type == "string" and startswith("/var/lib/ri/")' "$cfg" >/dev/null ||
		    { echo "$k: $(jq -c --arg k "$k" '.[$k]' "$cfg") is not under /var/lib/ri"; false; }
	done
	# what it only reads: the configuration directory
	jq -e '[.integrity_key_file, .seal_key_file, .kinds[].service_identity.credential_file] |
	    all(startswith("/etc/ri/"))' "$cfg"
	grep -qx 'StateDirectory=ri' "$unit"
	grep -qx 'ConfigurationDirectory=ri' "$unit"
	grep -qx 'ProtectSystem=strict' "$unit"
	grep -q '^ExecStart=/usr/local/bin/ri-sweep -c /etc/ri/ri.json$' "$unit"
	# the probe's store: readable, and its directory writable for SQLite's -shm
	store=$(jq -r '.kinds.ledger.probe[2]' "$cfg")
	grep -qx "ReadWritePaths=-$(dirname "$store")" "$unit"
	# the timer starts the service on the config's cadence
	cadence=$(jq -r .instance.reconciliation_cadence "$cfg")
	grep -qx "OnUnitActiveSec=$cadence" "$top/examples/systemd/ri-sweep.timer"
	grep -qx 'Unit=ri-sweep.service' "$top/examples/systemd/ri-sweep.timer"
}

@test "issue 44 point 2: systemd-analyze verify passes the installed units, their commands and their Documentation= pages" {
	command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed"
	u=$P/lib/systemd/system
	run --separate-stderr env MANPATH="$P/share/man" systemd-analyze verify "$u/ri-sweep.service" "$u/ri-sweep.timer"
	[ "$status" -eq 0 ] || { echo "$output $stderr"; false; }
	# a warning is a failure too: systemd-analyze exits 0 past a value it ignores
	[ -z "$output$stderr" ] || { echo "$output $stderr"; false; }
	# and it does catch a unit that cannot run
	sed "s#^ExecStart=$P/bin/ri-sweep#ExecStart=$P/bin/no-such-sweep#" "$u/ri-sweep.service" >"$T/ri-sweep.service"
	run --separate-stderr env MANPATH="$P/share/man" systemd-analyze verify "$T/ri-sweep.service"
	[ "$status" -ne 0 ]
}

@test "the config template passes all five conditions of instance start as shipped (ri-startcheck fails only on the files ri-init has yet to create)" {
	sed "s#/etc/ri#$T#g; s#/var/lib/ri#$T#g" "$top/examples/ri.json.example" >"$T/ri.json"
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

@test "the demo installed: make install's demo.sh runs the installed commands and example programs, from anywhere" {
	cd "$T"
	run --separate-stderr env -i HOME="$T" TMPDIR="$T" PATH=/usr/bin:/bin "$P/libexec/ri/demo.sh"
	[ "$status" -eq 0 ] || { echo "$output $stderr"; false; }
	grep -q '^2.1 *pass' <<<"$output"
}

@test "issue 44 point 10: one version -- every command's --version, every page's .TH, NEWS's newest entry and debian/changelog say the Makefile's VERSION" {
	v=$(sed -n 's/^VERSION *:= *//p' "$top/Makefile")
	[ -n "$v" ]
	for c in "$RI_BIN"/ri-*; do
		[ "$("$c" --version)" = "$(basename "$c") $v" ] || { echo "$c: $("$c" --version)"; false; }
	done
	for p in "$top"/man/*.[157]; do
		grep -m1 '^\.TH' "$p" | grep -qF "\"ri $v\"" || { echo "$p: $(grep -m1 '^\.TH' "$p")"; false; }
	done
	[ "$(grep -m1 -E '^[0-9]+\.[0-9]+\.[0-9]+' "$top/NEWS" | cut -d' ' -f1)" = "$v" ]
	[ "$(head -1 "$top/debian/changelog")" = "ri ($v) unstable; urgency=medium" ]
}

@test "issue 44 point 10: make uninstall removes every file it installed, and every directory of ri's" {
	run make -s -C "$top" uninstall PREFIX="$P" DESTDIR="$D"
	[ "$status" -eq 0 ]
	[ "$(find "$D" -type f | wc -l)" -eq 0 ] || { find "$D" -type f; false; }
	[ -z "$(find "$D" -type d \( -name ri -o -name examples -o -name schemas \))" ] ||
	    { find "$D" -type d; false; }
}
