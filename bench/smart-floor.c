/*
 * smart-floor: what the work of a one-sided 8-B READ costs at a minimum in
 * this design, with nothing but the work (issue 27's floor).
 *
 * Issue 27 asks for the op path "rebuilt to the cost of its work"
 * (`smart-perf --op read --size 8 --threads 1 --depth 8`: 603
 * instructions per op, `--raw` 75, the target 250).  --raw is no floor of
 * the design: it has no coroutines, no queue, no completion.  This tool
 * runs the design's work and nothing else, so that the distance from the
 * library to it (and from it to raw) can be measured, clock-free
 * (bench/op-cost.sh counts it under callgrind) and in time.
 *
 * What it models, on one thread, as smart-perf's READ 8 B at depth D and
 * batch B on shm does:
 *   the blade   one region of --span bytes (64M, op-cost.sh's span), a
 *               memfd mapped shared and touched page by page before the
 *               window, like the embedded blade's region (4-KiB pages here
 *               as there: this machine reserves no huge pages and shmem
 *               takes no transparent ones), addressed by a remote address
 *               space of its own (base, length, key) that the "NIC"
 *               translates to the mapping, as shm does;
 *   the ops     D coroutines (Boost.Context's fcontext, a stack each), each
 *               looping: B times draw an 8-B-aligned offset as smart-perf
 *               draws it (smart_rng_below over the slots, the task's seed
 *               kit_task_seed(seed, 0, task)) and write a work request
 *               (remote address, local buffer, length, opcode, keys, wr_id)
 *               into the send ring; then sync: publish the ring's tail (the
 *               post, a release store: the doorbell) and wait: switch to
 *               the next ready coroutine, or to the poller when none is;
 *   the poller  the NIC's work done by the CPU, as shm does it at poll
 *               time: prefetch the targets of the queued WRs in one burst
 *               (when there are two or more: docs/transport.md says why
 *               the burst and not a prefetch at post time), then for each
 *               WR the checks a NIC makes (the remote key and range against
 *               the region's bounds, the local key and range against the
 *               local region's, the opcode), the 8-B copy, and a completion
 *               (wr_id, status); then the dispatch: each completion counts
 *               down its task's outstanding WRs, the task made ready at
 *               zero; then the ready coroutines are resumed in order (each
 *               switches straight to the next, the last back here).
 * Every WR is really checked and executed and every completion really
 * dispatched: a reference, not a stub.  By default every WR is signalled
 * (a completion each); --signal-last signals only a sync's last WR, as
 * the library does (src/runtime/ops.c), which at batch 8 saves seven
 * completions and their dispatch per sync: bench/op-cost.sh counts it
 * that way, the floor of the library's own way.
 *
 * What it leaves out, and why: everything that is not the op's work in
 * this setting, so that the figure is a floor.  No library (no ctx, worker,
 * QP, CQ objects, no doorbell records: one ring, one consumer), no stats
 * or counters, no error recovery (a failed completion stops the run), no
 * latency histogram (smart-perf samples one op in 8: kit_lat_begin/end;
 * left out rather than reported twice), no credits or throttle, no
 * leases or epochs, no room check on the ring (it holds D x B entries, and
 * a task writes its next B only after its last B completed, so it cannot
 * overflow here; the library's post must check), no locks (one thread
 * posts and polls, as smart-perf's worker does), and READ only.
 *
 * Counting: like bench/kit/run.c's workers, the op thread's instructions
 * count from its first op to its last (kit_count_begin/kit_count_end, the
 * callgrind part "ops"), so that bench/op-cost.sh counts only the ops.
 * Uses only the public headers, the kit and Boost.Context's C ABI
 * (declared here; the library links libboost_context).  Exit status: 0; 1
 * when the run failed (said on stderr); 2 for bad input.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kit.h"

#define TOOL "smart-floor"

/* Boost.Context's C ABI (libboost_context): a suspended context, and
 * what a jump hands to the context it resumes. */
typedef void *fcontext_t;
typedef struct {
	fcontext_t fctx;
	void *data;
} transfer_t;
transfer_t jump_fcontext(fcontext_t const to, void *vp);
fcontext_t make_fcontext(void *sp, size_t size, void (*fn)(transfer_t));

/* The stack of a coroutine: the loop's frames are shallow (no library
 * below them), so the library's default size is plenty. */
#define FL_STACK (64 << 10)

/* A remote address space of its own, away from any mapping: the "NIC"
 * must translate as shm's does (remote - base + map), not take a pointer. */
#define FL_REMOTE_BASE (UINT64_C(1) << 44)

