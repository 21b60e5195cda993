/*
 * report.c -- ri-audit's answer for people: --text (a summary ending in a
 * tally) and --html (one self-contained page: inline SVG, no script, no
 * network).  Both are drawn from the JSON answer alone, so every figure
 * they show is the answer's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "util/util.h"

static const char *
jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static long long
jint(json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

/* A check's verdict as a person reads it: pass, FAIL, INCOMPLETE (a read
 * it needs did not complete: never a pass), not applicable. */
static const char *
verdict(const char *status)
{
	return strcmp(status, "pass") == 0 ? "pass" : strcmp(status, "fail") == 0 ? "FAIL" :
	    strcmp(status, "incomplete") == 0 ? "INCOMPLETE" : "n/a";
}

/* A table, or a list, shows at most this many rows: a page of 2,000 acts
 * was 1.2 MB.  The rest is counted where the rows end, and the JSON
 * answer (ri-audit without --text or --html) holds every one. */
#define ROWS_SHOWN 100

/* ---- --text ---- */

static void
tline(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
tline(FILE *out, const char *fmt, ...)
{
	char buf[8192], loc[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fputs(ri_local(buf, loc, sizeof loc), out);
}

void
ri_audit_text(json_t *report, FILE *out)
{
	json_t *head = json_object_get(report, "head"), *c, *f, *tally = json_object_get(report, "tally");
	json_t *needs = json_object_get(report, "needs_operator");
	size_t i, j, n_checks = json_array_size(json_object_get(report, "checks"));

	/* the head as --expect-head takes it: SEQ:HASH */
	tline(out, "%lld records; head %lld:%s", jint(report, "records"), jint(head, "seq"),
	    jstr(head, "hash") ? jstr(head, "hash") : "");
	if (json_is_integer(json_object_get(report, "sealed_seq")))
		tline(out, "; sealed up to seq %lld", jint(report, "sealed_seq"));
	tline(out, "\n");
	json_array_foreach(json_object_get(report, "checks"), i, c) {
		const char *st = jstr(c, "status");
		tline(out, "%-6s %-14s %s\n", jstr(c, "check"), verdict(st), jstr(c, "name"));
		json_array_foreach(json_object_get(c, "failures"), j, f) {
			json_t *inv = json_object_get(f, "invocation_id");
			if (j == ROWS_SHOWN) {
				tline(out, "         - and %zu more (the JSON answer lists every one)\n",
				    json_array_size(json_object_get(c, "failures")) - ROWS_SHOWN);
				break;
			}
			tline(out, "         - %s", jstr(f, "message"));
			if (jstr(f, "act_key") != NULL)
				tline(out, "; act %s %s", jstr(f, "kind"), jstr(f, "act_key"));
			if (json_is_string(inv))
				tline(out, "; invocation %s", json_string_value(inv));
			size_t k;
			json_t *ev;
			json_array_foreach(json_object_get(f, "event_ids"), k, ev)
				tline(out, "%s%s", k == 0 ? "; records " : ", ", json_string_value(ev));
			tline(out, "\n");
		}
		if (jstr(c, "note") != NULL)
			tline(out, "         (%s)\n", jstr(c, "note"));
		json_array_foreach(json_object_get(c, "incomplete"), j, f)
			tline(out, "         - not read: %s\n", json_string_value(f));
	}
	/* each act once, and the command that looks at it by its invocation
	 * alone (an act key may be 256 bytes: never twice on a line) */
	json_array_foreach(needs, i, f) {
		if (i == ROWS_SHOWN) {
			tline(out, "needs an operator: %zu more (ri-findings --open --text lists every one)\n",
			    json_array_size(needs) - ROWS_SHOWN);
			break;
		}
		tline(out, "needs an operator: act %s %s, invocation %s (%s) -- ri-resolve --probe"
		    " --invocation-id %s\n", jstr(f, "kind"), jstr(f, "act_key"), jstr(f, "invocation_id"),
		    jstr(f, "why"), jstr(f, "invocation_id"));
	}
	/* the tally, last, as a person scrolls to it */
	tline(out, "%zu checks: %lld pass, %lld FAIL, %lld INCOMPLETE, %lld not applicable; %zu act%s need%s"
	    " an operator\n", n_checks, jint(tally, "pass"), jint(tally, "fail"), jint(tally, "incomplete"),
	    jint(tally, "not-applicable"),
	    json_array_size(needs), json_array_size(needs) == 1 ? "" : "s",
	    json_array_size(needs) == 1 ? "s" : "");
}

/* ---- --html ---- */

static void
esc(FILE *out, const char *s)
{
	for (; s != NULL && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default:
			/* no C0 control is allowed in XML: drop it */
			if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t')
				fputc(*s, out);
		}
	}
}

static void
h(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Markup, with every %s escaped. */
static void
h(FILE *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			fputc(*p, out);
			continue;
		}
		p++;
		if (*p == 's') {
			esc(out, va_arg(ap, const char *));
		} else if (*p == 'd') {
			fprintf(out, "%d", va_arg(ap, int));
		} else if (*p == 'l' && p[1] == 'l' && p[2] == 'd') {
			fprintf(out, "%lld", va_arg(ap, long long));
			p += 2;
		} else if (*p == '%') {
			fputc('%', out);
		}
	}
	va_end(ap);
}

