/*
 * Conformance case on sharing: one SMART_TP_SHARED QP and CQ used by two
 * threads at once, every completion reaped exactly once.
 *
 * Invariants: a completion is reaped by whichever thread polls first; the
 * case's own bookkeeping is atomic, so only the transport's sharing is
 * under test.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "suite.h"

/* ------------------------------------------------------------------ */
/* Case: shared_objects — one SMART_TP_SHARED QP and CQ, two threads    */

#define SH_THREADS 2
#define SH_DEPTH   8 /* chains in flight per thread */

struct sh_state {
	struct fx *f;
	struct conn c;
	uint32_t chains;    /* per thread */
	uint64_t *olds;	    /* [thread][chain][2] in the local MR */
	atomic_uchar *seen; /* [thread][chain] */
	atomic_int inflight[SH_THREADS];
	atomic_uint done;
};

struct sh_arg {
	struct sh_state *s;
	int me;
};

static void sh_reap(struct sh_state *s)
{
	struct smart_tp_wc wc[4];
	uint64_t t, j;
	int n, i;

	n = s->f->ops->poll(s->c.cq, wc, 4);
	CHECK_GE(n, 0);
	for (i = 0; i < n; i++) {
		CHECK_WC(wc[i], wc[i].wr_id, SMART_TP_WC_OK);
		t = wc[i].wr_id >> 32;
		j = wc[i].wr_id & 0xffffffffu;
		CHECK_MSG(t < SH_THREADS && j < s->chains,
			  "bad wr_id 0x%" PRIx64, wc[i].wr_id);
		CHECK_MSG(!atomic_exchange(&s->seen[t * s->chains + j], 1),
			  "wr_id 0x%" PRIx64 " completed twice", wc[i].wr_id);
		atomic_fetch_sub(&s->inflight[t], 1);
		atomic_fetch_add(&s->done, 1);
	}
}

static void *sh_thread(void *arg)
{
	struct sh_arg *a = arg;
	struct sh_state *s = a->s;
	uint64_t deadline = now_ns() + 3 * CONF_WAIT_NS, id;
	uint64_t *o = s->olds + (size_t)a->me * s->chains * 2;
	struct smart_tp_wr w[2];
	uint32_t posted = 0;

	while (atomic_load(&s->done) < SH_THREADS * s->chains) {
		if (posted < s->chains &&
		    atomic_load(&s->inflight[a->me]) < SH_DEPTH) {
			id = (uint64_t)a->me << 32 | posted;
			w[0] = wr_atomic(&s->f->t, SMART_TP_FAA, ~0ull, 0,
					 &o[2 * posted], 1, 0, 0);
			w[1] = wr_atomic(&s->f->t, SMART_TP_FAA, id, 0,
					 &o[2 * posted + 1], 1, 0, CONF_SIG);
			atomic_fetch_add(&s->inflight[a->me], 1);
			CHECK_OK(s->f->ops->post(s->c.qp, w, 2));
			posted++;
		}
		sh_reap(s);
		CHECK_MSG(now_ns() < deadline, "shared QP/CQ stuck");
	}
	return NULL;
}

void case_shared_objects(const struct smart_conf_env *env)
{
	struct sh_arg args[SH_THREADS];
	pthread_t th[SH_THREADS];
	struct sh_state s;
	struct fx f;
	uint64_t *all, n;
	size_t i;

	fx_open(&f, env);
	memset(&s, 0, sizeof(s));
	s.f = &f;
	s.chains = scaled(env, 8000);
	n = (uint64_t)SH_THREADS * s.chains;
	CHECK_LE(n * 16, CONF_LOCAL_LEN);
	s.olds = (uint64_t *)f.laddr;
	s.seen = calloc(n, 1);
	all = calloc(2 * n, sizeof(*all));
	CHECK(s.seen && all);
	conn_open(&f, NULL, 64, 2 * SH_THREADS * SH_DEPTH, SMART_TP_SHARED,
		  &s.c);
	for (i = 0; i < SH_THREADS; i++) {
		args[i] = (struct sh_arg){ &s, (int)i };
		CHECK_EQ(pthread_create(&th[i], NULL, sh_thread, &args[i]), 0);
	}
	for (i = 0; i < SH_THREADS; i++)
		CHECK_EQ(pthread_join(th[i], NULL), 0);
	expect_quiet(f.ops, s.c.cq);
	/* A chain is posted whole: its two FAAs are adjacent in QP order. */
	for (i = 0; i < n; i++)
		CHECK_MSG(s.olds[2 * i + 1] == s.olds[2 * i] + 1,
			  "chain %zu interleaved: olds %" PRIu64 ", %" PRIu64,
			  i, s.olds[2 * i], s.olds[2 * i + 1]);
	memcpy(all, s.olds, 2 * n * sizeof(*all));
	qsort(all, 2 * n, sizeof(*all), cmp_u64);
	for (i = 0; i < 2 * n; i++)
		CHECK_MSG(all[i] == i,
			  "FAA %zu saw old value %" PRIu64
			  " (lost or doubled update)",
			  i, all[i]);
	CHECK_U64_EQ(rword(&f, 0), 2 * n);
	printf("   %d threads x %u chains of 2 FAA on one shared QP and CQ\n",
	       SH_THREADS, s.chains);
	conn_close(&s.c);
	free(all);
	free(s.seen);
	fx_close(&f);
}