/* The library's own hint macros are internal (src/util); the same here. */
#define fl_likely(x)   __builtin_expect(!!(x), 1)
#define fl_unlikely(x) __builtin_expect(!!(x), 0)

enum { FL_OP_READ = 1 };

/* A completion's status: a NIC's. */
enum { FL_WC_OK, FL_WC_REM_ACCESS, FL_WC_LOC_PROT, FL_WC_BAD_OP };

/* A work request as a NIC takes it: remote address and key, local buffer
 * and key, length, opcode, wr_id, and whether it completes. */
struct fl_wr {
	uint64_t remote;
	uint64_t local;
	uint64_t wr_id;
	uint32_t len;
	uint32_t rkey;
	uint32_t lkey;
	uint8_t opcode;
	uint8_t signaled;
};

struct fl_wc {
	uint64_t wr_id;
	uint32_t status;
};

/* A registered region: its addresses [base, base + len), its key and,
 * for the blade, where it is mapped here. */
struct fl_region {
	uint8_t *map;
	uint64_t base, len;
	uint32_t key;
};

struct fl_sched;

struct fl_task {
	fcontext_t ctx; /* where it is suspended */
	struct fl_sched *s;
	smart_rng_t rng;
	uint64_t *buf;	  /* the local buffer its READs land in */
	uint32_t pending; /* completions its sync still waits for */
	uint32_t status;  /* a failed completion's, else FL_WC_OK */
	uint8_t *stack;
};

struct fl_sched {
	/* the send ring: the ops write at prod, the post publishes tail,
	 * the poller consumes from head */
	struct fl_wr *sq;
	uint32_t sq_mask, sq_prod, sq_head;
	_Atomic uint32_t sq_tail;
	struct fl_wc *wc; /* one poll's completions */
	/* the ready queue: tasks in the order their syncs completed */
	struct fl_task **ready;
	uint32_t rd_mask, rd_head, rd_tail;
	fcontext_t poller; /* the op thread's own context */
	struct fl_region blade, local;
	uint64_t slots, stride;
	int depth, batch, signal_last, live;
	struct kit_runner *run;
	struct fl_task *t;
	uint64_t ops;
	uint32_t err; /* the first failed completion's status */
};

struct fl_cfg {
	struct kit_common com;
	int depth, batch, signal_last;
	uint64_t span;
};

/* ------------------------------------------------------------------ */
/* The coroutines' side: the op, the post, the wait                     */

/* Resume `to`, handing it where this context is to be saved; back here,
 * save the context that resumed us where it asked.  Every jump of the
 * tool goes through this pair of steps, so any context may resume any
 * other (a task the next, the last task the poller). */
static inline void fl_switch(fcontext_t to, fcontext_t *self)
{
	transfer_t tr = jump_fcontext(to, self);

	*(fcontext_t *)tr.data = tr.fctx;
}

/* The wait: the next ready task, or the poller when none is. */
static inline void fl_wait(struct fl_sched *s, struct fl_task *t)
{
	fcontext_t to = s->rd_head != s->rd_tail ?
				s->ready[s->rd_head++ & s->rd_mask]->ctx :
				s->poller;

	fl_switch(to, &t->ctx);
}

/* The op: one READ of 8 bytes at offset off into the task's buffer,
 * written into the ring (not yet visible to the poller). */
static inline void fl_read(struct fl_sched *s, struct fl_task *t, uint64_t off,
			   int last)
{
	struct fl_wr *wr = &s->sq[s->sq_prod++ & s->sq_mask];

	wr->remote = s->blade.base + off;
	wr->local = (uint64_t)(uintptr_t)t->buf;
	wr->wr_id = (uint64_t)(uintptr_t)t;
	wr->len = 8;
	wr->rkey = s->blade.key;
	wr->lkey = s->local.key;
	wr->opcode = FL_OP_READ;
	wr->signaled = !s->signal_last || last;
}

/* The sync: the post (the tail published, as a doorbell), then the wait
 * for the completions the batch asked for. */
static inline void fl_sync(struct fl_sched *s, struct fl_task *t)
{
	t->pending = s->signal_last ? 1 : (uint32_t)s->batch;
	atomic_store_explicit(&s->sq_tail, s->sq_prod, memory_order_release);
	fl_wait(s, t);
}