static void
seconds(ri_ms ms, char *buf, size_t n)
{
	if (ms >= 86400000 && ms % 3600000 == 0)
		snprintf(buf, n, "%lld h", (long long)(ms / 3600000));
	else if (ms >= 60000 && ms % 1000 == 0)
		snprintf(buf, n, "%lld min %lld s", (long long)(ms / 60000), (long long)(ms % 60000 / 1000));
	else
		ri_format_seconds(ms, buf, n), strncat(buf, " s", n - strlen(buf) - 1);
}

static void
html_checks(FILE *out, json_t *report)
{
	json_t *c, *f, *ev;
	size_t i, j, k;

	h(out, "<h2 id=\"checks-title\">Checks</h2>\n<table id=\"checks\">\n"
	    "<tr><th>check</th><th>verdict</th><th>what it clears</th><th>records it names</th></tr>\n");
	json_array_foreach(json_object_get(report, "checks"), i, c) {
		const char *st = jstr(c, "status");
		size_t nf = json_array_size(json_object_get(c, "failures"));
		h(out, "<tr class=\"%s\" data-check=\"%s\" data-status=\"%s\" data-failures=\"%lld\">"
		    "<td>%s</td><td>%s</td><td>%s", st, jstr(c, "check"), st, (long long)nf, jstr(c, "check"),
		    strcmp(verdict(st), "n/a") == 0 ? "not applicable" : verdict(st), jstr(c, "name"));
		if (jstr(c, "note") != NULL)
			h(out, "<br/><small>%s</small>", jstr(c, "note"));
		json_array_foreach(json_object_get(c, "incomplete"), j, f)
			h(out, "<br/><small class=\"unread\">not read: %s</small>", json_string_value(f));
		h(out, "</td><td>");
		if (nf > 0) {
			h(out, "<ul>");
			json_array_foreach(json_object_get(c, "failures"), j, f) {
				if (j == ROWS_SHOWN) {
					h(out, "<li class=\"more\" data-more=\"%lld\">and %lld more (the JSON answer"
					    " lists every one)</li>", (long long)(nf - ROWS_SHOWN),
					    (long long)(nf - ROWS_SHOWN));
					break;
				}
				h(out, "<li>%s", jstr(f, "message"));
				if (jstr(f, "act_key") != NULL)
					h(out, "; act <code>%s</code> <code>%s</code>", jstr(f, "kind"), jstr(f, "act_key"));
				if (jstr(f, "invocation_id") != NULL)
					h(out, "; invocation <code>%s</code>", jstr(f, "invocation_id"));
				json_array_foreach(json_object_get(f, "event_ids"), k, ev)
					h(out, "%s<code class=\"record\">%s</code>", k == 0 ? "; records " : ", ",
					    json_string_value(ev));
				h(out, "</li>");
			}
			h(out, "</ul>");
		}
		h(out, "</td></tr>\n");
	}
	h(out, "</table>\n");
}

