/*
 * test_standing.c -- the section titled "Which closing stands" (standing.c),
 * case by case, each named by its rule and by the closings issue's rulings:
 * chains, heads, the lowest-seq head standing, the duplicate as two or more
 * chains, a void supersedes, the state projection, and the intents key.
 * Pure: the records are built here, as the range read would return them.
 */
#include "protocol/standing.h"
#include "testlib.h"

#define MAXR 8

struct inv_fixture {
	struct ri_record rec[MAXR];
	size_t n;
	struct ri_inv inv;
	struct ri_standing sd;
};

/* add ROLE at SEQ with event id "e<SEQ>"; payload JSON (NULL: {}) */
static void
add(struct inv_fixture *f, int64_t seq, int role, const char *payload)
{
	struct ri_record *r = &f->rec[f->n++];
	json_error_t je;

	memset(r, 0, sizeof *r);
	r->seq = seq;
	snprintf(r->event_id, sizeof r->event_id, "e%lld", (long long)seq);
	r->role = role;
	r->payload = json_loads(payload ? payload : "{}", 0, &je);
	if (r->payload == NULL) {
		fprintf(stderr, "bad fixture JSON: %s\n", je.text);
		exit(2);
	}
}

static void
judge(struct inv_fixture *f)
{
	memset(&f->inv, 0, sizeof f->inv);
	for (size_t i = 0; i < f->n; i++)
		ri_inv_add(&f->inv, &f->rec[i]);
	ri_standing(f->inv.closings, f->inv.n_closings, &f->sd);
}

static void
done(struct inv_fixture *f)
{
	ri_inv_free_index(&f->inv);
	for (size_t i = 0; i < f->n; i++)
		json_decref(f->rec[i].payload);
	memset(f, 0, sizeof *f);
}

static const char *
standing_id(const struct inv_fixture *f)
{
	return f->sd.standing ? f->sd.standing->rec->event_id : "(none)";
}

