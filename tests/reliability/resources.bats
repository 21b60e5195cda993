#!/usr/bin/env bats
# Resource faults: a full disk, a read-only journal, a journal locked by
# another process past the bounds, the journal replaced or deleted under a
# running process, the findings register gone, the integrity key missing
# or unusable, and the clock stepping backwards.  Each fault must give the
# documented exit code (ri(7) EXIT STATUS) and lose nothing already
# recorded: once it is removed, ri-audit exits 0 and every earlier record
# is still there, unchanged, and readable with ri-read.
#
# CI runs as root without mount privileges, so no fault here needs any:
#   - disk full is RLIMIT_FSIZE (ulimit -f, SIGXFSZ ignored) at the end of
#     the WAL, where every append goes (ri's processes never checkpoint on
#     close and these journals stay far below the autocheckpoint, so the
#     WAL only grows; EFBIG reaches SQLite as an I/O error, as ENOSPC would);
#   - a read-only journal is chattr +i (chmod does not stop root), or, where
#     the filesystem has no immutable flag, the commands run as nobody with
#     the journal's files 0444;
#   - the lock is sqlite3 holding BEGIN EXCLUSIVE.
# The journal is inspected with `sqlite3 -readonly`, which never
# checkpoints it (the common `records` helper would, and move the WAL's end).
#
# test-pg: no -- a full disk, a read-only file, SQLite's own locks: resources of a SQLite file

load "$BATS_TEST_DIRNAME/../lib/common"
bats_require_minimum_version 1.5.0     # run --separate-stderr

setup() {
	ri_instance fast
	ledger-admin --store "$T/ledger.db" init >/dev/null
	export RI_CREDENTIAL=$ALICE
	IMMUTABLE='' LOCK_FIFO='' BG_PIDS=''
}

