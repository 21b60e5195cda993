#!/usr/bin/env bats
# Load: 8 processes x N acts on distinct keys, plus pairs of concurrent
# sweeps (--node a / --node b), on the walkthrough instance (its
# journal_write_bound, 3 s, is the SQLite busy timeout).  Asserts:
#   - no SQLITE_BUSY ("database is locked") leaks out as a failure: every
#     act that is not deliberately killed exits 0;
#   - no lost record: exactly one intent and one outcome per act, and no
#     act with a second closing;
#   - every sweep tally keeps its partition;
#   - ri-audit exits 0 afterwards.
# The crash-under-load variant kills some acts between the act and Close
# (RI_FAULT=run.after_act=die) and checks the sweeps close each of them
# exactly once, from the store.
#
# N defaults to 150 (1,200 acts per test, about 25 s on a 2-core machine);
# RI_LOAD_N overrides it (`make bench` wants the issue's 2,000).  The
# throughput is printed as a bats comment line (# load: ...).
#
# test-pg: no -- load on one SQLite file; on PostgreSQL, tests/pg/multinode.bats

load "$BATS_TEST_DIRNAME/../lib/common"

W=8
N=${RI_LOAD_N:-150}

setup() {
	ri_instance walkthrough
	# Allowance 13: a declared journal fence needs journal_write_bound with
	# the allowance of headroom over the substrate's worst case -- here, 8
	# writers and 2 sweeps queueing for SQLite's write lock on 2 cores.  A
	# write waits for the lock at most journal_write_bound - allowance (3 s)
	ri_cfg '.instance.journal_write_bound = "5s" | .instance.closure_latency = "15s"'
	ledger-admin --store "$T/ledger.db" init >/dev/null
	export RI_CREDENTIAL=$ALICE
	mkdir -p "$T/out"
}

teardown() {
	# a failed assertion must not leave workers or sweeps running
	local p
	for p in ${BG_PIDS:-}; do
		kill "$p" 2>/dev/null || true
	done
	true
}

ms() { date +%s%3N; }

# sql QUERY -- the journal, read-only (never checkpoints it)
sql() { sqlite3 -readonly "$T/journal.db" "$1"; }

# worker W CRASH_EVERY -- N acts on keys w<W>-<i>.  Every 10th act runs the
# example adopter's real ledger-disclose, the rest `true`.  With
# CRASH_EVERY > 0, every CRASH_EVERY-th act (offset by the worker, so the
# kills are spread over the run) runs ledger-disclose and dies between the
# act and Close.  Each act's exit code goes to out/w<W>.rc as "key rc".
worker() {
	local w=$1 crash_every=$2 i key rc
	set +e          # a background subshell: every exit code is data here
	for ((i = 1; i <= N; i++)); do
		key=w$w-$i
		if ((crash_every > 0 && (i + w) % crash_every == 0)); then
			RI_FAULT=run.after_act=die ri-run --kind ledger --act-key "$key" --actor alice \
			    --intent-data "{\"subject\":\"s$w\",\"recipient\":\"r$i\"}" --pre-commit-exit 2,3,4 -- \
			    ledger-disclose --store "$T/ledger.db" --subject "s$w" --recipient "r$i" \
			    >/dev/null 2>>"$T/out/w$w.crash.err"
			rc=$?
			echo "$key $rc crash" >>"$T/out/w$w.rc"
			continue
		elif ((i % 10 == 0)); then
			ri-run --kind ledger --act-key "$key" --actor alice --pre-commit-exit 2,3,4 -- \
			    ledger-disclose --store "$T/ledger.db" --subject "s$w" --recipient "r$i" \
			    >>"$T/out/w$w.out" 2>>"$T/out/w$w.err"
		else
			ri-run --kind ledger --act-key "$key" --actor alice -- true \
			    >>"$T/out/w$w.out" 2>>"$T/out/w$w.err"
		fi
		rc=$?
		echo "$key $rc" >>"$T/out/w$w.rc"
	done
}

# sweeps_during_load -- pairs of concurrent sweeps (node a, node b) until
# the file out/done appears; at least one pair.  Each run's exit code and
# tally go to out/sweep-<node>-<round>.{rc,json}.
sweeps_during_load() {
	local round=0 pa pb
	set +e
	while :; do
		round=$((round + 1))
		ri-sweep --node a >"$T/out/sweep-a-$round.json" 2>"$T/out/sweep-a-$round.err" &
		pa=$!
		ri-sweep --node b >"$T/out/sweep-b-$round.json" 2>"$T/out/sweep-b-$round.err" &
		pb=$!
		wait "$pa"; echo $? >"$T/out/sweep-a-$round.rc"
		wait "$pb"; echo $? >"$T/out/sweep-b-$round.rc"
		[ -e "$T/out/done" ] && break
		sleep 0.5
	done
}

