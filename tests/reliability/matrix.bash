#!/usr/bin/env bash
# matrix.bash -- the restart matrix: every named fault point (lib/util/faults.def,
# read from `ri-startcheck --fault-points`, so a new boundary cannot be added
# without entering this matrix) x every fault kind that applies to it
# (die = SIGKILL with no cleanup; fail; lose the reply).  Each cell runs a
# real wrapped act of the example adopter into the fault, restarts the world
# (fresh processes, the env clock moved past every lease), runs ri-sweep
# twice and then two at once, and asserts:
#   - the act happened in the adopter's store at most once, and the journal
#     and the store agree (an outcome stands exactly when the store holds
#     the act; the probe's view is the store's count);
#   - every aged intent has exactly one standing closing and no binding
#     duplicate, or is escalated for an operator;
#   - every sweep tally keeps the partition; ri-audit --probe passes every
#     check (no record lost or half-written: the traversal sees every row).
# Prints the matrix as a table; exits 1 if any cell fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
BATS_TEST_DIRNAME=$here/..
BATS_TMPDIR=${TMPDIR:-/tmp}
# shellcheck source=../lib/common.bash
. "$here/../lib/common.bash"

fails=0 cells=0
rows=()

partition_ok() { # tally JSON on stdin
	jq -e '.closed + .abandoned + .escalated + .reported + .skipped + .closed_already == .examined' >/dev/null
}

act() { # the scenario's own act, into the fault in $FAULT
	local scenario=$1
	case $scenario in
	commit)
		RI_FAULT=$FAULT ri-run --kind ledger --act-key a1 --actor alice -- \
		    ledger-disclose --store "$T/ledger.db" --subject s --recipient r ;;
	refuse)
		RI_FAULT=$FAULT ri-run --kind ledger --act-key a1 --actor alice --pre-commit-exit 3 -- \
		    sh -c 'exit 3' ;;
	sweep) # a crash between act and close, then a sweep into the fault
		RI_FAULT=run.after_act=die ri-run --kind ledger --act-key a1 --actor alice -- \
		    ledger-disclose --store "$T/ledger.db" --subject s --recipient r
		ri_at 5
		RI_FAULT=$FAULT ri-sweep ;;
	resolve) # a stall: escalated by the sweep, then an operator into the fault
		RI_FAULT=run.after_open=die ri-run --kind ledger --act-key a1 --actor alice -- true
		ri_at 5
		ri-sweep
		local inv ev
		inv=$(ri-read --kind ledger --act-key a1 </dev/null | jq -r '.invocations[0].invocation_id')
		ev=$(ri-read --kind ledger --act-key a1 </dev/null | jq -r '.invocations[0].records[0].event_id')
		jq -nc --arg i "$inv" --arg e "$ev" --arg c "$BOB" '{kind:"ledger", act_key:"a1",
		    invocation_id:$i, intent_event_id:$e, actor_ref:"bob", credential:$c,
		    disposition:{abandoned:{cause:"the store has been quiet; no such disclosure"}}}' |
		    RI_FAULT=$FAULT ri-resolve ;;
	finding) # a crash between act and close, then a sweep whose probe cannot
		# reach the store: it decides the instance finding store-unavailable
		# (reconcile step 3.13c) into the fault; the store back for the restart
		RI_FAULT=run.after_act=die ri-run --kind ledger --act-key a1 --actor alice -- \
		    ledger-disclose --store "$T/ledger.db" --subject s --recipient r
		ri_at 5
		mv "$T/ledger.db" "$T/ledger.away"
		RI_FAULT=$FAULT ri-sweep
		mv "$T/ledger.away" "$T/ledger.db" ;;
	purge) # a closed act past its retention, purged by a sweep into the fault
		ri-run --kind ledger --act-key a1 --actor alice -- \
		    ledger-disclose --store "$T/ledger.db" --subject s --recipient r
		ri_at 200
		RI_FAULT=$FAULT ri-sweep ;;
	esac
}

scenario_of() {
	case $1 in
	open.*|lease.*|run.*|close.*|append.*) echo commit ;;
	refuse.*) echo refuse ;;
	sweep.*) echo sweep ;;
	resolve.*) echo resolve ;;
	purge.*) echo purge ;;
	findings.*) echo finding ;;
	*) echo none ;;
	esac
}

