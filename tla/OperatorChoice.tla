---------------------------- MODULE OperatorChoice ----------------------------
(***************************************************************************)
(* OperatorChoice (issue 41 point 2): the audit's store checks judge what  *)
(* stands, and the operator's choice among an undecidable store's          *)
(* candidates.                                                             *)
(*                                                                         *)
(* A small module beside RecoverableInvocation.tla, whose probe reads the  *)
(* store exactly: it has no undecidable answer, no candidates, no audit    *)
(* and no store that changes after a closing.  This one keeps only what    *)
(* Check 6 over an escalation rests on:                                    *)
(*  - ONE invocation whose intent is open;                                 *)
(*  - the adopter's store: the rows matching its pairing datum (rows, a    *)
(*    subset of D); the ghost real is the row the act itself wrote (or     *)
(*    none); the others are stray rows (test data, a planted duplicate);   *)
(*  - the probe: no row -> not-committed; one row d -> committed(d); two   *)
(*    or more -> undecidable, the rows its candidates;                     *)
(*  - the sweep, once: a recovered outcome, an abandonment (the commit     *)
(*    fence declared) or an escalation naming the candidates;              *)
(*  - the invocation's own late outcome (journal fence none): a second     *)
(*    chain beside the sweep's closing;                                    *)
(*  - the operator (Resolve) over a standing escalation or a duplicate:    *)
(*    ANY disposition -- an outcome naming any data, an abandonment, or    *)
(*    escalated again naming the store's rows -- superseding every head;   *)
(*  - Correct: the store corrected since, a stray row removed (lawful);    *)
(*  - the audit, at every state: Check 6.1 (a recovered outcome            *)
(*    corroborated: committed with its data, or -- the operator's -- an    *)
(*    undecidable answer whose candidates include its data), 6.3 (an       *)
(*    abandonment only where the store answers not-committed), 6.5 (an     *)
(*    escalation's candidates each match a store row), over the chain      *)
(*    heads that stand; a superseded closing is judged through the one     *)
(*    that superseded it.                                                  *)
(*                                                                         *)
(* Bug selects one twin, each changing ONE thing; "none" is clean:         *)
(*   "no-operator-choice"  6.1 takes only committed with the outcome's     *)
(*                         data (RI_NC_AUDIT_NO_OPERATOR_CHOICE);          *)
(*   "judges-superseded"   6.5 judges every escalation, superseded ones    *)
(*                         too (RI_NC_AUDIT_JUDGES_SUPERSEDED).            *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    D,               \* the data a store row may carry
    None,            \* no row: the act never wrote one
    MaxResolves,     \* how many Resolve calls
    Bug

ASSUME Bug \in {"none", "no-operator-choice", "judges-superseded"}

VARIABLES rows, real, log, late, resolves
vars == <<rows, real, log, late, resolves>>

\* A closing: ty, d (an outcome's data), c (an escalation's candidates),
\* by ("sweep", "inv", "op"), nm (the closings it supersedes, by index).
Cl(ty, d, c, by, nm) == [ty |-> ty, d |-> d, c |-> c, by |-> by, nm |-> nm]

Probe(r) == IF r = {} THEN [a |-> "not-committed", c |-> {}]
            ELSE IF Cardinality(r) = 1 THEN [a |-> "committed", c |-> r]
            ELSE [a |-> "undecidable", c |-> r]

Heads(L) == {k \in DOMAIN L : ~\E j \in DOMAIN L : k \in L[j].nm}
Standing(L) == CHOOSE k \in Heads(L) : \A j \in Heads(L) : k <= j
NeedsOperator(L) == Cardinality(Heads(L)) >= 2
                    \/ (Heads(L) # {} /\ L[Standing(L)].ty = "escalated")

-----------------------------------------------------------------------------
(* The audit over journal L and the store's rows now.                      *)
Check61(r) ==
    LET p == Probe(rows)
    IN \/ r.by = "inv"                                     \* recovery false: not 6.1's
       \/ p.a = "committed" /\ p.c = {r.d}
       \/ /\ Bug # "no-operator-choice"
          /\ r.by = "op" /\ p.a = "undecidable" /\ r.d \in p.c
Check63(r) == Probe(rows).a = "not-committed"
Check65(r) == r.c \subseteq rows
Judge(r) == CASE r.ty = "outcome" -> Check61(r)
              [] r.ty = "abandoned" -> Check63(r)
              [] r.ty = "escalated" -> Check65(r)
Judged(L) == IF Bug = "judges-superseded"
             THEN Heads(L) \cup {k \in DOMAIN L : L[k].ty = "escalated"}
             ELSE Heads(L)
AuditClean(L) == \A k \in Judged(L) : Judge(L[k])

\* What the rulings call lawful for a closing that stands, judged by the
\* store now -- stated on the rows, not on the probe's answers.
Lawful(r) == CASE r.ty = "outcome" /\ r.by = "sweep" -> rows = {r.d}
               [] r.ty = "outcome" /\ r.by = "op" -> r.d \in rows
               [] r.ty = "outcome" -> TRUE
               [] r.ty = "abandoned" -> rows = {}
               [] r.ty = "escalated" -> r.c \subseteq rows

-----------------------------------------------------------------------------
Init ==
    /\ real \in D \cup {None}
    /\ rows \in {S \in SUBSET D : real \in D => real \in S}
    /\ log = <<>> /\ late = FALSE /\ resolves = 0

\* The sweep, once, on an act with no closing: what its probe supports.
Sweep ==
    /\ log = <<>>
    /\ LET p == Probe(rows)
       IN log' = << CASE p.a = "committed" -> Cl("outcome", CHOOSE d \in p.c : TRUE, {}, "sweep", {})
                      [] p.a = "not-committed" -> Cl("abandoned", None, {}, "sweep", {})
                      [] OTHER -> Cl("escalated", None, p.c, "sweep", {}) >>
    /\ UNCHANGED <<rows, real, late, resolves>>

\* The invocation's own outcome, late (a paused Close), naming nothing.
LateClose ==
    /\ real \in D /\ ~late
    /\ log' = Append(log, Cl("outcome", real, {}, "inv", {}))
    /\ late' = TRUE
    /\ UNCHANGED <<rows, real, resolves>>

\* Resolve over a standing escalation or a duplicate: any disposition,
\* superseding every head (resolve 13, 15a; the ruling on duplicates).
Resolve ==
    /\ resolves < MaxResolves /\ log # <<>> /\ NeedsOperator(log)
    /\ \E r \in {Cl("outcome", d, {}, "op", Heads(log)) : d \in D}
                \cup {Cl("abandoned", None, {}, "op", Heads(log)),
                      Cl("escalated", None, rows, "op", Heads(log))} :
         log' = Append(log, r)
    /\ resolves' = resolves + 1
    /\ UNCHANGED <<rows, real, late>>

\* The store corrected: a stray row removed.
Correct ==
    /\ \E d \in rows \ {real} : rows' = rows \ {d}
    /\ UNCHANGED <<real, log, late, resolves>>

Next == Sweep \/ LateClose \/ Resolve \/ Correct

Spec == Init /\ [][Next]_vars

SymD == Permutations(D)

-----------------------------------------------------------------------------
(* Invariants.                                                              *)

\* The store checks judge what stands: every chain head lawful by the store
\* now, the audit is clean -- also once the store was corrected since.
InvNoFalseAlarm == (\A k \in Heads(log) : Lawful(log[k])) => AuditClean(log)

\* ... and a head unlawful by the store now fails the audit: an outcome
\* the store never offered, an abandonment while it holds rows.
InvNoFalsePass == (\E k \in Heads(log) : ~Lawful(log[k])) => ~AuditClean(log)

\* An escalation that stands on an undecidable store has a resolution
\* that leaves the audit clean: an outcome naming any of its candidates
\* (issue 41 point 2: "ri-audit --probe exits 1 for good").
InvResolutionExists ==
    (log # <<>> /\ NeedsOperator(log) /\ Probe(rows).a = "undecidable")
      => \A d \in rows : AuditClean(Append(log, Cl("outcome", d, {}, "op", Heads(log))))

\* Probes: falsehoods TLC must reject.
\* a superseded escalation whose candidate the store no longer holds, the audit clean
Probe_NoCorrectedStore ==
    ~(/\ \E k \in DOMAIN log : log[k].ty = "escalated" /\ k \notin Heads(log) /\ ~(log[k].c \subseteq rows)
      /\ AuditClean(log))
=============================================================================
