#!/usr/bin/env bash
# 05-load.sh -- Issue 6: load.  8 processes x 2,000 acts on distinct keys
# plus 2 sweeps on a 2-core machine: no SQLITE_BUSY leaks out as a failure,
# no lost record, audit clean; report the throughput.
#
# A fresh instance (system clock, walkthrough numbers, fault injection
# off).  8 worker processes each run their acts one after another, each
# act an ri-run of `true` on its own act key; every non-zero exit is a
# failure, whatever its code.  Beside them 2 sweepers (ri-sweep --node a
# and --node b, so they may overlap) run one sweep after another, 0.5 s
# apart, until the workers are done; a non-zero sweep exit is a failure
# too.  Then: ledger intents == outcomes == 8 x acts, every act key with
# exactly one intent and one outcome, no intent left open, no refusal,
# abandonment or escalation (an outcome a sweep recovered after a failed
# run counts as an outcome, with its recovery_intended: the crash variant,
# but its run's failure is already counted), and ri-audit exits 0.
#
# The full size is the default: 16,000 acts took 58 s here on an idle
# machine (274 acts/s); a short trial at a load average of 7 ran 49
# acts/s, i.e. ~5.5 minutes for 16,000 -- inside the ~10 minutes allowed.  BENCH_LOAD_ACTS=N runs N acts per process (a
# quick trial); the table then says the size is reduced.
. "$(dirname "$0")/lib/common.bash"

W=8
ACTS=${BENCH_LOAD_ACTS:-2000}
TOTAL=$((W * ACTS))

bench_header "05-load" \
    "$W processes x $ACTS acts (ri-run true, distinct keys) + 2 sweepers, $BENCH_CORES cores" \
    "none (a throughput report); correctness is the target" \
    "no failed command (no SQLITE_BUSY or other error leaks out), intents == outcomes == $TOTAL, ri-audit exit 0"
[ "$ACTS" = 2000 ] || echo "  NOTE: reduced size ($W x $ACTS, not $W x 2000: BENCH_LOAD_ACTS is set)"

I=$BT/inst
bench_instance "$I" system || bench_die "cannot create an instance"
bench_cfg "$I" '.fault_injection = false' || bench_die "config"
export RI_CONFIG=$I/ri.json RI_CREDENTIAL_FILE=$I/alice.cred

worker() { # N
	local i rc t0 t1
	for ((i = 0; i < ACTS; i++)); do
		t0=${EPOCHREALTIME/[.,]/}
		"$RI_BIN/ri-run" --kind ledger --act-key "load-$1-$i" --actor alice -- true \
		    </dev/null >/dev/null 2>>"$BT/w$1.err"
		rc=$?
		t1=${EPOCHREALTIME/[.,]/}
		printf '%d.%03d\n' $(( (t1 - t0) / 1000 )) $(( (t1 - t0) % 1000 )) >>"$BT/w$1.ms"
		[ "$rc" = 0 ] || echo "$1 $i $rc" >>"$BT/fail"
	done
}
sweeper() { # NODE
	local rc
	while [ -e "$BT/running" ]; do
		"$RI_BIN/ri-sweep" --node "$1" >>"$BT/s$1.out" 2>>"$BT/s$1.err"
		rc=$?
		echo "$rc" >>"$BT/s$1.rc"
		[ "$rc" = 0 ] || echo "sweep-$1 - $rc" >>"$BT/fail"
		sleep 0.5
	done
}

: >"$BT/fail"
touch "$BT/running"
sweeper a &
sa=$!
sweeper b &
sb=$!
t0=${EPOCHREALTIME/[.,]/}
pids=()
for ((w = 0; w < W; w++)); do
	worker "$w" &
	pids+=($!)
done
wait "${pids[@]}"
t1=${EPOCHREALTIME/[.,]/}
rm -f "$BT/running"
wait "$sa" "$sb"
wall_ms=$(( (t1 - t0) / 1000 ))