static void fl_task_main(transfer_t tr)
{
	struct fl_task *t = tr.data;
	struct fl_sched *s = t->s;
	uint64_t n = 0;
	int i, b = s->batch;

	/* primed before the window: park until the run resumes us */
	s->poller = tr.fctx;
	fl_switch(s->poller, &t->ctx);
	while (!kit_runner_stopping(s->run)) {
		for (i = 0; i < b; i++)
			fl_read(s, t,
				smart_rng_below(&t->rng, s->slots) * s->stride,
				i == b - 1);
		fl_sync(s, t);
		if (fl_unlikely(t->status)) {
			if (!s->err)
				s->err = t->status;
			kit_runner_set(s->run, KIT_STOP);
			break;
		}
		n++;
	}
	s->ops += n * (uint64_t)b;
	s->live--;
	/* never resumed: a return would end the thread */
	fl_wait(s, t);
	abort();
}

/* ------------------------------------------------------------------ */
/* The poller's side: the NIC's work, the dispatch                      */

/* One WR as a NIC runs it: the remote key and range, the local key and
 * range, the opcode, then the access.  Offsets are taken unsigned, so an
 * address below a region's base wraps above its length and is refused. */
static inline uint32_t fl_exec(const struct fl_sched *s, const struct fl_wr *wr)
{
	const struct fl_region *r = &s->blade, *l = &s->local;
	uint64_t ro = wr->remote - r->base, lo = wr->local - l->base;
	uint64_t v;

	if (fl_unlikely(wr->rkey != r->key || ro > r->len ||
			wr->len > r->len - ro))
		return FL_WC_REM_ACCESS;
	if (fl_unlikely(wr->lkey != l->key || lo > l->len ||
			wr->len > l->len - lo))
		return FL_WC_LOC_PROT;
	if (fl_unlikely(wr->opcode != FL_OP_READ))
		return FL_WC_BAD_OP;
	/* an aligned word is one load, atomic as shm's (rule 4) */
	if (fl_likely(wr->len == 8 && !((ro | wr->local) & 7))) {
		v = __atomic_load_n((const uint64_t *)(r->map + ro),
				    __ATOMIC_RELAXED);
		memcpy((void *)(uintptr_t)wr->local, &v, 8);
	} else {
		memcpy((void *)(uintptr_t)wr->local, r->map + ro, wr->len);
	}
	return FL_WC_OK;
}

/* The targets of the queued WRs, prefetched in one tight burst before
 * any runs, so that their misses overlap as a NIC's pipelined reads do.
 * No bounds check: a prefetch never faults, and fl_exec checks each WR
 * before its access; the address is formed as an integer. */
static inline void fl_touch(const struct fl_sched *s, uint32_t h, uint32_t end)
{
	uintptr_t delta = (uintptr_t)s->blade.map - (uintptr_t)s->blade.base;

	for (; h != end; h++) {
		const struct fl_wr *wr = &s->sq[h & s->sq_mask];

		if (fl_likely(wr->rkey == s->blade.key))
			__builtin_prefetch(
				(const void *)(delta + (uintptr_t)wr->remote),
				0, 3);
	}
}

/* One poll: every WR posted so far executed and completed, then every
 * completion dispatched to its task. */
static void fl_poll(struct fl_sched *s)
{
	uint32_t end = atomic_load_explicit(&s->sq_tail, memory_order_acquire);
	uint32_t h = s->sq_head, n = 0, k, st;
	struct fl_task *t;

	if (end - h > 1) /* a lone WR's prefetch would precede its own load */
		fl_touch(s, h, end);
	for (; h != end; h++) {
		const struct fl_wr *wr = &s->sq[h & s->sq_mask];

		st = fl_exec(s, wr);
		if (fl_likely(wr->signaled) || st != FL_WC_OK) {
			s->wc[n].wr_id = wr->wr_id;
			s->wc[n++].status = st;
		}
	}
	s->sq_head = h;
	for (k = 0; k < n; k++) {
		t = (struct fl_task *)(uintptr_t)s->wc[k].wr_id;
		if (fl_unlikely(s->wc[k].status != FL_WC_OK))
			t->status = s->wc[k].status;
		/* a failed unsignalled WR completes too: count down only
		 * what is outstanding, make ready once */
		if (t->pending && !--t->pending)
			s->ready[s->rd_tail++ & s->rd_mask] = t;
	}
}

/* The op thread's loop: poll, then resume the ready tasks in order (the
 * first here, each the next in its wait, the last back here), until every
 * task has left. */
static void fl_loop(struct fl_sched *s)
{
	while (s->live) {
		fl_poll(s);
		if (s->rd_head != s->rd_tail)
			fl_switch(s->ready[s->rd_head++ & s->rd_mask]->ctx,
				  &s->poller);
	}
}

/* ------------------------------------------------------------------ */
/* Setup, the run, the report                                           */

