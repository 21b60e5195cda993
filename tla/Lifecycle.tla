------------------------------- MODULE Lifecycle -------------------------------
(***************************************************************************)
(* Lifecycle (issue 41): bindings are history, and retention has one       *)
(* reading.  A kind's bindings change while its records live: the service  *)
(* identity rotated, the kind made report-only, the commit fence withdrawn, *)
(* the retention period shortened.  Every record must be judged by the     *)
(* binding in force when it was written -- by the audit, and by the        *)
(* readers whose edges come from the binding (the sweep's horizon edge,    *)
(* the purge).                                                             *)
(*                                                                         *)
(* A small module beside RecoverableInvocation.tla, which has no audit, no *)
(* retention and no configuration that changes.  It keeps only what the    *)
(* rulings rest on:                                                        *)
(*  - ONE kind, its records on several act keys, so writers interleave     *)
(*    freely (no section between them);                                   *)
(*  - cfg: the kind's binding as configured now (service identity or       *)
(*    none, commit fence, retention period); Rebind changes it             *)
(*    (ri.json edited; ri-actor(1)'s rotation is one).  Which of the three *)
(*    may vary is the configuration's (Ids, Fences, Periods), so each run  *)
(*    changes only what its twins need;                                    *)
(*  - the journal: a sequence of records; its first is the genesis seal,   *)
(*    which carries the founding binding; a change is an audit.bound      *)
(*    record a writer appends just before the first record of its own it   *)
(*    judges, in that record's transaction (lib/bindings.h);               *)
(*  - writers: Open (an intent, retention_until = recorded_at + the        *)
(*    period of its binding) and sweep runs (a recovered outcome attested  *)
(*    by the service identity, or an abandonment where the commit fence    *)
(*    is declared, for an open intent in its partition).  Each takes its   *)
(*    binding from the config when it starts (a process reads ri.json      *)
(*    once) and appends later, so a run in flight across a Rebind writes   *)
(*    under the binding it started with;                                   *)
(*  - Forge: an actor holding a valid credential appends a recovery-shaped *)
(*    record raw (tests' ri-forge), unlawful under the binding in force;   *)
(*  - the audit (Check 2.5: a recovered outcome is attested by the service *)
(*    identity; Check 6.4: a sweep's abandonment only under a commit       *)
(*    fence), judging each record by the binding below its seq;            *)
(*  - the readers of retention: Open and read hold an open intent until    *)
(*    its stored retention_until; the sweep keeps it in its partition      *)
(*    while before its horizon edge, recorded_at + the bound period - A    *)
(*    (journal 8-9: from the bound period, never the record's own field);  *)
(*    the purge (a sweep run's last step) destroys the payload of every    *)
(*    intent whose retention ended -- the stored retention_until, which is *)
(*    recorded_at + the bound period (store_cuts.c ri_eng_purge).          *)
(* Time: Tick, and nothing else is timed.                                  *)
(*                                                                         *)
(* DueInTxn: where a writer decides that its binding must be recorded.     *)
(* TRUE: inside its append's transaction, against the newest audit.bound   *)
(* the journal holds then.  FALSE: before the append, against the history  *)
(* it read earlier (lib/bindings.c ri_bindings_due as of 2a01a72, with the *)
(* history cached for the process): probe-bound-cached.                    *)
(*                                                                         *)
(* Bug selects one twin, each changing ONE thing; "none" is clean:         *)
(*   "audit-today"    the audit judges every record by today's binding     *)
(*                    (RI_NC_BINDINGS_TODAY);                              *)
(*   "horizon-today"  the sweep's horizon edge comes from today's period   *)
(*                    (RI_NC_BINDINGS_TODAY; lib/sweep.c bound_at);        *)
(*   "purge-today"    the purge ends a payload's retention at recorded_at  *)
(*                    + today's period (RI_NC_PURGE_TODAY; purge_due).     *)
(* README.md says what is and is not modelled, and what each run shows.    *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Ids,             \* the actors a binding may name as the service identity
    NoId,            \* report-only: no service identity
    Fences,          \* the commit_fence values a binding may carry
    Periods,         \* the retention periods a binding may carry (ticks)
    Invs,            \* Opens, each of its own act key, each at most once
    Sweeps,          \* sweep runs, each closing at most one intent
    MaxRebinds,      \* how many times the kind's binding is changed
    MaxForges,       \* how many raw unlawful appends
    Horizon,         \* the last tick
    A,               \* clock_offset_allowance
    DueInTxn,        \* the binding decided in the append's transaction (see above)
    Bug              \* "none", or the one thing a twin changes

ASSUME MaxRebinds \in Nat /\ MaxForges \in Nat /\ Horizon \in Nat /\ A \in Nat
ASSUME DueInTxn \in BOOLEAN /\ Periods \subseteq Nat /\ Periods # {}
ASSUME Fences \subseteq BOOLEAN /\ Fences # {}
ASSUME Bug \in {"none", "audit-today", "horizon-today", "purge-today"}

Bindings == [si : Ids \cup {NoId}, cf : Fences, rp : Periods]
Procs == Invs \cup Sweeps

VARIABLES
    now,      \* the clock (one clock: the skew between clocks is the protocol model's)
    cfg,      \* the kind's binding as configured now
    log,      \* the journal; index = seq
    wr,       \* per writer: [ph, b (the binding it started with), due, t (the intent), ty]
    rebinds, forges

vars == <<now, cfg, log, wr, rebinds, forges>>

\* A record: ty, its invocation, the actor that attested it, and the ghost
\* truth beside it -- b: the binding its writer acted under; honest: written
\* by the protocol's own writer under that binding (FALSE: a raw append).
\* An intent stores its retention_until (ru) beside its recorded_at (rat);
\* gone: its payload purged.
Rec(ty, i, by, b, honest, rat, ru) ==
    [ty |-> ty, inv |-> i, by |-> by, b |-> b, honest |-> honest, rat |-> rat, ru |-> ru, gone |-> FALSE]
Bound(b) == Rec("bound", NoId, NoId, b, TRUE, 0, 0)

Max(S) == CHOOSE x \in S : \A y \in S : x >= y

-----------------------------------------------------------------------------
(* Reading the journal.                                                    *)
BoundSeqs(n) == {j \in 1..n : log[j].ty = "bound"}
\* the binding a record at seq k falls under: the newest audit.bound below
\* it (the genesis seal's at seq 1 below every record)
BoundAt(k) == log[Max(BoundSeqs(k - 1))].b
\* what a writer compares its own binding with: the newest the journal holds
Newest == log[Max(BoundSeqs(Len(log)))].b

IsClosing(k) == log[k].ty \in {"outcome", "abandoned"}
Intents == {k \in DOMAIN log : log[k].ty = "intent"}
OpenIntent(k) == k \in Intents /\ ~log[k].gone
                 /\ ~\E j \in DOMAIN log : IsClosing(j) /\ log[j].inv = log[k].inv

\* The sweep's partition (reconcile steps 1.2-1.3, Invariant 7.2): before
\* the horizon edge, recorded_at + the bound period - A.  The period is the
\* one bound when the intent was written (-buggy-horizon-today: today's).
SweepPeriod(k) == IF Bug = "horizon-today" THEN cfg.rp ELSE BoundAt(k).rp
SweepKeeps(k, t) == t < log[k].rat + SweepPeriod(k) - A

\* The purge's retention end: the stored retention_until
\* (-buggy-purge-today: recorded_at + today's period).  Term retention end.
PurgeEnd(k) == IF Bug = "purge-today" THEN log[k].rat + cfg.rp ELSE log[k].ru

\* The audit: each record judged by the binding below its seq
\* (-buggy-audit-today: by today's).  Check 2.5: a recovered outcome is
\* attested by the service identity; Check 6.4: a sweep's abandonment only
\* where the commit fence is declared.
AuditBinding(k) == IF Bug = "audit-today" THEN cfg ELSE BoundAt(k)
ShapeOK(r, b) ==
    CASE r.ty = "outcome" -> b.si # NoId /\ r.by = b.si
      [] r.ty = "abandoned" -> b.cf
      [] OTHER -> TRUE
Flagged(k) == ~ShapeOK(log[k], AuditBinding(k))

-----------------------------------------------------------------------------
Idle == [ph |-> "idle", b |-> CHOOSE b \in Bindings : TRUE, due |-> FALSE, t |-> 0, ty |-> "none"]

Init ==
    /\ now = 0
    /\ cfg \in Bindings
    /\ log = << Bound(cfg) >>                  \* the genesis seal's founding binding
    /\ wr = [p \in Procs |-> Idle]
    /\ rebinds = 0 /\ forges = 0

\* The append of writer p: its binding first when it must be recorded --
\* decided now against the journal (DueInTxn), or as it was decided when it
\* started -- then its record, in one transaction.
AppendAs(p, r) ==
    LET due == IF DueInTxn THEN Newest # wr[p].b ELSE wr[p].due
    IN log' = IF due THEN log \o << Bound(wr[p].b), r >> ELSE Append(log, r)

(* Open: it starts (reads ri.json: its binding; ri_bindings_due against the *)
(* history it read), then appends its intent, retention_until from its     *)
(* binding's period.                                                       *)
OStart(i) ==
    /\ wr[i].ph = "idle"
    /\ wr' = [wr EXCEPT ![i] = [ph |-> "ready", b |-> cfg, due |-> Newest # cfg, t |-> 0, ty |-> "intent"]]
    /\ UNCHANGED <<now, cfg, log, rebinds, forges>>

OAppend(i) ==
    /\ wr[i].ph = "ready" /\ i \in Invs
    /\ AppendAs(i, Rec("intent", i, "inv", wr[i].b, TRUE, now, now + wr[i].b.rp))
    /\ wr' = [wr EXCEPT ![i].ph = "done"]
    /\ UNCHANGED <<now, cfg, rebinds, forges>>

(* A sweep run: it starts with its binding, picks an open intent in its    *)
(* partition and the closing its binding allows -- a recovered outcome     *)
(* attested by its service identity, or an abandonment where the commit    *)
(* fence is declared (which the store's answer picks is the protocol       *)
(* model's); report-only writes nothing.  Then, under the section, the     *)
(* re-read and the append.  Its purge is the step Purge.                   *)
SStart(s) ==
    /\ wr[s].ph = "idle"
    /\ cfg.si # NoId
    /\ \E k \in Intents, ty \in {"outcome", "abandoned"} :
         /\ OpenIntent(k) /\ SweepKeeps(k, now)
         /\ ty = "abandoned" => cfg.cf
         /\ wr' = [wr EXCEPT ![s] = [ph |-> "ready", b |-> cfg, due |-> Newest # cfg, t |-> k, ty |-> ty]]
    /\ UNCHANGED <<now, cfg, log, rebinds, forges>>

SAppend(s) ==
    /\ wr[s].ph = "ready" /\ s \in Sweeps
    /\ IF OpenIntent(wr[s].t)                   \* sweep closed ids: the re-read
       THEN AppendAs(s, Rec(wr[s].ty, log[wr[s].t].inv, wr[s].b.si, wr[s].b, TRUE, 0, 0))
       ELSE UNCHANGED log
    /\ wr' = [wr EXCEPT ![s].ph = "done"]
    /\ UNCHANGED <<now, cfg, rebinds, forges>>

(* The purge (ri-sweep's retention step, ri_eng_purge): every intent whose *)
(* retention ended loses its payload, in one transaction.  Enabled only    *)
(* when it destroys something.                                             *)
Purge ==
    LET due == {k \in Intents : ~log[k].gone /\ PurgeEnd(k) <= now}
    IN /\ due # {}
       /\ log' = [k \in DOMAIN log |-> IF k \in due THEN [log[k] EXCEPT !.gone = TRUE] ELSE log[k]]
       /\ UNCHANGED <<now, cfg, wr, rebinds, forges>>

(* A raw append by an actor holding a valid credential: a recovery-shaped  *)
(* record, unlawful under the binding in force when it is written -- a     *)
(* recovered outcome attested by an actor that is not the service          *)
(* identity, or a sweep's abandonment with no commit fence.  It records    *)
(* no binding of its own.                                                  *)
Forge ==
    /\ forges < MaxForges
    /\ \E x \in Ids, ty \in {"outcome", "abandoned"}, k \in Intents :
         LET r == Rec(ty, log[k].inv, x, Newest, FALSE, 0, 0)
         IN /\ ~ShapeOK(r, Newest)
            /\ log' = Append(log, r)
    /\ forges' = forges + 1
    /\ UNCHANGED <<now, cfg, wr, rebinds>>

\* The kind's binding changed in ri.json: writers that start from now on
\* take it; runs in flight keep theirs.
Rebind ==
    /\ rebinds < MaxRebinds
    /\ \E b \in Bindings \ {cfg} : cfg' = b
    /\ rebinds' = rebinds + 1
    /\ UNCHANGED <<now, log, wr, forges>>

Tick ==
    /\ now < Horizon
    /\ now' = now + 1
    /\ UNCHANGED <<cfg, log, wr, rebinds, forges>>

Next ==
    \/ \E i \in Invs : OStart(i) \/ OAppend(i)
    \/ \E s \in Sweeps : SStart(s) \/ SAppend(s)
    \/ Purge \/ Forge \/ Rebind \/ Tick

Spec == Init /\ [][Next]_vars

SymInvs == Permutations(Invs)
SymInvsIds == Permutations(Invs) \cup Permutations(Ids)

-----------------------------------------------------------------------------
(* Invariants.                                                              *)

\* Bindings are history, no false alarm: every record the protocol's own
\* writers wrote under their binding passes the audit -- a lawful rotation,
\* report-only, a withdrawn fence leave it clean.
InvNoFalseAlarm == \A k \in DOMAIN log : log[k].honest => ~Flagged(k)

\* ... and no false pass, the dangerous direction: every record unlawful
\* under the binding in force when it was written fails the audit -- also
\* once the kind is rebound to the actor that forged it.
InvNoFalsePass == \A k \in DOMAIN log : ~log[k].honest => Flagged(k)

\* Retention has one reading: while an open intent's retention has not
\* ended (Open refuses its act, read shows it open, the audit judges it),
\* the sweep keeps it in its partition -- up to the allowance before that
\* end (the horizon edge).  An intent past the sweep's horizon is past it
\* for good, so a violation is an orphan stranded until its retention ends.
InvOneReading ==
    \A k \in Intents : (OpenIntent(k) /\ now < log[k].ru - A) => SweepKeeps(k, now)

\* ... and the purge reads it too (Check 8.1.5): no payload is destroyed
\* before its stored retention end.
InvPurgeLawful == \A k \in Intents : log[k].gone => log[k].ru <= now

\* The audit's reading and the sweep's are the writer's: every record falls
\* under the binding its writer acted under (what the two above rest on).
InvBoundAsWritten == \A k \in DOMAIN log : (log[k].honest /\ log[k].ty # "bound") => BoundAt(k) = log[k].b

-----------------------------------------------------------------------------
(* Reachability probes: falsehoods TLC must reject.                         *)
\* a rotation: an honest recovered outcome attested by an identity that is
\* no longer the kind's, the new one recorded in the journal after it
Probe_NoRotation ==
    ~\E k \in DOMAIN log : /\ log[k].ty = "outcome" /\ log[k].honest
                          /\ Newest.si \notin {NoId, log[k].by}
\* a shortened retention: an open intent written under a longer period than
\* today's, still open past recorded_at + today's period
Probe_NoShorterPeriod ==
    ~\E k \in Intents : OpenIntent(k) /\ log[k].b.rp > cfg.rp /\ now >= log[k].rat + cfg.rp
\* the purge is not vacuous: a payload destroyed
Probe_NeverPurged == ~\E k \in Intents : log[k].gone

=============================================================================