int
main(void)
{
	struct inv_fixture f = { 0 };
	struct ri_open_span sp[4];
	size_t a, b;

	tl_owner = getpid();

	add(&f, 1, RI_ROLE_INTENT, NULL);
	judge(&f);
	CHECK(f.sd.standing == NULL && f.sd.state == RI_STATE_OPEN && !f.sd.duplicate && f.sd.n_heads == 0,
	    "no closing: state %s", ri_state_name(f.sd.state));
	done(&f);
	PASS("state projection: no closing stands -> open, no duplicate");

	add(&f, 1, RI_ROLE_INTENT, NULL);
	add(&f, 2, RI_ROLE_OUTCOME, NULL);
	judge(&f);
	CHECK(f.sd.state == RI_STATE_CLOSED && !f.sd.duplicate && f.sd.n_heads == 1 &&
	    f.sd.outcome == f.sd.standing, "one outcome: %s", ri_state_name(f.sd.state));
	done(&f);
	PASS("state projection: an outcome stands -> closed");

	/* the chain of Which closing stands WHY: the sweep escalates, an
	 * operator abandons naming it, a later resolve writes an outcome
	 * naming the abandonment */
	add(&f, 1, RI_ROLE_INTENT, NULL);
	add(&f, 2, RI_ROLE_ESCALATED, NULL);
	add(&f, 3, RI_ROLE_ABANDONED, "{\"supersedes\":\"e2\",\"resolved_by\":\"op\"}");
	add(&f, 4, RI_ROLE_OUTCOME, "{\"supersedes\":\"e3\",\"resolved_by\":\"op\",\"recovery\":true}");
	judge(&f);
	CHECK(!f.sd.duplicate, "chain: transitive supersession read as a binding duplicate (pairwise?)");
	CHECK(f.sd.n_heads == 1 && strcmp(standing_id(&f), "e4") == 0 && f.sd.state == RI_STATE_CLOSED,
	    "chain: %zu heads, %s stands, %s", f.sd.n_heads, standing_id(&f), ri_state_name(f.sd.state));
	done(&f);
	PASS("Which closing stands 4-5: a chain E <- A <- O is one closing; its head O stands (closed)");

	add(&f, 1, RI_ROLE_INTENT, NULL);
	add(&f, 2, RI_ROLE_ESCALATED, NULL);
	add(&f, 3, RI_ROLE_ESCALATED, NULL);
	judge(&f);
	CHECK(f.sd.duplicate && f.sd.n_heads == 2 && strcmp(standing_id(&f), "e2") == 0 &&
	    f.sd.state == RI_STATE_ESCALATED, "two sweeps' escalations: dup %d heads %zu stands %s",
	    f.sd.duplicate, f.sd.n_heads, standing_id(&f));
	done(&f);
	PASS("Which closing stands 6-7: two escalations superseding nothing -> duplicate; the lower seq stands");

	/* scenario 1: a late Close lands after an operator's outcome over the
	 * sweep's escalation */
	add(&f, 1, RI_ROLE_INTENT, NULL);
	add(&f, 2, RI_ROLE_ESCALATED, NULL);
	add(&f, 3, RI_ROLE_OUTCOME, "{\"supersedes\":\"e2\",\"resolved_by\":\"op\",\"recovery\":true}");
	add(&f, 4, RI_ROLE_OUTCOME, NULL);
	judge(&f);
	CHECK(f.sd.duplicate && f.sd.n_heads == 2 && strcmp(standing_id(&f), "e3") == 0 &&
	    f.sd.state == RI_STATE_CLOSED && strcmp(f.sd.outcome->rec->event_id, "e4") == 0,
	    "late close beside a resolved chain: dup %d heads %zu stands %s", f.sd.duplicate, f.sd.n_heads,
	    standing_id(&f));
	done(&f);
	PASS("journal fence none 1b, the ruling: a late outcome beside a chain E <- O is two chains -> duplicate; O stands");

	/* scenario 2: two operators' resolutions race, both naming the escalation */
	add(&f, 1, RI_ROLE_INTENT, NULL);
	add(&f, 2, RI_ROLE_ESCALATED, NULL);
	add(&f, 3, RI_ROLE_OUTCOME, "{\"supersedes\":\"e2\",\"resolved_by\":\"op\",\"recovery\":true}");
	add(&f, 4, RI_ROLE_ABANDONED, "{\"supersedes\":\"e2\",\"resolved_by\":\"op2\",\"recovery\":true}");
	judge(&f);
	CHECK(f.sd.duplicate && f.sd.n_heads == 2 && strcmp(standing_id(&f), "e3") == 0,
	    "two resolutions naming one escalation: dup %d heads %zu", f.sd.duplicate, f.sd.n_heads);
	done(&f);
	PASS("the ruling: two closings naming one escalation are two chains (done and not done) -> duplicate");

	/* scenario 3: two escalations, an outcome naming only the lower */
	add(&f, 1, RI_ROLE_INTENT, NULL);
	add(&f, 2, RI_ROLE_ESCALATED, NULL);
	add(&f, 3, RI_ROLE_ESCALATED, NULL);
	add(&f, 4, RI_ROLE_OUTCOME, "{\"supersedes\":\"e2\",\"resolved_by\":\"op\",\"recovery\":true}");
	judge(&f);
	CHECK(f.sd.duplicate && f.sd.n_heads == 2 && strcmp(standing_id(&f), "e3") == 0 &&
	    f.sd.state == RI_STATE_ESCALATED, "a resolution naming one of two escalations: dup %d stands %s",
	    f.sd.duplicate, standing_id(&f));
	done(&f);
	PASS("journal fence none 4, the ruling: a resolution naming one of two duplicates leaves two chains");

	/* ... and naming every head resolves it */
	add(&f, 1, RI_ROLE_INTENT, NULL);
	add(&f, 2, RI_ROLE_ESCALATED, NULL);
	add(&f, 3, RI_ROLE_ESCALATED, NULL);
	add(&f, 4, RI_ROLE_OUTCOME, "{\"supersedes\":[\"e2\",\"e3\"],\"resolved_by\":\"op\",\"recovery\":true}");
	judge(&f);
	CHECK(!f.sd.duplicate && f.sd.n_heads == 1 && strcmp(standing_id(&f), "e4") == 0 &&
	    f.sd.state == RI_STATE_CLOSED && f.sd.malformed == NULL,
	    "a resolution naming both heads: dup %d stands %s", f.sd.duplicate, standing_id(&f));
	done(&f);
	PASS("journal fence none 4, the ruling: supersedes as an array naming every head leaves one chain (closed)");

	/* scenario 4: a supersedes naming something else supersedes nothing */
	static const char *const bad[] = {
		"{\"supersedes\":\"evt_not_a_closing_of_this_invocation\",\"resolved_by\":\"op\"}",
		"{\"supersedes\":\"e1\",\"resolved_by\":\"op\"}",          /* the intent, not a closing */
		"{\"supersedes\":\"e4\",\"resolved_by\":\"op\"}",          /* itself */
		"{\"supersedes\":[],\"resolved_by\":\"op\"}",
		"{\"supersedes\":5,\"resolved_by\":\"op\"}",
		"{\"supersedes\":[\"e2\",7],\"resolved_by\":\"op\"}",
		"{\"supersedes\":[\"e2\",\"nope\"],\"resolved_by\":\"op\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		add(&f, 1, RI_ROLE_INTENT, NULL);
		add(&f, 2, RI_ROLE_ESCALATED, NULL);
		add(&f, 4, RI_ROLE_ABANDONED, bad[i]);
		judge(&f);
		CHECK(f.sd.malformed != NULL && strcmp(f.sd.malformed->rec->event_id, "e4") == 0,
		    "%s: not reported malformed", bad[i]);
		CHECK(f.sd.duplicate && f.sd.n_heads == 2 && strcmp(standing_id(&f), "e2") == 0,
		    "%s: a void supersedes hid a duplicate (dup %d heads %zu)", bad[i], f.sd.duplicate, f.sd.n_heads);
		done(&f);
	}
	PASS("Which closing stands 2, 8, the ruling: a supersedes naming no earlier closing of the invocation is malformed and supersedes nothing");

	/* a later closing cannot be named: supersession runs backwards in seq */
	add(&f, 1, RI_ROLE_INTENT, NULL);
	add(&f, 2, RI_ROLE_ESCALATED, "{\"supersedes\":\"e3\"}");
	add(&f, 3, RI_ROLE_OUTCOME, NULL);
	judge(&f);
	CHECK(f.sd.malformed != NULL && f.sd.duplicate, "a name of a later closing was taken");
	done(&f);
	PASS("Which closing stands 2: naming a later closing is malformed");

	add(&f, 1, RI_ROLE_INTENT, NULL);
	add(&f, 2, RI_ROLE_ESCALATED, NULL);
	add(&f, 3, RI_ROLE_ABANDONED, "{\"supersedes\":\"e2\",\"resolved_by\":\"op\"}");
	judge(&f);
	CHECK(f.sd.state == RI_STATE_RESOLVED && !f.sd.duplicate, "operator's abandonment: %s",
	    ri_state_name(f.sd.state));
	done(&f);
	add(&f, 1, RI_ROLE_INTENT, NULL);
	add(&f, 2, RI_ROLE_ABANDONED, NULL);
	judge(&f);
	CHECK(f.sd.state == RI_STATE_ABANDONED, "sweep's abandonment: %s", ri_state_name(f.sd.state));
	done(&f);
	add(&f, 1, RI_ROLE_INTENT, NULL);
	add(&f, 2, RI_ROLE_REFUSED, NULL);
	judge(&f);
	CHECK(f.sd.state == RI_STATE_REFUSED, "refusal: %s", ri_state_name(f.sd.state));
	done(&f);
	PASS("state projection: abandoned with resolved_by -> resolved, without -> abandoned; refused -> refused");

	/* Which closing stands 3: resolved_by alone triggers nothing */
	add(&f, 1, RI_ROLE_INTENT, NULL);
	add(&f, 2, RI_ROLE_ESCALATED, NULL);
	add(&f, 3, RI_ROLE_OUTCOME, "{\"resolved_by\":\"op\",\"recovery\":true}");
	judge(&f);
	CHECK(f.sd.duplicate && strcmp(standing_id(&f), "e2") == 0, "resolved_by superseded by itself");
	done(&f);
	PASS("Which closing stands 3, 8: resolved_by and position never supersede (-buggy-supersede)");

	/* journal 4, the ruling: the stored role decides, never the action
	 * ref (a record classified by its role even if its name changed) */
	add(&f, 1, RI_ROLE_INTENT, NULL);
	add(&f, 2, RI_ROLE_RECOVERY, NULL);
	add(&f, 3, RI_ROLE_OTHER, NULL);
	judge(&f);
	CHECK(f.inv.n_closings == 0 && f.inv.n_recovery == 1 && f.sd.state == RI_STATE_OPEN,
	    "recovery_intended or a substrate record counted as a closing");
	done(&f);
	PASS("Which closing stands: recovery_intended and substrate records are not closings (reconcile step 3.3)");

	/* the intents key */
	sp[0] = (struct ri_open_span){ 1, 3 };
	sp[1] = (struct ri_open_span){ 4, 6 };
	CHECK(!ri_intents_key(sp, 2, &a, &b), "sequential invocations read as open at once");
	sp[1] = (struct ri_open_span){ 2, 6 };
	CHECK(ri_intents_key(sp, 2, &a, &b) && a == 0 && b == 1, "overlap missed");
	sp[0] = (struct ri_open_span){ 1, INT64_MAX };      /* still open */
	sp[1] = (struct ri_open_span){ 4, 5 };
	sp[2] = (struct ri_open_span){ 7, 9 };
	CHECK(ri_intents_key(sp, 3, &a, &b) && a == 0 && b == 1, "an intent left open missed");
	sp[0] = (struct ri_open_span){ 7, 9 };
	sp[1] = (struct ri_open_span){ 1, 8 };
	sp[2] = (struct ri_open_span){ 2, 3 };
	CHECK(ri_intents_key(sp, 3, &a, &b), "unsorted overlap missed");
	sp[0] = (struct ri_open_span){ 5, 6 };
	sp[1] = (struct ri_open_span){ 1, 5 };
	CHECK(!ri_intents_key(sp, 2, &a, &b), "an intent opened at its predecessor's closing seq is not open at once");
	PASS("Which closing stands 9, the intents key: open from the intent to its first closing; overlaps found in any order");
	return 0;
}
