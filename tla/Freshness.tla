------------------------------- MODULE Freshness -------------------------------
(***************************************************************************)
(* Freshness (issue 39): no rollback or restore of the journal lets a      *)
(* non-repeatable act that landed commit in its store a second time.       *)
(*                                                                         *)
(* A small module beside RecoverableInvocation.tla.  That model has no     *)
(* restore, and it has no non-repeatable act (its NOT MODELLED list).      *)
(* This one keeps just what freshness rests on:                            *)
(*  - ONE non-repeatable act and a few invocations of it over time (Invs), *)
(*    each run at most once: Open (pre-check + intent), the bound commit   *)
(*    in the store (committed or declined), Close (outcome or refusal);    *)
(*    any live invocation may crash for good between two steps;            *)
(*  - the adopter's store: the set of invocations whose commit it applied  *)
(*    (no already-* arm of its own: the issue's ledger, the worst case);   *)
(*  - the journal: a sequence of records, fsync'd (synchronous=FULL);      *)
(*  - the witness (lib/witness.h): one line per append, (epoch, seq, the   *)
(*    record it names), outside the journal.  A line is written after its  *)
(*    record commits and is not synced, except a seal's (fdatasync, which  *)
(*    also makes every earlier line of the file durable) and an accepted   *)
(*    restore's (it ends with a seal);                                     *)
(*  - Restore: the journal put back to any earlier state (a prefix of the  *)
(*    journal, or of a journal some earlier restore replaced, i.e. any     *)
(*    backup ever taken); the witness keeps its lines;                     *)
(*  - freshness: every reader and writer refuses a journal that does not   *)
(*    hold the witness's highest (epoch, seq) line;                        *)
(*  - AcceptRestore (ri-init --accept-restore, lib/restore.c): the fork,   *)
(*    the lost lines past it, a restored intent for every lost invocation  *)
(*    whose intent the journal no longer holds, and the act's marker       *)
(*    (audit.unreconciled) listing every lost invocation not closed for    *)
(*    good; then the witness's next epoch;                                 *)
(*  - Reconcile: the sweep (service identity declared) or, report-only, an *)
(*    operator's Resolve, asks the store through the probe and writes      *)
(*    what it proves: a recovered outcome if committed, abandoned if not;  *)
(*  - Open refuses an unreconciled act (act-in-flight, cause restore)      *)
(*    until every invocation its marker lists has a closing written after  *)
(*    the marker (lib/restore.c: ri_restore_held, marker_left);            *)
(*  - Seal and PowerLoss, for the probes of issue 39's ruling that a       *)
(*    witness line lost to a crash is harmless: a power loss kills every   *)
(*    live process and drops the unsynced lines, never the journal's.      *)
(* NOT modelled (README): time, leases and supersession, the escalated     *)
(* state, pairing (the probe reads the store exactly), forged or rewritten *)
(* witness lines, several hosts, --expect-head / --all-unreconciled.       *)
(*                                                                         *)
(* Bug selects one twin, each changing ONE thing; "none" is clean:         *)
(*   "restore-unmarked"  AcceptRestore writes no marker (restored intents  *)
(*                       are still written);                               *)
(*   "restore-forgets"   AcceptRestore writes neither marker nor restored  *)
(*                       intent: only that a restore was accepted (the     *)
(*                       accept before issue 39);                          *)
(*   "restore-drops-held" a second restore's marker lists only what that   *)
(*                       restore lost, dropping what the first one still   *)
(*                       held (plan_act before 91772d3);                   *)
(*   "seal-only"         the witness advances only at seals (and at an     *)
(*                       accepted restore, which seals), as before issue   *)
(*                       39 (RI_NC_NO_APPEND_WITNESS).                     *)
(* README.md says what is and is not modelled, and what each run shows.    *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Invs,            \* invocation ids of the act; each runs at most once
    NoInv,           \* what a record that names no invocation carries
    MaxRestores,     \* how many times the journal is put back
    MaxSeals,        \* how many seals (ri-seal, a sweep run's, ri-backup's)
    MaxPowerLoss,    \* power losses: every live process dies, unsynced witness lines go
    DurableIntentLine, \* TRUE: Open syncs its intent's line before it returns (not the code)
    ServiceIdentityValues, \* SUBSET BOOLEAN: a service identity declared
    MaxLog,          \* with CONSTRAINT LogBound: the journal's length bound (0: none)
    Bug              \* "none", or the one thing a twin changes

ASSUME MaxRestores \in Nat /\ MaxSeals \in Nat /\ MaxPowerLoss \in Nat /\ MaxLog \in Nat
ASSUME DurableIntentLine \in BOOLEAN /\ ServiceIdentityValues \subseteq BOOLEAN
ASSUME Bug \in {"none", "restore-unmarked", "restore-forgets", "restore-drops-held", "seal-only"}

ClosingTypes == {"outcome", "refused", "abandoned"}
RecTypes == {"genesis", "intent", "seal", "restored"} \cup ClosingTypes

VARIABLES
    log,      \* the journal: the sequence of records; index = seq (seq 0 is the genesis)
    wit,      \* the witness: its lines in file order, [ep, seq, rec, dur]
    past,     \* every journal a Restore replaced (so every backup ever taken is a prefix of one)
    epoch,    \* the witness's epoch: how many restores were accepted
    restores, seals, losses,  \* budgets spent
    store,    \* the adopter's store: the invocations whose commit it applied
    iv,       \* per invocation: idle | opened | committed | declined | done | dead
    si,       \* a service identity declared (fixed for a behaviour)
    closed,   \* ghost: invocations that had a closing appended, in any history
    excused   \* ghost: <<j, i>>: i's Open proceeded past j's open intent under
              \* report-only (open step 3.8a) while j had never been closed

vars == <<log, wit, past, epoch, restores, seals, losses, store, iv, si, closed, excused>>

\* A record.  br stands for the hash chain: it is how many restores came
\* before the append.  Between two restores the journal only grows, so two
\* records with the same content and br at one seq sit on the same history,
\* and a record appended after a restore differs from every record of the
\* history that restore cut off (the hash differs).  ri: the invocations
\* whose intents an accepted restore restored; mk: the invocations its
\* marker lists.
Rec(ty, i, by) == [ty |-> ty, inv |-> i, br |-> restores, by |-> by, ri |-> {}, mk |-> {}]
Genesis == [ty |-> "genesis", inv |-> NoInv, br |-> 0, by |-> "sub", ri |-> {}, mk |-> {}]

-----------------------------------------------------------------------------
(* Reading the journal L (lib/proto.c: ri_inv_read; lib/standing.c).       *)
IsClosing(r) == r.ty \in ClosingTypes
\* an intent: the invocation's own, or one an accepted restore restored
\* (restore.h: a <kind>.intended under the substrate actor)
HasIntent(L, i) ==
    \E k \in DOMAIN L : (L[k].ty = "intent" /\ L[k].inv = i) \/ (L[k].ty = "restored" /\ i \in L[k].ri)
Closings(L, i) == {k \in DOMAIN L : IsClosing(L[k]) /\ L[k].inv = i}
Min(S) == CHOOSE x \in S : \A y \in S : x <= y
Max(S) == CHOOSE x \in S : \A y \in S : x >= y
\* Which closing stands 7 (no supersession here: see README)
StandingTy(L, i) == IF Closings(L, i) = {} THEN "none" ELSE L[Min(Closings(L, i))].ty
\* Term open invocations: an intent no closing names yet
OpenInv(L, i) == HasIntent(L, i) /\ Closings(L, i) = {}
\* open step 3.9a: the act's outcome
Landed(L) == \E k \in DOMAIN L : L[k].ty = "outcome"
\* The act's marker: the newest record of its marker scope
\* ("unreconciled:<kind>:<act_key>").  Held: the invocations it lists that
\* no standing closing written after it has reconciled (marker_left).
Markers(L) == {k \in DOMAIN L : L[k].ty = "restored" /\ L[k].mk # {}}
Held(L) ==
    IF Markers(L) = {} THEN {}
    ELSE LET m == Max(Markers(L))
         IN {i \in L[m].mk : Closings(L, i) = {} \/ Min(Closings(L, i)) < m}

-----------------------------------------------------------------------------
(* The witness (lib/witness.h).  A line is [ep, seq, rec, dur]: its epoch, *)
(* the seq and record it names (the hash), and whether it is on disk       *)
(* (synced) or may still be lost to a power loss.                          *)
\* the ranking: (epoch, seq); among equals the later line (witness.c: the
\* highest (epoch, seq), never merely the last line)
Above(a, b) == a.ep > b.ep \/ (a.ep = b.ep /\ a.seq > b.seq)
Better(W, j, k) == Above(W[j], W[k]) \/ (~Above(W[k], W[j]) /\ j > k)
Best(W, S) == CHOOSE k \in S : \A j \in S \ {k} : ~Better(W, j, k)
\* the journal L holds the record line l names (an IF, not a disjunction:
\* TLC splits a disjunction inside an action into branches)
Holds(L, l) == IF l.seq = 0 THEN TRUE ELSE l.seq <= Len(L) /\ L[l.seq] = l.rec
\* The highest line.  Epochs never go down along the file, and an epoch's
\* first line (the genesis, an accepted restore's) is synced, so the
\* highest epoch is the current one; within it the highest seq, and among
\* equals the later line.
TopIdx ==
    LET E == {k \in DOMAIN wit : wit[k].ep = epoch}
        s == Max({wit[k].seq : k \in E})
    IN Max({k \in E : wit[k].seq = s})
\* freshness: the journal holds the witness's highest line -- it does not end
\* below it and its record there is the one the line names (witness.h,
\* ri_witness_judge).  Every reader and writer refuses otherwise.
Fresh == Holds(log, wit[TopIdx])
\* the invocations a line names (the act it touched: a restored intent's line
\* names its invocation; a seal's, an audit record's, names none)
Names(r) == IF r.ty = "restored" THEN r.ri ELSE IF r.inv \in Invs THEN {r.inv} ELSE {}

\* Which lines are written: every append's (issue 39), or -buggy-witness-seal-only
\* only a seal's and an accepted restore's (which seals).
Witnessed(ty) == Bug # "seal-only" \/ ty \in {"seal", "restored"}
\* Which lines are synced when written: a seal's and a restore's; an intent's
\* if DurableIntentLine (the code does not).  With no power loss in the
\* configuration it is moot, and every line is kept as durable (fewer
\* distinct states, the same behaviours).
Dur(ty) == MaxPowerLoss = 0 \/ ty \in {"seal", "restored"} \/ (ty = "intent" /\ DurableIntentLine)
Synced(W) == [k \in DOMAIN W |-> [W[k] EXCEPT !.dur = TRUE]]

\* An append: the record commits, then its line is added (store core: pend
\* in the append, flush on commit).
AppendRec(r) ==
    /\ log' = Append(log, r)
    /\ wit' = IF ~Witnessed(r.ty) THEN wit
              ELSE LET w == IF r.ty = "seal" THEN Synced(wit) ELSE wit
                   IN Append(w, [ep |-> epoch, seq |-> Len(log) + 1, rec |-> r, dur |-> Dur(r.ty)])

-----------------------------------------------------------------------------
Init ==
    /\ log = << >>
    /\ wit = << [ep |-> 0, seq |-> 0, rec |-> Genesis, dur |-> TRUE] >>
    /\ past = {}
    /\ epoch = 0 /\ restores = 0 /\ seals = 0 /\ losses = 0
    /\ store = {}
    /\ iv = [i \in Invs |-> "idle"]
    /\ si \in ServiceIdentityValues
    /\ closed = {} /\ excused = {}

Live(i) == iv[i] \in {"opened", "committed", "declined"}
\* the act's critical section: one live invocation at a time; a crashed one
\* frees it (its lease expires; it never commits after: see README)
SectionFree == \A i \in Invs : ~Live(i)

(* Open (lib/open.c: ri_open, precheck).  Taken only when it proceeds: a   *)
(* refused Open writes nothing and changes nothing, and its caller may     *)
(* come back later -- the same as an Open not yet taken.  So every refusal *)
(* is a guard here:                                                        *)
(*  - a journal that is not fresh: journal-unavailable, cause integrity;   *)
(*  - issue 39: the act unreconciled: act-in-flight, cause restore, for    *)
(*    every binding (open step 3.8 does not proceed past it);              *)
(*  - open steps 3.4-3.7: another open intent, where a service identity is *)
(*    declared; report-only proceeds past it (3.8a) and leaves it open;    *)
(*  - open step 3.9: the non-repeatable act has an outcome: act-landed.    *)
Open(i) ==
    /\ iv[i] = "idle" /\ SectionFree /\ Fresh
    /\ LET others == {j \in Invs \ {i} : OpenInv(log, j)}
       IN /\ Held(log) = {}
          /\ ~(si /\ others # {})
          /\ ~Landed(log)
          /\ excused' = excused \cup {<<j, i>> : j \in others \ closed}
    /\ AppendRec(Rec("intent", i, "inv"))
    /\ iv' = [iv EXCEPT ![i] = "opened"]
    /\ UNCHANGED <<past, epoch, restores, seals, losses, store, si, closed>>

\* The bound commit: the store applies it, or declines it (pre-commit).
Commit(i) ==
    /\ iv[i] = "opened"
    /\ \/ store' = store \cup {i} /\ iv' = [iv EXCEPT ![i] = "committed"]
       \/ UNCHANGED store /\ iv' = [iv EXCEPT ![i] = "declined"]
    /\ UNCHANGED <<log, wit, past, epoch, restores, seals, losses, si, closed, excused>>

\* Close (outcome) or Refuse (refused): the re-read under the section adopts
\* a closing already there (close step 2.2) and writes nothing; a journal
\* that is not fresh is refused, so the invocation waits, or dies.
Close(i) ==
    /\ iv[i] \in {"committed", "declined"} /\ Fresh
    /\ IF Closings(log, i) = {}
       THEN /\ AppendRec(Rec(IF iv[i] = "committed" THEN "outcome" ELSE "refused", i, "inv"))
            /\ closed' = closed \cup {i}
       ELSE UNCHANGED <<log, wit, closed>>
    /\ iv' = [iv EXCEPT ![i] = "done"]
    /\ UNCHANGED <<past, epoch, restores, seals, losses, store, si, excused>>

\* A crash: the process stops for good, between any two steps.
Crash(i) ==
    /\ Live(i)
    /\ iv' = [iv EXCEPT ![i] = "dead"]
    /\ UNCHANGED <<log, wit, past, epoch, restores, seals, losses, store, si, closed, excused>>

(* Reconcile: the sweep (reconcile step 3) where a service identity is     *)
(* declared, else an operator's Resolve (open step 3.8d) -- the same here: *)
(* under the section, an open intent whose invocation no longer runs, the  *)
(* probe (it reads the store exactly: the pairing datum the witness kept,  *)
(* restore.h), and the closing the store proves: a recovered outcome       *)
(* (3.2) if committed, else abandoned (3.4: the commit fence makes         *)
(* not-committed final).  This is also what reconciles a restored act.     *)
Reconcile(i) ==
    /\ Fresh /\ SectionFree
    /\ OpenInv(log, i)
    /\ AppendRec(Rec(IF i \in store THEN "outcome" ELSE "abandoned", i, IF si THEN "sweep" ELSE "op"))
    /\ closed' = closed \cup {i}
    /\ UNCHANGED <<past, epoch, restores, seals, losses, store, iv, si, excused>>

\* A seal (ri-seal, every sweep run, ri-backup before its copy): a record,
\* and its line fdatasync'd -- which also puts every earlier line on disk.
Seal ==
    /\ seals < MaxSeals /\ Fresh
    /\ seals' = seals + 1
    /\ AppendRec(Rec("seal", NoInv, "sub"))
    /\ UNCHANGED <<past, epoch, restores, losses, store, iv, si, closed, excused>>

(* The journal put back: any copy of an earlier state -- a prefix of the    *)
(* journal, or of a journal an earlier restore replaced.  Processes keep    *)
(* running; the witness keeps every line.                                   *)
Backups == UNION {{SubSeq(L, 1, n) : n \in 0..Len(L)} : L \in past \cup {log}}
Restore ==
    /\ restores < MaxRestores
    /\ \E P \in Backups \ {log} : log' = P
    /\ past' = past \cup {log}
    /\ restores' = restores + 1
    /\ UNCHANGED <<wit, epoch, seals, losses, store, iv, si, closed, excused>>

(* ri-init --accept-restore (lib/restore.c: ri_accept_restore, plan_act).   *)
(* Only a journal that is not fresh is accepted ("nothing to accept"        *)
(* otherwise).  The fork: the highest witnessed record the journal holds.   *)
(* Lost: every line ranking above the fork whose record it does not hold.   *)
(* For every invocation a lost line names: no intent in the journal -> a    *)
(* restored intent (the witness kept its pairing datum) and listed; an      *)
(* outcome or refusal standing -> closed for good, nothing; else listed.    *)
(* Where it lost anything of the act, the new marker also lists what the    *)
(* act's standing marker still holds (plan_act, since 91772d3).             *)
(* One transaction, folded here into ONE record -- audit.restored, the      *)
(* restored intents, the marker -- so no copy holds part of it; its line    *)
(* is the next epoch's first and is synced (it ends with a seal).           *)
AcceptRestore ==
    /\ ~Fresh
    /\ LET held == {k \in DOMAIN wit : Holds(log, wit[k])}
           fork == wit[Best(wit, held)]
           lost == UNION {Names(wit[k].rec) : k \in {k \in DOMAIN wit \ held : Above(wit[k], fork)}}
           rintents == IF Bug = "restore-forgets" THEN {}
                       ELSE {i \in lost : ~HasIntent(log, i)}
           \* an earlier restore's marker that still holds the act: its
           \* invocations not reconciled since stay held by the new one
           \* (-buggy-restore-drops-held: they do not, as before 91772d3)
           carried == IF lost = {} \/ Bug = "restore-drops-held" THEN {} ELSE Held(log)
           listed == IF Bug \in {"restore-unmarked", "restore-forgets"} THEN {}
                     ELSE {i \in lost : ~(HasIntent(log, i) /\ StandingTy(log, i) \in {"outcome", "refused"})}
                          \cup carried
           r == [ty |-> "restored", inv |-> NoInv, br |-> restores, by |-> "sub", ri |-> rintents, mk |-> listed]
       IN /\ log' = Append(log, r)
          /\ wit' = Append(Synced(wit), [ep |-> epoch + 1, seq |-> Len(log) + 1, rec |-> r, dur |-> TRUE])
    /\ epoch' = epoch + 1
    /\ UNCHANGED <<past, restores, seals, losses, store, iv, si, closed, excused>>

\* A power loss: every live process dies; the journal keeps what it
\* committed (synchronous=FULL), the store what it applied; the witness
\* loses every line not yet on disk (witness.c: no fsync per append).
PowerLoss ==
    /\ losses < MaxPowerLoss
    /\ losses' = losses + 1
    /\ iv' = [i \in Invs |-> IF Live(i) THEN "dead" ELSE iv[i]]
    /\ wit' = SelectSeq(wit, LAMBDA l : l.dur)
    /\ UNCHANGED <<log, past, epoch, restores, seals, store, si, closed, excused>>

Next ==
    \/ \E i \in Invs : Open(i) \/ Commit(i) \/ Close(i) \/ Crash(i) \/ Reconcile(i)
    \/ Seal \/ Restore \/ AcceptRestore \/ PowerLoss

Spec == Init /\ [][Next]_vars

SymInvs == Permutations(Invs)
\* A state constraint for the configurations that name it: behaviours whose
\* journal never holds more than MaxLog records (bounded, as Horizon bounds
\* the protocol model).
LogBound == MaxLog = 0 \/ Len(log) <= MaxLog

-----------------------------------------------------------------------------
(* Invariants.                                                              *)
Recs == [ty : RecTypes, inv : Invs \cup {NoInv}, br : 0..MaxRestores,
         by : {"inv", "sweep", "op", "sub"}, ri : SUBSET Invs, mk : SUBSET Invs]
TypeOK ==
    /\ log \in Seq(Recs)
    /\ \A k \in DOMAIN wit : wit[k] \in [ep : 0..MaxRestores, seq : Nat, rec : Recs, dur : BOOLEAN]
    /\ epoch \in 0..MaxRestores /\ restores \in 0..MaxRestores
    /\ seals \in 0..MaxSeals /\ losses \in 0..MaxPowerLoss
    /\ store \subseteq Invs
    /\ iv \in [Invs -> {"idle", "opened", "committed", "declined", "done", "dead"}]
    /\ si \in BOOLEAN /\ closed \subseteq Invs /\ excused \subseteq Invs \X Invs

\* Issue 39: never a second outcome -- the store never holds two commits of
\* the non-repeatable act ("never a blind retry"; a restore must not pay a
\* payment twice).  The one exception is report-only's declared degradation
\* (open step 3.8a and its WHY): an Open that proceeded past an open intent
\* whose invocation was never closed, in any history -- a crashed
\* invocation's, not one a restore re-opened.
InvRestore ==
    \A i, j \in store : i = j \/ <<i, j>> \in excused \/ <<j, i>> \in excused

\* The section keeps the writers apart: one closing per invocation in the
\* journal (the model's own check that Close and Reconcile never both write).
InvOneClosing == \A i \in Invs : Cardinality(Closings(log, i)) <= 1

-----------------------------------------------------------------------------
(* Reachability probes: falsehoods TLC must reject, so the restore path is *)
(* not vacuous.                                                            *)
\* a restore lost an act that committed, and it was reconciled after the
\* marker with its recovered outcome
Probe_RestoreNeverRecovered ==
    ~\E m \in Markers(log), k \in DOMAIN log :
        k > m /\ log[k].ty = "outcome" /\ log[k].by # "inv" /\ log[k].inv \in log[m].mk
\* an invocation opened after an accepted restore commits in the store
Probe_NeverCommitsAfterRestore ==
    ~\E i \in store, m, k \in DOMAIN log :
        log[m].ty = "restored" /\ k > m /\ log[k].ty = "intent" /\ log[k].inv = i

=============================================================================