static uint32_t pow2_at_least(uint64_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* The blade's region: a memfd mapped shared and touched, as the embedded
 * blade's is (shm_mem.c), so that the pages and their misses are alike. */
static int fl_blade(struct fl_sched *s, uint64_t span)
{
	int fd = memfd_create("smart-floor", 0);
	uint64_t off;
	void *p;

	if (fd < 0 || ftruncate(fd, (off_t)span)) {
		perror(TOOL ": memfd");
		if (fd >= 0)
			close(fd);
		return SMART_ESYS;
	}
	p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		perror(TOOL ": mmap");
		return SMART_ESYS;
	}
	for (off = 0; off < span; off += 4096)
		((volatile uint8_t *)p)[off] = 0;
	s->blade = (struct fl_region){ p, FL_REMOTE_BASE, span, 0x5eed1 };
	return 0;
}

static void fl_free(struct fl_sched *s)
{
	int i;

	for (i = 0; s->t && i < s->depth; i++)
		free(s->t[i].stack);
	free(s->t);
	free(s->sq);
	free(s->wc);
	free(s->ready);
	free(s->local.map);
	if (s->blade.map)
		munmap(s->blade.map, s->blade.len);
}

static int fl_setup(struct fl_sched *s, const struct fl_cfg *c)
{
	uint32_t ring = pow2_at_least((uint64_t)c->depth * (uint64_t)c->batch);
	uint64_t lbytes = (uint64_t)c->depth * 64;
	int i, rc;

	s->depth = c->depth;
	s->batch = c->batch;
	s->signal_last = c->signal_last;
	s->stride = 8;
	/* as smart-perf's: lo + slot * stride, slots short of the end */
	s->slots = (c->span - s->stride) / s->stride;
	rc = fl_blade(s, c->span);
	if (rc)
		return rc;
	s->sq = calloc(ring, sizeof(*s->sq));
	s->wc = calloc(ring, sizeof(*s->wc));
	s->sq_mask = ring - 1;
	s->rd_mask = pow2_at_least((uint64_t)c->depth) - 1;
	s->ready = calloc(s->rd_mask + 1, sizeof(*s->ready));
	s->t = calloc((size_t)c->depth, sizeof(*s->t));
	/* the local buffers: a line each, as the library's pool gives */
	s->local.map = aligned_alloc(64, lbytes);
	if (!s->sq || !s->wc || !s->ready || !s->t || !s->local.map)
		return SMART_ENOMEM;
	memset(s->local.map, 0x11, lbytes);
	s->local.base = (uint64_t)(uintptr_t)s->local.map;
	s->local.len = lbytes;
	s->local.key = 0x10ca1;
	for (i = 0; i < c->depth; i++) {
		struct fl_task *t = &s->t[i];

		t->s = s;
		t->buf = (uint64_t *)(s->local.map + (size_t)i * 64);
		smart_rng_seed(&t->rng, kit_task_seed(c->com.seed, 0, i));
		t->stack = malloc(FL_STACK);
		if (!t->stack)
			return SMART_ENOMEM;
		t->ctx = make_fcontext(t->stack + FL_STACK, FL_STACK,
				       fl_task_main);
	}
	return 0;
}

struct fl_thread {
	struct fl_sched *s;
	struct kit_runner *run;
};

/* The op thread: the tasks primed (each parked at its loop's start), then
 * the ops from the first to the last, counted. */
static void *fl_thread_main(void *arg)
{
	struct fl_thread *ft = arg;
	struct fl_sched *s = ft->s;
	transfer_t tr;
	int i;

	/* the first jump hands a task itself (fl_task_main); it comes back
	 * at once, saying where it parked */
	for (i = 0; i < s->depth; i++) {
		tr = jump_fcontext(s->t[i].ctx, &s->t[i]);
		*(fcontext_t *)tr.data = tr.fctx;
	}
	s->live = s->depth;
	for (i = 0; i < s->depth; i++)
		s->ready[s->rd_tail++ & s->rd_mask] = &s->t[i];
	kit_runner_ready(ft->run);
	kit_runner_await(ft->run, KIT_RUN);
	kit_count_begin();
	fl_loop(s);
	kit_count_end();
	return NULL;
}

