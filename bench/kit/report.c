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

#include "kit.h"

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
			return r->f[i].val;
	return NULL;
}

void kit_rec_lat(struct kit_rec *r, const struct kit_lat *l)
{
	kit_rec_num(r, "p50_us", "%.4f", l->p50_us);
	kit_rec_num(r, "p99_us", "%.4f", l->p99_us);
	kit_rec_num(r, "p999_us", "%.4f", l->p999_us);
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

void kit_rec_library(struct kit_rec *r, const smart_stats_t *st)
{
	kit_rec_num(r, "credit_cap", "%d", st->credit_cap);
	kit_rec_str(r, "throttle_phase", st->throttle_phase);
	kit_rec_num(r, "db_contended", "%llu",
		    (unsigned long long)st->db_contended);
	kit_rec_num(r, "zero_retry_share", "%.4f", kit_zero_retry_share(st));
	kit_rec_num(r, "backoff_nmax", "%d", st->backoff_nmax);
}

void kit_rec_json(const struct kit_rec *r, FILE *f)
{
	int i;

	fputc('{', f);
	for (i = 0; i < r->n; i++) {
		fprintf(f, "%s\"%s\":", i ? "," : "", r->f[i].key);
		if (r->f[i].str)
			kit_json_str(r->f[i].val, f);
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
	if (ftell(f) == 0)
		for (c = cols; c->name; c++)
			fprintf(f, "%s%s", c->name, c[1].name ? "," : "\n");
	for (c = cols; c->name; c++) {
		v = kit_rec_get(r, c->key);
		csv_value(v && *v ? v : c->empty ? c->empty : "", f);
		fputc(c[1].name ? ',' : '\n', f);
	}
	if (fclose(f)) {
		fprintf(stderr, "%s: --csv %s: %s\n", tool, path,
			strerror(errno));
		return SMART_ESYS;
	}
	return 0;
}
