#!/usr/bin/env bats
# shards.bats -- issue 43: a journal of S shards (docs/SHARDS.md).  Each
# act's records live in the shard a keyed hash of its scope chooses; each
# shard has its own head, chain and tree of scope heads; seals sign a
# Merkle root over every shard's head.  Every rule of the spec holds per
# act, and every tampering a one-shard journal refuses is refused here too.
#
# Spec: Check 8.1.1 (contiguity, per shard), 8.1.3, 8.1.9 (seals);
# capability requirement 1-3 (reads fail closed); INTERFACE third wave
# ("shards", fixed at ri-init).
#
# test-pg: no -- its cases tamper a SQLite file (the PostgreSQL pass runs every suite on 16 shards)
# is built (docs/SHARDS.md, status)

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/lib/common"
load "$BATS_TEST_DIRNAME/lib/acts"

setup() {
	ri_pg_on && skip "more than one shard on PostgreSQL: not built yet (docs/SHARDS.md)"
	RI_INIT_CFG='.shards = 4' ri_instance
	ri_cfg '.kinds.ledger.repeatable = false'
	export RI_CREDENTIAL=$ALICE
	L=$T/ledger.db
	ledger-admin --store "$L" init >/dev/null
}

teardown() {
	[ -n "${T:-}" ] && rm -rf "$T"
}

# of_k KEY -- how many disclosures the ledger store holds for act KEY
of_k() { sqlite3 "$L" "SELECT count(*) FROM disclosures WHERE subject = '$1'"; }

# shard_of KEY -- the shard act KEY's records are in
shard_of() { sqlite3 "$T/journal.db" "SELECT DISTINCT shard FROM records WHERE act_key = '$1'"; }