static void
html_latency(FILE *out, json_t *report)
{
	json_t *l, *b;
	size_t i, j;

	h(out, "<h2>Closure latency</h2>\n<p>From each intent to its first closing (what Check 3.1 reads),"
	    " per kind, against the compensation window: the dashed line is the window; bars right of it"
	    " closed late.</p>\n");
	if (json_array_size(json_object_get(report, "latency")) == 0)
		h(out, "<p>No intent inside the horizon.</p>\n");
	json_array_foreach(json_object_get(report, "latency"), i, l) {
		json_t *bs = json_object_get(l, "buckets");
		size_t nb = json_array_size(bs);
		long long max = 1;
		char lab[160], win[64], t[64], slow[64];
		json_array_foreach(bs, j, b)
			if (jint(b, "count") > max)
				max = jint(b, "count");
		seconds(jint(l, "compensation_window_ms"), win, sizeof win);
		seconds(jint(l, "max_ms"), slow, sizeof slow);
		h(out, "<h3>kind <code>%s</code></h3>\n<p class=\"latency\" data-kind=\"%s\" data-closed=\"%lld\""
		    " data-open=\"%lld\" data-over-window=\"%lld\" data-max-ms=\"%lld\">%lld closed, %lld still"
		    " open, %lld after the window (%s); the slowest took %s.</p>\n", jstr(l, "kind"),
		    jstr(l, "kind"), jint(l, "closed"), jint(l, "open"), jint(l, "over_window"), jint(l, "max_ms"),
		    jint(l, "closed"), jint(l, "open"), jint(l, "over_window"), win, slow);
		int W = 640, H = 180, bw = (W - 40) / (int)(nb ? nb : 1);
		h(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"histogram\" data-kind=\"%s\" width=\"%d\""
		    " height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\"><title>closure latency of kind %s</title>\n",
		    jstr(l, "kind"), W, H + 40, W, H + 40, jstr(l, "kind"));
		json_array_foreach(bs, j, b) {
			long long n = jint(b, "count");
			int bh = (int)((H - 20) * n / max), x = 20 + (int)j * bw;
			json_t *le = json_object_get(b, "le_ms");
			if (json_is_integer(le)) {
				seconds(json_integer_value(le), t, sizeof t);
				snprintf(lab, sizeof lab, "\xe2\x89\xa4 %s", t);
			} else {
				snprintf(lab, sizeof lab, "> %s", win);
			}
			h(out, "<rect class=\"%s\" data-count=\"%lld\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>"
			    "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%lld</text>"
			    "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" class=\"axis\">%s</text>\n",
			    json_is_integer(le) ? "bar" : "bar late", n, x + 4, H - bh, bw - 8, bh,
			    x + bw / 2, H - bh - 4, n, x + bw / 2, H + 16, lab);
		}
		int wx = 20 + (int)(nb - 1) * bw;
		h(out, "<line class=\"window\" x1=\"%d\" y1=\"0\" x2=\"%d\" y2=\"%d\"/>"
		    "<text x=\"%d\" y=\"%d\" class=\"axis\">window %s</text></svg>\n", wx, wx, H + 4, wx + 4, H + 34,
		    win);
	}
}

static ri_ms
instant(json_t *o, const char *k)
{
	ri_ms t;

	if (jstr(o, k) == NULL || ri_parse_instant(jstr(o, k), &t) != RI_OK)
		return RI_NONE;
	return t;
}

/* Widen [t0, t1] to hold a span from s to e (either may be RI_NONE). */
static void
widen(ri_ms *t0, ri_ms *t1, ri_ms s, ri_ms e)
{
	if (s != RI_NONE && s < *t0)
		*t0 = s;
	if (s != RI_NONE && s > *t1)
		*t1 = s;
	if (e != RI_NONE && e > *t1)
		*t1 = e;
}

