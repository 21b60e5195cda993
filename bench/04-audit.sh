#!/usr/bin/env bash
# 04-audit.sh -- Issue 5: audit throughput on a 10^6-record journal,
# records/s and MB/s, against sha256sum of the same database file in the
# same run (target: within 3x of it), with peak memory (target: under
# 64 MiB for 10^6 records with at most 1,000 open intents).
#
# The journal: a copy of the cached "large" journal (499,500 closed
# invocations and 1,000 open intents, 1,000,002 records), checkpointed so
# journal.db is the whole journal (no -wal beside it).  ri-audit runs with
# the env clock at the newest recorded_at + 1 s (the 1,000 open intents
# are still in flight, as in a live instance), and must exit 0: a clean
# journal audits clean.  sha256sum reads the same file.  Both run from a
# warm page cache, alternating (ABBA), under /usr/bin/time -v for the peak
# resident set.  The ratio is of the median times.
#
# Then cold: before each run the journal's pages are dropped from the page
# cache (bench/floor evict: fdatasync + POSIX_FADV_DONTNEED, no root
# needed), so both read it from the disk.  Min and median are shown.
#
# BENCH_AUDIT_ROUNDS (default 5 warm pairs, alternating sha/audit),
# BENCH_AUDIT_COLD_ROUNDS (default 2).
. "$(dirname "$0")/lib/common.bash"

ROUNDS=${BENCH_AUDIT_ROUNDS:-5}
COLD_ROUNDS=${BENCH_AUDIT_COLD_ROUNDS:-2}
FLOOR=${RI_BENCH:-$BENCH_ROOT/build/default/bench}/floor
TARGET=3
MEM_TARGET_KB=$((64 * 1024))

bench_header "04-audit" \
    "ri-audit of a 10^6-record journal (1,000 open intents): records/s, MB/s, peak RSS" \
    "sha256sum of the same journal.db file, interleaved in the same run" \
    "audit time <= ${TARGET}x sha256sum's; peak RSS < 64 MiB"

[ -x /usr/bin/time ] || bench_die "/usr/bin/time is missing (apt-get install -y time)"
large=$(bench_journal large "$LARGE_CLOSED" "$OPEN_INTENTS") || bench_die "cannot build the large journal"
D=$BT/audit
bench_copy "$large" "$D" env || bench_die "copy"
sqlite3 "$D/journal.db" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null || bench_die "checkpoint"
[ ! -s "$D/journal.db-wal" ] || bench_die "the WAL is not empty after the checkpoint"
NOW=$(( $(bench_info "$large" max_recorded_at) + 1000 ))
BYTES=$(stat -c %s "$D/journal.db")
NREC=$(bench_info "$large" records)
cat "$D/journal.db" >/dev/null         # warm the page cache for both

# measure TAG CMD... -- appends "ms rss_kb exit" to $BT/TAG.res
measure() {
	local tag=$1 t0 t1 rc
	shift
	t0=${EPOCHREALTIME/[.,]/}
	/usr/bin/time -v -o "$BT/time.out" "$@" >"$BT/$tag.out" 2>"$BT/$tag.err"
	rc=$?
	t1=${EPOCHREALTIME/[.,]/}
	echo "$(( (t1 - t0) / 1000 )) $(awk -F': ' '/Maximum resident set size/ { print $2 }' "$BT/time.out") $rc" \
	    >>"$BT/$tag.res"
	return $rc
}
audit() { RI_NOW=$NOW measure "${1:-audit}" "$RI_BIN/ri-audit" -c "$D/ri.json"; }
sha() { measure "${1:-sha}" sha256sum "$D/journal.db"; }

: >"$BT/audit.res"
: >"$BT/sha.res"
fails=0
for ((r = 0; r < ROUNDS; r++)); do
	if ((r % 2 == 0)); then
		sha || fails=$((fails + 1))
		audit || fails=$((fails + 1))
	else
		audit || fails=$((fails + 1))
		sha || fails=$((fails + 1))
	fi
done

# cold: the journal's pages dropped before each run
: >"$BT/caudit.res"
: >"$BT/csha.res"
cold_ok=1
[ -x "$FLOOR" ] || { echo "  (no $FLOOR: the cold runs are skipped)"; cold_ok=0; COLD_ROUNDS=0; }
for ((r = 0; r < COLD_ROUNDS; r++)); do
	"$FLOOR" evict "$D/journal.db" || cold_ok=0
	sha csha || fails=$((fails + 1))
	"$FLOOR" evict "$D/journal.db" || cold_ok=0
	audit caudit || fails=$((fails + 1))
