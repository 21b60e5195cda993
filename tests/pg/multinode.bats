#!/usr/bin/env bats
# multinode.bats -- one instance on PostgreSQL shared by two "hosts" (issue
# 13): two configs in two directories, each with its own copy of the keys,
# one journal database -- which holds the one findings register every host
# writes and reads (issue 41 point 5) -- and one witness (a database of its
# own the journal's role cannot write, issue 39).  Runs only
# under tests/pg/run (make test-pg), which starts the server and exports
# RI_TEST_PG_HOST, RI_TEST_PG_DATA and PGBIN.
# test-pg: alone -- its tests tagged pg:alone act on the server every suite
# shares (a restart) or read what every session does (pg_stat_activity,
# pg_locks: another suite's backend would be taken for this test's), so
# tests/pg/run runs them after the others, by themselves; the file's other
# tests run beside the other suites.
# test-pg-pooler: yes -- tests/pg/run runs the whole file once more through
# PgBouncer in transaction pooling mode (issue 43, pooler-ready): several
# hosts of one instance, each process of each a client of the pooler

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/../lib/common"
load "$BATS_TEST_DIRNAME/../lib/acts"
load "$BATS_TEST_DIRNAME/../lib/sweep"

setup() {
	ri_pg_on || skip "needs tests/pg/run (a PostgreSQL server)"
}

teardown() {
	if [ -n "${T:-}" ] && [ -d "$T" ]; then
		rm -rf "$T"
	fi
}

# host_b -- a second host of the instance under $T/b: the same journal,
# witness, findings register and keys, its own config directory
host_b() {
	B=$T/b
	mkdir -p "$B"
	cp "$T/journal.key" "$T/seal.key" "$T/seal.key.pub" "$T/reconciler.cred" "$B/"
	copy_local_register "$B"
	cp "$RI_CONFIG" "$B/ri.json"     # its paths are relative: B's own files
	BCFG=$B/ri.json
	export BCFG
}

# copy_local_register DIR -- a copy of the host-local findings register file
# the config names, were there one: there is none on PostgreSQL, whose
# register is the journal database's (issue 41 point 5); a build that
# keeps it per host (RI_NC_FINDINGS_PER_HOST) gives each host its own
copy_local_register() {
	local f
	f=$(jq -r .findings "$RI_CONFIG")
	if [ -e "$T/$f" ]; then cp "$T/$f" "$1/$f"; fi
}

# as_b CMD... -- run a command as host B
as_b() {
	RI_CONFIG=$BCFG "$@"
}

sql() {
	ri_pg_sql "$RI_CONFIG" "$1"
}

# pause_point POINT -- arm a pause (lib/util/fault.c): the FIFO the paused
# process blocks on
pause_point() {
	export RI_FAULT_DIR=$T/faults
	mkdir -p "$RI_FAULT_DIR"
	mkfifo "$RI_FAULT_DIR/$1"
}

# reached POINT -- wait (at most 60 s) until a process paused at POINT
reached() {
	local i
	for i in $(seq 1 1200); do
		[ -e "$RI_FAULT_DIR/$1.reached" ] && return 0
		sleep 0.05
	done
	return 1
}