cat "$BT"/w*.ms >"$BT/all.ms"
read -r n mean med p90 min max < <(stats "$BT/all.ms")
nfail=$(wc -l <"$BT/fail")
runs=$(cat "$BT"/s*.rc 2>/dev/null | wc -l)
q() { sqlite3 "$I/journal.db" "$1"; }
intents=$(q "SELECT count(*) FROM records WHERE action_ref = 'ledger.intended'")
outcomes=$(q "SELECT count(*) FROM records WHERE action_ref = 'ledger.disclosed'")
others=$(q "SELECT count(*) FROM records WHERE kind = 'ledger'
           AND action_ref NOT IN ('ledger.intended', 'ledger.disclosed', 'ledger.recovery_intended')")
recov_int=$(q "SELECT count(*) FROM records WHERE action_ref = 'ledger.recovery_intended'")
recovered=$(q "SELECT count(*) FROM records WHERE action_ref = 'ledger.disclosed' AND payload LIKE '%\"recovery\":true%'")
unclosed=$(q "SELECT count(*) FROM records i WHERE i.action_ref = 'ledger.intended' AND NOT EXISTS
             (SELECT 1 FROM records c WHERE c.invocation_id = i.invocation_id AND c.action_ref != 'ledger.intended'
              AND c.action_ref != 'ledger.recovery_intended')")
keys=$(q "SELECT count(DISTINCT act_key) FROM records WHERE action_ref = 'ledger.intended'")
bad=$(q "SELECT count(*) FROM (SELECT act_key FROM records WHERE kind = 'ledger' GROUP BY act_key
         HAVING sum(action_ref = 'ledger.intended') != 1 OR sum(action_ref = 'ledger.disclosed') != 1)")
total_rec=$(q "SELECT count(*) FROM records")
a0=${EPOCHREALTIME/[.,]/}
"$RI_BIN/ri-audit" >"$BT/audit.out" 2>"$BT/audit.err"
arc=$?
a1=${EPOCHREALTIME/[.,]/}

printf '  %-34s %s\n' "acts" "$n run in $(ratio "$wall_ms" 1000 1) s by $W processes"
printf '  %-34s %s\n' "throughput" "$(awk -v n="$n" -v ms="$wall_ms" 'BEGIN { printf "%.1f acts/s", n / (ms / 1000) }')"
printf '  %-34s mean %.1f  median %.1f  p90 %.1f  max %.1f  (%s acts over 1 s)\n' "act latency ms (one ri-run)" \
    "$mean" "$med" "$p90" "$max" "$(awk '$1 > 1000' "$BT/all.ms" | wc -l)"
printf '  %-34s %s\n' "sweep runs (2 sweepers)" "$runs, exits: $(cat "$BT"/s*.rc 2>/dev/null | sort | uniq -c | awk '{ printf "%s x %s  ", $1, $2 }')"
printf '  %-34s %s\n' "failed commands (non-zero exit)" "$nfail"
if [ "$nfail" -gt 0 ]; then
	echo "    by exit code: $(awk '{ print $3 }' "$BT/fail" | sort | uniq -c | awk '{ printf "%s x %s  ", $1, $2 }')"
	cat "$BT"/w*.err "$BT"/s*.err 2>/dev/null | sort | uniq -c | sort -rn | head -5 | sed 's/^/    /'
fi
printf '  %-34s intents %s, outcomes %s (recovered by a sweep: %s), distinct act keys %s\n' \
    "journal" "$intents" "$outcomes" "$recovered" "$keys"
printf '  %-34s keys without exactly 1 intent + 1 outcome: %s, intents left open: %s, other ledger records: %s\n' \
    "" "$bad" "$unclosed" "$others"
printf '  %-34s %s\n' "records in the journal" "$total_rec (actors, seals of the sweeps included)"
printf '  %-34s exit %s in %s s (%s records)\n' "ri-audit" "$arc" "$(ratio $(( (a1 - a0) / 1000 )) 1000 1)" \
    "$(jq -r '.records // "?"' "$BT/audit.out" 2>/dev/null)"
[ "$arc" = 0 ] || jq -c '.checks[]? | select(.status == "fail") | {check, name, failures: (.failures[:3])}' \
    "$BT/audit.out" 2>/dev/null | head -10 | sed 's/^/    /'

ok=1
[ "$nfail" = 0 ] || ok=0
[ "$intents" = "$TOTAL" ] && [ "$outcomes" = "$TOTAL" ] && [ "$keys" = "$TOTAL" ] || ok=0
[ "$bad" = 0 ] && [ "$others" = 0 ] && [ "$unclosed" = 0 ] && [ "$recov_int" = "$recovered" ] || ok=0
[ "$arc" = 0 ] || ok=0
[ "$n" = "$TOTAL" ] || ok=0
bench_verdict "$ok"