static void
html_timeline(FILE *out, json_t *report)
{
	json_t *outages = json_object_get(report, "outages"), *findings = json_object_get(report, "findings");
	json_t *v;
	size_t i;
	ri_ms t0 = instant(report, "audited_at"), t1 = t0;

	json_array_foreach(outages, i, v)
		widen(&t0, &t1, instant(v, "start"), instant(v, "end"));
	json_array_foreach(findings, i, v)
		widen(&t0, &t1, instant(v, "first_seen_at"), instant(v, "last_seen_at"));
	if (t1 <= t0)
		t1 = t0 + 1000;
	h(out, "<h2>Timeline</h2>\n<p>Outage spans the sweep saw (journal or store unavailable) and every"
	    " finding on the register, from <code>%s</code> to the audit.</p>\n",
	    json_array_size(findings) + json_array_size(outages) ? "the first sighting" : "now");
	int W = 800, row = 22, rows = 2, x0 = 150, xw = W - x0 - 10;
	h(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"%d\" height=\"%d\""
	    " viewBox=\"0 0 %d %d\" role=\"img\"><title>outages and findings</title>\n", W, rows * row + 30,
	    W, rows * row + 30);
	h(out, "<text x=\"4\" y=\"16\">outages</text><text x=\"4\" y=\"%d\">findings</text>\n", row + 16);
	json_array_foreach(outages, i, v) {
		ri_ms s = instant(v, "start"), e = instant(v, "end");
		int x = x0 + (int)((double)(s - t0) / (double)(t1 - t0) * xw);
		int w = (int)((double)(e - s) / (double)(t1 - t0) * xw);
		h(out, "<rect class=\"outage\" data-finding=\"%s\" x=\"%d\" y=\"4\" width=\"%d\" height=\"%d\">"
		    "<title>%s %s: %s to %s</title></rect>\n", jstr(v, "finding"), x, w < 2 ? 2 : w, row - 6,
		    jstr(v, "finding"), jstr(v, "kind") ? jstr(v, "kind") : "", jstr(v, "start"), jstr(v, "end"));
	}
	json_array_foreach(findings, i, v) {
		ri_ms s = instant(v, "first_seen_at");
		int x = x0 + (int)((double)(s - t0) / (double)(t1 - t0) * xw);
		h(out, "<circle class=\"finding\" data-finding=\"%s\" cx=\"%d\" cy=\"%d\" r=\"5\"><title>%s %s %s"
		    " first seen %s</title></circle>\n", jstr(v, "finding"), x, row + 12, jstr(v, "finding"),
		    jstr(v, "kind") ? jstr(v, "kind") : "", jstr(v, "act_key") ? jstr(v, "act_key") : "",
		    jstr(v, "first_seen_at"));
	}
	char a[RI_INSTANT_LEN], b[RI_INSTANT_LEN];
	ri_format_instant(t0, a);
	ri_format_instant(t1, b);
	h(out, "<text x=\"%d\" y=\"%d\" class=\"axis\">%s</text><text x=\"%d\" y=\"%d\" class=\"axis\""
	    " text-anchor=\"end\">%s</text></svg>\n", x0, rows * row + 24, a, W - 10, rows * row + 24, b);
	h(out, "<table id=\"outages\"><tr><th>outage</th><th>kind</th><th>from</th><th>to (last seen)</th></tr>\n");
	json_array_foreach(outages, i, v)
		h(out, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", jstr(v, "finding"),
		    jstr(v, "kind") ? jstr(v, "kind") : "", jstr(v, "start"), jstr(v, "end"));
	/* open ones first, then the closed: each says which it is (a resolved
	 * escalation is closed, as ri-findings says) */
	size_t n_open = 0, shown = 0;
	json_array_foreach(findings, i, v)
		n_open += jstr(v, "closed_at") == NULL;
	h(out, "</table>\n<table id=\"findings\" data-open=\"%lld\" data-closed=\"%lld\"><tr><th>finding</th>"
	    "<th>state</th><th>scope</th><th>kind</th><th>act</th><th>invocation</th><th>first seen</th>"
	    "<th>last seen</th></tr>\n", (long long)n_open, (long long)(json_array_size(findings) - n_open));
	for (int pass = 0; pass < 2; pass++) {
		json_array_foreach(findings, i, v) {
			const char *closed = jstr(v, "closed_at");
			if ((closed == NULL) != (pass == 0) || shown++ >= ROWS_SHOWN)
				continue;
			h(out, "<tr class=\"%s\"><td>%s</td><td>%s%s</td><td>%s</td><td>%s</td><td><code>%s</code>"
			    "</td><td><code>%s</code></td><td>%s</td><td>%s</td></tr>\n", closed ? "closed" : "open",
			    jstr(v, "finding"), closed ? "closed " : "OPEN", closed ? closed : "", jstr(v, "scope"),
			    jstr(v, "kind") ? jstr(v, "kind") : "", jstr(v, "act_key") ? jstr(v, "act_key") : "",
			    jstr(v, "invocation_id") ? jstr(v, "invocation_id") : "",
			    jstr(v, "first_seen_at") ? jstr(v, "first_seen_at") : "",
			    jstr(v, "last_seen_at") ? jstr(v, "last_seen_at") : "");
		}
	}
	h(out, "</table>\n");
	if (shown > ROWS_SHOWN)
		h(out, "<p class=\"more\" id=\"findings-more\" data-more=\"%lld\">The table shows %d of %lld findings, the open ones"
		    " first; <code>ri-findings --text</code> lists every one.</p>\n", (long long)(shown - ROWS_SHOWN),
		    ROWS_SHOWN, (long long)shown);
}