# run_load CRASH_EVERY -- the 8 workers and the sweeps; sets ELAPSED_MS
run_load() {
	local w t0 pids=()
	BG_PIDS=
	t0=$(ms)
	for ((w = 1; w <= W; w++)); do
		# the shell's own "Killed" notices go to out/w<W>.shell
		worker "$w" "$1" 3>&- 2>>"$T/out/w$w.shell" &
		pids+=($!)
	done
	BG_PIDS="${pids[*]}"
	sweeps_during_load 3>&- &
	local sp=$!
	BG_PIDS="$BG_PIDS $sp"
	for p in "${pids[@]}"; do
		wait "$p"
	done
	ELAPSED_MS=$(($(ms) - t0))
	touch "$T/out/done"
	wait "$sp"
	BG_PIDS=
}

partition_ok() { # tally JSON file
	jq -e '.closed + .abandoned + .escalated + .reported + .skipped + .closed_already == .examined' "$1" >/dev/null
}

# every sweep run exited 0 and kept its partition; prints the rounds
check_sweeps() {
	local f n=0
	for f in "$T"/out/sweep-*.rc; do
		n=$((n + 1))
		[ "$(cat "$f")" -eq 0 ] || { echo "$f: exit $(cat "$f"): $(cat "${f%.rc}.err")"; return 1; }
		partition_ok "${f%.rc}.json" || { echo "${f%.rc}.json breaks the partition: $(cat "${f%.rc}.json")"; return 1; }
		# a busy journal is no reason for an alert either (a seal or a
		# purge that gave up on the lock)
		! grep -Eiq 'locked|busy' "${f%.rc}.json" "${f%.rc}.err" ||
		    { echo "${f%.rc}: $(cat "${f%.rc}.json" "${f%.rc}.err")"; return 1; }
	done
	[ "$n" -ge 2 ] || { echo "no sweep pair ran during the load"; return 1; }
	echo "$((n / 2))"
}

# no act's stderr mentions SQLite's busy/locked errors
no_busy_leaked() {
	! cat "$T"/out/w*.err 2>/dev/null | grep -Eiq 'locked|busy'
}

report() { # LABEL ACTS
	local rate
	rate=$(awk -v n="$2" -v ms="$ELAPSED_MS" 'BEGIN { printf "%.1f", n * 1000 / ms }')
	echo "# load: $1: $2 acts by $W processes in $ELAPSED_MS ms = $rate acts/s ($(nproc) cores)" >&3
}

@test "load: 8 processes x N acts on distinct keys + concurrent sweeps (node a, node b): every act exits 0, no busy leaks, exactly 8N intents and 8N outcomes, partitions kept, audit clean" {
	run_load 0
	report "clean" $((W * N))

	# every act exited 0: no SQLITE_BUSY surfaced as 14/15/20/21
	run sh -c "cat '$T'/out/w*.rc | awk '\$2 != 0'"
	[ -z "$output" ] || { echo "acts that failed (key rc):"; echo "$output" | head -20; false; }
	[ "$(cat "$T"/out/w*.rc | wc -l)" -eq $((W * N)) ]
	no_busy_leaked || { grep -Eih 'locked|busy' "$T"/out/w*.err | sort | uniq -c | head; false; }

	# the sweeps ran during the load and kept their partitions
	run check_sweeps
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	echo "# load: clean: $output sweep pairs during the load" >&3

	# no lost record: exactly 8N intents, 8N outcomes, one of each per key
	[ "$(sql "SELECT count(*) FROM records WHERE action_ref = 'ledger.intended'")" -eq $((W * N)) ]
	[ "$(sql "SELECT count(*) FROM records WHERE action_ref = 'ledger.disclosed'")" -eq $((W * N)) ]
	[ "$(sql "SELECT count(DISTINCT act_key) FROM records WHERE action_ref = 'ledger.disclosed'")" -eq $((W * N)) ]
	[ "$(sql "SELECT count(*) FROM records WHERE action_ref GLOB 'ledger.*' AND action_ref NOT IN ('ledger.intended', 'ledger.disclosed')")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM open_intents")" -eq 0 ]
	# the real disclosures are in the store, once each
	[ "$(ledger-admin --store "$T/ledger.db" count)" -eq $((W * (N / 10))) ]

	run ri-audit
	[ "$status" -eq 0 ] || { echo "$output" | jq -c '.checks[] | select(.status == "fail")'; false; }
	# the auditor's traversal saw every row
	[ "$(jq .records <<<"$output")" -eq "$(sql "SELECT count(*) FROM records")" ]
}