teardown() {
	local f p
	for f in "$T"/p*/*.reached; do
		[ -e "$f" ] && timeout 1 sh -c 'echo >"$1"' _ "${f%.reached}" 2>/dev/null
	done
	[ -n "$IMMUTABLE" ] && chattr -i $IMMUTABLE 2>/dev/null
	[ -n "$LOCK_FIFO" ] && timeout 1 sh -c ': >"$1"' _ "$LOCK_FIFO" 2>/dev/null
	# ri-run defers SIGTERM while it closes: KILL what is left
	for p in $BG_PIDS; do kill -KILL "$p" 2>/dev/null; done
	true
}

# ---- helpers ---------------------------------------------------------------

ms() { date +%s%3N; }

sql() { sqlite3 -readonly "$T/journal.db" "$1"; }

# snap -- every record as seq|event_id|action_ref|act_key|chain hash
snap() { sql "SELECT seq, event_id, action_ref, act_key, hex(hash) FROM records ORDER BY seq"; }

# act KEY -- a committed act: ri-run around the real ledger-disclose
act() {
	ri-run --kind ledger --act-key "$1" --actor alice --pre-commit-exit 2,3,4 -- \
	    ledger-disclose --store "$T/ledger.db" --subject s --recipient "$1" >/dev/null
}

# orphan KEY -- the same act, its ri-run killed between the act and Close:
# the intent stays open, the store holds the row
orphan() {
	local rc=0
	RI_FAULT=run.after_act=die ri-run --kind ledger --act-key "$1" --actor alice --pre-commit-exit 2,3,4 -- \
	    ledger-disclose --store "$T/ledger.db" --subject s --recipient "$1" >/dev/null 2>&1 || rc=$?
	[ "$rc" -eq 137 ]
}

closings() { # KEY -- closing records of act KEY
	sql "SELECT count(*) FROM records WHERE act_key = '$1' AND action_ref IN
	     ('ledger.disclosed', 'ledger.refused', 'ledger.abandoned', 'ledger.escalated')"
}

partition_ok() { # tally JSON on stdin
	jq -e '.closed + .abandoned + .escalated + .reported + .skipped + .closed_already == .examined' >/dev/null
}

# intact SNAPSHOT -- every record of the snapshot is still in the journal,
# unchanged and in place (seq, event id, action, act, chain hash), each act
# still readable with ri-read showing those events; and ri-audit exits 0
intact() {
	local n now k ev out
	n=$(wc -l <"$1")
	now=$(snap)
	if [ "$(head -n "$n" <<<"$now")" != "$(cat "$1")" ]; then
		echo "earlier records changed:"
		diff "$1" <(head -n "$n" <<<"$now")
		return 1
	fi
	# (the ledger's acts: substrate records, audit.*, carry "" or -- for an
	# actor's registry records -- the actor as their act key)
	for k in $(awk -F'|' '$4 != "" && $3 !~ /^audit\./ { print $4 }' "$1" | sort -u); do
		out=$(ri-read --kind ledger --act-key "$k" </dev/null) || { echo "ri-read $k: exit $?"; return 1; }
		for ev in $(awk -F'|' -v k="$k" '$4 == k && $3 !~ /^audit\./ { print $2 }' "$1"); do
			jq -e --arg e "$ev" '[.invocations[].records[].event_id] | index($e) != null' <<<"$out" >/dev/null ||
			    { echo "ri-read $k does not show $ev"; return 1; }
		done
	done
	out=$(ri-audit) || { echo "ri-audit: $(jq -c '.checks[] | select(.status == "fail")' <<<"$out")"; return 1; }
}

# after_fault SNAPSHOT OPEN_KEY ORPHAN_KEY -- the fault is gone: nothing
# lost, the refused Open may be retried (its lease, if the take landed and
# the release did not, has run out by T0 + 20 s), the orphan is closed by
# the sweep exactly once, and ri-audit --probe agrees with the store
after_fault() {
	intact "$1"
	ri_at 20
	open_req "$2" | ri-open >"$T/retry.json"
	close_req "$(cat "$T/retry.json")" | ri-close >/dev/null
	ri-sweep >"$T/sweep-after.json"
	partition_ok <"$T/sweep-after.json"
	[ "$(closings "$3")" -eq 1 ] || { echo "$3 has $(closings "$3") closings"; return 1; }
	[ "$(closings "$2")" -eq 1 ]
	ri_at 21
	[ "$(ri-sweep | jq .examined)" -eq 0 ]
	run ri-audit --probe
	[ "$status" -eq 0 ] || { echo "$output" | jq -c '.checks[] | select(.status == "fail")'; return 1; }
}

is_code() { # CODE ALLOWED...
	local c=$1
	shift
	for a; do [ "$c" -eq "$a" ] && return 0; done
	return 1
}

# -- disk full: RLIMIT_FSIZE just past the WAL's end

# wal_limit MARGIN_KIB -- a ulimit -f value MARGIN_KIB past the WAL's end
wal_limit() {
	echo $((($(stat -c %s "$T/journal.db-wal") + 1023) / 1024 + $1))
}

# full LIMIT CMD... -- run CMD with files capped at LIMIT KiB; SIGXFSZ is
# ignored (inherited across exec), so a write past the cap fails with EFBIG
full() {
	local l=$1
	shift
	(trap '' XFSZ; ulimit -f "$l" && "$@")
}

wal_is_the_end() { # the appends grow the WAL, not journal.db
	local wal db
	wal=$(stat -c %s "$T/journal.db-wal" 2>/dev/null || echo 0)
	db=$(stat -c %s "$T/journal.db")
	[ "$wal" -gt "$db" ] || skip "the WAL ($wal bytes) is not the journal's growing end (journal.db $db bytes): it was checkpointed, so ulimit -f cannot place the fault"
}

# -- read-only journal

# readonly_on -- the journal's three files become unwritable to the
# commands run through "${AS[@]}": chattr +i where the filesystem has the
# immutable flag (root ignores modes), else the commands run as nobody with
# the files 0444 (RI_TEST_READONLY=setpriv forces that path); else skip
readonly_on() {
	local files="$T/journal.db $T/journal.db-wal $T/journal.db-shm"
	AS=()
	if [ "${RI_TEST_READONLY:-}" != setpriv ] && command -v chattr >/dev/null &&
	    chattr +i $files 2>/dev/null; then
		IMMUTABLE=$files
		RO_HOW="chattr +i"
		return 0
	fi
	chattr -i $files 2>/dev/null || true
	command -v setpriv >/dev/null || skip "no immutable flag here (chattr +i failed) and no setpriv to run as nobody"
	getent passwd nobody >/dev/null || skip "no immutable flag here and no user nobody"
	chown -R nobody:"$(id -gn nobody)" "$T"
	AS=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
	"${AS[@]}" test -r "$T/ri.json" -a -x "$RI_BIN/ri-open" ||
	    skip "no immutable flag here, and nobody cannot reach $T or $RI_BIN"
	chmod 0444 $files
	RO_HOW="setpriv nobody, journal files 0444"
}

readonly_off() {
	if [ -n "$IMMUTABLE" ]; then
		chattr -i $IMMUTABLE
		IMMUTABLE=
	else
		chmod 0600 "$T/journal.db" "$T/journal.db-wal" "$T/journal.db-shm"
		chown -R 0:0 "$T"
	fi
	AS=()
}

# -- the journal locked by another process

lock_journal() { # sqlite3 holds BEGIN EXCLUSIVE until unlock_journal
	LOCK_FIFO=$T/lock.fifo
	mkfifo "$LOCK_FIFO"
	(echo 'BEGIN EXCLUSIVE;'; echo "SELECT 'locked';"; cat "$LOCK_FIFO"; echo 'ROLLBACK;') |
	    sqlite3 "$T/journal.db" >"$T/lock.out" 2>&1 3>&- &
	LOCK_PID=$!
	BG_PIDS="$BG_PIDS $LOCK_PID"
	for _ in $(seq 200); do
		grep -q locked "$T/lock.out" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "sqlite3 never took the lock: $(cat "$T/lock.out")"
	return 1
}

unlock_journal() {
	: >"$LOCK_FIFO"
	wait "$LOCK_PID"
	LOCK_FIFO=
}

# -- pausing a process at a fault point (see schedules.bats)

pause_dir() { # NAME POINT -- a FIFO for POINT under $T/NAME; prints the dir
	mkdir -p "$T/$1" && mkfifo "$T/$1/$2" && echo "$T/$1"
}

reached() { # DIR POINT
	for _ in $(seq 200); do
		[ -e "$1/$2.reached" ] && return 0
		sleep 0.05
	done
	return 1
}

release() { echo >"$1/$2"; }

# -- the system clock, for a real lease

# sys_open KEY -- open KEY with $T/sys.json (this instance on the system
# clock, so its lease runs out in real time) and commit the act in the
# store as a job would; the Close request goes to $T/close-KEY.json
sys_open() {
	[ "$(ms)" -gt $((T0 + 60000)) ] || skip "the system clock is before this suite's T0 ($T0 ms)"
	jq '.clock = "system"' "$T/ri.json" >"$T/sys.json"
	open_req "$1" "{\"pairing_datum\":\"pd-$1\",\"subject\":\"s\",\"recipient\":\"$1\"}" |
	    ri-open -c "$T/sys.json" >"$T/open-$1.json"
	ledger-admin --store "$T/ledger.db" plant --pairing-datum "pd-$1" --subject s --recipient "$1" >/dev/null
	close_req "$(cat "$T/open-$1.json")" '{"disclosure_id":"late"}' >"$T/close-$1.json"
}

# ---- disk full --------------------------------------------------------------

@test "disk full: ri-open refuses (14/15/20) writing nothing, ri-sweep lands whole records or none; once space returns the open may be retried, nothing is lost, the audit is clean" {
	act k1
	act k2
	orphan d1
	ri_at 10
	snap >"$T/before"
	wal_is_the_end
	# 8 KiB past the WAL's end: room for the section's take, not the intent
	run --separate-stderr full "$(wal_limit 8)" ri-open --kind ledger --act-key k3 --actor alice --intent-data '{}' </dev/null
	[ "$status" -ne 0 ] || skip "ulimit -f did not constrain SQLite's WAL appends (an intent landed 8 KiB past the WAL's end); a tmpfs or loop mount would be needed"
	is_code "$status" 14 15 20 || { echo "ri-open: exit $status: $output $stderr"; false; }
	echo "# disk full: ri-open exit $status: $stderr" >&3
	[ "$(snap)" = "$(cat "$T/before")" ]
	# the sweep: d1 is aged; a write either lands whole or not at all
	run --separate-stderr full "$(wal_limit 8)" ri-sweep
	echo "# disk full: ri-sweep exit $status: $output" >&3
	is_code "$status" 0 2 15 || { echo "ri-sweep: exit $status: $output $stderr"; false; }
	if [ "$status" -eq 0 ]; then
		partition_ok <<<"$output"
	fi
	[ "$(closings d1)" -le 1 ]
	# the limit was only ever on those two processes: it is lifted
	after_fault "$T/before" k3 d1
}

@test "disk full: ri-close of an open act gives up with 21 within its lease (system clock), writes nothing; the sweep later closes the act once, from the store" {
	act k1
	sys_open c1
	snap >"$T/before"
	wal_is_the_end
	start=$(ms)
	run --separate-stderr full "$(wal_limit 8)" ri-close -c "$T/sys.json" <"$T/close-c1.json"
	elapsed=$(($(ms) - start))
	[ "$status" -eq 21 ] || { echo "ri-close: exit $status: $output $stderr"; false; }
	[ "$(jq -r .position <<<"$output")" = outcome ]
	[ "$elapsed" -lt 6000 ]        # the lease is 3 s
	[ "$(snap)" = "$(cat "$T/before")" ]
	intact "$T/before"
	# never re-run: the act is the sweep's, once the examine edge passes
	edge=$(($(sql "SELECT recorded_at FROM records WHERE action_ref = 'ledger.intended' AND act_key = 'c1'") + 3100))
	while [ "$(ms)" -le "$edge" ]; do sleep 0.1; done
	run ri-sweep -c "$T/sys.json"
	[ "$status" -eq 0 ]
	[ "$(jq .closed <<<"$output")" -eq 1 ]
	[ "$(closings c1)" -eq 1 ]
	run ri-audit --probe -c "$T/sys.json"
	[ "$status" -eq 0 ]
}

@test "disk full under the env clock: ri-close still gives up with 21 -- its retries are bounded on the monotonic clock (ri(7) Test seams)" {
	# BUG (reported): lib/protocol/close.c close_write retries a failed append while
	# remaining() grants the lease, and remaining() reads $RI_NOW, which
	# never moves inside one process: ri-close (and ri-run after its job)
	# retries every 50 ms forever.
	open_req c1 '{"pairing_datum":"pd-c1"}' | ri-open >"$T/open-c1.json"
	snap >"$T/before"
	wal_is_the_end
	run --separate-stderr full "$(wal_limit 8)" timeout -k 2 10 ri-close < <(close_req "$(cat "$T/open-c1.json")")
	[ "$status" -ne 124 ] || { echo "ri-close was still retrying after 10 s on a lease of 3 s"; false; }
	[ "$status" -eq 21 ]
	[ "$(snap)" = "$(cat "$T/before")" ]
	intact "$T/before"
}

# ---- read-only journal --------------------------------------------------------

@test "read-only journal: writers refuse (ri-open 14/15/20, ri-sweep writes nothing), readers still read; made writable again, nothing is lost" {
	act k1
	act k2
	orphan d1
	ri_at 10
	snap >"$T/before"
	readonly_on
	echo "# read-only journal via $RO_HOW" >&3
	run --separate-stderr "${AS[@]}" ri-open --kind ledger --act-key k3 --actor alice --intent-data '{}' </dev/null
	is_code "$status" 14 15 20 || { echo "ri-open: exit $status: $output $stderr"; false; }
	[ "$(snap)" = "$(cat "$T/before")" ]
	run --separate-stderr "${AS[@]}" ri-read --kind ledger --act-key k1 </dev/null
	[ "$status" -eq 0 ]
	[ "$(jq -r '.invocations[0].state' <<<"$output")" = closed ]
	run --separate-stderr "${AS[@]}" ri-audit
	[ "$status" -eq 0 ]
	run --separate-stderr "${AS[@]}" ri-sweep
	is_code "$status" 0 2 15 || { echo "ri-sweep: exit $status: $output $stderr"; false; }
	if [ "$status" -eq 0 ]; then
		partition_ok <<<"$output"
		[ "$(jq .closed <<<"$output")" -eq 0 ]
	fi
	[ "$(snap)" = "$(cat "$T/before")" ]
	readonly_off
	after_fault "$T/before" k3 d1
}

@test "read-only journal: ri-close of an open act gives up with 21 within its lease (system clock), writes nothing" {
	act k1
	sys_open c1
	snap >"$T/before"
	readonly_on
	start=$(ms)
	run --separate-stderr "${AS[@]}" ri-close -c "$T/sys.json" <"$T/close-c1.json"
	elapsed=$(($(ms) - start))
	readonly_off
	[ "$status" -eq 21 ] || { echo "ri-close: exit $status: $output $stderr"; false; }
	[ "$elapsed" -lt 6000 ]
	[ "$(snap)" = "$(cat "$T/before")" ]
	intact "$T/before"
}

# ---- journal locked past the bounds ---------------------------------------------

@test "journal locked by another process past its write budget: ri-open 14 (or 20) after the busy timeout, readers unaffected (WAL), ri-sweep skips; unlocked, nothing is lost" {
	act k1
	act k2
	orphan d1
	ri_at 10
	snap >"$T/before"
	lock_journal
	start=$(ms)
	run --separate-stderr ri-open --kind ledger --act-key k3 --actor alice --intent-data '{}' </dev/null
	elapsed=$(($(ms) - start))
	is_code "$status" 14 15 20 || { echo "ri-open: exit $status: $output $stderr"; false; }
	echo "# locked: ri-open exit $status after $elapsed ms: $stderr" >&3
	# it waited out the busy timeout -- under the declared journal fence
	# that is the per-write terminus, journal_write_bound less the
	# allowance (300 - 100 ms; lib/store/sqlite/open_sqlite.c setup_connection) --
	# and not more than a lease
	[ "$elapsed" -ge 200 ]
	[ "$elapsed" -lt 3000 ]
	# WAL: a reader is never blocked by a writer (it reads the last
	# committed snapshot), so reading goes on under the lock
	run --separate-stderr ri-read --kind ledger --act-key k1 </dev/null
	[ "$status" -eq 0 ]
	[ "$(jq -r '.invocations[0].state' <<<"$output")" = closed ]
	run --separate-stderr ri-audit
	[ "$status" -eq 0 ]
	# the sweep: it can enumerate (a read) but take no section: per-act
	# skipped -- a degraded run (2) when its purge and seal could not
	# write either (issue 14) -- or journal-unavailable on the register
	run --separate-stderr ri-sweep
	echo "# locked: ri-sweep exit $status: $output" >&3
	is_code "$status" 0 2 15 || { echo "ri-sweep: exit $status: $output $stderr"; false; }
	if [ "$status" -ne 15 ]; then
		partition_ok <<<"$output"
		[ "$(jq .closed <<<"$output")" -eq 0 ]
		[ "$(jq .skipped <<<"$output")" -ge 1 ]
		[ "$status" -eq 0 ] || [ "$(jq '.degraded | length' <<<"$output")" -ge 1 ]
	else
		ri-findings --open | grep -q '"finding":"journal-unavailable"'
	fi
	[ "$(snap)" = "$(cat "$T/before")" ]
	unlock_journal
	after_fault "$T/before" k3 d1
}

@test "journal locked: ri-open's refusal sentence on stderr says why (the journal is locked)" {
	# BUG (reported): take_loop in lib/store/sqlite/store_sqlite.c formats its error with
	# st_fail(s, ..., "%s", s->err.msg) -- source and destination are the
	# same buffer, and the sentence comes out empty: "ri-open:
	# section-unavailable: "
	lock_journal
	run --separate-stderr ri-open --kind ledger --act-key k3 --actor alice --intent-data '{}' </dev/null
	unlock_journal
	[ "$status" -eq 14 ]
	echo "stderr: $stderr"
	grep -Eiq 'locked|busy' <<<"$stderr"
}

@test "journal locked: ri-close of an open act gives up with 21 within its lease (system clock), writes nothing" {
	act k1
	sys_open c1
	snap >"$T/before"
	lock_journal
	start=$(ms)
	run --separate-stderr ri-close -c "$T/sys.json" <"$T/close-c1.json"
	elapsed=$(($(ms) - start))
	unlock_journal
	[ "$status" -eq 21 ] || { echo "ri-close: exit $status: $output $stderr"; false; }
	[ "$elapsed" -lt 6000 ]
	[ "$(snap)" = "$(cat "$T/before")" ]
	intact "$T/before"
}

# ---- the writers' queue (issue 15, target 4) ----------------------------------------

# hold_queue SECONDS -- another writer of the queue (flock(1) on the journal,
# as ri's writers take it) holds it SECONDS, then leaves $T/released;
# returns once it holds
hold_queue() {
	rm -f "$T/held" "$T/released"
	flock "$T/journal.db" sh -c ": >'$T/held'; sleep $1; : >'$T/released'" &
	QUEUE_PID=$!
	BG_PIDS="$BG_PIDS $QUEUE_PID"
	for _ in $(seq 200); do
		[ -e "$T/held" ] && return 0
		sleep 0.01
	done
	echo "flock never took the queue"
	return 1
}

@test "the writers' queue: a writer waits on the queue's holder and goes at its release -- no nap, no refusal, within one budget (store_sqlite.c begin_immediate)" {
	act k1
	hold_queue 0.1
	run --separate-stderr ri-open --kind ledger --act-key k2 --actor alice --intent-data '{}' </dev/null
	[ "$status" -eq 0 ] || { echo "ri-open: exit $status: $stderr"; false; }
	# it went after the holder's release, not beside it
	[ -e "$T/released" ]
	wait "$QUEUE_PID"
	[ "$(jq -r .act_key <<<"$output")" = k2 ]
}

@test "act section 5: the writers' queue held past a write's budget: ri-open 14 (the host's unavailable arm) naming the contention and the bound to raise, nothing written; the queue released, it lands" {
	act k1
	snap >"$T/before"
	hold_queue 2
	run --separate-stderr ri-open --kind ledger --act-key k2 --actor alice --intent-data '{}' </dev/null
	[ "$status" -eq 14 ] || { echo "ri-open: exit $status: $output $stderr"; false; }
	[ ! -e "$T/released" ]
	grep -q 'is locked: another writer held its write lock' <<<"$stderr"
	grep -q 'raise journal_write_bound' <<<"$stderr"
	[ "$(snap)" = "$(cat "$T/before")" ]
	wait "$QUEUE_PID"
	run --separate-stderr ri-open --kind ledger --act-key k2 --actor alice --intent-data '{}' </dev/null
	[ "$status" -eq 0 ]
}

@test "the writers' queue keeps its budget when SIGALRM is blocked -- a signal mask is inherited across exec (util.c ri_lock_wait)" {
	command -v python3 >/dev/null || skip "python3 is not installed"
	act k1
	hold_queue 2
	run --separate-stderr python3 -c 'import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
os.execvp("ri-open", ["ri-open", "--kind", "ledger", "--act-key", "k2", "--actor", "alice", "--intent-data", "{}"])' </dev/null
	# refused at its budget, not let through at the holder's release
	[ "$status" -eq 14 ] || { echo "ri-open: exit $status: $output $stderr"; false; }
	[ ! -e "$T/released" ]
	wait "$QUEUE_PID"
}

# ---- the WAL's directory entry: durable before a commit, synced outside the queue ----

# wal_sync_order FILE -- from an `strace -f -y` log of one writer: the line
# of its first sync of the journal's directory, the line of its first sync
# of the WAL (a commit's), the writers' queue locks held at that directory
# sync, and how many directory syncs came while the queue was held
wal_sync_order() {
	awk -v dir="$(realpath "$T")" '
		index($0, "flock(") && index($0, "/journal.db>") && / = 0$/ {
			if (index($0, "LOCK_UN")) held--; else if (index($0, "LOCK_EX")) held++ }
		/(fsync|fdatasync)\(/ {
			if (index($0, "<" dir ">)")) { if (!d) { d = NR; dh = held } if (held > 0) inside++ }
			if (index($0, "<" dir "/journal.db-wal>)") && !w) w = NR }
		END { print d + 0, w + 0, dh + 0, inside + 0 }' "$1"
}

# traced_open KEY -- ri-open of KEY under strace; sets dir_line, wal_line,
# depth and inside from its log (wal_sync_order), and prints the log
traced_open() {
	run --separate-stderr strace -f -y -qq -e trace=fsync,fdatasync,flock -o "$T/w.st" \
	    ri-open --kind ledger --act-key "$1" --actor alice --intent-data '{}' </dev/null
	[ "$status" -eq 0 ] || { echo "ri-open: exit $status: $stderr"; return 1; }
	read -r dir_line wal_line depth inside < <(wal_sync_order "$T/w.st")
	cat "$T/w.st"
}

@test "a writer makes the WAL's directory entry durable before its first commit, and syncs it outside the writers' queue, never under it (store_sqlite_vfs.h; issue 15, target 5)" {
	command -v strace >/dev/null || skip "strace is not installed"
	act k1
	[ -e "$T/journal.db-wal" ]
	traced_open k2
	# the directory synced, before the intent's commit synced the WAL ...
	[ "$dir_line" -gt 0 ]
	[ "$wal_line" -gt "$dir_line" ]
	# ... with no writer held up behind it: not under the queue, and
	# SQLite's own sync (inside the first commit) not made at all
	[ "$depth" -eq 0 ]
	[ "$inside" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM records WHERE act_key = 'k2'")" -eq 1 ]
}

@test "the WAL removed by a foreign client's last close: the next writer creates it and still syncs its directory before its first commit; nothing is lost, the audit is clean" {
	command -v strace >/dev/null || skip "strace is not installed"
	act k1
	snap >"$T/before"
	# the sqlite3 shell checkpoints the WAL into the journal and removes it
	sqlite3 "$T/journal.db" "SELECT count(*) FROM records" >/dev/null
	[ ! -e "$T/journal.db-wal" ]
	traced_open k2
	[ -e "$T/journal.db-wal" ]
	# the writer's own sync, outside the queue, before the first commit's;
	# SQLite's own, for the WAL it created, may follow inside that commit
	[ "$dir_line" -gt 0 ]
	[ "$wal_line" -gt "$dir_line" ]
	[ "$depth" -eq 0 ]
	[ "$(snap | head -n "$(wc -l <"$T/before")")" = "$(cat "$T/before")" ]
	[ "$(sql "SELECT count(*) FROM records WHERE act_key = 'k2'")" -eq 1 ]
	ri-audit >/dev/null
}

# ---- the journal replaced or deleted under a running process ----------------------

# other_journal -- a second instance (another ri-init: its own instance id
# and integrity key) under $T/other, with an actor alice of its own
other_journal() {
	mkdir "$T/other"
	cp "$T/ri.json" "$T/other/ri.json"
	(
		export RI_CONFIG=$T/other/ri.json
		ri-init >/dev/null
		ri-actor add alice >/dev/null
		ri-actor add ledger-reconciler --service --credential-file "$T/other/reconciler.cred" >/dev/null
	)
	sqlite3 -readonly "$T/other/journal.db" "SELECT seq, event_id, hex(hash) FROM records ORDER BY seq" >"$T/other.rows"
}

# swap_in_other -- the instance's journal moves to $T/moved; the other
# instance's journal takes its place
swap_in_other() {
	mkdir "$T/moved"
	mv "$T/journal.db" "$T/journal.db-wal" "$T/journal.db-shm" "$T/moved/"
	cp "$T/other/journal.db" "$T/other/journal.db-wal" "$T/other/journal.db-shm" "$T/"
}

# swap_back -- the substitute goes; the original returns
swap_back() {
	# the substitute gained no record
	[ "$(sqlite3 -readonly "$T/journal.db" "SELECT seq, event_id, hex(hash) FROM records ORDER BY seq")" = "$(cat "$T/other.rows")" ] ||
	    { echo "records were written into the substitute journal"; return 1; }
	rm -f "$T/journal.db" "$T/journal.db-wal" "$T/journal.db-shm"
	mv "$T/moved/journal.db" "$T/moved/journal.db-wal" "$T/moved/journal.db-shm" "$T/"
}

@test "journal replaced mid-run: an ri-run paused between act and Close, and an ri-sweep paused after its probe, never write into the substitute; the original loses nothing" {
	act k1
	orphan d1
	other_journal
	ri_at 10
	snap >"$T/before"
	dr=$(pause_dir pr run.after_act)
	RI_FAULT=run.after_act=pause RI_FAULT_DIR=$dr ri-run --kind ledger --act-key k3 --actor alice --pre-commit-exit 2,3,4 -- \
	    ledger-disclose --store "$T/ledger.db" --subject s --recipient k3 >"$T/run.out" 2>"$T/run.err" 3>&- &
	R=$!
	BG_PIDS="$BG_PIDS $R"
	reached "$dr" run.after_act
	ds=$(pause_dir ps sweep.after_probe)
	RI_FAULT=sweep.after_probe=pause RI_FAULT_DIR=$ds ri-sweep >"$T/sweep.out" 2>"$T/sweep.err" 3>&- &
	S=$!
	BG_PIDS="$BG_PIDS $S"
	reached "$ds" sweep.after_probe
	swap_in_other
	release "$dr" run.after_act
	release "$ds" sweep.after_probe
	rr=0 rs=0
	wait "$R" || rr=$?
	wait "$S" || rs=$?
	BG_PIDS=
	echo "# replaced: ri-run exit $rr $(cat "$T/run.out" "$T/run.err" | tr '\n' ' ')" >&3
	echo "# replaced: ri-sweep exit $rs $(cat "$T/sweep.out" | tr '\n' ' ')" >&3
	# fail closed (unavailable, recording-failure, integrity) or finish on
	# the file it opened -- the original, never the substitute
	is_code "$rr" 0 15 21 30 || { echo "ri-run: exit $rr: $(cat "$T/run.err")"; false; }
	is_code "$rs" 0 15 || { echo "ri-sweep: exit $rs: $(cat "$T/sweep.err")"; false; }
	swap_back
	intact "$T/before"
	# whatever each process landed, it landed whole, in the original
	if [ "$rr" -eq 0 ]; then
		[ "$(closings k3)" -eq 1 ]
	fi
	# and the sweep finishes the rest: one closing each
	ri_at 20
	ri-sweep >/dev/null
	[ "$(closings k3)" -eq 1 ]
	[ "$(closings d1)" -eq 1 ]
	run ri-audit --probe
	[ "$status" -eq 0 ] || { echo "$output" | jq -c '.checks[] | select(.status == "fail")'; false; }
}

@test "journal deleted mid-run: an ri-run paused between act and Close finishes on the file it holds open; nothing recorded is lost from that file" {
	act k1
	snap >"$T/before"
	dr=$(pause_dir pr run.after_act)
	RI_FAULT=run.after_act=pause RI_FAULT_DIR=$dr ri-run --kind ledger --act-key k3 --actor alice --pre-commit-exit 2,3,4 -- \
	    ledger-disclose --store "$T/ledger.db" --subject s --recipient k3 >"$T/run.out" 2>"$T/run.err" 3>&- &
	R=$!
	BG_PIDS="$BG_PIDS $R"
	reached "$dr" run.after_act
	# unlink the journal's names; a hard link keeps the inodes for the test
	mkdir "$T/kept"
	ln "$T/journal.db" "$T/journal.db-wal" "$T/journal.db-shm" "$T/kept/"
	rm "$T/journal.db" "$T/journal.db-wal" "$T/journal.db-shm"
	release "$dr" run.after_act
	rr=0
	wait "$R" || rr=$?
	BG_PIDS=
	echo "# deleted: ri-run exit $rr $(cat "$T/run.out" "$T/run.err" | tr '\n' ' ')" >&3
	is_code "$rr" 0 15 21 30 || { echo "ri-run: exit $rr: $(cat "$T/run.err")"; false; }
	# no journal was created in its place
	[ ! -e "$T/journal.db" ]
	mv "$T/kept/journal.db" "$T/kept/journal.db-wal" "$T/kept/journal.db-shm" "$T/"
	intact "$T/before"
	if [ "$rr" -eq 0 ]; then
		# it reported success: the outcome is in the file it held
		[ "$(closings k3)" -eq 1 ]
	fi
	ri_at 10
	ri-sweep >/dev/null
	[ "$(closings k3)" -eq 1 ]
	run ri-audit --probe
	[ "$status" -eq 0 ]
}

@test "journal replaced: fresh writers fail closed on the substitute (ri-open/ri-run/ri-sweep 15, cause integrity), ri-audit fails its checks, nothing is written into it" {
	act k1
	orphan d1
	other_journal
	snap >"$T/before"
	swap_in_other
	run --separate-stderr ri-open --kind ledger --act-key k3 --actor alice --intent-data '{}' </dev/null
	[ "$status" -eq 15 ]
	[ "$(jq -r .cause <<<"$output")" = integrity ]
	run --separate-stderr ri-run --kind ledger --act-key k4 --actor alice -- true
	[ "$status" -eq 15 ]
	ri_at 10
	run --separate-stderr ri-sweep
	[ "$status" -eq 15 ]
	run --separate-stderr ri-audit
	[ "$status" -eq 1 ]
	swap_back
	intact "$T/before"
}

@test "journal replaced: ri-read of an act the original holds fails closed on the substitute (30), never answers not-known" {
	# BUG (reported): the substitute holds no record of (ledger, k1), so
	# ri-read finds no act head to verify and answers 17 not-known -- an
	# absence -- although the journal's own head fails its MAC under this
	# instance's key (ri-sweep and ri-audit see that).
	act k1
	other_journal
	swap_in_other
	run --separate-stderr ri-read --kind ledger --act-key k1 </dev/null
	echo "ri-read: exit $status: $output $stderr"
	swap_back
	is_code "$status" 30 15
}

# ---- findings register unavailable ------------------------------------------------

# findings_gone HOW -- the register moved away, or a directory in its place
findings_gone() {
	mkdir "$T/findings.away"
	mv "$T"/findings.db* "$T/findings.away/"
	[ "$1" = dir ] && mkdir "$T/findings.db"
	true
}

findings_back() {
	rm -rf "$T/findings.db"
	mv "$T"/findings.away/* "$T/"
}

sweep_without_findings() { # HOW
	act k1
	orphan d1               # committed in the store: the sweep closes it
	orphan d2               # two rows with its datum: undecidable, escalated
	datum=$(ri-read --kind ledger --act-key d2 </dev/null | jq -r '.invocations[0].records[0].payload.data.pairing_datum')
	ledger-admin --store "$T/ledger.db" plant --pairing-datum "$datum" >/dev/null
	snap >"$T/before"
	findings_gone "$1"
	ri_at 10
	run --separate-stderr ri-sweep
	# findings 3: a failed surfacing never rejects a run that landed closings
	[ "$status" -eq 2 ] || { echo "ri-sweep: exit $status: $output $stderr"; false; }
	partition_ok <<<"$output"
	[ "$(jq .closed <<<"$output")" -eq 1 ]
	[ "$(jq .escalated <<<"$output")" -eq 1 ]
	jq -r .alert <<<"$output" | grep -q 'findings register'
	grep -q 'findings register' <<<"$stderr"
	[ "$(closings d1)" -eq 1 ]
	[ "$(closings d2)" -eq 1 ]
	run --separate-stderr ri-findings
	[ "$status" -eq 15 ]
	grep -q findings <<<"$stderr"
	findings_back
	run ri-findings
	[ "$status" -eq 0 ]
	intact "$T/before"
}

@test "findings register moved away: ri-sweep still closes and escalates acts, says so in an alert; ri-findings exits 15" {
	sweep_without_findings moved
}

@test "findings register replaced by a directory: ri-sweep still closes and escalates acts, says so in an alert; ri-findings exits 15" {
	sweep_without_findings dir
}

# ---- integrity key missing or unusable ----------------------------------------------

# key_commands -- every command that needs the integrity key exits 78 (Close
# and Refuse: their position's 21 and 22, cause config) and names it on stderr; ri-findings (no key) and ri-audit --public-key still
# work; ri-startcheck fails (1) naming it
key_commands() {
	local key=$T/journal.key c want
	open_req k1 '{}' >"$T/req-open.json"
	for c in \
	    "ri-open <'$T/req-open.json'" \
	    "ri-close <'$T/close.json'" \
	    "ri-refuse <'$T/refuse.json'" \
	    "ri-yield <'$T/open.json'" \
	    "ri-resolve <'$T/resolve.json'" \
	    "ri-run --kind ledger --act-key k9 --actor alice -- true" \
	    "ri-read --kind ledger --act-key k0 </dev/null" \
	    "ri-sweep" \
	    "ri-audit" \
	    "ri-seal" \
	    "ri-actor list" \
	    "ri-actor add bob"; do
		run --separate-stderr bash -c "$c"
		# Action wiring 1: after the commit, Close and Refuse answer on
		# their position (21, 22) with cause config; the others 78
		case $c in
		ri-close*) want=21 ;;
		ri-refuse*) want=22 ;;
		*) want=78 ;;
		esac
		[ "$status" -eq "$want" ] || { echo "$c: exit $status, not $want: $stderr"; return 1; }
		[ "$want" -eq 78 ] || [ "$(jq -r .cause <<<"$output")" = config ] ||
		    { echo "$c: $output"; return 1; }
		grep -qF "$key" <<<"$stderr" || { echo "$c: the key is not named: $stderr"; return 1; }
	done
	run --separate-stderr ri-startcheck
	[ "$status" -eq 1 ]
	grep -F "$key" <<<"$output" | grep -q FAIL
	run ri-findings
	[ "$status" -eq 0 ]
	run ri-audit --public-key "$T/seal.key.pub"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(jq .records <<<"$output")" -eq "$(sql 'SELECT count(*) FROM records')" ]
}

@test "integrity key missing, a directory, empty, short, or group-writable (0660): every command that needs it exits 78 naming it; ri-audit --public-key still verifies; nothing is lost" {
	act k0
	open_req k1 '{}' | ri-open >"$T/open.json"
	close_req "$(cat "$T/open.json")" >"$T/close.json"
	jq -c --arg c "$ALICE" '{kind, act_key, invocation_id, intent_event_id, actor_ref} +
	    {credential:$c, reason:"store said no", constituent_code:3}' "$T/open.json" >"$T/refuse.json"
	jq -c --arg c "$ALICE" '{kind, act_key, invocation_id, intent_event_id, actor_ref} +
	    {credential:$c, disposition:{abandoned:{cause:"nothing in the store"}}}' "$T/open.json" >"$T/resolve.json"
	ri-seal >/dev/null
	snap >"$T/before"
	cp -p "$T/journal.key" "$T/key.good"
	for how in missing directory empty short mode0660; do
		rm -rf "$T/journal.key"
		case $how in
		missing) ;;
		directory) mkdir "$T/journal.key" ;;
		empty) install -m 0600 /dev/null "$T/journal.key" ;;
		short) head -c 16 "$T/key.good" >"$T/journal.key"; chmod 0600 "$T/journal.key" ;;
		mode0660) cp -p "$T/key.good" "$T/journal.key"; chmod 0660 "$T/journal.key" ;;
		esac
		key_commands || { echo "(key $how)"; false; }
		[ "$(snap)" = "$(cat "$T/before")" ]
	done
	rm -rf "$T/journal.key"
	cp -p "$T/key.good" "$T/journal.key"
	intact "$T/before"
	# the open act was untouched: it closes now
	ri-close <"$T/close.json" >/dev/null
	[ "$(closings k1)" -eq 1 ]
}

# ---- the clock stepping backwards ------------------------------------------------

@test "clock stepping backwards between seams: recorded_at never goes backwards (the substrate clamps), the audit is clean (8.1.7), and the sweep closes at the later time what it should" {
	ri_at 100
	act a1
	ri_at 50
	act a2
	# open at 60, close at 55: the close's own clock is behind its open's
	ri_at 60
	open_req a3 '{}' | ri-open >"$T/open-a3.json"
	ri_at 55
	close_req "$(cat "$T/open-a3.json")" | ri-close >/dev/null
	ri_at 40
	orphan a4
	# the journal's instants never go backwards, whatever the seams read
	[ "$(sql "SELECT count(*) FROM records r JOIN records p ON p.seq = r.seq - 1 WHERE r.recorded_at < p.recorded_at")" -eq 0 ]
	# the orphan's intent is stamped no earlier than the latest record
	a4=$(sql "SELECT recorded_at FROM records WHERE act_key = 'a4' AND action_ref = 'ledger.intended'")
	[ "$a4" -ge $((T0 + 100000)) ]
	run ri-audit
	[ "$status" -eq 0 ]
	[ "$(jq -r '.checks[] | select(.check == "8.1.7") | .status' <<<"$output")" = pass ]
	run ri-read --kind ledger --act-key a2 </dev/null
	[ "$status" -eq 0 ]
	[ "$(jq -r '.invocations[0].state' <<<"$output")" = closed ]
	# a sweep at 45 (its own clock also behind) finds nothing aged...
	ri_at 45
	run ri-sweep
	[ "$status" -eq 0 ]
	[ "$(jq .examined <<<"$output")" -eq 0 ]
	# ...nor just short of the stamped intent's examine edge (100 + 3 + 0.1)
	ri_at 103
	[ "$(ri-sweep | jq .examined)" -eq 0 ]
	ri_at 104
	run ri-sweep
	[ "$status" -eq 0 ]
	[ "$(jq .closed <<<"$output")" -eq 1 ]
	[ "$(closings a4)" -eq 1 ]
	[ "$(sql "SELECT count(*) FROM records r JOIN records p ON p.seq = r.seq - 1 WHERE r.recorded_at < p.recorded_at")" -eq 0 ]
	run ri-audit --probe
	[ "$status" -eq 0 ]
}
