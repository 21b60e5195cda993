#!/usr/bin/env bash
# 06-history.sh -- Issue 15, target 2: an act's cost does not grow with
# its history.  A repeatable act key used every night for years must not
# slow Open, ri-read or the sweep.
#
# 1. Pair: one journal holding 10^4 closed invocations of the one act key
#    "hot" (ri-fill --act-key); ri-open + ri-close pairs on "hot" against
#    pairs on fresh keys of the same journal, interleaved blocks (ABBA).
#    Target: median hot / median fresh <= 1.2.
# 2. ri-read of "hot" against ri-read of a key with read_cap + 1 (21)
#    invocations, same journal, interleaved: both answer read_cap entries
#    and "more", so the read is bounded by read_cap, not by the history.
#    Target <= 1.2.
# 3. Sweep: 100 orphans (open intents past their examine edge, env clock)
#    in a journal whose delta (no duplicate-scan mark) also holds 2,000
#    closed invocations of "hot", against the same 100 orphans in a journal
#    holding nothing else.  A fresh copy per run, ABBA.  Target: median
#    hot / median fresh <= 1.2, closed = 100 both.
#
# BENCH_HISTORY_ROUNDS (default 6) x BENCH_HISTORY_N (default 10) pairs and
# reads each; BENCH_HISTORY_HOT (default 10000) past invocations;
# BENCH_HISTORY_SWEEP_HOT (default 2000); BENCH_HISTORY_SWEEP_ROUNDS
# (default 10: a sweep here is ~0.3 s, and issue 15 target 6 asks >= 5
# rounds; at 3 its median moved by 0.4 between back-to-back runs).
. "$(dirname "$0")/lib/common.bash"

ROUNDS=${BENCH_HISTORY_ROUNDS:-6}
N=${BENCH_HISTORY_N:-10}
HOT=${BENCH_HISTORY_HOT:-10000}
SHOT=${BENCH_HISTORY_SWEEP_HOT:-2000}
ORPH=100
TARGET=1.2

bench_header "06-history" \
    "pair, ri-read and a 100-orphan sweep on an act key with a long history" \
    "the same on a fresh key / a journal without the history, interleaved in the same run" \
    "each median <= ${TARGET}x its fresh baseline's; the sweep closes all $ORPH orphans both ways"

hot=$(bench_journal hot "$HOT" 0 1 --act-key hot) || bench_die "cannot build the hot-key journal"
shot=$(bench_journal sweephot "$SHOT" "$ORPH" 0 --act-key hot) || bench_die "cannot build the sweep's hot journal"
sfresh=$(bench_journal sweepfresh 0 "$ORPH" 0) || bench_die "cannot build the sweep's fresh journal"
D=$BT/hot
bench_copy "$hot" "$D" system || bench_die "copy"
export RI_CONFIG=$D/ri.json RI_CREDENTIAL_FILE=$D/alice.cred

ri_pair() { # KEY
	local o
	o=$("$RI_BIN/ri-open" --kind ledger --act-key "$1" --actor alice \
	    --intent-data "{\"pairing_datum\":\"pd-$1\"}" </dev/null) || return 1
	printf '%s' "${o%\}},\"outcome_action_ref\":\"ledger.disclosed\",\"outcome_data\":{}}" |
	    "$RI_BIN/ri-close" >/dev/null
}
ri_read() { # KEY
	"$RI_BIN/ri-read" --kind ledger --act-key "$1" >/dev/null
}
block() { # FN KEYFN COUNT TAG OUT
	local i t0 t1 fails=0 key
	for ((i = 0; i < $3; i++)); do
		key=$2
		[ "$key" = fresh ] && key=fresh-$4-$i
		t0=${EPOCHREALTIME/[.,]/}
		if "$1" "$key" 2>>"$BT/err.log"; then
			t1=${EPOCHREALTIME/[.,]/}
			printf '%d.%03d\n' $(( (t1 - t0) / 1000 )) $(( (t1 - t0) % 1000 )) >>"$5"
		else
			fails=$((fails + 1))
		fi
	done
	return $fails
}

