# pg.bash -- the PostgreSQL switch of the bats suites (issue 13).
#
# With RI_TEST_PG_HOST set (tests/pg/run sets it: the socket directory of a
# throwaway server, user "ri"), every instance a suite makes gets its own
# new empty schema of one database as its journal
# ("journal": "postgresql:///ri?host=...&options=-csearch_path%3Dri_...").
# A test that reads or writes the SQLite file itself (the sqlite3 CLI, the
# tamper helpers, the file's own name) cannot run against a server: it is
# skipped as "sqlite file", and tests/pg/run counts the skips.

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
	psql -h "$RI_TEST_PG_HOST" -U ri -d ri -qAtc "CREATE SCHEMA $db" >/dev/null || return 1
	printf 'postgresql:///ri?host=%s&user=ri&options=-csearch_path%%3D%s\n' "$RI_TEST_PG_HOST" "$db"
}

# ri_pg_skip_file_tests -- skip the running test when its body works on the
# SQLite file directly, or calls a helper of its suite that does
ri_pg_skip_file_tests() {
	local pat='sqlite3|journal\.db|attacker_sql|flip_mac|ri-rechain|ri-backup|-wal' f helpers= n=-1 all
	all=$(declare -F | awk '{ print $3 }')
	# a helper that calls such a helper is one too, however deep: to a
	# fixed point
	while [ "$n" -ne "$(wc -w <<<"${helpers//|/ }")" ]; do
		n=$(wc -w <<<"${helpers//|/ }")
		local p=$pat
		[ -n "$helpers" ] && p="$pat|(^|[^A-Za-z0-9_-])(${helpers#|})([^A-Za-z0-9_-]|\$)"
		for f in $all; do
			case $f in ri_pg_*|bats_*|records|jsql|intent_of|ri_instance|fnd_*|"$BATS_TEST_NAME") continue ;; esac
			case "$helpers|" in *"|$f|"*) continue ;; esac
			declare -f "$f" | tail -n +2 | grep -qE "$p" && helpers="$helpers|$f"
		done
	done
	[ -n "$helpers" ] && pat="$pat|(^|[^A-Za-z0-9_-])(${helpers#|})([^A-Za-z0-9_-]|\$)"
	if declare -f "$BATS_TEST_NAME" 2>/dev/null | tail -n +2 | grep -qE "$pat"; then
		skip "sqlite file"
	fi
}

# ri_pg_journal CONFIG -- point CONFIG's journal at a new database
ri_pg_journal() {
	local uri
	uri=$(ri_pg_new_db) || return 1
	jq --arg u "$uri" '.journal = $u' "$1" >"$1.new" && mv "$1.new" "$1"
}

# ri_pg_sql CONFIG SQL -- run SQL in CONFIG's journal database
ri_pg_sql() {
	psql "$(jq -r .journal "$1")" -qAtc "$2"
}
