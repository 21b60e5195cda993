/* vocab.c -- the vocabulary of a kind and the role of a record. */
#include <stdio.h>
#include <string.h>

#include "util/vocab.h"

static const char *const reserved[] = {
	"intended", "recovery_intended", "refused", "abandoned", "escalated", NULL
};
static const int reserved_role[] = {
	RI_ROLE_INTENT, RI_ROLE_RECOVERY, RI_ROLE_REFUSED, RI_ROLE_ABANDONED, RI_ROLE_ESCALATED
};

static int
suffix_role(const char *sfx)
{
	for (size_t i = 0; reserved[i] != NULL; i++)
		if (strcmp(sfx, reserved[i]) == 0)
			return reserved_role[i];
	return RI_ROLE_OUTCOME;
}

int
ri_vocab_role(const struct ri_config *c, const char *action_ref, int *role, char *why, size_t n)
{
	const char *dot = strchr(action_ref, '.');
	char kind[256];
	const struct ri_kind *k;

	if (dot == NULL || dot == action_ref || dot[1] == '\0' || (size_t)(dot - action_ref) >= sizeof kind) {
		snprintf(why, n, "action ref \"%s\" is not <kind>.<name>", action_ref);
		return RI_INVALID_REQUEST;
	}
	memcpy(kind, action_ref, (size_t)(dot - action_ref));
	kind[dot - action_ref] = '\0';
	/* journal 5: audit is the substrate's, never a writer's */
	if (strcmp(kind, "audit") == 0) {
		snprintf(why, n, "audit.* records are the substrate's own");
		return RI_INVALID_REQUEST;
	}
	if ((k = ri_config_kind(c, kind)) == NULL) {
		snprintf(why, n, "kind \"%s\" is not bound", kind);
		return RI_INVALID_REQUEST;
	}
	return ri_vocab_kind_role(k, action_ref, role, why, n);
}

int
ri_vocab_kind_role(const struct ri_kind *k, const char *action_ref, int *role, char *why, size_t n)
{
	const char *dot = strchr(action_ref, '.');
	size_t kl = strlen(k->name);

	if (dot == NULL || (size_t)(dot - action_ref) != kl || strncmp(action_ref, k->name, kl) != 0) {
		snprintf(why, n, "action ref \"%s\" is not of kind %s", action_ref, k->name);
		return RI_INVALID_REQUEST;
	}
	/* journal 2-4: the declared refs, the derived ones, the outcomes */
	*role = suffix_role(dot + 1);
	if (*role != RI_ROLE_OUTCOME)
		return RI_OK;
	for (size_t i = 0; i < k->n_outcomes; i++)
		if (strcmp(dot + 1, k->outcomes[i]) == 0)
			return RI_OK;
	snprintf(why, n, "\"%s\" is outside the vocabulary of kind %s", action_ref, k->name);
	return RI_INVALID_REQUEST;
}

bool
ri_vocab_role_fits(const char *action_ref, int role)
{
	const char *dot = strchr(action_ref, '.');

	if (dot == NULL)
		return false;
	if (strncmp(action_ref, "audit.", 6) == 0)
		return role == RI_ROLE_OTHER;
	return role != RI_ROLE_OTHER && suffix_role(dot + 1) == role;
}

const char *
ri_role_name(int role)
{
	static const char *const names[] = { "substrate", "intent", "recovery", "outcome", "refusal",
		"abandonment", "escalation" };

	return role >= 0 && role <= RI_ROLE_MAX ? names[role] : "unknown";
}