static void
html_needs(FILE *out, json_t *report)
{
	json_t *needs = json_object_get(report, "needs_operator"), *v;
	size_t i;

	h(out, "<h2>Acts that still need an operator</h2>\n");
	if (json_array_size(needs) == 0) {
		h(out, "<p id=\"needs\" data-count=\"0\">None.</p>\n");
		return;
	}
	h(out, "<p>For each, <code>ri-resolve --probe --invocation-id ID</code> shows what its store holds and"
	    " what that supports; <code>ri-resolve --invocation-id ID --actor YOU</code> with one of"
	    " <code>--abandon CAUSE</code>, <code>--outcome REF --outcome-data JSON</code>,"
	    " <code>--escalate CAND</code> closes it (ri-runbook(7)).</p>\n"
	    "<table id=\"needs\" data-count=\"%lld\"><tr><th>kind</th><th>act</th><th>invocation</th>"
	    "<th>intent</th><th>why</th><th>since</th></tr>\n", (long long)json_array_size(needs));
	json_array_foreach(needs, i, v) {
		if (i == ROWS_SHOWN)
			break;
		h(out, "<tr class=\"need\"><td>%s</td><td><code>%s</code></td><td><code>%s</code></td>"
		    "<td><code>%s</code></td><td>%s</td><td>%s</td></tr>\n", jstr(v, "kind"), jstr(v, "act_key"),
		    jstr(v, "invocation_id"), jstr(v, "intent_event_id"), jstr(v, "why"), jstr(v, "recorded_at"));
	}
	h(out, "</table>\n");
	if (json_array_size(needs) > ROWS_SHOWN)
		h(out, "<p class=\"more\" id=\"needs-more\" data-more=\"%lld\">The table shows the first %d; <code>ri-findings --open"
		    " --text</code> lists every one.</p>\n", (long long)(json_array_size(needs) - ROWS_SHOWN),
		    ROWS_SHOWN);
}

int
ri_audit_html(json_t *report, FILE *out)
{
	json_t *head = json_object_get(report, "head"), *tally = json_object_get(report, "tally");
	char title[256];

	snprintf(title, sizeof title, "ri-audit: %lld records, head %lld", jint(report, "records"),
	    jint(head, "seq"));
	h(out, "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
	    "<meta charset=\"utf-8\"/>\n<title>%s</title>\n<style>\n"
	    "body { font: 14px/1.4 sans-serif; margin: 2em; max-width: 72em; }\n"
	    "table { border-collapse: collapse; margin: 1em 0; }\n"
	    "td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }\n"
	    "tr.fail td { background: #fdd; } tr.incomplete td { background: #fec; }"
	    " tr.not-applicable td { color: #777; }\n"
	    "rect.bar { fill: #4a7; } rect.late { fill: #c44; } rect.outage { fill: #e96; }\n"
	    "circle.finding { fill: #36c; } line.window { stroke: #000; stroke-dasharray: 4 3; }\n"
	    "text { font: 11px sans-serif; } .axis { fill: #555; }\n"
	    "</style>\n</head>\n<body>\n<h1>Audit of the journal</h1>\n", title);
	h(out, "<p>Audited at <code>%s</code>: %lld records, head <code id=\"head\">%lld:%s</code>",
	    jstr(report, "audited_at"), jint(report, "records"), jint(head, "seq"), jstr(head, "hash"));
	if (json_is_integer(json_object_get(report, "sealed_seq")))
		h(out, ", sealed up to seq %lld", jint(report, "sealed_seq"));
	h(out, ".</p>\n<p id=\"tally\" data-pass=\"%lld\" data-fail=\"%lld\" data-incomplete=\"%lld\""
	    " data-not-applicable=\"%lld\" data-records=\"%lld\">%lld checks: %lld pass, <strong>%lld fail</strong>,"
	    " <strong>%lld incomplete</strong>, %lld not applicable; %lld acts need an operator.</p>\n",
	    jint(tally, "pass"), jint(tally, "fail"), jint(tally, "incomplete"), jint(tally, "not-applicable"),
	    jint(report, "records"), (long long)json_array_size(json_object_get(report, "checks")),
	    jint(tally, "pass"), jint(tally, "fail"), jint(tally, "incomplete"), jint(tally, "not-applicable"),
	    (long long)json_array_size(json_object_get(report, "needs_operator")));
	html_checks(out, report);
	html_latency(out, report);
	html_timeline(out, report);
	html_needs(out, report);
	h(out, "</body>\n</html>\n");
	return ferror(out) ? -1 : 0;
}
