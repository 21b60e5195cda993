# helpers.bash -- a temp instance for the foundation suites (bats-core 1.8):
# the walkthrough's numbers, the env clock, ri-init, and the actors.
#
#   fnd_config [JQ-FILTER]   write $T/ri.json (a fresh $T), optionally edited
#   fnd_instance [JQ-FILTER] fnd_config + ri-init + alice (human, $ALICE holds
#                            her credential) + ledger-reconciler (service,
#                            credential file $T/reconciler.cred)
#   fnd_edit JQ-FILTER       edit $CFG in place
#   fnd_teardown             remove $T
#   mode_of FILE             octal permission bits (600)
#   digest_of FILE...        one sha256 line per existing file (to prove "unchanged")
#   flip_mac SEQ             flip one byte of a record's MAC, as an attacker
#                            with file access would (triggers dropped first,
#                            and put back)
#
# Exposes $RI_BIN (the ri-* binaries, on $PATH), $T, $CFG, $RI_NOW, $T0.
# Tests never sleep to move time: they move RI_NOW.

RI_BIN=${RI_BIN:-$(cd "$BATS_TEST_DIRNAME/.." && pwd)/bin}
export RI_BIN
export PATH="$RI_BIN:$PATH"
T0=1767225600000                # 2026-01-01T00:00:00Z in ms
T0_TEXT=2026-01-01T00:00:00.000Z
. "$(dirname "${BASH_SOURCE[0]}")/lib/pg.bash"

# The walkthrough's numbers ("Walkthrough -- a disclosure, three ways":
# neither fence declared), with the env clock and a probe that exists.
fnd_config() {
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/ri-fnd.XXXXXX")
	CFG=$T/ri.json
	export T CFG RI_NOW=$T0
	unset RI_CONFIG RI_FAULT RI_CREDENTIAL RI_CREDENTIAL_FILE
	cat >"$CFG" <<'JSON'
{
  "journal": "journal.db", "findings": "findings.db",
  "integrity_key_file": "journal.key", "seal_key_file": "seal.key",
  "clock": "env",
  "instance": {
    "clock_offset_allowance": "2s", "reconciliation_cadence": "60s", "run_bound": "135s",
    "closure_latency": "12s", "journal_write_bound": "3s", "read_bound": "2s",
    "compensation_window": "10m", "intent_candidates_cap": 16, "read_cap": 20,
    "reference_length_cap": 256, "payload_cap": 65536, "journal_fence": "none"
  },
  "kinds": {
    "ledger": {
      "outcomes": ["disclosed"], "repeatable": true, "completion_bound": "30s",
      "commit_round_trip": "1s", "probe_round_trip": "1s", "retention_period": "400d",
      "commit_fence": "none", "pairing_datum": "nonce", "outcome_envelope": 4096,
      "retry_terminus": "lease", "probe": ["/bin/true"],
      "service_identity": { "actor_ref": "ledger-reconciler", "credential_file": "reconciler.cred" }
    }
  }
}
JSON
	if ri_pg_on; then
		ri_pg_skip_file_tests
		ri_pg_journal "$CFG" || return 1
	fi
	if [ -n "${1:-}" ]; then
		fnd_edit "$1"
	fi
}

fnd_edit() {
	jq "$1" "$CFG" >"$CFG.new" && mv "$CFG.new" "$CFG"
}

fnd_instance() {
	fnd_config "$@"
	ri-init -c "$CFG" >/dev/null || return 1
	ALICE=$(ri-actor -c "$CFG" add alice | jq -r .credential) || return 1
	[ -n "$ALICE" ] && [ "$ALICE" != null ] || return 1
	ri-actor -c "$CFG" add ledger-reconciler --service --credential-file "$T/reconciler.cred" \
	    >/dev/null || return 1
	export ALICE
}

# fnd_sql SQL -- run SQL in the instance's journal, on either backend
fnd_sql() {
	if ri_pg_on; then
		ri_pg_sql "$CFG" "$1"
	else
		sqlite3 "$T/journal.db" "$1"
	fi
}

fnd_teardown() {
	if [ -n "${T:-}" ] && [ -d "$T" ]; then
		chmod -R u+rwX "$T" 2>/dev/null || true
		rm -rf "$T"
	fi
}

mode_of() {
	stat -c %a "$1"
}

digest_of() {
	local f
	for f in "$@"; do
		[ -e "$f" ] && sha256sum "$f"
	done
	return 0
}

# flip_mac SEQ -- XOR the first byte of record SEQ's MAC with 0x01
flip_mac() {
	local hex first rest
	hex=$(sqlite3 "$T/journal.db" "SELECT hex(mac) FROM records WHERE seq = $1") || return 1
	[ ${#hex} -eq 64 ] || return 1
	first=$(printf '%02X' $(( 0x${hex:0:2} ^ 0x01 )))
	rest=${hex:2}
	journal_tamper "UPDATE records SET mac = X'$first$rest' WHERE seq = $1;"
}

# journal_tamper SQL -- as an attacker with file access and no key: drop the
# append-only triggers, run SQL, put the triggers back exactly as they were
journal_tamper() {
	local triggers
	triggers=$(sqlite3 "$T/journal.db" "SELECT group_concat(sql, ';
') || ';' FROM sqlite_schema WHERE type = 'trigger'") || return 1
	local rc=0
	sqlite3 "$T/journal.db" "DROP TRIGGER IF EXISTS records_append_only_update;
	    DROP TRIGGER IF EXISTS records_append_only_delete; $1" || rc=$?
	[ "$triggers" = ";" ] || sqlite3 "$T/journal.db" "$triggers" || return 1
	return "$rc"
}