fails=0
block ri_pair hot 3 warm "$BT/warm" || bench_die "pair on the hot key failed: $(tail -2 "$BT/err.log")"
block ri_pair fresh 3 warm "$BT/warm" || bench_die "pair on a fresh key failed"
for ((i = 0; i < 21; i++)); do ri_pair cap || bench_die "pair"; done
: >"$BT/ph.ms"; : >"$BT/pf.ms"; : >"$BT/rh.ms"; : >"$BT/rf.ms"
for ((r = 0; r < ROUNDS; r++)); do
	if ((r % 2 == 0)); then
		block ri_pair fresh "$N" "p$r" "$BT/pf.ms" || fails=$((fails + $?))
		block ri_pair hot "$N" "p$r" "$BT/ph.ms" || fails=$((fails + $?))
		block ri_read cap "$N" "r$r" "$BT/rf.ms" || fails=$((fails + $?))
		block ri_read hot "$N" "r$r" "$BT/rh.ms" || fails=$((fails + $?))
	else
		block ri_read hot "$N" "r$r" "$BT/rh.ms" || fails=$((fails + $?))
		block ri_read cap "$N" "r$r" "$BT/rf.ms" || fails=$((fails + $?))
		block ri_pair hot "$N" "p$r" "$BT/ph.ms" || fails=$((fails + $?))
		block ri_pair fresh "$N" "p$r" "$BT/pf.ms" || fails=$((fails + $?))
	fi
done
row() { # LABEL FILE
	local n mean med p90 min max
	read -r n mean med p90 min max < <(stats "$2")
	printf '  %-40s %5d %9.2f %9.2f %9.2f\n' "$1" "$n" "$med" "$min" "$mean"
	MED=$med MIN=$min
}
printf '  %-40s %5s %9s %9s %9s\n' "($ROUNDS rounds x $N, ABBA)" n "median ms" "min ms" "mean ms"
row "pair, fresh key" "$BT/pf.ms"; pfm=$MED pfn=$MIN
row "pair, key with $HOT past invocations" "$BT/ph.ms"; phm=$MED phn=$MIN
row "ri-read, key with read_cap + 1 invocations" "$BT/rf.ms"; rfm=$MED rfn=$MIN
row "ri-read, key with $HOT past invocations" "$BT/rh.ms"; rhm=$MED rhn=$MIN
RP=$(ratio "$phm" "$pfm")
RR=$(ratio "$rhm" "$rfm")
echo "  ratio pair (hot / fresh, median): $RP   (min ratio $(ratio "$phn" "$pfn"))   target <= $TARGET"
echo "  ratio ri-read (hot / read_cap + 1, median): $RR   (min ratio $(ratio "$rhn" "$rfn"))   target <= $TARGET"
[ "$fails" = 0 ] || { echo "  $fails commands FAILED; first errors:"; sort "$BT/err.log" | uniq -c | head -3; }

# ---- the sweep ----------------------------------------------------------------
sweep_once() { # SRC WHICH
	local d=$BT/sw-$2 m t0 t1 ans rc
	bench_copy "$1" "$d" env || return 1
	m=$(bench_info "$1" max_recorded_at)
	t0=${EPOCHREALTIME/[.,]/}
	ans=$(RI_CONFIG=$d/ri.json RI_NOW=$((m + 60000)) "$RI_BIN/ri-sweep" 2>"$d/err")
	rc=$?
	t1=${EPOCHREALTIME/[.,]/}
	if [ "$rc" != 0 ] || [ "$(jq -r '.closed // 0' <<<"$ans")" != "$ORPH" ]; then
		echo "  sweep ($2): exit $rc, $(head -c 600 <<<"$ans") $(head -c 600 "$d/err")"
		return 1
	fi
	printf '%d.%03d\n' $(( (t1 - t0) / 1000 )) $(( (t1 - t0) % 1000 )) >>"$BT/s$2.ms"
	rm -rf "$d"
}
: >"$BT/shot.ms"; : >"$BT/sfresh.ms"
SR=${BENCH_HISTORY_SWEEP_ROUNDS:-10}
for ((r = 0; r < SR; r++)); do
	if ((r % 2 == 0)); then order="fresh hot"; else order="hot fresh"; fi
	for w in $order; do
		if [ "$w" = hot ]; then sweep_once "$shot" hot || fails=$((fails + 1))
		else sweep_once "$sfresh" fresh || fails=$((fails + 1)); fi
	done
done
printf '  %-40s %5s %9s %9s %9s\n' "sweep of $ORPH orphans ($SR rounds, ABBA)" n "median ms" "min ms" "mean ms"
row "journal with nothing else" "$BT/sfresh.ms"; sfm=$MED sfn=$MIN
row "delta with $SHOT closed invocations of hot" "$BT/shot.ms"; shm=$MED shn=$MIN
RS=$(ratio "$shm" "$sfm")
echo "  ratio sweep (hot delta / fresh, median): $RS   (min ratio $(ratio "$shn" "$sfn"))   target <= $TARGET"

ok=1
[ "$fails" = 0 ] || ok=0
le "$RP" "$TARGET" || ok=0
le "$RR" "$TARGET" || ok=0
le "$RS" "$TARGET" || ok=0
[ "$(wc -l <"$BT/shot.ms")" -gt 0 ] && [ "$(wc -l <"$BT/sfresh.ms")" -gt 0 ] || ok=0
bench_verdict "$ok"