done
cat "$D/journal.db" >/dev/null

audited=$(jq -r '.records // "?"' "$BT/audit.out" 2>/dev/null)
awk '{ print $1 }' "$BT/audit.res" >"$BT/audit.ms"
awk '{ print $1 }' "$BT/sha.res" >"$BT/sha.ms"
read -r an amean amed _ < <(stats "$BT/audit.ms")
read -r sn smean smed _ < <(stats "$BT/sha.ms")
arss=$(awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }' "$BT/audit.res")
srss=$(awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }' "$BT/sha.res")
mb=$(awk -v b="$BYTES" 'BEGIN { printf "%.1f", b / 1048576 }')
printf '  journal: %s records, journal.db %s MiB (WAL checkpointed), ri-audit read %s records\n' "$NREC" "$mb" "$audited"
printf '  %-22s %5s %12s %12s %12s %12s %14s\n' "" runs "median s" "mean s" "records/s" "MiB/s" "peak RSS MiB"
printf '  %-22s %5d %12.2f %12.2f %12.0f %12.1f %14.1f\n' "sha256sum (baseline)" "$sn" "$(ratio "$smed" 1000 2)" \
    "$(ratio "$smean" 1000 2)" "$(awk -v n="$NREC" -v m="$smed" 'BEGIN { print n / (m / 1000) }')" \
    "$(awk -v b="$BYTES" -v m="$smed" 'BEGIN { print b / 1048576 / (m / 1000) }')" "$(ratio "$srss" 1024 1)"
printf '  %-22s %5d %12.2f %12.2f %12.0f %12.1f %14.1f\n' "ri-audit" "$an" "$(ratio "$amed" 1000 2)" \
    "$(ratio "$amean" 1000 2)" "$(awk -v n="$NREC" -v m="$amed" 'BEGIN { print n / (m / 1000) }')" \
    "$(awk -v b="$BYTES" -v m="$amed" 'BEGIN { print b / 1048576 / (m / 1000) }')" "$(ratio "$arss" 1024 1)"
R=$(ratio "$amed" "$smed")
read -r _ _ _ _ amin _ < <(stats "$BT/audit.ms")
read -r _ _ _ _ smin _ < <(stats "$BT/sha.ms")
echo "  runs (ms rss_kb exit): sha256sum: $(tr '\n' ';' <"$BT/sha.res") ri-audit: $(tr '\n' ';' <"$BT/audit.res")"
echo "  warm: ratio (median audit / median sha256sum): $R (min $(ratio "$amin" "$smin"))   target <= $TARGET"
if [ "$COLD_ROUNDS" -gt 0 ]; then
	awk '{ print $1 }' "$BT/caudit.res" >"$BT/caudit.ms"
	awk '{ print $1 }' "$BT/csha.res" >"$BT/csha.ms"
	read -r _ _ camed _ camin _ < <(stats "$BT/caudit.ms")
	read -r _ _ csmed _ csmin _ < <(stats "$BT/csha.ms")
	echo "  cold ($COLD_ROUNDS rounds, pages evicted$([ "$cold_ok" = 1 ] || echo ' -- EVICTION FAILED')): sha256sum median" \
	    "$(ratio "$csmed" 1000 2) s, ri-audit median $(ratio "$camed" 1000 2) s;" \
	    "ratio $(ratio "$camed" "$csmed") (min $(ratio "$camin" "$csmin"))   (reported; the target is judged warm)"
fi
echo "  peak RSS of ri-audit: $(ratio "$arss" 1024 1) MiB   target < 64 MiB"
ok=1
if [ "$fails" != 0 ]; then
	ok=0
	echo "  $fails runs FAILED (non-zero exit); ri-audit's last answer, failed checks only:"
	jq -c '.checks[]? | select(.status == "fail") | {check, name, failures: (.failures[:3])}' "$BT/audit.out" 2>/dev/null |
	    head -20 | sed 's/^/    /'
	head -c 2000 "$BT/audit.err" | sed 's/^/    /'
fi
le "$R" "$TARGET" || ok=0
[ "$arss" -lt "$MEM_TARGET_KB" ] || ok=0
bench_verdict "$ok"