# Judge the world after the restart; echo a short outcome, return non-zero
# with a reason on a violation.
judge() {
	local scenario=$1 out state n outcome store datum
	out=$(ri-read --kind ledger --act-key a1 </dev/null 2>/dev/null)
	case $? in
	0) ;;
	17) # no readable intent: purged, or the intent never landed -- and then
	    # the act must never have run (ri-run runs nothing before Open)
		store=$(ledger-admin --store "$T/ledger.db" count)
		if [ "$scenario" = purge ]; then echo "purged after retention"; return 0; fi
		if [ "$store" -ne 0 ]; then echo "no intent, yet the store holds $store acts"; return 1; fi
		echo "no intent; the act never ran"; return 0 ;;
	*) echo "ri-read failed"; return 1 ;;
	esac
	n=$(jq '.invocations | length' <<<"$out")
	if jq -e '.binding_duplicate or any(.invocations[]; .binding_duplicate)' >/dev/null <<<"$out"; then
		echo "binding duplicate"; return 1
	fi
	# every aged intent: one standing closing, or escalated for an operator
	if jq -e 'any(.invocations[]; .state == "open")' >/dev/null <<<"$out"; then
		echo "an aged intent is still open after the sweeps"; return 1
	fi
	state=$(jq -r '[.invocations[].state] | join("+")' <<<"$out")
	for datum in $(jq -r '.invocations[].records[0].payload.data.pairing_datum // empty' <<<"$out"); do
		store=$(ledger-admin --store "$T/ledger.db" count --pairing-datum "$datum" 2>/dev/null || echo 0)
		outcome=$(jq --arg d "$datum" '[.invocations[] | select(.records[0].payload.data.pairing_datum == $d) |
		    select(.state == "closed")] | length' <<<"$out")
		if [ "$store" -gt 1 ]; then echo "the act happened $store times"; return 1; fi
		if [ "$outcome" -eq 1 ] && [ "$store" -ne 1 ]; then echo "an outcome stands but the store holds no act"; return 1; fi
		if [ "$scenario" != refuse ] && [ "$store" -eq 1 ] && [ "$outcome" -ne 1 ]; then
			echo "the store holds the act but no outcome stands ($state)"; return 1
		fi
	done
	echo "$state ($n invocation$( [ "$n" = 1 ] || echo s))"
}

cell() {
	local point=$1 kind=$2 scenario result tallies audit
	scenario=$(scenario_of "$point")
	FAULT="$point=$kind"
	(
		ri_instance fast >/dev/null 2>&1 || { echo "FAIL|instance"; exit; }
		[ "$scenario" = purge ] && ri_cfg '.kinds.ledger.retention_period = "100s"'
		ledger-admin --store "$T/ledger.db" init >/dev/null     # the adopter's store exists
		export RI_CREDENTIAL=$ALICE
		BOB=$(ri-actor add bob | jq -r .credential)
		act "$scenario" >/dev/null 2>&1
		# restart the world: fresh processes, the clock past every lease
		local at=20
		[ "$scenario" = purge ] && at=300
		ri_at "$at"
		tallies=$( { ri-sweep; ri-sweep; } 2>/dev/null)
		ri_at $((at + 1))
		tallies+=$'\n'$( { ri-sweep --node a & ri-sweep --node b & wait; } 2>/dev/null)
		while read -r t; do
			[ -z "$t" ] && continue
			partition_ok <<<"$t" || { echo "FAIL|partition broken: $t"; exit; }
		done <<<"$tallies"
		result=$(judge "$scenario") || { echo "FAIL|$result"; exit; }
		audit=$(ri-audit --probe 2>/dev/null)
		if [ $? -ne 0 ]; then
			echo "FAIL|$result; audit: $(jq -c '[.checks[] | select(.status == "fail") | .check]' <<<"$audit")"
			exit
		fi
		echo "ok|$result"
		rm -rf "$T"
	)
}

while IFS=$'\t' read -r point kind _; do
	[ -z "$point" ] && continue
	if [ "$(scenario_of "$point")" = none ]; then
		echo "matrix: fault point $point has no scenario: enter it in tests/reliability/matrix.bash" >&2
		exit 1
	fi
	if [ "$kind" = write ]; then
		variants=("$point.before=die" "$point.before=fail" "$point.before=lose"
		          "$point.after=die" "$point.after=fail" "$point.after=lose")
	else
		variants=("$point=die")
	fi
	for v in "${variants[@]}"; do
		p=${v%=*} k=${v##*=}
		r=$(cell "$p" "$k")
		cells=$((cells + 1))
		case $r in ok\|*) ;; *) fails=$((fails + 1)) ;; esac
		rows+=("$(printf '%-34s %-5s %-4s %s' "$p" "$k" "${r%%|*}" "${r#*|}")")
	done
done < <(ri-startcheck --fault-points)

printf '\n%-34s %-5s %-4s %s\n' "fault point" "kind" "" "after restart + 4 sweeps"
printf '%s\n' "${rows[@]}"
printf '\n%d of %d cells hold\n' $((cells - fails)) "$cells"
[ "$fails" -eq 0 ]
