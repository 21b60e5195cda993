------------------------------ MODULE DeltaRead ------------------------------
(***************************************************************************)
(* DeltaRead (issue 43, "the model"): the delta read above a mark when     *)
(* records commit out of order -- the journal sharded, one chain per       *)
(* shard, one sequence allocator for all of them, so a lower sequence      *)
(* number may become visible after a higher one.                           *)
(*                                                                         *)
(* A small module beside RecoverableInvocation.tla, whose journal commits  *)
(* in sequence order (one chain, one head).  This one keeps only what      *)
(* sequence high water 1-2 rest on:                                        *)
(*  - writers (Writers), one write each: it takes its seq from the one     *)
(*    allocator and its recorded_at from the one clock, then is in flight; *)
(*    it commits (becomes visible) or is rolled back (its seq a gap: next  *)
(*    sequence number counts allocations), in any order across writers;    *)
(*  - the settle bound (Settle): a write is settled -- committed or rolled *)
(*    back -- by recorded_at + Settle; the clock (Tick) never reaches a    *)
(*    write's bound while it is unsettled;                                 *)
(*  - Stamping, when recorded_at is read against the seq:               *)
(*    "with-seq"   the allocator hands out seq and recorded_at in one     *)
(*                 step (recorded_at never decreases with seq, as         *)
(*                 store_writes.c stamps it under the one head);          *)
(*    "before-seq" a writer stamps recorded_at from the clock and takes   *)
(*                 its seq in a later step (probe-stamp-apart);           *)
(*    "after-seq"  a writer takes its seq (a PostgreSQL SEQUENCE's        *)
(*                 nextval, under its shard's head alone), then stamps    *)
(*                 recorded_at in a later step (seq-then-stamp); its      *)
(*                 write is bounded from its issue instant, taken before  *)
(*                 the seq (the per-write terminus issue + JWB - A),      *)
(*                 so it settles by issue + Settle, not by recorded_at;   *)
(*  - the reader (the sweep's duplicate scan, sequence high water 1): each *)
(*    pass reads every visible record above its mark, in one snapshot at   *)
(*    now, adds them to what it has read, and advances its mark to the     *)
(*    highest seq it read with recorded_at + Settle + ReadLag <= now      *)
(*    (sweep.c: duplicate_scan, ReadLag 0), never down.                    *)
(*                                                                         *)
(* Bug selects the twin; "none" is clean:                                  *)
(*   "unsettled"  the mark advances to the highest seq read, settled or    *)
(*                not (RI_NC_MARK_UNSETTLED).                              *)
(***************************************************************************)
EXTENDS Integers, FiniteSets, TLC

CONSTANTS
    Writers,        \* one write each
    Settle,         \* the settle bound, in ticks (journal_write_bound + allowance)
    MaxTime,        \* the clock's last tick
    Stamping,       \* "with-seq", "before-seq" or "after-seq"
    ReadLag,        \* the reader's margin beyond Settle before its mark passes a seq
    Bug             \* "none" or "unsettled"

ASSUME Settle \in Nat /\ MaxTime \in Nat /\ Stamping \in {"with-seq", "before-seq", "after-seq"}
ASSUME ReadLag \in Nat
ASSUME Bug \in {"none", "unsettled"}

VARIABLES
    now,      \* the clock
    nextSeq,  \* the allocator: the next seq it hands out
    ph,       \* per writer: idle | stamped | allocated | flight | committed | aborted
    at,       \* per writer: its recorded_at (-1 until stamped)
    iss,      \* per writer: the instant its settle bound counts from
    sq,       \* per writer: its seq (once allocated; 0 before)
    mark,     \* the reader's mark: sequence high water
    read      \* the seqs the reader has read (its local maps)

vars == <<now, nextSeq, ph, at, iss, sq, mark, read>>

Max(S) == CHOOSE x \in S : \A y \in S : x >= y

TypeOK ==
    /\ now \in 0..MaxTime
    /\ nextSeq \in 1..(Cardinality(Writers) + 1)
    /\ ph \in [Writers -> {"idle", "stamped", "allocated", "flight", "committed", "aborted"}]
    /\ at \in [Writers -> -1..MaxTime]
    /\ iss \in [Writers -> 0..MaxTime]
    /\ sq \in [Writers -> 0..Cardinality(Writers)]
    /\ mark \in 0..Cardinality(Writers)
    /\ read \subseteq 1..Cardinality(Writers)

Init ==
    /\ now = 0
    /\ nextSeq = 1
    /\ ph = [w \in Writers |-> "idle"]
    /\ at = [w \in Writers |-> -1]
    /\ iss = [w \in Writers |-> 0]
    /\ sq = [w \in Writers |-> 0]
    /\ mark = 0
    /\ read = {}

\* "before-seq": the writer reads the clock first (its recorded_at is also
\* the instant its bound counts from)
StampFirst(w) ==
    /\ Stamping = "before-seq"
    /\ ph[w] = "idle"
    /\ ph' = [ph EXCEPT ![w] = "stamped"]
    /\ at' = [at EXCEPT ![w] = now]
    /\ iss' = [iss EXCEPT ![w] = now]
    /\ UNCHANGED <<now, nextSeq, sq, mark, read>>

\* "with-seq": seq and recorded_at in one step.  "after-seq": the seq
\* alone; the write was issued no later than now (the latest issue is the
\* reader's worst case: the latest settle)
Alloc(w) ==
    /\ ph[w] = IF Stamping = "before-seq" THEN "stamped" ELSE "idle"
    /\ ph' = [ph EXCEPT ![w] = IF Stamping = "after-seq" THEN "allocated" ELSE "flight"]
    /\ sq' = [sq EXCEPT ![w] = nextSeq]
    /\ nextSeq' = nextSeq + 1
    /\ at' = IF Stamping = "with-seq" THEN [at EXCEPT ![w] = now] ELSE at
    /\ iss' = IF Stamping = "before-seq" THEN iss ELSE [iss EXCEPT ![w] = now]
    /\ UNCHANGED <<now, mark, read>>

\* "after-seq": recorded_at read after the seq, any time before the commit
StampAfter(w) ==
    /\ Stamping = "after-seq"
    /\ ph[w] = "allocated"
    /\ ph' = [ph EXCEPT ![w] = "flight"]
    /\ at' = [at EXCEPT ![w] = now]
    /\ UNCHANGED <<now, nextSeq, iss, sq, mark, read>>

\* any order across writers: the shards' chains commit independently
Commit(w) ==
    /\ ph[w] = "flight"
    /\ ph' = [ph EXCEPT ![w] = "committed"]
    /\ UNCHANGED <<now, nextSeq, at, iss, sq, mark, read>>

\* a rolled-back write: its seq is a gap that never becomes visible
Abort(w) ==
    /\ ph[w] \in {"allocated", "flight"}
    /\ ph' = [ph EXCEPT ![w] = "aborted"]
    /\ UNCHANGED <<now, nextSeq, at, iss, sq, mark, read>>

\* the settle bound: the clock does not reach an unsettled write's
\* iss + Settle (its recorded_at + Settle unless "after-seq").  The reader takes now before its snapshot
\* (sweep.c: s->now, then the range read), so a write settled at that very
\* instant is in the snapshot: settled before the clock shows the bound.
Tick ==
    /\ now < MaxTime
    /\ \A w \in Writers : ph[w] \in {"stamped", "allocated", "flight"} => now + 1 < iss[w] + Settle
    /\ now' = now + 1
    /\ UNCHANGED <<nextSeq, ph, at, iss, sq, mark, read>>

Visible == {w \in Writers : ph[w] = "committed"}

\* one pass: the visible records above the mark, in one snapshot at now
Read ==
    LET delta == {w \in Visible : sq[w] > mark}
        passed == IF Bug = "unsettled" THEN delta
                  ELSE {w \in delta : at[w] + Settle + ReadLag <= now}
    IN /\ delta # {}
       /\ read' = read \cup {sq[w] : w \in delta}
       /\ mark' = Max({mark} \cup {sq[w] : w \in passed})
       /\ UNCHANGED <<now, nextSeq, ph, at, iss, sq>>

Next ==
    \/ \E w \in Writers : StampFirst(w) \/ Alloc(w) \/ StampAfter(w) \/ Commit(w) \/ Abort(w)
    \/ Tick
    \/ Read

Spec == Init /\ [][Next]_vars

SymWriters == Permutations(Writers)

-----------------------------------------------------------------------------
(* Invariants.                                                             *)

\* sequence high water 1: no visible record at or below the mark is one the
\* reader has not read -- a delta above the mark never reaches it again
InvNoSkip == \A w \in Visible : sq[w] <= mark => sq[w] \in read

\* sequence high water 2, literally: the mark is past a seq only once the
\* settle bound has elapsed since its recorded_at (gaps included; a gap
\* rolled back before it was stamped has none: its issue instant stands in)
InvMarkSettled ==
    \A w \in Writers : ph[w] # "idle" /\ sq[w] # 0 /\ sq[w] <= mark =>
        (IF at[w] >= 0 THEN at[w] ELSE iss[w]) + Settle <= now

\* the mark is never above what was allocated
InvMarkAllocated == mark < nextSeq

=============================================================================