@test "load, crashes: acts killed between act and Close under load -- the sweeps (during and after, two nodes at once) close each exactly once, from the store" {
	# four orphans before the load, at T0: aged by the time the load runs
	# (T0 + 40 s), so the sweeps during the load have real work to race
	for k in 1 2 3 4; do
		RI_FAULT=run.after_act=die ri-run --kind ledger --act-key pre-$k --actor alice --pre-commit-exit 2,3,4 -- \
		    ledger-disclose --store "$T/ledger.db" --subject pre --recipient "r$k" >/dev/null 2>&1 && false
	done 2>/dev/null
	ri_at 40
	run_load 25
	report "crash" $((W * N))

	crashed=$(cat "$T"/out/w*.rc | awk '$3 == "crash"' | wc -l)
	[ "$crashed" -gt 0 ]
	# the killed acts died by SIGKILL (137); every other act exited 0
	run sh -c "cat '$T'/out/w*.rc | awk '(\$3 == \"crash\" && \$2 != 137) || (\$3 != \"crash\" && \$2 != 0)'"
	[ -z "$output" ] || { echo "unexpected exits (key rc):"; echo "$output" | head -20; false; }
	no_busy_leaked || { grep -Eih 'locked|busy' "$T"/out/w*.err | sort | uniq -c | head; false; }
	run check_sweeps
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	echo "# load: crash: $output sweep pairs during the load, $crashed acts killed" >&3

	# after the load, past every examine edge: two nodes at once, then one more
	ri_at 80
	ri-sweep --node a >"$T/out/after-a.json" 2>"$T/out/after-a.err" 3>&- &
	pa=$!
	ri-sweep --node b >"$T/out/after-b.json" 2>"$T/out/after-b.err" 3>&- &
	pb=$!
	wait "$pa"
	wait "$pb"
	partition_ok "$T/out/after-a.json"
	partition_ok "$T/out/after-b.json"
	# one more run picks up anything the pair left (a skip is legal; a
	# second closing is not)
	ri_at 81
	ri-sweep >"$T/out/after-c.json"
	partition_ok "$T/out/after-c.json"

	# every killed act (and the four before the load) closed exactly once,
	# by the sweep, with the outcome the store holds
	total=$((crashed + 4))
	[ "$(sql "SELECT count(*) FROM open_intents")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM records WHERE action_ref = 'ledger.recovery_intended'")" -eq "$total" ]
	[ "$(sql "SELECT count(*) FROM records WHERE action_ref IN ('ledger.escalated', 'ledger.abandoned', 'ledger.refused')")" -eq 0 ]
	run sql "SELECT act_key, count(*) FROM records WHERE action_ref = 'ledger.disclosed' GROUP BY act_key HAVING count(*) != 1"
	[ -z "$output" ] || { echo "acts with more than one outcome: $output"; false; }
	[ "$(sql "SELECT count(*) FROM records WHERE action_ref = 'ledger.intended'")" -eq $((W * N + 4)) ]
	[ "$(sql "SELECT count(*) FROM records WHERE action_ref = 'ledger.disclosed'")" -eq $((W * N + 4)) ]
	# the tallies of every run account for the same acts: closed sums to total
	closed=$(jq -s 'map(.closed) | add' "$T"/out/sweep-*.json "$T"/out/after-*.json)
	[ "$closed" -eq "$total" ] || { echo "sweeps closed $closed, expected $total"; false; }
	for k in $(cat "$T"/out/w*.rc | awk '$3 == "crash" { print $1 }') pre-1 pre-2 pre-3 pre-4; do
		run ri-read --kind ledger --act-key "$k" </dev/null
		[ "$status" -eq 0 ]
		[ "$(jq -r '.invocations | length' <<<"$output")" -eq 1 ]
		[ "$(jq -r '.invocations[0].state' <<<"$output")" = closed ]
		[ "$(jq -r '[.invocations[0].records[] | select(.action_ref == "ledger.disclosed")][0].payload.recovery' <<<"$output")" = true ]
	done

	run ri-audit --probe
	[ "$status" -eq 0 ] || { echo "$output" | jq -c '.checks[] | select(.status == "fail")'; false; }
}
