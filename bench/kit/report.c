/*
 * Reports: the pieces of the perftest-like table every benchmark prints,
 * and the record of a result as named fields, printed as one JSON object
 * or appended to a CSV file.
 *
 * Invariants: a record keeps its fields in the order they were added, so
 * a tool's JSON has a fixed key order; JSON strings are escaped, and a
 * CSV value never needs quoting (commas in lists become '+'), so a line
 * splits on commas.  A field that does not fit the record is dropped and
 * said on stderr: a bug of the tool, not worth failing a measured run.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kit.h"
#include "smart_commit.h" /* SMART_TOOLS_COMMIT, made at build */

void kit_rule(void)
{
	printf("-------------------------------------------------------------"
	       "--------------------------\n");
}

void kit_head(const char *label, const char *fmt, ...)
{
	va_list ap;

	printf(" %-15s: ", label);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

void kit_head_env(const struct kit_common *c, const struct kit_env *e,
		  const char *blades_note)
{
	uint64_t bytes = 0;
	int i;

	for (i = 0; i < e->nblades; i++)
		bytes += e->info[i].size;

	kit_head("Transport", "%s, QP mode %s (requested %s)",
		 smart_ctx_transport(e->ctx), smart_ctx_qp_mode(e->ctx),
		 c->qp_mode ? c->qp_mode : "default");
	kit_head("Techniques", "%s", smart_ctx_techniques(e->ctx));
	kit_head("NIC model", "%s", e->nic_model[0] ? e->nic_model : "off");
	if (e->adversarial[0])
		kit_head("shm adversarial", "%s", e->adversarial);
	kit_head("Blades", "%s, %d x %llu MiB%s", kit_env_kind(e), e->nblades,
		 (unsigned long long)(e->nblades ?
					      bytes / (uint64_t)e->nblades >>
						      20 :
					      0),
		 blades_note ? blades_note : "");
}

void kit_library_line(const smart_stats_t *st)
{
	printf(" library: credit cap %d (%s), doorbells %llu (contended "
	       "%llu), retries per guarded op %.4f\n",
	       st->credit_cap, st->throttle_phase,
	       (unsigned long long)st->db_rings,
	       (unsigned long long)st->db_contended, st->retries_per_op);
}

void kit_rec_init(struct kit_rec *r)
{
	r->n = 0;
}

static struct kit_field *rec_add(struct kit_rec *r, const char *key, int str)
{
	struct kit_field *f;

	if (r->n == KIT_REC_MAX) {
		fprintf(stderr, "kit: record full, field %s dropped\n", key);
		return NULL;
	}
	f = &r->f[r->n++];
	f->key = key;
	f->str = str;
	f->ref = NULL;
	return f;
}

void kit_rec_str(struct kit_rec *r, const char *key, const char *val)
{
	struct kit_field *f = rec_add(r, key, 1);

	if (f)
		snprintf(f->val, sizeof(f->val), "%s", val ? val : "");
}

void kit_rec_num(struct kit_rec *r, const char *key, const char *fmt, ...)
{
	struct kit_field *f = rec_add(r, key, 0);
	va_list ap;

	if (!f)
		return;
	va_start(ap, fmt);
	vsnprintf(f->val, sizeof(f->val), fmt, ap);
	va_end(ap);
}

const char *kit_rec_get(const struct kit_rec *r, const char *key)
{
	int i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->f[i].key, key))
			return r->f[i].ref ? r->f[i].ref : r->f[i].val;
	return NULL;
}

void kit_rec_provenance(struct kit_rec *r, const struct kit_common *c)
{
	struct kit_field *f;
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;

	kit_rec_str(r, "tool", c->tool);
	kit_rec_str(r, "tool_version", SMART_VERSION_STRING);
	kit_rec_str(r, "commit", SMART_TOOLS_COMMIT);
	kit_rec_num(r, "seed", "%llu", (unsigned long long)c->seed);
	f = rec_add(r, "command", 1);
	if (f)
		f->ref = c->command;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	kit_rec_str(r, "timestamp", ts);
}

/* The columns kit_rec_provenance fills, after a tool's own. */
static const struct kit_col provenance_cols[] = {
	{ "tool", "tool", NULL },
	{ "tool_version", "tool_version", NULL },
	{ "commit", "commit", NULL },
	{ "seed", "seed", NULL },
	{ "command", "command", NULL },
	{ "timestamp", "timestamp", NULL },
	{ NULL, NULL, NULL },
};

