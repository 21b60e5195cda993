# pg.bash -- the PostgreSQL switch of the bats suites (issue 13).
#
# With RI_TEST_PG_HOST set (tests/pg/run sets it: the socket directory of a
# throwaway server, user "ri"), every instance a suite makes gets its own
# new empty schema of one database as its journal
# ("journal": "postgresql:///ri?host=...&options=-csearch_path%3Dri_...").
# A test that reads or writes the SQLite file itself (the sqlite3 CLI, the
# tamper helpers, the file's own name) cannot run against a server: it is
# skipped as "sqlite file", and tests/pg/run counts the skips.

# With RI_TEST_PG_BOUNCER set too (host:port: tests/pg/run's PgBouncer pass,
# issue 43 pooler-ready), every journal and witness connects through the
# pooler, in transaction pooling mode, which drops the URI's options=: each
# gets a role of its own, named as its schema, whose search_path is that
# schema (ALTER ROLE ... SET: the role's search_path, set at every server
# connection the pooler makes for it)
# ("journal": "postgresql://127.0.0.1:PORT/ri?user=ri_..."), its auth_file
# entry written and the pooler reloaded.  What connects to the server
# itself (the superuser's tampering, a restart) still uses
# RI_TEST_PG_HOST.

# ri_pg_on -- is the switch on?
ri_pg_on() {
	[ -n "${RI_TEST_PG_HOST:-}" ]
}

# ri_pg_new_db -- a new empty schema in the server's "ri" database (a new
# database per test costs a checkpoint's worth of I/O; a schema costs
# nothing, and ri keeps all of an instance in its connection's current
# schema); prints the journal URI
ri_pg_new_db() {
	local db
	db=ri_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	if [ -n "${RI_TEST_PG_BOUNCER:-}" ]; then
		ri_pg_bouncer_role ri "$db" || return 1
		printf 'postgresql://%s/ri?user=%s\n' "$RI_TEST_PG_BOUNCER" "$db"
		return
	fi
	psql -h "$RI_TEST_PG_HOST" -U ri -d ri -qAtc "CREATE SCHEMA $db" >/dev/null || return 1
	printf 'postgresql:///ri?host=%s&user=ri&options=-csearch_path%%3D%s\n' "$RI_TEST_PG_HOST" "$db"
}

# ri_pg_bouncer_role DATABASE NAME -- (the PgBouncer pass) a login role
# NAME owning schema NAME of DATABASE, its search_path that schema, and
# the pooler told of it.  A journal's role may create schemas in "ri" (a
# restore, multinode.bats) and "ri" is a member of it (what the suites did
# as "ri" they still may); a witness's role may connect to "riw", which
# the journal roles may not.
ri_pg_bouncer_role() {
	local grant
	case $1 in
	ri) grant="GRANT CREATE ON DATABASE ri TO $2; GRANT $2 TO ri" ;;
	riw) grant="GRANT CONNECT ON DATABASE riw TO $2; GRANT $2 TO riw" ;;
	esac
	psql -h "$RI_TEST_PG_HOST" -U postgres -d "$1" -v ON_ERROR_STOP=1 -qAt >/dev/null <<-EOF || return 1
	CREATE ROLE $2 LOGIN;
	ALTER ROLE $2 SET search_path = $2;
	CREATE SCHEMA $2 AUTHORIZATION $2;
	$grant;
	EOF
	# one write of a short line (O_APPEND): suites running at once do not
	# interleave their lines
	printf '"%s" ""\n' "$2" >>"$RI_TEST_PG_BOUNCER_USERS" || return 1
	psql -h "${RI_TEST_PG_BOUNCER%:*}" -p "${RI_TEST_PG_BOUNCER##*:}" -U postgres -d pgbouncer -qAtc RELOAD >/dev/null
}

# ri_pg_schema_of URI -- the schema a journal or witness URI connects to:
# its options= search_path, or (through the pooler) its role's
ri_pg_schema_of() {
	case $1 in
	*search_path%3D*) sed -n 's/.*search_path%3D\([a-z0-9_]*\).*/\1/p' <<<"$1" ;;
	*) sed -n 's/.*[?&]user=\([a-z0-9_]*\).*/\1/p' <<<"$1" ;;
	esac
}

# ri_pg_role_of URI -- the role a journal or witness URI connects as
ri_pg_role_of() {
	sed -n 's/.*[?&]user=\([a-z0-9_]*\).*/\1/p' <<<"$1"
}