# wait_backend_in_tx -- wait until a backend of this schema's user is idle
# in a transaction (a writer paused with its locks held); prints its pid
wait_backend_in_tx() {
	local pid i
	for i in $(seq 1 200); do
		pid=$(sql "SELECT pid FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'
		    AND pid <> pg_backend_pid() LIMIT 1")
		if [ -n "$pid" ]; then
			echo "$pid"
			return 0
		fi
		sleep 0.05
	done
	return 1
}

@test "issue 13, two hosts: racing Opens on one act from two hosts land exactly one intent per act; every loser got 12 or 14" {
	ri_instance
	host_b
	# --wait 1: the loser's take waits a second for the winner's section
	# (open step 2.2: a shorter wait than the lease is lawful), not the
	# winner's whole 30 s lease -- six races cost 190 s of CI that way
	for k in 1 2 3 4 5 6; do
		open_req "race$k" | ri-open --wait 1 >"$T/a$k" 2>/dev/null &
		pa=$!
		open_req "race$k" | as_b ri-open --wait 1 >"$T/b$k" 2>/dev/null &
		pb=$!
		ra=0 rb=0
		wait "$pa" || ra=$?
		wait "$pb" || rb=$?
		# exactly one of the two was granted the act
		[ $(( (ra == 0) + (rb == 0) )) -eq 1 ]
		[ "$ra" -eq 0 ] || [ "$ra" -eq 12 ] || [ "$ra" -eq 14 ]
		[ "$rb" -eq 0 ] || [ "$rb" -eq 12 ] || [ "$rb" -eq 14 ]
		[ "$(records "kind = 'ledger' AND act_key = 'race$k' AND role = 1")" -eq 1 ]
	done
	[ "$(sql "SELECT count(*) FROM open_intents")" -eq 6 ]
	run ri-audit
	[ "$status" -eq 0 ]
	run as_b ri-audit
	[ "$status" -eq 0 ]
}

@test "issue 13, two hosts: 2 hosts x 2 processes x 15 open+close on one act never hold two open intents at once; every close of a granted open landed" {
	ri_instance
	host_b
	worker() {
		local i a rc
		for i in $(seq 1 15); do
			a=$(open_req same | RI_CONFIG=$1 ri-open 2>/dev/null) && rc=0 || rc=$?
			echo "open $rc"
			if [ "$rc" -eq 0 ]; then
				close_req "$a" | RI_CONFIG=$1 ri-close >/dev/null 2>&1 && rc=0 || rc=$?
				echo "close $rc"
			fi
		done >"$2"
	}
	worker "$RI_CONFIG" "$T/w1" & p1=$!
	worker "$RI_CONFIG" "$T/w2" & p2=$!
	worker "$BCFG" "$T/w3" & p3=$!
	worker "$BCFG" "$T/w4" & p4=$!
	wait $p1 $p2 $p3 $p4
	[ -z "$(cat "$T"/w? | grep -v -E '^(open (0|12|14)|close 0)$' || true)" ]
	opens=$(cat "$T"/w? | grep -c '^open 0$')
	[ "$opens" -ge 1 ]
	[ "$(records "role = 1 AND act_key = 'same'")" -eq "$opens" ]
	[ "$(sql "SELECT count(*) FROM open_intents")" -eq 0 ]
	run ri-audit
	[ "$status" -eq 0 ]
}

@test "issue 43, two hosts race 16 shards: 2 hosts x 2 processes x 12 acts each on distinct act keys -- every open and close lands (0), the acts spread over the shards, every shard's chain, head and tree verify (ri-audit clean), and a sweep finds nothing to do" {
	ri_instance
	host_b
	[ "$(ri_shards)" -eq "${RI_TEST_SHARDS:-16}" ]
	worker() {
		local i a rc
		for i in $(seq 1 12); do
			a=$(open_req "$3-$i" | RI_CONFIG=$1 ri-open 2>>"$2.err") && rc=0 || rc=$?
			echo "open $rc"
			if [ "$rc" -eq 0 ]; then
				close_req "$a" | RI_CONFIG=$1 ri-close >/dev/null 2>>"$2.err" && rc=0 || rc=$?
				echo "close $rc"
			fi
		done >"$2"
	}
	worker "$RI_CONFIG" "$T/w1" a1 & p1=$!
	worker "$RI_CONFIG" "$T/w2" a2 & p2=$!
	worker "$BCFG" "$T/w3" b1 & p3=$!
	worker "$BCFG" "$T/w4" b2 & p4=$!
	wait $p1 $p2 $p3 $p4
	[ "$(cat "$T"/w? | grep -c -E '^(open|close) 0$')" -eq 96 ] || { cat "$T"/w?.err; false; }
	[ "$(records "kind = 'ledger' AND role = 1")" -eq 48 ]
	[ "$(sql "SELECT count(*) FROM open_intents")" -eq 0 ]
	# 48 acts over 16 shards: most shards hold some (the pooled pass: one)
	[ "$(ri_shards)" -eq 1 ] || [ "$(jsql "SELECT count(DISTINCT shard) FROM records WHERE kind = 'ledger'")" -ge 8 ]
	run ri-audit
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run ri-sweep
	[ "$status" -eq 0 ]
}

@test "issue 13, server time: a host whose clock is 1 h ahead (libfaketime) stamps recorded_at and its lease expiry from the server's clock" {
	[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || skip "libfaketime (Debian faketime) not installed"
	ri_instance
	ri_cfg '.clock = "system"'
	host_b
	unset RI_NOW
	server_ms() { sql "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"; }
	before=$(server_ms)
	a=$(open_req skew | LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 FAKETIME="+1h" \
	    FAKETIME_DONT_FAKE_MONOTONIC=1 RI_CONFIG=$BCFG ri-open)
	after=$(server_ms)
	# the host's own clock is an hour ahead ...
	[ "$(LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 FAKETIME="+1h" date +%s)" -gt $(( after / 1000 + 3000 )) ]
	# ... but the intent's recorded_at is the server's
	at=$(sql "SELECT recorded_at FROM records WHERE role = 1 AND act_key = 'skew'")
	[ "$at" -ge "$before" ]
	[ "$at" -le "$after" ]
	# and so is the lease: the server's now + the lease (completion_bound 30 s)
	exp=$(sql "SELECT expires_at FROM leases WHERE act_key = 'skew'")
	[ "$exp" -ge $(( before + 30000 )) ]
	[ "$exp" -le $(( after + 30000 )) ]
	jq -e '.fencing_token >= 1' <<<"$a"
}

# bats test_tags=pg:alone
@test "issue 13, failure mapping: the backend killed mid-append (pg_terminate_backend, locks held, COMMIT not sent) -> recording-failure(intent) 20 after the read-back; nothing landed, nothing lost, the act opens again" {
	ri_instance
	pause_point open.intent.locked
	n0=$(records)
	open_req kill1 | RI_FAULT=open.intent.locked=pause ri-open >"$T/out" 2>"$T/err" &
	p=$!
	reached open.intent.locked
	pid=$(wait_backend_in_tx)
	[ -n "$pid" ]
	# (the server may have ended it first: the write's budget, 1 s here, is
	# its idle_in_transaction_session_timeout -- either way it is gone)
	sql "SELECT pg_terminate_backend($pid)" >/dev/null 2>&1 || true
	[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid")" -eq 0 ] ||
	    { sleep 0.5; [ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid")" -eq 0 ]; }
	# the writer resumes and sends its COMMIT to a dead session
	echo go >"$RI_FAULT_DIR/open.intent.locked"
	rc=0
	wait "$p" || rc=$?
	[ "$rc" -eq 20 ]
	jq -e '.refused == "recording-failure"' "$T/out"
	grep -q "reply was lost" "$T/err"
	# nothing landed: the server rolled the transaction back
	[ "$(records)" -eq "$n0" ]
	[ "$(records "act_key = 'kill1'")" -eq 0 ]
	# and the act is free again
	open_req kill1 | ri-open >/dev/null
	[ "$(records "act_key = 'kill1' AND role = 1")" -eq 1 ]
	run ri-audit
	[ "$status" -eq 0 ]
}

@test "issue 13, journal fence 3: a writer paused past its lease and its write's terminus cannot land -- the server ends the stalled transaction (idle_in_transaction_session_timeout) and refuses a late COMMIT (ri_fence_check)" {
	ri_instance fast
	ri_cfg '.clock = "system"'
	unset RI_NOW
	pause_point open.intent.locked
	n0=$(records)
	open_req late1 | RI_FAULT=open.intent.locked=pause ri-open >"$T/out" 2>"$T/err" &
	p=$!
	reached open.intent.locked
	# past the lease (completion_bound 3 s) and the write's budget (300 ms)
	sleep 3.5
	echo go >"$RI_FAULT_DIR/open.intent.locked"
	rc=0
	wait "$p" || rc=$?
	[ "$rc" -ne 0 ]
	[ "$(records)" -eq "$n0" ]
	[ "$(records "act_key = 'late1'")" -eq 0 ]
	# the server's own check at COMMIT: a transaction whose fence has
	# passed is refused even when its statements all ran
	ri_pg_sql "$RI_CONFIG" "BEGIN;
	    SELECT set_config('ri.fence', '{\"kind\":\"ledger\",\"act_key\":\"late1\",\"holder\":\"nobody\",\"allowance\":0,\"until\":0}', true);
	    INSERT INTO records VALUES (1000000, 'evt_x', 'ledger.intended', 'ledger', 'late1', NULL, 'alice', 'att_x',
	      0, NULL, 1, 0, 0, '{}', NULL, '\\x00', '\\x00', '\\x00', 0);
	    COMMIT;" >"$T/sql.out" 2>&1 || true
	grep -q "journal fence" "$T/sql.out"
	[ "$(records "seq = 1000000")" -eq 0 ]
	run ri-audit
	[ "$status" -eq 0 ]
}

# bats test_tags=pg:alone
@test "issue 13, server restart: pg_ctl restart -m immediate during a load run of two hosts -> every Open that answered 0 has its intent, every Close that answered 0 its outcome; ri-audit clean" {
	[ -n "${RI_TEST_PG_DATA:-}" ] || skip "needs the server's data directory"
	ri_instance
	host_b
	load() {
		local i a rc
		for i in $(seq 1 10); do
			a=$(open_req "$2-$i" | RI_CONFIG=$1 ri-open 2>/dev/null) && rc=0 || rc=$?
			echo "open $rc $(jq -r '.invocation_id // "-"' <<<"${a:-{\}}" 2>/dev/null)"
			if [ "$rc" -eq 0 ]; then
				close_req "$a" | RI_CONFIG=$1 ri-close >"$3.close" 2>/dev/null && rc=0 || rc=$?
				echo "close $rc $(jq -r '.invocation_id' <<<"$a")"
			fi
		done >"$3"
	}
	load "$RI_CONFIG" a "$T/la" & p1=$!
	load "$BCFG" b "$T/lb" & p2=$!
	sleep 2
	# the restarted server must not inherit bats's fd 3 (its TAP stream):
	# bats waits for every holder of it, and the suite would never end
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$PGBIN/pg_ctl" -D "$RI_TEST_PG_DATA" -m immediate -w restart \
		    -l "$RI_TEST_PG_HOST/server.log" \
		    -o "-k $RI_TEST_PG_HOST -c listen_addresses='' -c max_connections=200" >/dev/null 2>&1 3>&-
	else
		"$PGBIN/pg_ctl" -D "$RI_TEST_PG_DATA" -m immediate -w restart -l "$RI_TEST_PG_HOST/server.log" \
		    -o "-k $RI_TEST_PG_HOST -c listen_addresses='' -c max_connections=200" >/dev/null 2>&1 3>&-
	fi
	wait $p1 $p2 || true
	# every answer is a protocol code, never a crash
	[ -z "$(cat "$T"/la "$T"/lb | awk '{ print $1, $2 }' | grep -v -E '^(open (0|12|14|15|20)|close (0|15|21|40))$' || true)" ]
	# every Open that answered 0 has its intent; every Close that answered 0 its outcome
	for inv in $(cat "$T"/la "$T"/lb | awk '$1 == "open" && $2 == 0 { print $3 }'); do
		[ "$(records "invocation_id = '$inv' AND role = 1")" -eq 1 ]
	done
	for inv in $(cat "$T"/la "$T"/lb | awk '$1 == "close" && $2 == 0 { print $3 }'); do
		[ "$(records "invocation_id = '$inv' AND role <> 1")" -ge 1 ]
	done
	# the journal verifies whole (a Close cut by the restart leaves its
	# intent open and in flight: the sweep's business, later)
	run ri-audit
	echo "$output" | jq -c '[.checks[] | select(.status == "fail")]'
	[ "$status" -eq 0 ]
}

# bats test_tags=pg:alone
@test "issue 13, failure mapping with deferred writes: a write the server refuses (records locked by another session past lock_timeout) travels in one round trip with the statement after it, and is charged to the write -- a definite refusal (no read-back), nothing landed, the act opens once the lock is gone" {
	ri_instance fast
	n0=$(records)
	# another session holds records against writers (readers pass) for 20 s
	psql "$(jq -r .journal "$RI_CONFIG")" -qAt -c "BEGIN" -c "LOCK TABLE records IN EXCLUSIVE MODE" \
	    -c "SELECT pg_sleep(20)" >/dev/null 2>&1 3>&- &
	L=$!
	for _ in $(seq 1 100); do
		[ "$(sql "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		    WHERE c.relname = 'records' AND l.mode = 'ExclusiveLock' AND l.granted")" -ge 1 ] && break
		sleep 0.1
	done
	run --separate-stderr env RI_PG_TRACE=2 ri-open <<<"$(open_req boom)"
	kill "$L" 2>/dev/null; wait "$L" 2>/dev/null || true
	sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(20)%' AND pid <> pg_backend_pid()" >/dev/null
	echo "exit $status: $output $stderr"
	[[ " 14 15 20 " == *" $status "* ]]
	# the record's INSERT went with the statement after it, not alone
	grep -Eq "in one round trip\] (.* \| )?INSERT INTO records" <<<"$stderr"
	grep -Eq "append: .*(lock|statement) timeout" <<<"$stderr"
	! grep -q "reply was lost" <<<"$stderr" || false
	[ "$(records)" -eq "$n0" ]
	[ "$(records "act_key = 'boom'")" -eq 0 ]
	open_req boom | ri-open >/dev/null
	[ "$(records "act_key = 'boom' AND role = 1")" -eq 1 ]
	run ri-audit
	[ "$status" -eq 0 ]
}

# ---- issue 39: freshness across hosts ------------------------------------------

# schema_of CONFIG -- the journal's schema (its URI's search_path, or
# through the pooler its role's)
schema_of() {
	ri_pg_schema_of "$(jq -r .journal "$1")"
}

@test "issue 39 point 3, three hosts: B lands k, A's sweep seals, the journal's owner role rolls the tables back -- every host fails closed, C too (which wrote nothing), and k never runs again; the witness they share is one the journal's role cannot write" {
	ri_instance
	ri_cfg '.kinds.ledger.repeatable = false'
	export RI_CREDENTIAL=$ALICE
	L=$T/ledger.db
	ledger-admin --store "$L" init >/dev/null
	host_b
	# host C: a third host, which never writes the act the rollback loses
	C=$T/c
	mkdir -p "$C"
	cp "$T/journal.key" "$T/seal.key" "$T/seal.key.pub" "$T/reconciler.cred" "$RI_CONFIG" "$C/"
	copy_local_register "$C"
	run --separate-stderr ri-startcheck --json
	[ "$status" -eq 0 ] || { echo "$output $stderr"; false; }
	jq -e '.capabilities[] | select(.check == "witness-independent") | .pass' <<<"$output" >/dev/null
	land k1
	s=$(schema_of "$RI_CONFIG")
	"$PGBIN/pg_dump" -h "$RI_TEST_PG_HOST" -U ri -d ri -n "$s" -Fc -f "$T/before.dump"
	# host B lands k, the witness both hosts share says so, A seals after it
	as_b land k
	[ "$(disclosures)" -eq 2 ]
	ri_at 40
	run --separate-stderr ri-sweep
	[ "$status" -eq 0 ]
	# the owner of the journal's tables (no superuser) puts them back in time
	psql -h "$RI_TEST_PG_HOST" -U ri -d ri -qc "DROP SCHEMA $s CASCADE" >/dev/null
	"$PGBIN/pg_restore" -h "$RI_TEST_PG_HOST" -U ri -d ri "$T/before.dump"
	[ "$(records "act_key = 'k'")" -eq 0 ]
	for host in "$RI_CONFIG" "$BCFG" "$C/ri.json"; do
		RI_CONFIG=$host readers_writers_closed k
		RI_CONFIG=$host run --separate-stderr ri-startcheck
		[ "$status" -eq 30 ]
		for pk in "" "--public-key $T/seal.key.pub"; do
			# shellcheck disable=SC2086
			RI_CONFIG=$host run --separate-stderr ri-audit $pk
			[ "$status" -eq 1 ]
			jq -e '.checks[] | select(.check == "8.1.9") | .status == "fail"' <<<"$output" >/dev/null
		done
	done
	[ "$(disclosures)" -eq 2 ]
}

# The head is judged against the witness as read BEFORE the snapshot the
# head is read in begins (open_pg.c ri_pg_open; issue 43: the meta rows,
# the head and the start gate's kinds in one round trip): a line another
# process adds between the two names a record that snapshot holds.  Read
# the other way round, the line would be ahead of the snapshot's head and
# a fresh journal would look rolled back (RI_NC_WITNESS_AFTER_SNAPSHOT).
@test "issue 43, freshness at connect: an append that lands (and adds its witness line) between an opener's witness read and its snapshot never makes the fresh journal look rolled back; a journal rolled back below the line the opener read still fails it closed (15, integrity), nothing landed" {
	ri_instance
	open_req f0 | ri-open >/dev/null
	pause_point open.read_witness
	open_req f1 | RI_FAULT=open.read_witness=pause ri-open >"$T/out" 2>"$T/err" &
	p=$!
	reached open.read_witness
	# another process's append lands, and its witness line with it
	open_req f2 | ri-open >/dev/null
	echo go >"$RI_FAULT_DIR/open.read_witness"
	rc=0
	wait "$p" || rc=$?
	[ "$rc" -eq 0 ] || { echo "a fresh journal judged rolled back: exit $rc: $(cat "$T/out" "$T/err")"; false; }
	[ "$(records "act_key = 'f1' AND role = 1")" -eq 1 ]
	# the journal put back in time below a line the opener has read
	s=$(schema_of "$RI_CONFIG")
	"$PGBIN/pg_dump" -h "$RI_TEST_PG_HOST" -U ri -d ri -n "$s" -Fc -f "$T/before.dump"
	open_req f3 | ri-open >/dev/null
	rm -f "$RI_FAULT_DIR/open.read_witness.reached"
	open_req f4 | RI_FAULT=open.read_witness=pause ri-open >"$T/out" 2>"$T/err" &
	p=$!
	reached open.read_witness
	psql -h "$RI_TEST_PG_HOST" -U ri -d ri -qc "DROP SCHEMA $s CASCADE" >/dev/null
	"$PGBIN/pg_restore" -h "$RI_TEST_PG_HOST" -U ri -d ri "$T/before.dump"
	echo go >"$RI_FAULT_DIR/open.read_witness"
	rc=0
	wait "$p" || rc=$?
	[ "$rc" -eq 15 ] || { echo "a rolled-back journal not refused: exit $rc: $(cat "$T/out" "$T/err")"; false; }
	[ "$(jq -r .cause "$T/out")" = integrity ]
	[ "$(records "act_key IN ('f3', 'f4')")" -eq 0 ]
}

@test "issue 39: on PostgreSQL every append of every host adds its line to the one witness; ri-startcheck fails witness-independent for a host-local witness, or one the journal's role can write" {
	ri_instance
	host_b
	n=$(ri_pg_witness_sql "$RI_CONFIG" "SELECT count(*) FROM ri_witness")
	ri-open <<<"$(open_req a1)" >/dev/null
	open_req b1 | as_b ri-open >/dev/null
	[ "$(ri_pg_witness_sql "$RI_CONFIG" "SELECT count(*) FROM ri_witness")" -eq $((n + 2)) ]
	[ "$(ri_pg_witness_sql "$RI_CONFIG" "SELECT max(seq) FROM ri_witness")" -eq "$(jsql "SELECT max(seq) FROM records")" ]
	# the witness is append-only at the database too
	run ri_pg_witness_sql "$RI_CONFIG" "DELETE FROM ri_witness"
	[ "$status" -ne 0 ]
	# a host-local witness beside a shared journal
	jq '.["witness"] = "host-b-witness-file"' "$BCFG" >"$B/local.json"
	run --separate-stderr env RI_CONFIG="$B/local.json" ri-startcheck --json
	[ "$status" -ne 0 ]
	jq -e '.capabilities[] | select(.check == "witness-independent") | (.pass | not) and
	    (.message | contains("host-local"))' <<<"$output" >/dev/null
	# a witness in the journal's own database, which its role can write
	if [ -n "${RI_TEST_PG_BOUNCER:-}" ]; then
		# through the pooler a schema is a role's search_path: a role of
		# the journal's role's own (a member owns what it owns)
		own=wown_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
		ri_pg_bouncer_role ri "$own"
		psql -h "$RI_TEST_PG_HOST" -U postgres -d ri -qc \
		    "GRANT $own TO $(ri_pg_role_of "$(jq -r .journal "$RI_CONFIG")")" >/dev/null
		w="postgresql://$RI_TEST_PG_BOUNCER/ri?user=$own"
	else
		w=$(jq -r .journal "$RI_CONFIG" | sed 's/search_path%3D[a-z0-9_]*/search_path%3Dwown/')
		psql -h "$RI_TEST_PG_HOST" -U ri -d ri -qc "CREATE SCHEMA wown" >/dev/null
	fi
	jq --arg w "$w" '.["witness"] = $w' "$BCFG" >"$B/own.json"
	RI_CONFIG="$B/own.json" run --separate-stderr ri-startcheck --json
	jq -e '.capabilities[] | select(.check == "witness-independent") | (.pass | not) and
	    (.message | contains("can write the witness"))' <<<"$output" >/dev/null || {
		# the journal's role creates its table first, as ri-init would have
		psql "$w" -qc "CREATE TABLE ri_witness(id bigserial)" >/dev/null
		RI_CONFIG="$B/own.json" run --separate-stderr ri-startcheck --json
		jq -e '.capabilities[] | select(.check == "witness-independent") | (.pass | not) and
		    (.message | contains("can write the witness"))' <<<"$output" >/dev/null
	}
}

@test "issue 41 point 5, one findings register per instance: host B's sweep surfaces an aged intent (closure-at-risk); host A's ri-findings lists it, and A's ri-audit passes 3.5 as B's does -- the verdict does not depend on which host audits" {
	ri_instance
	export RI_CREDENTIAL=$ALICE
	L=$T/ledger.db
	ledger-admin --store "$L" init >/dev/null
	# no service identity: 3.5 asks the register whether the aged intent
	# was surfaced in time (Check 3.5; findings 7)
	ri_cfg '.kinds.ledger.service_identity = null'
	host_b
	OPEN=$(open_req aged | ri-open)
	INV=$(jq -r .invocation_id <<<"$OPEN")
	ri_at 450
	run --separate-stderr as_b ri-sweep
	[ "$status" -eq 0 ] || [ "$status" -eq 3 ] || { echo "B's sweep: $status $output $stderr"; false; }
	# host A's register is host B's
	for host in "$RI_CONFIG" "$BCFG"; do
		RI_CONFIG=$host run --separate-stderr ri-findings
		[ "$status" -eq 0 ] || { echo "ri-findings ($host): $status $stderr"; false; }
		jq -se --arg i "$INV" 'map(select(.finding == "closure-at-risk" and .invocation_id == $i)) | length == 1' \
		    <<<"$output" >/dev/null || { echo "ri-findings on $host lacks B's closure-at-risk: $output"; false; }
	done
	ri_at 700
	for host in "$RI_CONFIG" "$BCFG"; do
		RI_CONFIG=$host run --separate-stderr ri-audit
		jq -e '.checks[] | select(.check == "3.5") | .status == "pass"' <<<"$output" >/dev/null ||
		    { echo "ri-audit on $host: 3.5 $(jq -c '.checks[] | select(.check == "3.5")' <<<"$output")"; false; }
	done
}

# bats test_tags=pg:alone
@test "issue 41 point 5, two hosts' sweeps at once on one register: host A pauses between reading that no store-unavailable stands and writing one; host B's sweep waits for it -- never a second standing record, never a register write refused (findings 9, 12)" {
	ri_instance
	export RI_CREDENTIAL=$ALICE
	L=$T/ledger.db
	ledger-admin --store "$L" init >/dev/null
	# the store is down for every host: each probe answers unavailable
	ri_cfg ".kinds.ledger.probe[2] = \"$T/missing/ledger.db\""
	host_b
	for k in k1 k2 k3; do open_req "$k" | ri-open >/dev/null; done
	ri_at 40
	pause_point findings.decided
	RI_FAULT=findings.decided=pause ri-sweep >"$T/a.out" 2>&1 &
	a=$!
	reached findings.decided
	as_b ri-sweep >"$T/b.out" 2>&1 &
	b=$!
	# B reaches the register while A holds its decision: B waits on A's
	# lock (or, were there none, writes beside it and finishes)
	for _ in $(seq 1 200); do
		kill -0 "$b" 2>/dev/null || break
		[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
		    AND query LIKE '%LOCK TABLE findings%'")" -gt 0 ] && break
		sleep 0.05
	done
	echo go >"$RI_FAULT_DIR/findings.decided"
	wait "$a" || true
	wait "$b" || true
	# ASSERT issue 41 point 5: neither host's register write was refused
	! grep -H "could not surface" "$T/a.out" "$T/b.out" || false
	run --separate-stderr ri-findings --open
	[ "$status" -eq 0 ] || { echo "ri-findings: $status $stderr"; false; }
	[ "$(jq -s '[.[] | select(.finding == "store-unavailable" and .kind == "ledger")] | length' <<<"$output")" -eq 1 ]
}

@test "issue 41, lifecycle: a PostgreSQL host added to a running instance (the keys and the config copied, ri-init(1)) -- its writes and its sweep keep ri-audit --probe clean from either host (Check 8.1.3, 6.1); a host with another integrity key is refused and writes nothing (8.1.3: a record under it would fail its MAC)" {
	ri_instance
	export RI_CREDENTIAL=$ALICE
	ledger-admin --store "$T/ledger.db" init >/dev/null
	a=$(open_req k1 | ri-open)
	close_req "$a" '{"disclosure_id":"d1"}' | ri-close >/dev/null
	orphan k2                                          # host A's, left open
	run --separate-stderr ri-audit --probe
	[ "$status" -eq 0 ] || { echo "A before B: $(jq -c '[.checks[] | select(.status == "fail")]' <<<"$output")"; false; }
	# the host joins the running instance
	host_b
	run --separate-stderr as_b ri-startcheck
	[ "$status" -eq 0 ] || { echo "ri-startcheck on B: $status $output $stderr"; false; }
	b=$(open_req k3 | as_b ri-open)
	close_req "$b" '{"disclosure_id":"d3"}' | as_b ri-close >/dev/null
	RI_CONFIG=$BCFG orphan k4                          # host B's, left open
	ri_at 33
	RI_CONFIG=$BCFG sweep                              # B's sweep recovers A's orphan and its own
	[ "$(t closed)" -eq 2 ]
	# ASSERT Check 8.1.3, 6.1: one journal, clean from either host
	run --separate-stderr ri-audit --probe
	[ "$status" -eq 0 ] || { echo "A: $(jq -c '[.checks[] | select(.status == "fail")]' <<<"$output")"; false; }
	run --separate-stderr as_b ri-audit --probe
	[ "$status" -eq 0 ] || { echo "B: $(jq -c '[.checks[] | select(.status == "fail")]' <<<"$output")"; false; }
	# unlawful: a host C with the config and the seal key but an integrity
	# key of its own
	C=$T/c
	mkdir -p "$C"
	cp "$T/seal.key" "$T/seal.key.pub" "$T/reconciler.cred" "$T/findings.db" "$RI_CONFIG" "$C/"
	head -c 32 /dev/urandom >"$C/journal.key"
	chmod 600 "$C/journal.key"
	n=$(records)
	run --separate-stderr env RI_CONFIG="$C/ri.json" ri-open <<<"$(open_req k5)"
	echo "C's ri-open: $status $output $stderr"
	# ASSERT Check 8.1.3: nothing lands under another key -- the journal
	# fails verification under it (15, integrity), the host may not start
	[ "$status" -eq 15 ]
	[ "$(records)" -eq "$n" ]
	run --separate-stderr env RI_CONFIG="$C/ri.json" ri-startcheck
	[ "$status" -ne 0 ]
	[ "$(grep -c '^  FAIL' <<<"$output")" -eq 2 ]                 # the journal, and the witness behind it
	grep -q '^  FAIL journal: journal integrity' <<<"$output"
	run --separate-stderr ri-audit --probe
	[ "$status" -eq 0 ]
}
