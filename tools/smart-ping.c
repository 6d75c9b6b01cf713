/*
 * smart-ping: probe a memory blade with one-sided ops, like ping/rping.
 *
 * Each probe is one op and one sync from the main context; its round-trip
 * time is printed, then min/avg/max/mdev and percentiles.  With --verify
 * every probe also checks data end to end in a block it allocated on the
 * blade: WRITE a pattern then READ it back (read/write), or FAA a private
 * counter and check the old value (faa), or CAS it forward (cas).  Exit 0
 * when every probe succeeded (and verified), 1 otherwise, 2 on bad usage.
 * Public API only.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "smart/smart.h"

struct ping_cfg {
	const char *target;
	const char *transport;
	const char *secret_file;
	long count;
	double interval;
	uint32_t size;
	int op;		/* 0 read, 1 write, 2 cas, 3 faa */
	int verify;
	int quiet;
};

static const char *const ops[] = { "read", "write", "cas", "faa" };

static void usage(FILE *f)
{
	fprintf(f,
"usage: smart-ping [options] HOST:PORT\n"
"  --count N           probes [10]\n"
"  --interval S        seconds between probes [0.2]\n"
"  --size B            bytes per read/write probe, 1..4096 [8]\n"
"  --op read|write|cas|faa   [read]\n"
"  --verify            check data end to end on every probe\n"
"  --transport NAME    shm | verbs [shm, or SMART_TRANSPORT]\n"
"  --secret-file F     the blade's secret [SMART_SECRET_FILE]\n"
"  --quiet             only the summary\n"
"  --help, --version\n");
}

