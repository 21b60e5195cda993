#!/usr/bin/env bats
# shared.bats -- one instance, several Unix users (issue 44, point 6).
# Actors are not Unix users: an actor is a name and a credential in the
# journal, and any Unix user who holds the credential acts as it.  What a
# Unix user needs is the instance's files: the keys readable -- 0600 and
# its own, or 0640 and shared with a dedicated group (INTERFACE, third
# wave), never wider -- and the journal, the register and the witness
# writable.  The second-user test runs a real second user when the suite
# runs as root (useradd, removed in teardown), and is skipped otherwise.
#
# test-pg: no -- the modes of an instance's files and the Unix users who share them (SQLite files)

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"

SECOND=
GROUP=

teardown() {
	if [ -n "$SECOND" ]; then userdel "$SECOND" 2>/dev/null || true; fi
	if [ -n "$GROUP" ]; then groupdel "$GROUP" 2>/dev/null || true; fi
	if [ -n "${T:-}" ] && [ -d "$T" ]; then rm -rf "$T"; fi
}

@test "issue 44 point 6 (Instance start 3): an instance key may be 0640, shared with a group, as well as 0600 -- the writers start and ri-startcheck names the group; anything wider (0660, 0644, 0604) is refused (78) naming the fix" {
	ri_instance
	export RI_CREDENTIAL=$ALICE
	ri_pg_on && skip "the modes of the instance's key files: the same on either backend, run once"
	chmod 0640 "$T/journal.key" "$T/seal.key"
	run --separate-stderr ri-run --kind ledger --act-key m1 --actor alice -- true
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	run --separate-stderr ri-startcheck --json
	jq -e '[.capabilities[] | select(.check == "integrity-key" or .check == "seal-key") |
	    .pass and (.message | contains("shared with group"))] | length == 2 and all' <<<"$output"
	for mode in 0660 0644 0604 0650; do
		chmod "$mode" "$T/journal.key"
		run --separate-stderr ri-run --kind ledger --act-key m2 --actor alice -- touch "$T/ran"
		[ "$status" -eq 78 ] || { echo "$mode: exit $status"; false; }
		[[ "$stderr" == *"journal.key: mode ${mode#0} is wider than group read (0640); chmod 600 it, or 640 with a group of its own"* ]]
		[ ! -e "$T/ran" ]
	done
	chmod 0640 "$T/journal.key"
	chmod 0660 "$T/seal.key"
	run --separate-stderr ri-open --kind ledger --act-key m3 --actor alice
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"seal key $T/seal.key: mode 660 is wider than group read (0640)"* ]]
	# a credential is a person's: 0640 is still refused
	chmod 0640 "$T/seal.key"
	printf '%s\n' "$ALICE" >"$T/alice.cred"
	chmod 0640 "$T/alice.cred"
	RI_CREDENTIAL= RI_CREDENTIAL_FILE=$T/alice.cred run --separate-stderr ri-open --kind ledger --act-key m3 --actor alice
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"alice.cred: mode 640 is group- or world-accessible; chmod 600 it"* ]]
}

@test "issue 44 point 6: a second Unix user, in the keys' dedicated group, runs a wrapped job on the instance as the actor alice -- the journal records alice, whoever ran it" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to add a throwaway Unix user and group (useradd, groupadd)"
	command -v useradd >/dev/null && command -v runuser >/dev/null || skip "needs useradd and runuser"
	ri_instance
	ri_pg_on && skip "the instance's files and their modes: SQLite only"
	GROUP=ri44g$$
	SECOND=ri44u$$
	groupadd "$GROUP"
	useradd -M -N -g "$GROUP" -s /bin/sh "$SECOND"
	# the instance's directory and files: the group's, writable; the keys
	# its, readable (0640); every path above must be searchable
	chgrp -R "$GROUP" "$T"
	chmod 2770 "$T"
	chmod 0660 "$T"/journal.db* "$T"/findings.db* "$T"/journal.key.witness
	chmod 0640 "$T/journal.key" "$T/seal.key" "$T/ri.json"
	for d in "$(dirname "$T")" "$RI_BIN" "$RI_EXAMPLES"; do
		runuser -u "$SECOND" -- test -x "$d" || skip "$d is not searchable by a second user"
	done
	# the second user holds alice's credential: it acts as alice
	run --separate-stderr runuser -u "$SECOND" -- env PATH="$PATH" RI_CONFIG="$RI_CONFIG" RI_NOW="$RI_NOW" \
	    RI_CREDENTIAL="$ALICE" ri-run --kind ledger --act-key shared/1 --actor alice -- \
	    sh -c 'printf "{\"unix_user\":\"%s\"}" "$(id -un)" >&3'
	[ "$status" -eq 0 ] || { echo "exit $status: $output $stderr"; false; }
	ri-read --kind ledger --act-key shared/1 | jq -e --arg u "$SECOND" '.invocations[0] |
	    .state == "closed" and .records[0].actor_ref == "alice" and .records[-1].payload.data.unix_user == $u'
	# and root, the first user, reads and audits it as one journal
	ri-audit >/dev/null
	# a key wider than group read stops the second user too, naming the fix
	chmod 0660 "$T/journal.key"
	run --separate-stderr runuser -u "$SECOND" -- env PATH="$PATH" RI_CONFIG="$RI_CONFIG" RI_NOW="$RI_NOW" \
	    RI_CREDENTIAL="$ALICE" ri-run --kind ledger --act-key shared/2 --actor alice -- true
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"wider than group read (0640)"* ]]
	# a key owned by another user (neither the caller nor root) is refused
	chmod 0640 "$T/journal.key"
	chown "$SECOND" "$T/journal.key"
	run --separate-stderr ri-open --kind ledger --act-key shared/3 --actor alice
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"journal.key: owned by uid $(id -u "$SECOND"), not by the caller (uid 0) nor by root"* ]]
}
