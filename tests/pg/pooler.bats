#!/usr/bin/env bats
# pooler.bats -- ri behind PgBouncer in transaction pooling mode (issue 43,
# pooler-ready): no session state of ri survives its transaction, so a
# server connection the pooler hands from one ri process to the next
# carries nothing from the first.  The instance's journal goes through the
# pooler's database "ri1", whose pool holds ONE server connection per role
# (tests/pg/run): every client of the instance runs on that one session,
# and the tests read it through the pooler afterwards.
# test-pg: backend
# test-pg-pooler: yes -- these tests need the pooler: outside tests/pg/run's
# PgBouncer pass they skip, saying so

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/../lib/common"
load "$BATS_TEST_DIRNAME/../lib/acts"

setup() {
	ri_pg_on || skip "needs tests/pg/run (a PostgreSQL server)"
	[ -n "${RI_TEST_PG_BOUNCER:-}" ] || skip "needs tests/pg/run's PgBouncer pass (RI_TEST_PG_BOUNCER)"
}

teardown() {
	if [ -n "${T:-}" ] && [ -d "$T" ]; then
		rm -rf "$T"
	fi
}

# the session settings ri has a reason to touch, and its own custom ones
# (an empty custom setting is one never set: a SET LOCAL of a placeholder
# leaves it defined, and empty, after its transaction)
SETTINGS="SELECT 'lock_timeout=' || current_setting('lock_timeout')
 UNION ALL SELECT 'statement_timeout=' || current_setting('statement_timeout')
 UNION ALL SELECT 'idle_in_transaction_session_timeout=' || current_setting('idle_in_transaction_session_timeout')
 UNION ALL SELECT 'default_transaction_read_only=' || current_setting('default_transaction_read_only')
 UNION ALL SELECT 'default_transaction_isolation=' || current_setting('default_transaction_isolation')
 UNION ALL SELECT 'synchronous_commit=' || current_setting('synchronous_commit')
 UNION ALL SELECT 'ri.clock=' || coalesce(current_setting('ri.clock', true), '')
 UNION ALL SELECT 'ri.fence=' || coalesce(current_setting('ri.fence', true), '')"

# one_pool -- move $RI_CONFIG's journal to the pooler's one-connection
# database; sets ROLE (the instance's role), ONE (the URI) and MANY (the
# URI it had, through the pool of many)
one_pool() {
	MANY=$(jq -r .journal "$RI_CONFIG")
	ROLE=$(ri_pg_role_of "$MANY")
	ONE="postgresql://$RI_TEST_PG_BOUNCER/ri1?user=$ROLE"
	ri_cfg ".journal = \"$ONE\""
}

# audit_many -- ri-audit through the pool of many: an audit holds the
# journal's connection and the findings register's (a second one to the
# same database) at once, which a pool of one server session cannot lend
# (docs/POSTGRESQL.md, behind a connection pooler)
audit_many() {
	RI_CONFIG=$T/many.json
	jq --arg u "$MANY" '.journal = $u' "$T/ri.json" >"$RI_CONFIG"
	run ri-audit -c "$RI_CONFIG"
}

# pooled SQL -- SQL on the instance's one pooled server connection
pooled() {
	psql "$ONE" -qAt -v ON_ERROR_STOP=1 -c "$1"
}

# defaults -- the settings a new session of the role reads, straight from
# the server (the server's defaults, and the role's search_path)
defaults() {
	psql -h "$RI_TEST_PG_HOST" -U "$ROLE" -d ri -qAt -v ON_ERROR_STOP=1 -c "$SETTINGS"
}

@test "issue 43 (pooler-ready): ri-open, ri-close and ri-read through one pooled server connection leave no session setting behind -- lock_timeout, statement_timeout, idle_in_transaction_session_timeout, default_transaction_read_only, default_transaction_isolation, synchronous_commit, ri.clock, ri.fence read the server's defaults after" {
	ri_instance
	one_pool
	# the role's defaults of the two settings ri would set to the server's
	# own: another value, so that a session-level set_config of them shows
	# (without a standby, remote_apply commits as on does; ri's BEGINs name
	# their isolation level)
	psql -h "$RI_TEST_PG_HOST" -U postgres -d ri -qAt -v ON_ERROR_STOP=1 \
	    -c "ALTER ROLE $ROLE SET synchronous_commit = remote_apply" \
	    -c "ALTER ROLE $ROLE SET default_transaction_isolation = 'repeatable read'"
	want=$(defaults)
	grep -qx 'synchronous_commit=remote_apply' <<<"$want"
	pid=$(pooled "SELECT pg_backend_pid()")
	# a clean session before ri runs: the check below can fail
	[ "$(pooled "$SETTINGS")" = "$want" ]
	a=$(open_req k1 | ri-open)
	close_req "$a" '{"disclosure_id":"d1"}' | ri-close >/dev/null
	ri-read --kind ledger --act-key k1 </dev/null | jq -e '.invocations | length == 1' >/dev/null
	# the one server connection ri used all along, read through the pooler
	[ "$(pooled "SELECT pg_backend_pid()")" -eq "$pid" ]
	got=$(pooled "$SETTINGS")
	diff <(echo "$want") <(echo "$got") || { echo "ri left session state on the pooled connection (< the server's default, > after ri)"; false; }
	# and a writer after the reader: the session a read-only command left
	# must not refuse it
	a=$(open_req k2 | ri-open)
	close_req "$a" '{"disclosure_id":"d2"}' | ri-close >/dev/null
	[ "$(pooled "$SETTINGS")" = "$want" ]
	audit_many
	[ "$status" -eq 0 ]
}

@test "issue 43 (pooler-ready): two ri processes interleaving their transactions on one pooled server connection -- every open, close and read answers 0; every granted open's intent and every close's outcome landed, ri-audit clean" {
	ri_instance
	one_pool
	pid=$(pooled "SELECT pg_backend_pid()")
	worker() {
		local i a rc
		for i in $(seq 1 8); do
			a=$(open_req "$1-$i" | ri-open 2>>"$2.err") && rc=0 || rc=$?
			echo "open $rc"
			[ "$rc" -eq 0 ] || continue
			close_req "$a" '{"disclosure_id":"d"}' | ri-close >/dev/null 2>>"$2.err" && rc=0 || rc=$?
			echo "closed $rc"
			ri-read --kind ledger --act-key "$1-$i" </dev/null >/dev/null 2>>"$2.err" && rc=0 || rc=$?
			echo "read $rc"
		done >"$2"
	}
	worker a "$T/wa" & p1=$!
	worker b "$T/wb" & p2=$!
	wait $p1 $p2
	cat "$T"/wa.err "$T"/wb.err
	[ -z "$(cat "$T"/wa "$T"/wb | grep -v -E '^(open|closed|read) 0$' || true)" ]
	[ "$(grep -c '^closed 0$' "$T"/wa "$T"/wb | awk -F: '{ t += $2 } END { print t }')" -eq 16 ]
	[ "$(records "role = 1 AND (act_key LIKE 'a-%' OR act_key LIKE 'b-%')")" -eq 16 ]
	[ "$(records "role <> 1 AND (act_key LIKE 'a-%' OR act_key LIKE 'b-%')")" -ge 16 ]
	# one server connection served both all along
	[ "$(pooled "SELECT pg_backend_pid()")" -eq "$pid" ]
	audit_many
	[ "$status" -eq 0 ]
}
