------------------------- MODULE RecoverableInvocation -------------------------
(***************************************************************************)
(* Recoverable Invocation, modelled from the text of the specification     *)
(* (shared/spec/recoverable-invocation.txt, draft 9).  This is our own     *)
(* model: the spec's recoverable-invocation.tla is not available.          *)
(*                                                                         *)
(* Six components over ONE act (one (kind, act_key)):                      *)
(*  - the invocations (Invs): Open split into take -> read -> gate ->      *)
(*    issue -> return, then the bound commit, then Close / Refuse / Yield; *)
(*  - the critical-section host: one lease with an expiry, freed only on   *)
(*    release or expiry, never on death;                                   *)
(*  - the adopter's store, with or without a commit fence;                 *)
(*  - the journal: a write is gated and issued at separate instants, then *)
(*    lands (accepted, stamped, visible, returned) or is fenced out, or    *)
(*    its reply is lost; with or without the journal fence -- a lease      *)
(*    terminus and a per-write terminus, each minted with the allowance    *)
(*    subtracted and judged on the substrate's own (lagging) clock;        *)
(*  - the sweep: runs on separate nodes (Sweeps), each reading now once,   *)
(*    taking the section with a blocking take and re-reading under it,    *)
(*    then the duplicate scan;                                             *)
(*  - an operator through Resolve: the third writer, taking the same       *)
(*    section on its own seam reading, re-arming for a second call.       *)
(* Time is explicit (Tick), a crash can hit any live process between any   *)
(* two steps, and service_identity and commit_fence are modelled           *)
(* dimensions (chosen in Init).                                            *)
(*                                                                         *)
(* Beyond the spec's model, supersession is BY NAME: a closing record      *)
(* carries the set of closings it names (nm) and a ghost of what its       *)
(* writer read under the section (saw), so chains, binding duplicates and  *)
(* resolving a duplicate are checked with identities (issue 9, Rulings).   *)
(*                                                                         *)
(* Bug selects one buggy twin, each changing ONE thing; "none" is clean.   *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Invs,            \* invocation ids of the act; each runs Open once
    Sweeps,          \* sweep run ids, one run per node
    O1, O2,          \* the operator run id of each Resolve call
    OpCalls,         \* how many Resolve calls the operator makes (0..2)
    NoOne,           \* the empty holder
    Horizon,         \* the last tick
    OpenBy,          \* an invocation takes the section at or before this tick
    CB,              \* completion_bound: an invocation's lease
    JWB,             \* journal_write_bound
    A,               \* clock_offset_allowance
    CL,              \* closure_latency (sweep lease = CL + JWB)
    Skew,            \* how far the judges' clocks (substrate, store) lag the host's
    OperatorSkew,    \* how far the operator's seam reads ahead of the host's clock
    OpChoice,        \* the operator chooses over a duplicate or an escalation (ODisps)
    JournalFence,    \* journal_fence declared
    Gated,           \* the remaining gate before every write (journal write bound 1)
    CommitFenceValues,      \* SUBSET BOOLEAN: commit_fence declared
    ServiceIdentityValues,  \* SUBSET BOOLEAN: a service identity declared
    MaxDeaths,       \* the death budget
    MaxLost,         \* the lost-reply budget
    Bug,             \* "none", or the one thing a twin changes (README)
    Window,          \* TRUE: the Invariant 4 configuration, progress forced
    Cadence,         \* Window: run n (Sweeps = 1..k) starts at tick n * Cadence
    CompWindow       \* Window: compensation_window, from recorded_at

ASSUME Skew \in 0..A /\ JWB > A /\ CB >= JWB /\ OpCalls \in 0..2

OpRuns == <<O1, O2>>
SL == CL + JWB                  \* Term sweep lease (the sweep's and Resolve's)
ClosingTypes == {"outcome", "refused", "abandoned", "escalated"}
Inf == 1000

VARIABLES
    now,     \* true time: the host's clock, and every writer's seam
    lease,   \* the act's critical section: [h |-> holder, e |-> expires_at]
    log,     \* the journal: the sequence of accepted records; index = seq
    net,     \* journal writes issued and not yet landed (they outlive a crash)
    store,   \* per invocation: [st |-> "none"|"pending"|"committed"|"refused", dl |-> fence deadline]
    cf,      \* commit_fence declared (fixed for a behaviour)
    si,      \* service identity declared (fixed for a behaviour)
    deaths, lost,
    iv,      \* per invocation: [ph, iss, ty]
    sw,      \* per sweep run:  [ph, pab, kept, cur, ty, saw, iss]
    opr,     \* the operator:   [c, ph, t, ty, nm, saw, iss]
    scan     \* ghost: the last duplicate scan's report and the truth beside it

vars == <<now, lease, log, net, store, cf, si, deaths, lost, iv, sw, opr, scan>>

-----------------------------------------------------------------------------
(* Clocks.  Seven clocks meet on the page; the model keeps the pair that    *)
(* decides a write: the host's (now: it mints expires_at, and every seam    *)
(* reads it) and the judges' -- the substrate's recorded_at and fence       *)
(* judgement, the store's commit fence -- which lag it by Skew <= A.        *)
SubNow == now - Skew
StoreNow == now - Skew
\* Allowance 7, 9: a minted instant carries the allowance subtracted
\* (-buggy-skew: minted bare)
AM == IF Bug = "skew" THEN 0 ELSE A

Min(S) == CHOOSE x \in S : \A y \in S : x <= y

-----------------------------------------------------------------------------
(* The critical-section host (act section; the Lease atom).                 *)
Held(h) == lease.h = h /\ now < lease.e
Free == lease.h = NoOne \/ now >= lease.e
\* act section 7: a blocking take (never try_take); it waits until the
\* holder's lease ends (open step 2.2, reconcile step 2.2, resolve 5)
Take(h, d) == Free /\ lease' = [h |-> h, e |-> now + d]
\* act section 14: only the holder's release frees the section
Release(h) == lease' = IF lease.h = h THEN [h |-> NoOne, e |-> 0] ELSE lease
\* journal write bound 1: no write while JWB exceeds remaining
GateOK(h) == ~Gated \/ (Held(h) /\ lease.e - now >= JWB)

-----------------------------------------------------------------------------
(* The journal.  A write carries the two instants of its journal fence      *)
(* instant, minted at issue (Where the allowance goes):                     *)
(*   lease terminus     = expires_at - A   minted by the host              *)
(*   per-write terminus = issue + JWB - A  minted by the writer's seam     *)
(* and the substrate judges both on its own clock when the write lands.     *)
LTerm(h) == IF lease.h = h THEN lease.e - AM ELSE -Inf
\* -buggy-perwrite: no per-write terminus
WTerm == IF Bug = "perwrite" THEN Inf ELSE now + JWB - AM
LandableAt(w, t) == ~JournalFence \/ (t - Skew < w.lt /\ t - Skew < w.wt)
Landable(w) == LandableAt(w, now)

\* The issue instant.  A write the fence already refuses lands on the
\* position's existing recording-failure arm at once (journal fence 3).
Issue(h, i, ty, nm, saw, by) ==
    LET w == [h |-> h, inv |-> i, ty |-> ty, nm |-> nm, saw |-> saw, by |-> by,
              lt |-> LTerm(h), wt |-> WTerm,
              vb |-> IF Bug = "visible" THEN now + JWB ELSE 0]
    IN net' = IF Landable(w) THEN net \cup {w} ELSE net

Mine(h, i, ty, k) == log[k].h = h /\ log[k].inv = i /\ log[k].ty = ty
Accepted(h, i, ty) == \E k \in DOMAIN log : Mine(h, i, ty, k)
\* Primitive policy 35-36: the read-back finds the writer's own record
VisMine(h, i, ty) == \E k \in DOMAIN log : Mine(h, i, ty, k) /\ log[k].vis
InNet(h, i, ty) == \E w \in net : w.h = h /\ w.inv = i /\ w.ty = ty
\* journal fence 3: the substrate refused it; it will never land
FencedOut(h, i, ty) == ~Accepted(h, i, ty) /\ ~InNet(h, i, ty)

-----------------------------------------------------------------------------
(* Reading the journal: every read sees visible records only.              *)
IsClosing(k) == log[k].ty \in ClosingTypes
Closings(i) == {k \in DOMAIN log : log[k].inv = i /\ IsClosing(k)}
VisClosings(i) == {k \in Closings(i) : log[k].vis}
Intents(i) == {k \in DOMAIN log : log[k].inv = i /\ log[k].ty = "intent"}
VisIntent(i) == \E k \in Intents(i) : log[k].vis
\* Primitive policy 38: recorded_at from the range read
RecAt(i) == log[Min(Intents(i))].rat
\* Term open invocations: an intent no closing names yet
OpenVis(i) == VisIntent(i) /\ VisClosings(i) = {}
\* Term examine edge / in-flight / aged; Term abandon edge (applied comparisons)
Aged(i, t) == RecAt(i) + CB + A <= t
PastAbandon(i, t) == RecAt(i) + CB + 2 * A <= t

(* Which closing stands, read as chains (issue 9, Rulings: Chains).        *)
\* Which closing stands 2 (ruling): a name that is not an earlier closing of
\* the same invocation supersedes nothing.
VNames(k) == {j \in log[k].nm : j \in DOMAIN log /\ j < k /\ IsClosing(j) /\ log[j].inv = log[k].inv}
\* Which closing stands 4-5: records linked by supersedes are one closing;
\* a chain head is a closing no closing of the set names.
Heads(S) == {k \in S : ~\E j \in S : k \in VNames(j)}
\* Which closing stands 7: among chain heads the lowest seq stands
Standing(S) == IF Heads(S) = {} THEN 0 ELSE Min(Heads(S))
\* Binding duplicate, closings key: two or more chains on one invocation id
ChainDup(S) == Cardinality(Heads(S)) >= 2
\* The surfaces' reading (read invocation 7, reconcile step 5.2).  The twins
\* read otherwise: "pairwise" collapses each (named, naming) pair on its own
\* (Which closing stands WHY); "alone" reads Which closing stands 6 literally
\* (two closings that each supersede nothing and are superseded by nothing).
ReaderDup(S) ==
    CASE Bug = "pairwise" ->
            Cardinality({k \in S : VNames(k) # {}})
              + Cardinality({k \in Heads(S) : VNames(k) = {}}) >= 2
      [] Bug = "alone" -> Cardinality({k \in Heads(S) : VNames(k) = {}}) >= 2
      [] OTHER -> ChainDup(S)
\* The truth a reading must match, from what writers READ under the section
\* rather than what they wrote: j accounts for k when j's writer saw k.
TrueHeads(S) == {k \in S : ~\E j \in S : k \in log[j].saw}
TrueDup(S) == Cardinality(TrueHeads(S)) >= 2

-----------------------------------------------------------------------------
IvIdle == [ph |-> "idle", iss |-> 0, ty |-> "intent"]
IvAt(ph) == [ph |-> ph, iss |-> 0, ty |-> "intent"]
SwIdle == [ph |-> "idle", pab |-> {}, kept |-> {}, cur |-> NoOne, ty |-> "none", saw |-> {}, iss |-> 0]
OpAt(c, ph) == [c |-> c, ph |-> ph, t |-> NoOne, ty |-> "none", nm |-> {}, saw |-> {}, iss |-> 0]

Init ==
    /\ now = 0
    /\ lease = [h |-> NoOne, e |-> 0]
    /\ log = << >>
    /\ net = {}
    /\ store = [i \in Invs |-> [st |-> "none", dl |-> 0]]
    /\ cf \in CommitFenceValues
    /\ si \in ServiceIdentityValues
    /\ deaths = 0 /\ lost = 0
    /\ iv = [i \in Invs |-> IvIdle]
    /\ sw = [s \in Sweeps |-> SwIdle]
    /\ opr = OpAt(0, IF OpCalls > 0 THEN "idle" ELSE "done")
    /\ scan = [rep |-> {}, truth |-> {}]

-----------------------------------------------------------------------------
(* The invocation: Open, the bound commit, Close / Refuse / Yield.          *)
Iv(i, r) == iv' = [iv EXCEPT ![i] = r]
\* an issue instant is kept only while waiting out JWB for a read-back
IvPh(i, ph) == iv' = [iv EXCEPT ![i].ph = ph, ![i].iss = IF ph \in {"irb", "crb"} THEN @ ELSE 0]
IvDone(i) == Iv(i, IvAt("done"))
Env == <<now, cf, si, deaths, sw, opr, scan>>

\* open step 2.1: take((kind, act key), invocation id, completion bound), a
\* blocking take (2.2).  The commit fence deadline is minted from the grant:
\* expires_at - A (Allowance 7, Term commit fence deadline).
ITake(i) ==
    /\ iv[i].ph = "idle" /\ now <= OpenBy
    /\ Take(i, CB)
    /\ store' = [store EXCEPT ![i].dl = now + CB - A]
    /\ IvPh(i, "pre")
    /\ UNCHANGED <<log, net, lost>> /\ UNCHANGED Env

\* open step 3: the read under the section.  3.4-3.5: an in-flight open
\* intent -> release, act-in-flight; 3.6-3.7: an aged one too where a service
\* identity is declared; 3.8: report-only proceeds past an aged one and
\* leaves it open.
IPre(i) ==
    /\ iv[i].ph = "pre"
    /\ LET others == {j \in Invs \ {i} : OpenVis(j)}
           live == {j \in others : ~Aged(j, now)}
       IN IF live # {} \/ (others # {} /\ si)
          THEN Release(i) /\ IvDone(i)
          ELSE IvPh(i, "igate") /\ UNCHANGED lease
    /\ UNCHANGED <<log, net, store, lost>> /\ UNCHANGED Env

\* open step 4.1-4.2: the intent write's gate instant
IGate(i) ==
    /\ iv[i].ph = "igate"
    /\ IF GateOK(i) THEN IvPh(i, "iissue") /\ UNCHANGED lease
                    ELSE Release(i) /\ IvDone(i)
    /\ UNCHANGED <<log, net, store, lost>> /\ UNCHANGED Env

\* open step 4.3: the intent write's issue instant
IIssue(i) ==
    /\ iv[i].ph = "iissue"
    /\ Issue(i, i, "intent", {}, {}, "inv")
    /\ Iv(i, [iv[i] EXCEPT !.ph = "iawait", !.iss = now])
    /\ UNCHANGED <<lease, log, store, lost>> /\ UNCHANGED Env

\* open step 4.4 (Primitive policy 19-26, 32-33): the return instant is in
\* Land (returned -> hold the section into the commit, open step 5.3); here
\* a fenced-out write -> recording-failure(intent) (journal fence 3), or a
\* lost reply -> unknown.
IAwait(i) ==
    /\ iv[i].ph = "iawait"
    /\ \/ FencedOut(i, i, "intent") /\ Release(i) /\ IvDone(i) /\ UNCHANGED lost
       \/ lost < MaxLost /\ lost' = lost + 1 /\ IvPh(i, "irb") /\ UNCHANGED lease
    /\ UNCHANGED <<log, net, store>> /\ UNCHANGED Env

\* Primitive policy 34: no read-back before JWB since the issue; 24-26 and
\* 36-37: found -> proceed with a hard alert; nothing -> release and
\* recording-failure(intent), never a blind retry.
IReadBack(i) ==
    /\ iv[i].ph = "irb" /\ now >= iv[i].iss + JWB
    /\ IF VisMine(i, i, "intent") THEN IvPh(i, "commit") /\ UNCHANGED lease
                                  ELSE Release(i) /\ IvDone(i)
    /\ UNCHANGED <<log, net, store, lost>> /\ UNCHANGED Env

\* The bound commit (commit 1-9).  committed -> Close; pre-commit, including
\* a store refusing past the commit fence deadline -> Refuse; unknown ->
\* Yield, the write possibly applied later (a paused process: StoreApply).
ICommit(i) ==
    /\ iv[i].ph = "commit"
    /\ \/ /\ ~cf \/ StoreNow < store[i].dl
          /\ store' = [store EXCEPT ![i] = [st |-> "committed", dl |-> 0]]
          /\ Iv(i, [iv[i] EXCEPT !.ph = "close", !.ty = "outcome"])
       \/ /\ store' = [store EXCEPT ![i] = [st |-> "refused", dl |-> 0]]
          /\ Iv(i, [iv[i] EXCEPT !.ph = "close", !.ty = "refused"])
       \/ /\ store' = [store EXCEPT ![i].st = "pending"]
          /\ IvPh(i, "yield")
    /\ UNCHANGED <<lease, log, net, lost>> /\ UNCHANGED Env

\* yield 1-4: release without writing; the intent stays open for the sweep
IYield(i) ==
    /\ iv[i].ph = "yield" /\ Release(i) /\ IvDone(i)
    /\ UNCHANGED <<log, net, store, lost>> /\ UNCHANGED Env

\* close step 1 / refuse step 1: remaining before any read -- the gate
\* instant; close step 1.2 / refuse step 1.2: nothing written (Close
\* releases; Refuse returns without a release, as close.c:ri_refuse does).
ICGate(i) ==
    /\ iv[i].ph = "close"
    /\ IF GateOK(i) THEN IvPh(i, "cread") /\ UNCHANGED lease
       ELSE /\ IF iv[i].ty = "outcome" THEN Release(i) ELSE UNCHANGED lease
            /\ IvDone(i)
    /\ UNCHANGED <<log, net, store, lost>> /\ UNCHANGED Env

\* close step 2 / refuse step 2: the re-read under the section.  close step
\* 2.2 adopts a standing outcome, 2.3 never adopts anything else; refuse step
\* 2.2-2.3 lands already-accounted.  Either way nothing is written.
ICRead(i) ==
    /\ iv[i].ph = "cread"
    /\ IF VisClosings(i) = {} THEN IvPh(i, "cissue") /\ UNCHANGED lease
                              ELSE Release(i) /\ IvDone(i)
    /\ UNCHANGED <<log, net, store, lost>> /\ UNCHANGED Env

\* close step 3.1 / refuse step 3.1: the issue instant
ICIssue(i) ==
    /\ iv[i].ph = "cissue"
    /\ Issue(i, i, iv[i].ty, {}, {}, "inv")
    /\ Iv(i, [iv[i] EXCEPT !.ph = "cawait", !.iss = now])
    /\ UNCHANGED <<lease, log, store, lost>> /\ UNCHANGED Env

\* close step 4 / refuse step 3.10: the return (in Land) releases; here a
\* fenced-out write or a lost reply
ICAwait(i) ==
    /\ iv[i].ph = "cawait"
    /\ \/ FencedOut(i, i, iv[i].ty) /\ Release(i) /\ IvDone(i) /\ UNCHANGED lost
       \/ lost < MaxLost /\ lost' = lost + 1 /\ IvPh(i, "crb") /\ UNCHANGED lease
    /\ UNCHANGED <<log, net, store>> /\ UNCHANGED Env

\* Primitive policy 34-37 at the outcome position: read back after JWB;
\* found -> adopt; nothing -> Close MAY retry, through its gate and re-read
\* again (close step 3.4-3.5); Refuse lands recording-failure(refusal) with
\* the intent left open (refuse step 3.6).
ICReadBack(i) ==
    /\ iv[i].ph = "crb" /\ now >= iv[i].iss + JWB
    /\ IF VisMine(i, i, iv[i].ty) \/ iv[i].ty = "refused"
       THEN Release(i) /\ IvDone(i)
       ELSE IvPh(i, "close") /\ UNCHANGED lease
    /\ UNCHANGED <<log, net, store, lost>> /\ UNCHANGED Env

-----------------------------------------------------------------------------
(* The sweep (Reconcile): one run per node.                                 *)
Sw(s, r) == sw' = [sw EXCEPT ![s] = r]
\* between two acts a run keeps only what is left to examine and which of it
\* its seam reading put past the abandon edge
SwNext(s) == Sw(s, [SwIdle EXCEPT !.ph = "next", !.pab = sw[s].pab, !.kept = sw[s].kept])
\* reconcile step 5.2-5.4: the duplicate scan (the closings key), read by
\* Which closing stands; the ghost keeps the truth beside the report
Scan == scan' = [rep |-> {i \in Invs : ReaderDup(VisClosings(i))},
                 truth |-> {i \in Invs : TrueDup(VisClosings(i))}]
Env2 == <<now, cf, si, deaths, iv, opr>>

\* Primitive policy 18: now once per run, at the sweep's seam.  reconcile
\* step 1.2-1.3: keep every aged open intent (the horizon edge: retention
\* NOT MODELED); the reading is kept as which of them are past the abandon
\* edge (reconcile step 3.4).  A run that keeps nothing goes straight to its
\* scan.  Window: the run starts on its cadence tick.
SStart(s) ==
    /\ sw[s].ph = "idle"
    /\ Window => now = s * Cadence
    /\ LET kept == {i \in Invs : OpenVis(i) /\ Aged(i, now)}
       IN IF kept = {}
          THEN Scan /\ Sw(s, [SwIdle EXCEPT !.ph = "done"])
          ELSE /\ Sw(s, [SwIdle EXCEPT !.ph = "next", !.kept = kept,
                                       !.pab = {i \in kept : PastAbandon(i, now)}])
               /\ UNCHANGED scan
    /\ UNCHANGED <<lease, log, net, store, lost>> /\ UNCHANGED Env2

\* reconcile step 2.1-2.2, act section 11: for each kept intent, take the
\* section with the sweep lease -- a blocking take.  With nothing left: the
\* duplicate scan, and the run ends.
STake(s) ==
    /\ sw[s].ph = "next"
    /\ IF sw[s].kept = {}
       THEN /\ Scan
            /\ Sw(s, [SwIdle EXCEPT !.ph = "done"])
            /\ UNCHANGED lease
       ELSE \E i \in sw[s].kept :
              /\ Take(s, SL)
              /\ Sw(s, [sw[s] EXCEPT !.ph = "read", !.cur = i, !.kept = @ \ {i}])
              /\ UNCHANGED scan
    /\ UNCHANGED <<log, net, store, lost>> /\ UNCHANGED Env2

\* reconcile step 2.4-2.7 and 3: the re-read under the section (sweep closed
\* ids 1; -buggy-reread skips it), the remaining check (2.7), the probe and
\* the closing it supports (3.2 outcome, 3.4 abandoned, 3.5 escalated, 3.6
\* nothing yet; reconcile 2: report-only writes nothing).  The remaining
\* check is also the closing write's gate instant (journal write bound 1);
\* the issue is a separate instant.
SRead(s) ==
    /\ sw[s].ph = "read"
    /\ LET i == sw[s].cur
           S == VisClosings(i)
           ty == IF store[i].st = "committed" THEN "outcome"
                 ELSE IF cf \/ Bug = "fence"          \* -buggy-fence: abandons a fenceless act
                      THEN IF i \in sw[s].pab THEN "abandoned" ELSE "skip"
                      ELSE "escalated"
       IN IF \/ Bug # "reread" /\ S # {}                       \* 2.5-2.6 closed already
             \/ ~GateOK(s)                                     \* 2.7 skipped
             \/ ~si \/ ty = "skip"                             \* reconcile 2 / 3.6
          THEN Release(s) /\ SwNext(s)
          ELSE /\ Sw(s, [sw[s] EXCEPT !.ph = "issue", !.ty = ty,
                                      !.saw = IF Bug = "reread" THEN {} ELSE S])
               /\ UNCHANGED lease
    /\ UNCHANGED <<log, net, store, lost, scan>> /\ UNCHANGED Env2

\* reconcile step 3.2b / 3.4a / 3.5a: the issue instant (under the service
\* identity; recovery_intended NOT MODELED)
SIssue(s) ==
    /\ sw[s].ph = "issue"
    /\ Issue(s, sw[s].cur, sw[s].ty, {}, sw[s].saw, "sweep")
    /\ Sw(s, [sw[s] EXCEPT !.ph = "await", !.iss = now])
    /\ UNCHANGED <<lease, log, store, lost, scan>> /\ UNCHANGED Env2

\* reconcile step 3.15-3.17, 4.4: the return (in Land) releases; journal
\* fence 4: fenced out -> skipped; or a lost reply
SAwait(s) ==
    /\ sw[s].ph = "await"
    /\ \/ FencedOut(s, sw[s].cur, sw[s].ty) /\ Release(s) /\ SwNext(s) /\ UNCHANGED lost
       \/ lost < MaxLost /\ lost' = lost + 1 /\ Sw(s, [sw[s] EXCEPT !.ph = "rb"]) /\ UNCHANGED lease
    /\ UNCHANGED <<log, net, store, scan>> /\ UNCHANGED Env2

\* a lost reply: wait out JWB (Primitive policy 34), read back, release;
\* what did not land is the next run's (reconcile step 3.17, never blind)
SReadBack(s) ==
    /\ sw[s].ph = "rb" /\ now >= sw[s].iss + JWB
    /\ Release(s) /\ SwNext(s)
    /\ UNCHANGED <<log, net, store, lost, scan>> /\ UNCHANGED Env2

-----------------------------------------------------------------------------
(* The operator (Resolve): the third writer, on its own seam reading.       *)
OH == OpRuns[opr.c]
OEnd == OpAt(opr.c, IF opr.c < OpCalls THEN "idle" ELSE "done")
Env3 == <<now, cf, si, deaths, iv, sw, scan>>

\* resolve 9 (15a, 16a; issue 41 point 3): an outcome or a refusal that
\* STANDS -- the standing chain head, one chain -- already accounts for the
\* invocation.  (-buggy-resolve-superseded: any closing of it does, a
\* superseded one too -- resolve.c's reading before fb3ad44.)
Accounted(S) ==
    /\ ~ChainDup(S)
    /\ IF Bug = "resolve-superseded"
       THEN \E k \in S : log[k].ty \in {"outcome", "refused"}
       ELSE Heads(S) # {} /\ log[Standing(S)].ty \in {"outcome", "refused"}

\* What Resolve lets the operator write for invocation i on a read taken
\* now (resolve 8-21, with issue 9's ruling "Resolving a duplicate"): the
\* empty set is a refusal (already-accounted, already-abandoned, too-young).
\* Over a binding duplicate or an escalation that stands, the operator
\* chooses (issue 41 points 2-3): any disposition the store does not
\* contradict -- an outcome the store holds, an abandonment of an aged act
\* it does not hold (too-young on the operator's seam reading, resolve 19),
\* or escalated again (candidates; choose none).  Elsewhere -- and
\* everywhere when ~OpChoice (the big configurations: README, reductions)
\* -- the one the operator's own probe supports.
ODisps(i) ==
    LET S == VisClosings(i)
        dup == ChainDup(S)
        st == IF Heads(S) = {} THEN "none" ELSE log[Standing(S)].ty
        committed == store[i].st = "committed"
        aged == Aged(i, now + OperatorSkew)                              \* resolve 18-19
        lawful == (IF committed THEN {"outcome"} ELSE {})
                  \cup (IF ~committed /\ aged THEN {"abandoned"} ELSE {})
    IN IF Accounted(S) THEN {}                                            \* resolve 9
       ELSE IF OpChoice /\ (dup \/ st = "escalated")
            THEN lawful \cup {"escalated"}                                  \* the operator's choice
       ELSE IF committed THEN {"outcome"}
       ELSE IF ~dup /\ st = "abandoned" THEN {}                            \* resolve 16-17
       ELSE IF ~aged THEN {}                                               \* resolve 18-19
       ELSE {"abandoned"}                                                  \* resolve 14, 20a

\* resolve 10: an invocation with no readable intent is not-known; resolve
\* 4-6: take with the sweep lease, held by the operator run id, a blocking
\* take.  (A call the journal already answers with a refusal -- already-
\* accounted, already-abandoned, too-young -- is not made: it would only
\* hold the section a moment, which is the same as the others pausing.)
OTake ==
    /\ opr.ph = "idle" /\ opr.c < OpCalls
    /\ \E i \in Invs :
         /\ VisIntent(i) /\ ODisps(i) # {}
         /\ Take(OpRuns[opr.c + 1], SL)
         /\ opr' = [OpAt(opr.c + 1, "read") EXCEPT !.t = i]
    /\ UNCHANGED <<log, net, store, lost>> /\ UNCHANGED Env3

\* resolve 8: re-read under the section, decide (the seam reading is taken
\* here: a staler one only makes the too-young guard stricter); resolve 13,
\* 15a and the ruling: supersedes names every standing chain head; resolve
\* 7: the gate instant.
ORead ==
    /\ opr.ph = "read"
    /\ LET i == opr.t
           S == VisClosings(i)
           H == Heads(S)
           nm == CASE Bug = "supersede" -> {}       \* resolved_by and no supersedes
                   [] Bug = "resolveone" -> IF H = {} THEN {} ELSE {Standing(S)}
                   [] OTHER -> H
       IN IF ODisps(i) = {} \/ ~GateOK(OH)
          THEN Release(OH) /\ opr' = OEnd
          ELSE /\ \E disp \in ODisps(i) :
                    opr' = [opr EXCEPT !.ph = "issue", !.ty = disp, !.nm = nm, !.saw = S]
               /\ UNCHANGED lease
    /\ UNCHANGED <<log, net, store, lost>> /\ UNCHANGED Env3

\* resolve 21: the issue instant (the operator's credential, resolved_by)
OIssue ==
    /\ opr.ph = "issue"
    /\ Issue(OH, opr.t, opr.ty, opr.nm, opr.saw, "op")
    /\ opr' = [opr EXCEPT !.ph = "await", !.iss = now]
    /\ UNCHANGED <<lease, log, store, lost>> /\ UNCHANGED Env3

\* resolve 22-23: the return (in Land) releases and re-arms; here a
\* fenced-out write or a lost reply
OAwait ==
    /\ opr.ph = "await"
    /\ \/ FencedOut(OH, opr.t, opr.ty) /\ Release(OH) /\ opr' = OEnd /\ UNCHANGED lost
       \/ lost < MaxLost /\ lost' = lost + 1 /\ opr' = [opr EXCEPT !.ph = "rb"] /\ UNCHANGED lease
    /\ UNCHANGED <<log, net, store>> /\ UNCHANGED Env3

\* resolve 24, 26: read back after JWB; found, or recording-failure(resolution)
OReadBack ==
    /\ opr.ph = "rb" /\ now >= opr.iss + JWB
    /\ Release(OH) /\ opr' = OEnd
    /\ UNCHANGED <<log, net, store, lost>> /\ UNCHANGED Env3

-----------------------------------------------------------------------------
(* The environment: the journal lands writes, the store applies commits,     *)
(* processes die, time passes.                                              *)

\* The return instant of a write its writer still awaits: the writer goes
\* on (open step 5 into the commit; close step 4, refuse step 3.10,
\* reconcile step 4.4, resolve 22: release).  A writer that returns later
\* is one that pauses after returning, which the others may always wait out.
ReturnOf(w) ==
    CASE w.h \in Invs /\ iv[w.h].ph = "iawait" /\ w.ty = "intent" ->
            IvPh(w.h, "commit") /\ UNCHANGED <<lease, sw, opr>>
      [] w.h \in Invs /\ iv[w.h].ph = "cawait" /\ w.ty = iv[w.h].ty ->
            Release(w.h) /\ IvDone(w.h) /\ UNCHANGED <<sw, opr>>
      [] w.h \in Sweeps /\ sw[w.h].ph = "await" /\ w.inv = sw[w.h].cur /\ w.ty = sw[w.h].ty ->
            Release(w.h) /\ SwNext(w.h) /\ UNCHANGED <<iv, opr>>
      [] opr.ph = "await" /\ w.h = OH ->
            Release(OH) /\ opr' = OEnd /\ UNCHANGED <<iv, sw>>
      [] OTHER -> UNCHANGED <<lease, iv, sw, opr>>

\* A write lands: accepted, stamped recorded_at on the substrate's clock,
\* visible -- Capability requirement 7: no later than it returns -- and
\* returned to a writer still awaiting it.  (-buggy-visible: visibility
\* only time-bounded, so it returns before it is visible.)  The journal
\* fence is judged here, on the substrate's clock.
Land ==
    \E w \in net :
      /\ Landable(w)
      /\ net' = net \ {w}
      /\ log' = Append(log, [inv |-> w.inv, ty |-> w.ty, by |-> w.by, h |-> w.h,
                             nm |-> w.nm, saw |-> w.saw,
                             rat |-> IF w.ty = "intent" THEN SubNow ELSE 0,
                             vis |-> Bug # "visible", vb |-> w.vb])
      /\ ReturnOf(w)
      /\ UNCHANGED <<store, lost, now, cf, si, deaths, scan>>

\* -buggy-visible only: an accepted record becomes visible later, by JWB
\* after its issue at the latest (Capability requirement 8 without 7)
Show ==
    \E k \in DOMAIN log :
      /\ ~log[k].vis
      /\ log' = [log EXCEPT ![k].vis = TRUE]
      /\ UNCHANGED <<lease, net, store, lost, opr>> /\ UNCHANGED Env3

\* The store applies a pending commit -- a paused process's write landing
\* late -- unless the commit fence deadline has passed on the store's clock.
StoreApply ==
    \E i \in Invs :
      /\ store[i].st = "pending"
      /\ ~cf \/ StoreNow < store[i].dl
      /\ store' = [store EXCEPT ![i] = [st |-> "committed", dl |-> 0]]
      /\ UNCHANGED <<lease, log, net, lost, opr>> /\ UNCHANGED Env3

\* A crash anywhere.  The host frees nothing on a death (-buggy-death: it
\* frees the dead holder's section).  A dead writer's issued writes stay in
\* the net and may still land.
Live(ph) == ph \notin {"idle", "done", "dead"}
DeathRelease(h) ==
    lease' = IF Bug = "death" /\ lease.h = h THEN [h |-> NoOne, e |-> 0] ELSE lease
Crash ==
    /\ deaths < MaxDeaths /\ deaths' = deaths + 1
    /\ \/ \E i \in Invs : Live(iv[i].ph) /\ Iv(i, IvAt("dead")) /\ DeathRelease(i)
                          /\ UNCHANGED <<sw, opr>>
       \/ \E s \in Sweeps : Live(sw[s].ph) /\ Sw(s, [SwIdle EXCEPT !.ph = "dead"])
                            /\ DeathRelease(s) /\ UNCHANGED <<iv, opr>>
       \/ Live(opr.ph) /\ opr' = OpAt(opr.c, "dead") /\ DeathRelease(OH)
                       /\ UNCHANGED <<iv, sw>>
    /\ UNCHANGED <<now, log, net, store, cf, si, lost, scan>>

\* Window only: the progress the window rests on.  Every run starts on its
\* cadence tick (reconciliation cadence) and a live run is never paused
\* except on a held section (a blocking take), waiting out JWB, or awaiting
\* its write; the journal lands a write before its fence would refuse it
\* (Allowance 13: JWB carries an allowance of headroom).  Invocations may
\* still stall anywhere, and a run may die (MaxDeaths).
Blocked(s) ==
    \/ sw[s].ph \in {"idle", "done", "dead"}
    \/ sw[s].ph = "next" /\ sw[s].kept # {} /\ ~Free
    \/ sw[s].ph = "rb" /\ now < sw[s].iss + JWB
    \/ sw[s].ph = "await" /\ InNet(s, sw[s].cur, sw[s].ty)
Progress ==
    /\ \A s \in Sweeps : sw[s].ph = "idle" => now < s * Cadence
    /\ \A s \in Sweeps : Blocked(s)
    /\ \A w \in net : Landable(w) => LandableAt(w, now + 1)

\* Time passes; a write the fence now refuses drops out of the net.
Tick ==
    /\ now < Horizon
    /\ Window => Progress
    /\ \A k \in DOMAIN log : ~log[k].vis => now + 1 < log[k].vb   \* -buggy-visible's bound
    /\ now' = now + 1
    /\ net' = {w \in net : LandableAt(w, now + 1)}
    \* an expired lease is a free one (it can no longer be held or mint a terminus)
    /\ lease' = IF now + 1 >= lease.e THEN [h |-> NoOne, e |-> 0] ELSE lease
    /\ UNCHANGED <<log, store, cf, si, deaths, lost, iv, sw, opr, scan>>

Next ==
    \/ \E i \in Invs : ITake(i) \/ IPre(i) \/ IGate(i) \/ IIssue(i) \/ IAwait(i)
                       \/ IReadBack(i) \/ ICommit(i) \/ IYield(i) \/ ICGate(i)
                       \/ ICRead(i) \/ ICIssue(i) \/ ICAwait(i) \/ ICReadBack(i)
    \/ \E s \in Sweeps : SStart(s) \/ STake(s) \/ SRead(s)
                         \/ SIssue(s) \/ SAwait(s) \/ SReadBack(s)
    \/ OTake \/ ORead \/ OIssue \/ OAwait \/ OReadBack
    \/ Land \/ Show \/ StoreApply \/ Crash \/ Tick

Spec == Init /\ [][Next]_vars

\* Invocations and sweep runs are interchangeable: every invariant quantifies
\* over all of them.  A configuration names the symmetry of its sets that
\* have two or more members (TLC warns on a set of one).
SymSweeps == Permutations(Sweeps)
SymInvs == Permutations(Invs)

-----------------------------------------------------------------------------
(* Invariants, numbered as the spec numbers the model's claims (Ledger).   *)

\* Invariant 1 -- authentication precedes commitment (1.1): no invocation
\* reaches the bound commit before the substrate accepted its intent record.
Inv1 == \A i \in Invs : store[i].st # "none" => Accepted(i, i, "intent")

\* Invariant 2 -- one writer per act (2.1-2.3; 2.6: read by the section
\* Which closing stands): under the journal fence, never two chains on one
\* invocation id -- at every instant, not only at quiescence.
Inv2 == \A i \in Invs : Cardinality(Heads(Closings(i))) <= 1

\* Invariant 2, the intents key (Check 2.3; Which closing stands 9-10):
\* where a service identity is declared, never two open intents on the act.
OpenIntents == {i \in Invs : Intents(i) # {} /\ Closings(i) = {}}
Inv2_Intents == si => Cardinality(OpenIntents) <= 1

\* Invariant 2 degraded (2.4-2.5; journal fence none 1b-3): the surfaces
\* report exactly the truth -- the duplicate scan reports an invocation iff
\* two of its closings were each written without their writer having read
\* the other: no duplicate reported on a lawful chain, none hidden.
Inv2_Scan == scan.rep = scan.truth

\* Invariant 5 -- recovery is derived, never remembered.  5.3: a sweep's or
\* an operator's outcome only for an act the store holds; 5.6-5.8 and Check
\* 6.3: no abandonment stands over an act that committed unless an outcome
\* supersedes it -- the operator's abandonment under commit_fence none is
\* the operator's own attestation (resolve 20a) and exempt.
SupersededBy(k, ty) == \E j \in DOMAIN log : k \in VNames(j) /\ log[j].ty = ty
Inv5 ==
    \A k \in DOMAIN log :
      /\ (log[k].ty = "outcome" /\ log[k].by # "inv") => store[log[k].inv].st = "committed"
      /\ (log[k].ty = "abandoned" /\ store[log[k].inv].st = "committed")
           => ((log[k].by = "op" /\ ~cf) \/ SupersededBy(k, "outcome"))

\* Invariant 6, with identities (resolve 13, 15a; issue 9, Rulings: Chains,
\* Resolving a duplicate): a closing names only earlier closings of its own
\* invocation, names nothing its writer did not read, and names every chain
\* head its writer read.
Inv6 ==
    \A k \in DOMAIN log :
      IsClosing(k) =>
        /\ VNames(k) = log[k].nm
        /\ log[k].nm \subseteq log[k].saw
        /\ Heads(log[k].saw) \subseteq log[k].nm

\* The operator's queue closes (resolve 9, 15a, 16a; issue 41 point 3): an
\* invocation that needs an operator -- a binding duplicate, or an
\* escalation that stands -- is never answered already-accounted.  Nothing
\* else writes on it (the sweep's closed ids skip it; its invocation has
\* closed), so that answer would stand for ever: Resolve must read the
\* standing chain heads, never a closing one of them superseded.
NeedsOperator(S) == ChainDup(S) \/ (Heads(S) # {} /\ log[Standing(S)].ty = "escalated")
InvResolvable == \A i \in Invs : NeedsOperator(VisClosings(i)) => ~Accounted(VisClosings(i))

\* Invariant 8 (the Ledger's): an intent is never in flight -- issued and
\* still able to land -- while its own invocation no longer holds the section.
Inv8 == \A w \in net : (w.ty = "intent" /\ Landable(w)) => Held(w.h)

\* Invariant 4 -- bounded closure (4.2) as safety over discrete time, in the
\* window configurations: an intent is closed within CompWindow of its
\* recorded_at.
Inv4 == \A i \in Invs : (Intents(i) # {} /\ now > RecAt(i) + CompWindow) => VisClosings(i) # {}

-----------------------------------------------------------------------------
(* Reachability probes: deliberate falsehoods TLC must reject, so that the  *)
(* operator, supersession, chains and the scan are not vacuous.             *)
Probe_OperatorNeverHoldsSection == ~(\E c \in 1..OpCalls : Held(OpRuns[c]))
Probe_OperatorNeverWrites == \A k \in DOMAIN log : log[k].by # "op"
Probe_OperatorNeverSupersedes == \A k \in DOMAIN log : log[k].by = "op" => VNames(k) = {}
Probe_NeverASupersessionChain == \A j \in DOMAIN log : \A k \in VNames(j) : VNames(k) = {}
Probe_ScanNeverReports == scan.rep = {}
\* resolving a binding duplicate names two or more chain heads at once
Probe_NeverResolvesADuplicate == \A k \in DOMAIN log : Cardinality(VNames(k)) <= 1

=============================================================================
