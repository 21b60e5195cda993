# acts.bash -- acting and attacking a journal whose ledger kind is
# NON-REPEATABLE, and what failing closed looks like on every surface
# (loaded by tests/integrity.bats and tests/freshness.bats after
# common.bash; setup sets L, the ledger store, and RI_CREDENTIAL).

# ---- acting and attacking ---------------------------------------------------

# run_job KEY -- ri-run of the non-repeatable act KEY (the real ledger job)
run_job() {
	ri-run --kind ledger --act-key "$1" --actor alice \
	    --intent-data "{\"subject\":\"$1\",\"recipient\":\"bob\"}" --pre-commit-exit 2,3,4 -- \
	    ledger-disclose --store "$L" --subject "$1" --recipient bob
}

# land KEY -- the act lands: intent, the job, outcome
land() {
	run_job "$1" >/dev/null || { echo "landing $1 failed"; return 1; }
}

# disclosures -- how many acts the store holds
disclosures() { ledger-admin --store "$L" count; }

checkpoint() { sqlite3 "$T/journal.db" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null; }

# scope_key KIND ACT_KEY -- the act's scope key (heads.h: SHA-256 of
# "ri scope act\0" and the length-prefixed fields)
be64() { printf "$(printf '\\x%02x' 0 0 0 0 $(($1 >> 24 & 255)) $(($1 >> 16 & 255)) $(($1 >> 8 & 255)) $(($1 & 255)))"; }
scope_key() {
	{ printf 'ri scope act\0'; be64 ${#1}; printf '%s' "$1"; be64 ${#2}; printf '%s' "$2"; } |
	    sha256sum | cut -c1-64
}
# head_sql KIND ACT_KEY -- SQL deleting the act's head: its leaf in the
# tree of scope heads (a leaf body is 'L' then the scope key)
head_sql() {
	echo "DELETE FROM nodes WHERE substr(body, 1, 1) = X'4C' AND hex(substr(body, 2, 32)) = upper('$(scope_key "$1" "$2")');"
}

# ---- what failing closed looks like -----------------------------------------

# readers_writers_closed KEY -- ri-read 30, ri-open 15, ri-run 15 and its
# job never run, nothing appended (all with "cause":"integrity")
readers_writers_closed() {
	local n d
	n=$(records) d=$(disclosures)
	run --separate-stderr ri-read --kind ledger --act-key "$1"
	[ "$status" -eq 30 ] || { echo "ri-read exited $status: $output $stderr"; return 1; }
	[ "$(jq -r .cause <<<"$output")" = integrity ] || { echo "ri-read: $output"; return 1; }
	run --separate-stderr ri-open <<<"$(open_req "$1")"
	[ "$status" -eq 15 ] || { echo "ri-open exited $status: $output $stderr"; return 1; }
	[ "$(jq -r .cause <<<"$output")" = integrity ] || { echo "ri-open: $output"; return 1; }
	run --separate-stderr run_job "$1"
	[ "$status" -eq 15 ] || { echo "ri-run exited $status: $output $stderr"; return 1; }
	[ "$(disclosures)" -eq "$d" ] || { echo "the job ran again: $(disclosures) disclosures, was $d"; return 1; }
	[ "$(records)" -eq "$n" ] || { echo "a writer appended to a tampered journal"; return 1; }
}

# sweep_closed -- ri-sweep 15 with "cause":"integrity", and the findings
# register says so (a verified journal-unavailable finding with the cause)
sweep_closed() {
	run --separate-stderr ri-sweep
	[ "$status" -eq 15 ] || { echo "ri-sweep exited $status: $output $stderr"; return 1; }
	[ "$(jq -r .cause <<<"$output")" = integrity ] || { echo "ri-sweep: $output"; return 1; }
	ri-findings --open | jq -se 'any(.[]; .finding == "journal-unavailable" and .detail.cause == "integrity"
	    and .verified)' >/dev/null || { echo "no finding: $(ri-findings --open)"; return 1; }
}

# audits_fail [CHECK] -- ri-audit (keyed) and ri-audit --public-key both 1;
# with CHECK, that check fails in both
audits_fail() {
	local pk
	for pk in "" "--public-key $T/seal.key.pub"; do
		# shellcheck disable=SC2086
		run --separate-stderr ri-audit $pk
		[ "$status" -eq 1 ] || { echo "ri-audit $pk exited $status: $stderr"; return 1; }
		if [ -n "${1:-}" ]; then
			jq -e --arg c "$1" '.checks[] | select(.check == $c) | .status == "fail"' <<<"$output" >/dev/null ||
			    { echo "ri-audit $pk: check $1 did not fail: $(jq -c '[.checks[] | select(.status == "fail")]' <<<"$output")"; return 1; }
		fi
	done
}

startcheck_closed() {
	run --separate-stderr ri-startcheck
	[ "$status" -eq 30 ] || { echo "ri-startcheck exited $status: $output"; return 1; }
}
