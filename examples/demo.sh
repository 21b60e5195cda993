#!/usr/bin/env bash
# demo.sh -- a short tour on a temporary SQLite instance: set up, wrap an
# irreversible job, crash one between its act and its record, let the sweep
# recover the record from the job's own store.  Real clock, real files.
#
#   examples/demo.sh          the tour; the instance is removed at the end
#   examples/demo.sh --keep   leave the instance (its path is printed last)
#
# From the source tree (after make) it runs bin/ and examples/bin/, or
# the trees RI_BIN and RI_EXAMPLES name when they are set (the suites set
# them: make check runs the demo on its sanitized build); installed (make install, the Debian package: PREFIX/libexec/ri/demo.sh)
# it runs the installed commands and the example programs beside it.
set -euo pipefail
keep=no
case "${1:-}" in
--keep) keep=yes ;;
"") ;;
*) echo "usage: demo.sh [--keep]" >&2; exit 64 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
if [ -n "${RI_BIN:-}" ] && [ -x "$RI_BIN/ri-init" ] && [ -x "${RI_EXAMPLES:-}/ledger-probe" ]; then
	bin=$RI_BIN examples=$RI_EXAMPLES
elif [ -x "$top/bin/ri-init" ] && [ -x "$top/examples/bin/ledger-probe" ]; then
	bin=$top/bin examples=$top/examples/bin
else
	bin=/usr/local/bin examples=$here
fi
export PATH="$bin:$examples:$PATH"
d=$(mktemp -d "${TMPDIR:-/tmp}/ri-demo.XXXXXX")
if [ "$keep" = no ]; then
	trap 'rm -rf "$d"' EXIT
fi
# bold headings on a terminal, plain text anywhere else
if [ -t 1 ]; then
	say() { printf '\n\033[1m# %s\033[0m\n' "$*"; }
else
	say() { printf '\n# %s\n' "$*"; }
fi

say "an instance: journal, findings register, keys (ri-init)"
cat >"$d/ri.json" <<JSON
{
  "journal": "journal.db", "findings": "findings.db",
  "integrity_key_file": "journal.key", "seal_key_file": "seal.key",
  "instance": {
    "clock_offset_allowance": "100ms", "reconciliation_cadence": "10s", "run_bound": "5s",
    "closure_latency": "1500ms", "journal_write_bound": "300ms", "read_bound": "200ms",
    "compensation_window": "60s", "intent_candidates_cap": 16, "read_cap": 20,
    "reference_length_cap": 256, "payload_cap": 65536, "journal_fence": "declared"
  },
  "kinds": {
    "ledger": {
      "outcomes": ["disclosed"], "repeatable": true,
      "completion_bound": "3s", "commit_round_trip": "100ms", "probe_round_trip": "600ms",
      "retention_period": "400d", "commit_fence": "none", "pairing_datum": "nonce",
      "outcome_envelope": 4096,
      "probe": ["$examples/ledger-probe", "--store", "$d/ledger.db"],
      "service_identity": { "actor_ref": "ledger-reconciler", "credential_file": "reconciler.cred" }
    }
  }
}
JSON
export RI_CONFIG=$d/ri.json
ri-init | jq .

say "actors: alice discloses; ledger-reconciler is the sweep's service identity"
RI_CREDENTIAL=$(ri-actor add alice | jq -r .credential)
export RI_CREDENTIAL
ri-actor add ledger-reconciler --service --credential-file "$d/reconciler.cred"
ri-actor list

say "may the instance start? (ri-startcheck)"
ri-startcheck

say "a wrapped job: intent, act, outcome (ri-run; its answer where asked, stdout is the job's)"
ri-run --kind ledger --act-key disclosure-1 --actor alice --answer "$d/answer.json" -- \
    ledger-disclose --store "$d/ledger.db" --subject patient-7 --recipient insurer-3
jq . "$d/answer.json"
ri-read --kind ledger --act-key disclosure-1 </dev/null |
    jq '.invocations[] | {invocation_id, state, records: [.records[] | {action_ref, actor_ref}]}'

say "the crash: the job commits, then the wrapper is killed before Close"
# (a subshell of its own: the shell's note of a killed job goes nowhere)
# shellcheck disable=SC2016  # $0 and $1 are the inner shell's
(
	ri-run --kind ledger --act-key disclosure-2 --actor alice -- sh -c \
	    'ledger-disclose --store "$0" --subject patient-8 --recipient insurer-3 && touch "$1" && sleep 30' \
	    "$d/ledger.db" "$d/committed" &
	run=$!
	for _ in $(seq 1 200); do [ -e "$d/committed" ] && break; sleep 0.05; done
	kill -KILL "$run"
	wait "$run"
) 2>/dev/null || echo "ri-run killed (exit $?): the act exists, its record does not (and its job died with it)"
ri-read --kind ledger --act-key disclosure-2 </dev/null | jq '.invocations[] | {state}'

say "past the examine edge (completion bound + allowance), the sweep probes the store"
sleep 4
ri-sweep | jq .
ri-read --kind ledger --act-key disclosure-2 </dev/null |
    jq '.invocations[] | {state, records: [.records[] | {action_ref, actor_ref, recovery: .payload.recovery, acting_actor_ref: .payload.acting_actor_ref, data: .payload.data}]}'
say "one act, one intent, one outcome, one writer -- and the store agrees"
ledger-admin --store "$d/ledger.db" list

say "the auditor's view, from the records alone (ri-audit --text)"
ri-audit --text

if [ "$keep" = yes ]; then
	say "the instance is kept: export RI_CONFIG=$d/ri.json"
fi