#define P struct fl_cfg
static const struct kit_flag fl_flags[] = {
	KIT_INT("depth", P, depth, 1, 1024, "D",
		"coroutines, one sync in flight each [8]"),
	KIT_INT("batch", P, batch, 1, 64, "B",
		"8-B READs queued per sync by each coroutine [1]"),
	KIT_SIZE("span", P, span, 4096, (double)(1ull << 40), "B",
		 "bytes the random offsets spread over (the blade's\n"
		 "region, a memfd touched before the run) [64M]"),
	KIT_FLAG("signal-last", P, signal_last,
		 "signal only a sync's last WR, as the library does\n"
		 "[every WR completes]"),
	KIT_TIME("seconds", P, com.seconds, 1e-3, 86400, "S",
		 "measured time, e.g. 3 or 500ms [3]"),
	KIT_U64("seed", P, com.seed, 0, 1.8e19, "N", "RNG seed [1]"),
	KIT_FLAG("json", P, com.json, "one JSON object instead of the table"),
	KIT_END,
};
#undef P

static void fl_report(const struct fl_cfg *c, uint64_t ops, double secs)
{
	double mops = (double)ops / secs / 1e6;
	struct kit_rec rec;

	if (!c->com.json) {
		printf(" %s: READ 8 B, 1 thread x %d coroutines, batch %d, "
		       "span %" PRIu64 " MiB, every %s\n",
		       TOOL, c->depth, c->batch, c->span >> 20,
		       c->signal_last ? "sync's last WR signalled" :
					"WR signalled");
		printf(" %-14s %-10s %s\n", "#ops", "seconds", "Mops");
		printf(" %-14" PRIu64 " %-10.3f %.3f\n", ops, secs, mops);
		return;
	}
	kit_rec_init(&rec);
	kit_rec_str(&rec, "op", "read");
	kit_rec_num(&rec, "size", "%d", 8);
	kit_rec_num(&rec, "threads", "%d", 1);
	kit_rec_num(&rec, "depth", "%d", c->depth);
	kit_rec_num(&rec, "batch", "%d", c->batch);
	kit_rec_num(&rec, "span", "%" PRIu64, c->span);
	kit_rec_num(&rec, "signal_last", "%s",
		    c->signal_last ? "true" : "false");
	kit_rec_num(&rec, "seconds", "%.3f", secs);
	kit_rec_num(&rec, "ops", "%" PRIu64, ops);
	kit_rec_num(&rec, "mops", "%.4f", mops);
	kit_rec_num(&rec, "mb_per_s", "%.3f", mops * 8);
	kit_rec_provenance(&rec, &c->com);
	kit_rec_json(&rec, stdout);
}

int main(int argc, char **argv)
{
	struct fl_cfg cfg;
	struct fl_sched s;
	struct kit_runner run;
	struct fl_thread ft = { &s, &run };
	struct kit_cli cli = {
		.tool = TOOL,
		.synopsis = TOOL " [flags]",
		.about =
			"  The floor of a one-sided 8-B READ: smart-perf's work "
			"(random offsets,\n  coroutines, a send ring, a poller "
			"that checks, copies and completes,\n  the dispatch) "
			"with nothing else: no library, no stats.\n",
		.group = { { fl_flags, &cfg, NULL } },
	};
	uint64_t t0, t1;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	kit_common_init(&cfg.com, TOOL);
	cfg.depth = 8;
	cfg.batch = 1;
	cfg.span = 64 << 20;
	kit_common_command(&cfg.com, argc, argv, 1);
	kit_parse(&cli, argc, argv);
	/* the region is touched page by page: more than the memory free
	 * would end in the OOM killer or a SIGBUS, not in an error */
	if (kit_mem_available() && cfg.span > kit_mem_available())
		kit_bad(TOOL, "span", NULL,
			"%" PRIu64 " MiB, more than the memory free (%" PRIu64
			" MiB)",
			cfg.span >> 20, kit_mem_available() >> 20);
	memset(&s, 0, sizeof(s));
	memset(&run, 0, sizeof(run));
	s.run = &run;
	rc = fl_setup(&s, &cfg);
	if (!rc)
		rc = kit_runner_start(&run, 1, fl_thread_main, &ft, sizeof(ft));
	if (rc) {
		fprintf(stderr, TOOL ": setup: %s\n", smart_strerror(rc));
		fl_free(&s);
		return 1;
	}
	kit_runner_wait_ready(&run, NULL);
	t0 = smart_now_ns();
	kit_runner_set(&run, KIT_RUN);
	kit_signal_wait(cfg.com.seconds);
	kit_runner_set(&run, KIT_STOP);
	t1 = smart_now_ns();
	kit_runner_join(&run);
	if (s.err) {
		fprintf(stderr,
			TOOL ": a READ completed with status %u; %" PRIu64
			     " ops had succeeded; no result reported\n",
			s.err, s.ops);
		fl_free(&s);
		return 1;
	}
	fl_report(&cfg, s.ops, (double)(t1 - t0) / 1e9);
	fl_free(&s);
	return 0;
}