static int parse(int argc, char **argv, struct ping_cfg *c)
{
	static const struct option lo[] = {
		{ "count", 1, 0, 'c' }, { "interval", 1, 0, 'i' },
		{ "size", 1, 0, 's' }, { "op", 1, 0, 'o' },
		{ "verify", 0, 0, 'v' }, { "transport", 1, 0, 't' },
		{ "secret-file", 1, 0, 'f' }, { "quiet", 0, 0, 'q' },
		{ "help", 0, 0, 'h' }, { "version", 0, 0, 'V' }, { 0, 0, 0, 0 },
	};
	char *end;
	int ch, i;

	while ((ch = getopt_long(argc, argv, "c:i:s:o:vt:f:q", lo, NULL)) != -1) {
		switch (ch) {
		case 'c': c->count = strtol(optarg, &end, 10);
			if (*end || c->count < 1 || c->count > 100000000)
				goto bad;
			break;
		case 'i': c->interval = strtod(optarg, &end);
			if (*end || c->interval < 0 || c->interval > 3600)
				goto bad;
			break;
		case 's': c->size = (uint32_t)strtoul(optarg, &end, 10);
			if (*end || c->size < 1 || c->size > 4096)
				goto bad;
			break;
		case 'o':
			for (i = 0; i < 4 && strcmp(optarg, ops[i]); i++)
				;
			if (i == 4)
				goto bad;
			c->op = i;
			break;
		case 'v': c->verify = 1; break;
		case 't': c->transport = optarg; break;
		case 'f': c->secret_file = optarg; break;
		case 'q': c->quiet = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("smart-ping %s\n", SMART_VERSION_STRING);
			return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	c->target = argv[optind];
	if (c->op >= 2)
		c->size = 8;
	return -1;
bad:
	fprintf(stderr, "smart-ping: bad value '%s' (see --help)\n", optarg);
	return 2;
}

struct ping {
	const struct ping_cfg *c;
	smart_worker_t *w;
	smart_gaddr_t block;
	uint8_t *buf, *back;
	uint64_t counter;	/* expected value of the faa/cas word */
};

/* One probe; returns 0, a SMART_E* code, or 1 for a verify mismatch. */
static int probe(struct ping *p, long seq)
{
	const struct ping_cfg *c = p->c;
	uint64_t old = 0;
	int rc = 0, i;

	switch (c->op) {
	case 0:
		if (c->verify)
			rc = smart_write_sync(p->w, p->block, p->buf, c->size);
		return rc ? rc : smart_read_sync(p->w, p->block, c->size,
						 p->back) ? SMART_EREMOTE :
		       (c->verify && memcmp(p->buf, p->back, c->size));
	case 1:
		for (i = 0; i < (int)c->size; i++)
			p->buf[i] = (uint8_t)(seq * 31 + i);
		rc = smart_write_sync(p->w, p->block, p->buf, c->size);
		if (rc || !c->verify)
			return rc;
		rc = smart_read_sync(p->w, p->block, c->size, p->back);
		return rc ? rc : memcmp(p->buf, p->back, c->size) != 0;
	case 2:
		rc = smart_cas_sync(p->w, p->block, p->counter,
				    p->counter + 1, &old);
		break;
	default:
		rc = smart_faa_sync(p->w, p->block, 1, &old);
	}
	if (rc)
		return rc;
	if (c->verify && old != p->counter)
		return 1;
	p->counter = old + 1;
	return 0;
}

static int ping_setup(struct ping *p, smart_ctx_t **ctx)
{
	const struct ping_cfg *c = p->c;
	smart_opts_t *o;
	uint16_t blade;
	uint64_t zero = 0;
	int rc = smart_opts_create(&o);

	if (!rc && c->transport)
		rc = smart_opts_set(o, "transport", c->transport);
	if (!rc && c->secret_file)
		rc = smart_opts_set(o, "secret_file", c->secret_file);
	if (!rc)
		rc = smart_opts_set(o, "buf_pool", "4M");
	if (!rc)
		rc = smart_ctx_create(o, ctx);
	smart_opts_destroy(o);
	if (!rc)
		rc = smart_ctx_connect(*ctx, c->target, &blade);
	if (!rc)
		rc = smart_worker_create(*ctx, &p->w);
	if (!rc)
		rc = smart_buf_alloc(p->w, 4096, (void **)&p->buf);
	if (!rc)
		rc = smart_buf_alloc(p->w, 4096, (void **)&p->back);
	if (!rc)
		rc = smart_alloc(p->w, blade, 4096, &p->block);
	if (!rc && c->op >= 2)
		rc = smart_write_sync(p->w, p->block, &zero, 8);
	if (!rc)
		memset(p->buf, 0x5a, 4096);
	return rc;
}

static void summary(const struct ping_cfg *c, const double *rtt, long ok,
		    long failed)
{
	double min = 1e300, max = 0, sum = 0, sq = 0, mean, mdev;
	smart_hist_t h;
	long i;

	smart_hist_init(&h);
	for (i = 0; i < ok; i++) {
		min = rtt[i] < min ? rtt[i] : min;
		max = rtt[i] > max ? rtt[i] : max;
		sum += rtt[i];
		sq += rtt[i] * rtt[i];
		smart_hist_add(&h, (uint64_t)(rtt[i] * 1000));
	}
	mean = ok ? sum / (double)ok : 0;
	mdev = ok ? sqrt(sq / (double)ok - mean * mean) : 0;
	printf("--- %s smart-ping (%s, %u B) ---\n", c->target, ops[c->op],
	       c->size);
	printf("%ld probes, %ld ok, %ld failed%s\n", ok + failed, ok, failed,
	       c->verify ? ", data verified" : "");
	if (ok)
		printf("rtt min/avg/max/mdev = %.2f/%.2f/%.2f/%.2f us, p50 "
		       "%.2f us, p99 %.2f us\n", min, mean, max, mdev,
		       smart_hist_quantile(&h, 0.5) / 1000,
		       smart_hist_quantile(&h, 0.99) / 1000);
}

static void nap(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	struct ping_cfg c = { .count = 10, .interval = 0.2, .size = 8 };
	struct ping p = { .c = &c };
	smart_ctx_t *ctx = NULL;
	double *rtt;
	long seq, ok = 0, failed = 0;
	int rc = parse(argc, argv, &c);

	if (rc >= 0)
		return rc;
	rtt = calloc((size_t)c.count, sizeof(*rtt));
	rc = rtt ? ping_setup(&p, &ctx) : SMART_ENOMEM;
	for (seq = 0; !rc && seq < c.count; seq++) {
		uint64_t t0 = smart_now_ns();
		int r = probe(&p, seq);
		double us = (double)(smart_now_ns() - t0) / 1000;

		if (r == 0)
			rtt[ok++] = us;
		else
			failed++;
		if (!c.quiet)
			printf("seq=%ld op=%s size=%u rtt=%.2f us%s\n", seq,
			       ops[c.op], c.size, us, r == 0 ? "" : r == 1 ?
			       " VERIFY FAILED" : " ERROR");
		if (seq + 1 < c.count && c.interval > 0)
			nap(c.interval);
	}
	if (rc)
		fprintf(stderr, "smart-ping: %s: %s\n", c.target,
			smart_strerror(rc));
	else
		summary(&c, rtt, ok, failed);
	free(rtt);
	if (p.w)
		smart_worker_destroy(p.w);
	if (ctx)
		smart_ctx_destroy(ctx);
	return rc ? 1 : failed ? 1 : 0;
}