# ri_pg_file_pattern -- the pattern of what works on the SQLite file: the
# file's own words, and every helper of the suite that uses them, however
# deep (to a fixed point).  Computed once per .bats file, in-process (a
# subprocess per function per test cost minutes a suite), and kept in
# $BATS_FILE_TMPDIR.
ri_pg_file_pattern() {
	local cache=$BATS_FILE_TMPDIR/ri_pg_pattern
	if [ -s "$cache" ]; then
		printf '%s' "$(<"$cache")"
		return
	fi
	# findings.db: the SQLite findings register, which a PostgreSQL
	# instance has none of (its register is a table, issue 41 point 5)
	local pat='sqlite3|journal\.db|findings\.db|attacker_sql|flip_mac|ri-rechain|ri-backup|\.witness'
	local f body helpers='' p grew=1 all
	all=$(compgen -A function)
	while [ "$grew" = 1 ]; do
		grew=0
		p=$pat
		[ -n "$helpers" ] && p="$pat|(^|[^A-Za-z0-9_-])(${helpers#|})([^A-Za-z0-9_-]|\$)"
		for f in $all; do
			# helpers that choose the backend themselves
			case $f in test_*|ri_pg_*|bats_*|records|jsql|payload_at|intent_of|ri_instance|fnd_*|man_run) continue ;; esac
			case "$helpers|" in *"|$f|"*) continue ;; esac
			body=$(declare -f "$f")
			body=${body#*$'\n'}
			if [[ $body =~ $p ]]; then
				helpers="$helpers|$f"
				grew=1
			fi
		done
	done
	[ -n "$helpers" ] && pat="$pat|(^|[^A-Za-z0-9_-])(${helpers#|})([^A-Za-z0-9_-]|\$)"
	printf '%s' "$pat" >"$cache"
	printf '%s' "$pat"
}

# ri_pg_skip_file_tests -- skip the running test when its body works on the
# SQLite file directly, or calls a helper of its suite that does; the skip
# names the word that matched, so a reader can check the reason
ri_pg_skip_file_tests() {
	local pat body
	pat=$(ri_pg_file_pattern)
	body=$(declare -f "$BATS_TEST_NAME" 2>/dev/null) || return 0
	body=${body#*$'\n'}
	if [[ $body =~ $pat ]]; then
		local why=${BASH_REMATCH[0]}
		why=${why//[^A-Za-z0-9_.-]/}
		skip "sqlite file ($why)"
	fi
	# RI_PG_SKIPS_ONLY=1: list what would skip, run nothing (a fast census)
	[ -z "${RI_PG_SKIPS_ONLY:-}" ] || skip "would run"
}

# ri_pg_new_witness -- a new empty schema in the witness's database "riw",
# owned by role riw, which the journal's role "ri" cannot write (issue 39:
# the witness every host shares); prints the witness URI
ri_pg_new_witness() {
	local db
	db=w_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	if [ -n "${RI_TEST_PG_BOUNCER:-}" ]; then
		ri_pg_bouncer_role riw "$db" || return 1
		printf 'postgresql://%s/riw?user=%s\n' "$RI_TEST_PG_BOUNCER" "$db"
		return
	fi
	psql -h "$RI_TEST_PG_HOST" -U riw -d riw -qAtc "CREATE SCHEMA $db" >/dev/null || return 1
	printf 'postgresql:///riw?host=%s&user=riw&options=-csearch_path%%3D%s\n' "$RI_TEST_PG_HOST" "$db"
}

# ri_pg_journal CONFIG -- point CONFIG's journal at a new database, and its
# witness at a new one the journal's role cannot write
ri_pg_journal() {
	local uri wit
	uri=$(ri_pg_new_db) || return 1
	wit=$(ri_pg_new_witness) || return 1
	jq --arg u "$uri" --arg w "$wit" '.journal = $u | .witness = $w' "$1" >"$1.new" && mv "$1.new" "$1"
}

# ri_pg_witness_sql CONFIG SQL -- run SQL in CONFIG's witness database
ri_pg_witness_sql() {
	psql "$(jq -r .witness "$1")" -qAtc "$2"
}

# ri_pg_sql CONFIG SQL -- run SQL in CONFIG's journal database
ri_pg_sql() {
	psql "$(jq -r .journal "$1")" -qAtc "$2"
}

# ri_pg_tamper SQL -- the attacker's SQL on the journal of $RI_CONFIG, on
# either backend (issue 42: the tamper matrix on both): on SQLite,
# attacker_sql (the file, its triggers dropped and put back); on
# PostgreSQL, as the server's superuser, the append-only triggers not fired
# (session_replication_role = replica) and the schema -- MACed at ri-init
# -- untouched.  A test that tampers through it runs on both backends.
ri_pg_tamper() {
	if ! ri_pg_on; then
		attacker_sql "$1"
		return
	fi
	# straight to the server, never through the pooler: the superuser's
	# session_replication_role would stay on a pooled connection
	local uri
	uri=$(jq -r .journal "$RI_CONFIG") || return 1
	psql -h "$RI_TEST_PG_HOST" -U postgres -d ri -v ON_ERROR_STOP=1 -qAt \
	    -c "SET search_path = $(ri_pg_schema_of "$uri")" \
	    -c "SET session_replication_role = replica" -c "$1" >/dev/null
}