# a key of each of two different shards other than 0, landed
two_shards() {
	local k
	for k in a1 a2 a3 a4 a5 a6 a7 a8 a9 a10 a11 a12; do
		land "$k"
	done
	S1=$(sqlite3 "$T/journal.db" "SELECT act_key FROM records WHERE shard > 0 GROUP BY act_key
	    ORDER BY shard, act_key LIMIT 1")
	S2=$(sqlite3 "$T/journal.db" "SELECT act_key FROM records WHERE shard > 0 AND shard !=
	    (SELECT shard FROM records WHERE act_key = '$S1' LIMIT 1) ORDER BY seq DESC LIMIT 1")
	[ -n "$S1" ] && [ -n "$S2" ] || { echo "twelve acts landed in fewer than three shards"; return 1; }
}

@test "issue 43: \"shards\": 4 -- every act's records in one keyed shard, each shard's head under its MAC; reads, the sweep's seal over every shard's head, and ri-audit (with and without the public key) all pass" {
	[ "$(sqlite3 "$T/journal.db" "SELECT v FROM meta WHERE k = 'shards'")" = 4 ]
	[ "$(sqlite3 "$T/journal.db" "SELECT count(*) FROM heads")" -eq 4 ]
	two_shards
	# an act is in one shard, every invocation of it; the shards are used
	for k in a1 a2 a3 a4 a5 a6; do
		[ "$(shard_of "$k" | wc -l)" -eq 1 ]
	done
	[ "$(sqlite3 "$T/journal.db" "SELECT count(DISTINCT shard) FROM records")" -ge 3 ]
	# the registry's records (kind audit) are the instance's: shard 0
	[ "$(sqlite3 "$T/journal.db" "SELECT count(*) FROM records WHERE kind = 'audit' AND shard != 0")" -eq 0 ]
	# each shard's head names its own newest record (seqs one allocator's)
	[ "$(sqlite3 "$T/journal.db" "SELECT count(*) FROM heads h WHERE h.last_seq !=
	    (SELECT coalesce(max(seq), 0) FROM records r WHERE r.shard = h.shard)")" -eq 0 ]
	[ "$(sqlite3 "$T/journal.db" "SELECT max(seq) = count(*) FROM records")" -eq 1 ]
	# reads: by act, by invocation id, by event id
	run --separate-stderr ri-read --kind ledger --act-key "$S1"
	[ "$status" -eq 0 ] || { echo "$output $stderr"; false; }
	inv=$(sqlite3 "$T/journal.db" "SELECT invocation_id FROM records WHERE act_key = '$S2' LIMIT 1")
	run --separate-stderr ri-read --invocation-id "$inv"
	[ "$status" -eq 0 ] || { echo "$output $stderr"; false; }
	[ "$(jq '.invocations[0].records | length' <<<"$output")" -eq 2 ]
	ev=$(sqlite3 "$T/journal.db" "SELECT event_id FROM records WHERE act_key = '$S2' LIMIT 1")
	run --separate-stderr ri-read --event-id "$ev"
	[ "$status" -eq 0 ] || { echo "$output $stderr"; false; }
	# an invocation no shard holds is proved absent in every shard's tree
	run --separate-stderr ri-read --invocation-id inv_nosuch
	[ "$status" -eq 17 ] || { echo "$status $output $stderr"; false; }
	# the act already landed: the non-repeatable act does not run again
	run --separate-stderr run_job a1
	[ "$(disclosures)" -eq 12 ]
	# the seal signs the root over every shard's head
	ri_at 40
	sweep_ran >/dev/null
	seal=$(sqlite3 "$T/journal.db" "SELECT payload FROM records WHERE action_ref = 'audit.sealed'
	    ORDER BY seq DESC LIMIT 1")
	[ "$(jq '.shards' <<<"$seal")" -eq 4 ]
	[ "$(jq '.heads | length' <<<"$seal")" -eq 4 ]
	run --separate-stderr ri-audit --public-key "$T/seal.key.pub"
	[ "$status" -eq 0 ] || { echo "$output $stderr"; false; }
	jq -e '.checks[] | select(.check == "8.1.9") | .status == "pass"' <<<"$output" >/dev/null
	run --separate-stderr ri-audit
	[ "$status" -eq 0 ] || { echo "$output $stderr"; false; }
	# a rebuild of the derived state keeps every shard whole
	run --separate-stderr ri-sweep --rebuild
	[ "$status" -eq 0 ] || { echo "$output $stderr"; false; }
	run --separate-stderr ri-audit --public-key "$T/seal.key.pub"
	[ "$status" -eq 0 ] || { echo "$output $stderr"; false; }
}

@test "issue 43 (Check 8.1.1 per shard): a shard's newest record deleted, or a record of one shard's chain moved into another's -- readers and writers fail closed, ri-audit names it" {
	two_shards
	s1=$(shard_of "$S1")
	checkpoint
	cp "$T/journal.db" "$T/before.db"
	# the newest record of S1's shard deleted: its head names a record
	# the rows no longer hold
	attacker_sql "DELETE FROM records WHERE seq = (SELECT max(seq) FROM records WHERE shard = $s1)"
	last=$(sqlite3 "$T/journal.db" "SELECT act_key FROM records WHERE shard = $s1 ORDER BY seq DESC LIMIT 1")
	readers_writers_closed "$S1"
	run --separate-stderr ri-audit
	[ "$status" -eq 1 ]
	jq -e '.checks[] | select(.check == "8.1.1") | .status == "fail"' <<<"$output" >/dev/null
	# a record moved to another shard: its header binds the shard, so the
	# link and the routing both fail
	rm -f "$T"/journal.db-wal "$T"/journal.db-shm
	cp "$T/before.db" "$T/journal.db"
	s2=$(shard_of "$S2")
	attacker_sql "UPDATE records SET shard = $s2 WHERE seq = (SELECT max(seq) FROM records WHERE act_key = '$S1')"
	readers_writers_closed "$S1"
	run --separate-stderr ri-audit
	[ "$status" -eq 1 ]
	jq -e '.checks[] | select(.check == "8.1.1") | .status == "fail"' <<<"$output" >/dev/null
	[ -n "$last" ]
}

@test "issue 43, keyless (ri-audit --public-key alone, the integrity key gone): a clean journal of four shards passes; a record of one shard's chain moved into another's still fails 8.1.2, and moved and re-chained whole behind a seal fails 8.1.9 -- without the key no act is routed to its shard, but each chain's links and hashes are public and the seal signed every shard's head" {
	two_shards
	s1=$(shard_of "$S1")
	s2=$(shard_of "$S2")
	ri_at 40
	sweep_ran >/dev/null
	checkpoint
	cp "$T/journal.db" "$T/before.db"
	seq=$(sqlite3 "$T/journal.db" "SELECT max(seq) FROM records WHERE act_key = '$S1'")
	# an outside auditor: the journal, the witness and the public key
	mv "$T/journal.key" "$T/journal.key.away"
	run --separate-stderr ri-audit --public-key "$T/seal.key.pub"
	[ "$status" -eq 0 ] || { echo "$output $stderr"; false; }
	jq -e '[.checks[] | select(.check == "8.1.1" or .check == "8.1.9") | .status] == ["pass", "pass"]' \
	    <<<"$output" >/dev/null
	jq -e '.checks[] | select(.check == "8.1.3") | .status == "not-applicable"' <<<"$output" >/dev/null
	# S1's newest record put in S2's shard: its header binds its shard, and
	# each chain's next record links to the one before it in that chain
	attacker_sql "UPDATE records SET shard = $s2 WHERE seq = (SELECT max(seq) FROM records WHERE act_key = '$S1')"
	[ "$(shard_of "$S1" | sort -n | tr '\n' ' ')" = "$(printf '%s\n' "$s1" "$s2" | sort -n | tr '\n' ' ')" ]
	run --separate-stderr ri-audit --public-key "$T/seal.key.pub"
	[ "$status" -eq 1 ] || { echo "$output $stderr"; false; }
	jq -e '.checks[] | select(.check == "8.1.2") | .status == "fail"' <<<"$output" >/dev/null
	# named: the moved record itself (its hash no longer recomputes)
	jq -e --arg k "$S1" '.checks[] | select(.check == "8.1.2") | [.failures[].act_key] | index($k) != null' \
	    <<<"$output" >/dev/null
	# moved and re-chained whole, as a keyless attacker can: its hash and
	# every later link of both shards' chains recomputed (ri-rechain).  No
	# key routes it, but the seal after it signed both shards' heads as
	# they were
	rm -f "$T"/journal.db-wal "$T"/journal.db-shm
	cp "$T/before.db" "$T/journal.db"
	"$RI_TOOLS/ri-rechain" "$T/journal.db" --shard "$seq" "$s2" >/dev/null
	[ "$(sqlite3 "$T/journal.db" "SELECT shard FROM records WHERE seq = $seq")" -eq "$s2" ]
	run --separate-stderr ri-audit --public-key "$T/seal.key.pub"
	[ "$status" -eq 1 ] || { echo "$output $stderr"; false; }
	jq -e '.checks[] | select(.check == "8.1.2") | .status == "pass"' <<<"$output" >/dev/null
	jq -e '.checks[] | select(.check == "8.1.9") | .status == "fail"' <<<"$output" >/dev/null
}

@test "issue 43 (seals over shards, 8.1.9): one shard rolled back behind a seal -- its head and rows put back to an older state that verifies on its own -- fails the seal's check in ri-audit, and the next seal refuses it" {
	# no witness: the seals alone stand between the journal and a shard
	# put back (with one, its lines say so first: the test below)
	ri_cfg '.witness = null'
	two_shards
	s1=$(shard_of "$S1")
	checkpoint
	cp "$T/journal.db" "$T/old.db"
	# acts land until one is in shard s1's chain (the shard choice is
	# keyed: a new instance's acts fall anywhere)
	for i in $(seq 1 60); do
		land "b$i"
		[ "$(shard_of "b$i")" = "$s1" ] && break
	done
	ri_at 40
	sweep_ran >/dev/null
	ri_at 41
	# the rows of shard s1 newer than the copy, and its head, put back
	n_old=$(sqlite3 "$T/old.db" "SELECT max(seq) FROM records WHERE shard = $s1")
	newer=$(sqlite3 "$T/journal.db" "SELECT count(*) FROM records WHERE shard = $s1 AND seq > $n_old")
	[ "$newer" -gt 0 ]
	old_head=$(sqlite3 "$T/old.db" "SELECT quote(last_seq) || ',' || quote(root) || ',' || quote(open_count) || ','
	    || quote(open_acc) || ',' || quote(sealed_seq) || ',' || quote(grants) || ',' || quote(mac)
	    FROM heads WHERE shard = $s1")
	# its tree's nodes too (shard s1's ids begin 0xff, s1): a faithful
	# rollback, which every record and head of the shard verifies
	pre=$(printf "X'FF%02X'" "$s1")
	attacker_sql "ATTACH '$T/old.db' AS old;
	    DELETE FROM records WHERE shard = $s1 AND seq > $n_old;
	    DELETE FROM heads WHERE shard = $s1; INSERT INTO heads VALUES ($s1, $old_head);
	    DELETE FROM nodes WHERE substr(id, 1, 2) = $pre;
	    INSERT INTO nodes SELECT * FROM old.nodes WHERE substr(id, 1, 2) = $pre;"
	run --separate-stderr ri-audit --public-key "$T/seal.key.pub"
	[ "$status" -eq 1 ]
	jq -e '.checks[] | select(.check == "8.1.9") | .status == "fail"' <<<"$output" >/dev/null
	# and the next sweep's seal refuses a shard behind the head the newest
	# seal signed for it: fail closed, nothing sealed over it
	n=$(sqlite3 "$T/journal.db" "SELECT max(seq) FROM records")
	ri_at 100
	run --separate-stderr ri-sweep
	[ "$status" -eq 15 ] || { echo "ri-sweep exited $status: $output $stderr"; false; }
	grep -q "behind the head the newest seal signed" <<<"$stderr$output"
	[ "$(records "action_ref = 'audit.sealed' AND seq > $n")" -eq 0 ]
}

@test "issue 39 with shards (freshness): a copy put back after acts landed in several shards -- a read or a run of an act of ANY shard fails closed, not only of the shard the witness's newest line names; none runs again" {
	land a1
	land a2
	checkpoint
	cp "$T/journal.db" "$T/before.db"
	for k in b1 b2 b3 b4 b5 b6 b7 b8; do
		land "$k"
	done
	# the witness's newest line names b8's outcome; find an act landed
	# after the copy in another shard
	s8=$(shard_of b8)
	other=$(sqlite3 "$T/journal.db" "SELECT act_key FROM records WHERE act_key GLOB 'b[0-9]*' AND shard != $s8
	    ORDER BY seq LIMIT 1")
	[ -n "$other" ] || skip "every b act landed in b8's shard"
	rm -f "$T"/journal.db-wal "$T"/journal.db-shm
	cp "$T/before.db" "$T/journal.db"
	[ "$(records "act_key = '$other'")" -eq 0 ]
	readers_writers_closed "$other"
	[ "$(of_k "$other")" -eq 1 ]
}

@test "issue 39 with shards, one shard alone put back in time: its rows, head and tree spliced from an older copy while the witness's newest line names another shard's record -- the lost act's read and run fail closed, it never runs again" {
	two_shards
	s1=$(shard_of "$S1")
	checkpoint
	cp "$T/journal.db" "$T/old.db"
	n_old=$(sqlite3 "$T/old.db" "SELECT max(seq) FROM records")
	# an act lands in shard s1 (x), then one in another shard (y): the
	# witness's newest line is y's
	x= y=
	for i in $(seq 1 60); do
		land "c$i"
		if [ -z "$x" ] && [ "$(shard_of "c$i")" = "$s1" ]; then
			x=c$i
		elif [ -n "$x" ] && [ "$(shard_of "c$i")" != "$s1" ]; then
			y=c$i
			break
		fi
	done
	[ -n "$x" ] && [ -n "$y" ]
	[ "$(tail -n 1 "$T/journal.key.witness" | jq -r .act_key)" = "$y" ]
	pre=$(printf "X'FF%02X'" "$s1")
	old_head=$(sqlite3 "$T/old.db" "SELECT quote(last_seq) || ',' || quote(root) || ',' || quote(open_count) || ','
	    || quote(open_acc) || ',' || quote(sealed_seq) || ',' || quote(grants) || ',' || quote(mac)
	    FROM heads WHERE shard = $s1")
	attacker_sql "ATTACH '$T/old.db' AS old;
	    DELETE FROM records WHERE shard = $s1 AND seq > $n_old;
	    DELETE FROM heads WHERE shard = $s1; INSERT INTO heads VALUES ($s1, $old_head);
	    DELETE FROM nodes WHERE substr(id, 1, 2) = $pre;
	    INSERT INTO nodes SELECT * FROM old.nodes WHERE substr(id, 1, 2) = $pre;"
	[ "$(records "act_key = '$x'")" -eq 0 ]
	[ "$(of_k "$x")" -eq 1 ]
	readers_writers_closed "$x"
	[ "$(of_k "$x")" -eq 1 ]
}

@test "issue 43: \"shards\" is fixed at ri-init: 1..256, anything else a config error (78)" {
	for bad in 0 257 '"4"' 1.5; do
		ri_cfg ".shards = $bad"
		run --separate-stderr ri-read --kind ledger --act-key k
		[ "$status" -eq 78 ] || { echo "shards $bad: $status $stderr"; false; }
		grep -q shards <<<"$stderr"
	done
}