const char *kit_fmt_sig(double v, char *buf, size_t len)
{
	double a = v < 0 ? -v : v, scale = 1;
	int dec = 2;

	if (a >= 1000) { /* round to three digits, print the zeros */
		while (a / scale >= 1000)
			scale *= 10;
		v = (double)(long long)(v / scale + (v < 0 ? -0.5 : 0.5)) *
		    scale;
		dec = 0;
	} else if (a >= 100) {
		dec = 0;
	} else if (a >= 10) {
		dec = 1;
	} else if (a > 0 && a < 1) { /* as many decimals as 3 digits need */
		for (scale = 1; a < scale && dec < 14; scale /= 10)
			dec++;
	}
	snprintf(buf, len, "%.*f", dec, v);
	return buf;
}

/* A quantile has three significant digits (kit_fmt_sig). */
static void rec_sig(struct kit_rec *r, const char *key, double v)
{
	char b[32];

	kit_rec_num(r, key, "%s", kit_fmt_sig(v, b, sizeof(b)));
}

void kit_rec_lat(struct kit_rec *r, const struct kit_lat *l)
{
	rec_sig(r, "p50_us", l->p50_us);
	rec_sig(r, "p99_us", l->p99_us);
	rec_sig(r, "p999_us", l->p999_us);
}

/* Of the guarded ops the window ended, the share that needed no retry
 * (Smart's Fig 14c); 0 when there were none. */
static double kit_zero_retry_share(const smart_stats_t *st)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < 17; i++)
		n += st->retry_hist[i];
	return n ? (double)st->retry_hist[0] / (double)n : 0;
}

/* Conflict avoidance and credit waits: the share of guarded operations
 * that needed no retry, the coroutine throttle's steps, and what waiting
 * for credits cost (loop turns, parks, task switches). */
static void kit_rec_library_conflict(struct kit_rec *r, const smart_stats_t *st)
{
	kit_rec_num(r, "zero_retry_share", "%.4f", kit_zero_retry_share(st));
	kit_rec_num(r, "nmax_cuts", "%llu",
		    (unsigned long long)st->c[SMART_STAT_NMAX_CUTS]);
	kit_rec_num(r, "nmax_raises", "%llu",
		    (unsigned long long)st->c[SMART_STAT_NMAX_RAISES]);
	kit_rec_num(r, "credit_waits", "%llu",
		    (unsigned long long)st->c[SMART_STAT_CREDIT_WAITS]);
	kit_rec_num(r, "credit_parks", "%llu",
		    (unsigned long long)st->c[SMART_STAT_CREDIT_PARKS]);
	kit_rec_num(r, "task_switches", "%llu",
		    (unsigned long long)st->c[SMART_STAT_TASK_SWITCHES]);
}

void kit_rec_library(struct kit_rec *r, const smart_stats_t *st)
{
	kit_rec_num(r, "credit_cap", "%d", st->credit_cap);
	kit_rec_str(r, "throttle_phase", st->throttle_phase);
	kit_rec_num(r, "db_contended", "%llu",
		    (unsigned long long)st->db_contended);
	kit_rec_library_conflict(r, st);
	kit_rec_num(r, "backoff_nmax", "%d", st->backoff_nmax);
}

void kit_rec_json(const struct kit_rec *r, FILE *f)
{
	int i;

	fputc('{', f);
	for (i = 0; i < r->n; i++) {
		fprintf(f, "%s\"%s\":", i ? "," : "", r->f[i].key);
		if (r->f[i].str)
			kit_json_str(r->f[i].ref ? r->f[i].ref : r->f[i].val,
				     f);
		else
			fputs(r->f[i].val, f);
	}
	fputs("}\n", f);
}

static void csv_value(const char *v, FILE *f)
{
	for (; *v; v++)
		fputc(*v == ',' ? '+' : *v == '\n' ? ' ' : *v, f);
}

int kit_rec_csv(const struct kit_rec *r, const struct kit_col *cols,
		const char *path, const char *tool)
{
	FILE *f = fopen(path, "a");
	const struct kit_col *c;
	const char *v;

	if (!f) {
		fprintf(stderr, "%s: --csv %s: %s\n", tool, path,
			strerror(errno));
		return SMART_ESYS;
	}
	if (ftell(f) == 0) {
		for (c = cols; c->name; c++)
			fprintf(f, "%s,", c->name);
		for (c = provenance_cols; c->name; c++)
			fprintf(f, "%s%s", c->name, c[1].name ? "," : "\n");
	}
	for (c = cols; c->name; c++) {
		v = kit_rec_get(r, c->key);
		csv_value(v && *v ? v : c->empty ? c->empty : "", f);
		fputc(',', f);
	}
	for (c = provenance_cols; c->name; c++) {
		v = kit_rec_get(r, c->key);
		csv_value(v ? v : "", f);
		fputc(c[1].name ? ',' : '\n', f);
	}
	if (fclose(f)) {
		fprintf(stderr, "%s: --csv %s: %s\n", tool, path,
			strerror(errno));
		return SMART_ESYS;
	}
	return 0;
}
