/*
 * YCSB's load: T threads, each with its own worker and C coroutines;
 * every coroutine keeps one operation in flight.  All coroutines first
 * insert the N keys (the preload, unless the run joins a table), then
 * the workload's mix runs for the measured window, or the sweep makes
 * its one pass over the keys.  Keys and values as in ycsb.h.
 *
 * Every op is metered where it runs, in its task: its latency (one clock
 * read per op: the end of one op is the start of the next) for the
 * maximum, a sample of one op in KIT_LAT_SAMPLE for the quantiles, and
 * the round trips the task waited for inside it (one
 * smart_task_round_trips per op, the same carry-over), so the counts need
 * neither locks nor shared writes.
 *
 * Invariants: a thread goes through the kit's phases (prepare and
 * preload, run, stop); its coroutines write only its struct ycsb_thread;
 * D's inserts take fresh keys from ins_next and `acked` only moves over
 * keys whose insert has finished, so a "latest" read never asks for a key
 * that is not in yet.
 */
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ycsb.h"

/* The last reading of the task's clock and round-trip counters. */
struct op_meter {
	uint64_t n, t, rt, rt_alloc, bytes;
};

struct ycsb_task {
	struct ycsb_thread *th;
	int idx; /* in its thread */
	smart_rng_t rng;
	struct op_meter m;
	uint64_t due, period; /* --target: the next op's start, in cycles */
	char key[256];
	uint8_t *val, *rval;
	struct ycsb_kv *kv; /* E: a scan's entries and their bytes */
	/* churn: the task's own inserted keys still present, oldest first
	 * (a ring): only this task deletes them, so each delete must find
	 * its key */
	uint64_t own[YCSB_CHURN_OWN];
	unsigned own_first, own_n;
	uint8_t *sbuf;
	size_t sbuf_cap; /* bytes at sbuf: YCSB_SCAN_MAX entries */
};

/* ---- keys and values ---- */

/* Key k: preloaded below y->keys, else new key k - keys of this client. */
/* "%0*llu" without printf (which took a tenth of a YCSB-C search's CPU
 * time): v in decimal, zero-padded to width; returns the end. */
static char *dec_pad(char *out, uint64_t v, int width)
{
	char tmp[24];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (width-- > n)
		*out++ = '0';
	while (n)
		*out++ = tmp[--n];
	*out = 0;
	return out;
}

static void key_render(const struct ycsb *y, uint64_t k, char *out)
{
	if (k < y->keys) {
		memcpy(out, "user", 4);
		dec_pad(out + 4, k, y->key_size - 4);
	} else {
		memcpy(out, y->new_prefix, (size_t)y->new_prefix_len);
		dec_pad(out + y->new_prefix_len, k - y->keys, y->new_digits);
	}
}

static uint32_t value_crc(const char *key, size_t klen, const uint8_t *v,
			  size_t n)
{
	return smart_crc32c(smart_crc32c(0, key, klen), v, n);
}

static void value_make(struct ycsb_task *t, unsigned size)
{
	unsigned n = size - 4, i;
	uint32_t crc;

	for (i = 0; i < n; i += 8) {
		uint64_t r = smart_rng_next(&t->rng);

		memcpy(t->val + i, &r, n - i < 8 ? n - i : 8);
	}
	crc = value_crc(t->key, strlen(t->key), t->val, n);
	memcpy(t->val + n, &crc, 4);
}

static int kv_ok(const void *key, size_t klen, const uint8_t *v, size_t len,
		 unsigned size)
{
	uint32_t crc;

	if (len != size)
		return 0;
	memcpy(&crc, v + size - 4, 4);
	return crc == value_crc(key, klen, v, size - 4);
}

static int value_ok(const struct ycsb_task *t, size_t len, unsigned size)
{
	return kv_ok(t->key, strlen(t->key), t->rval, len, size);
}

/* ---- key choice ---- */

/* Scrambled Zipf, as YCSB: the Zipf rank is hashed over the key space so
 * that the hot keys are spread over the table instead of being 0, 1, ... */
static uint64_t key_existing(struct ycsb *y, smart_rng_t *r)
{
	if (y->uniform)
		return smart_rng_below(r, y->keys);
	return smart_hash64(&(uint64_t){ smart_zipf_next(&y->zipf_gen, r) }, 8,
			    y->run->com.seed) %
	       y->keys;
}

/* D's "latest": rank 0 is the newest fully inserted key. */
static uint64_t key_latest(struct ycsb *y, smart_rng_t *r)
{
	uint64_t top = atomic_load_explicit(&y->acked, memory_order_acquire);
	uint64_t d = y->uniform ? smart_rng_below(r, top) :
				  smart_zipf_next(&y->zipf_gen, r) % top;

	return top - 1 - d;
}

/* D: mark insert k finished; whoever gets the lock advances `acked`
 * over the finished prefix (a late mark waits for the next insert).  A
 * slot holds the key it marks, plus 1: a key finishing a whole window
 * after an unfinished one cannot pass for it. */
static void insert_ack(struct ycsb *y, uint64_t k)
{
	uint64_t a;

	atomic_store(&y->ack_done[k % YCSB_ACK_WINDOW], k + 1);
	if (atomic_flag_test_and_set(&y->ack_lock))
		return;
	a = atomic_load(&y->acked);
	while (atomic_load(&y->ack_done[a % YCSB_ACK_WINDOW]) == a + 1)
		a++;
	atomic_store_explicit(&y->acked, a, memory_order_release);
	atomic_flag_clear(&y->ack_lock);
}

/* ---- operations ---- */

static int op_read(struct ycsb *y, smart_worker_t *w, struct ycsb_task *t,
		   uint64_t k)
{
	size_t len = 0;
	int rc;

	key_render(y, k, t->key);
	rc = y->dsi->search(y->h, w, t->key, (size_t)y->key_size, t->rval,
			    (size_t)y->value_size + 64, &len);
	if (!rc && !value_ok(t, len, (unsigned)y->value_size))
		t->th->vfail++;
	return rc;
}

static int op_write(struct ycsb *y, smart_worker_t *w, struct ycsb_task *t,
		    uint64_t k, int insert)
{
	size_t kl = (size_t)y->key_size, vl = (size_t)y->value_size;

	key_render(y, k, t->key);
	value_make(t, (unsigned)y->value_size);
	return insert ? y->dsi->insert(y->h, w, t->key, kl, t->val, vl) :
			y->dsi->update(y->h, w, t->key, kl, t->val, vl);
}

/* A new key that does not fit the key size would be cut short and
 * collide: the insert fails instead. */
static int op_insert_new(struct ycsb *y, smart_worker_t *w, struct ycsb_task *t)
{
	uint64_t k = atomic_fetch_add(&y->ins_next, 1);
	int rc = k - y->keys < y->new_max ? op_write(y, w, t, k, 1) :
					    SMART_ERANGE;

	if (y->w->latest) /* only D's reads look for them */
		insert_ack(y, k);
	if (!rc && y->w->churn)
		t->own[(t->own_first + t->own_n++) % YCSB_CHURN_OWN] = k;
	return rc;
}

/* churn: delete the task's oldest own key; it must be there. */
static int op_delete_own(struct ycsb *y, smart_worker_t *w, struct ycsb_task *t)
{
	uint64_t k = t->own[t->own_first];

	t->own_first = (t->own_first + 1) % YCSB_CHURN_OWN;
	t->own_n--;
	key_render(y, k, t->key);
	return y->dsi->del(y->h, w, t->key, (size_t)y->key_size);
}

/* churn: a delete with nothing of its own to delete inserts instead, an
 * insert with the ring full deletes instead. */
static enum ycsb_op churn_pick(const struct ycsb_task *t, enum ycsb_op op)
{
	if (op == OP_DELETE && !t->own_n)
		return OP_INSERT;
	if (op == OP_INSERT && t->own_n == YCSB_CHURN_OWN)
		return OP_DELETE;
	return op;
}

/* E: a scan of 1..YCSB_SCAN_MAX entries from an existing key.  The
 * check: new keys ("u<client>-...") sort before every preloaded one
 * ("user..."), and no key is ever deleted, so the entries must be exactly
 * the preloaded keys k, k+1, ... (as many as asked, or up to the last),
 * each value whole and written for its key.  A miss, a duplicate, a key
 * out of order or a torn value is a validation failure. */
static int op_scan(struct ycsb *y, smart_worker_t *w, struct ycsb_task *t)
{
	unsigned max = 1 + (unsigned)smart_rng_below(&t->rng, YCSB_SCAN_MAX);
	uint64_t k = key_existing(y, &t->rng);
	unsigned n = 0, i, want;
	size_t kl = (size_t)y->key_size;
	char key[256];
	int rc;

	key_render(y, k, t->key);
	rc = y->dsi->scan(y->h, w, t->key, kl, max, t->kv, t->sbuf, t->sbuf_cap,
			  &n);
	if (rc)
		return rc;
	want = y->keys - k < max ? (unsigned)(y->keys - k) : max;
	if (n != want)
		t->th->vfail++;
	for (i = 0; i < n && n == want; i++) {
		key_render(y, k + i, key);
		if (t->kv[i].klen != kl || memcmp(t->kv[i].key, key, kl) ||
		    !kv_ok(key, kl, t->kv[i].val, t->kv[i].vlen,
			   (unsigned)y->value_size)) {
			t->th->vfail++;
			break;
		}
	}
	t->th->scanned += n;
	return 0;
}

static enum ycsb_op op_pick(const struct ycsb_workload *wl, smart_rng_t *r)
{
	int x = (int)smart_rng_below(r, 100), i;

	for (i = 0; i < OP__N - 1; i++) {
		if (x < wl->pct[i])
			return (enum ycsb_op)i;
		x -= wl->pct[i];
	}
	return (enum ycsb_op)i;
}

static int op_one(struct ycsb *y, smart_worker_t *w, struct ycsb_task *t,
		  enum ycsb_op op)
{
	uint64_t k;
	int rc;

	switch (op) {
	case OP_READ:
		k = y->w->latest ? key_latest(y, &t->rng) :
				   key_existing(y, &t->rng);
		return op_read(y, w, t, k);
	case OP_UPDATE:
		return op_write(y, w, t, key_existing(y, &t->rng), 0);
	case OP_INSERT:
		return op_insert_new(y, w, t);
	case OP_SCAN:
		return op_scan(y, w, t);
	case OP_DELETE:
		return op_delete_own(y, w, t);
	default: /* OP_RMW */
		k = key_existing(y, &t->rng);
		rc = op_read(y, w, t, k);
		return rc ? rc : op_write(y, w, t, k, 0);
	}
}

static void count_err(struct ycsb_thread *th, int rc)
{
	if (!th->errors++)
		th->first_err = rc;
}

static void meter_start(struct op_meter *m, smart_worker_t *w)
{
	m->n = 0;
	m->rt = smart_task_round_trips(w, &m->rt_alloc);
	m->bytes = smart_task_bytes(w);
	m->t = smart_cycles();
}

/* A successful op's latency d (cycles), before it is counted: its kind's
 * exact min, max and sum, and one op in KIT_LAT_SAMPLE into the
 * histograms. */
static void meter_lat(struct ycsb_thread *th, struct op_meter *m,
		      enum ycsb_op op, uint64_t d)
{
	if (d > th->max_cycles)
		th->max_cycles = d;
	if (!th->ops[op] || d < th->lat_min[op])
		th->lat_min[op] = d;
	if (d > th->lat_max[op])
		th->lat_max[op] = d;
	th->lat_sum[op] += d;
	if (!(m->n++ & (KIT_LAT_SAMPLE - 1)))
		smart_hist_add(&th->hist, d);
	/* each kind sampled by its own count, from its first op on: a rare
	 * kind (a few deletes) has quantiles too, never a 0 of no sample */
	if (!(th->ops[op] & (KIT_LAT_SAMPLE - 1)))
		smart_hist_add(&th->lat[op], d);
}

/* The op of kind `op` that began at the last reading has ended with rc:
 * count it, its latency and its round trips.  A failed op counts as an
 * error only (neither an op of the rate nor a latency), and one that
 * says the run cannot go on (kit_fatal: the blade is gone) stops the run
 * for every thread. */
static void meter_op(struct ycsb_task *t, smart_worker_t *w, enum ycsb_op op,
		     int rc)
{
	struct ycsb_thread *th = t->th;
	struct op_meter *m = &t->m;
	uint64_t now = smart_cycles(), a, rt = smart_task_round_trips(w, &a);
	uint64_t bytes = smart_task_bytes(w);

	if (!rc || SMART_M_TOOL_COUNT_FAILED) {
		meter_lat(th, m, op, now - m->t);
		th->rt[op] += rt - m->rt;
		th->rt_alloc[op] += a - m->rt_alloc;
		th->bytes[op] += bytes - m->bytes;
		th->ops[op]++;
	}
	m->t = now;
	m->rt = rt;
	m->rt_alloc = a;
	m->bytes = bytes;
	if (rc)
		count_err(th, rc);
	if (kit_fatal(rc) && !SMART_M_TOOL_NO_FATAL_STOP)
		kit_runner_fail(&th->y->runner, rc);
}

/* --ops: one more op of the run's count may start. */
static int op_take(struct ycsb *y)
{
	return !y->ops_max ||
	       atomic_fetch_add_explicit(&y->op_next, 1, memory_order_relaxed) <
		       y->ops_max;
}

/* --target: each coroutine starts an op every threads * coros / target
 * seconds, on a schedule (a late op does not move the next one); the
 * wait is not the op's latency: its clock starts after it. */
static void pace(struct ycsb_task *t, smart_worker_t *w)
{
	struct ycsb *y = t->th->y;

	if (!t->period)
		return;
	if (!t->due)
		t->due = smart_cycles() +
			 t->period / (uint64_t)y->coros * (uint64_t)t->idx;
	while (smart_cycles() < t->due && !kit_runner_stopping(&y->runner))
		smart_task_yield(w);
	t->due += t->period;
	t->m.t = smart_cycles();
}

static void run_task(smart_worker_t *w, void *arg)
{
	struct ycsb_task *t = arg;
	struct ycsb *y = t->th->y;
	enum ycsb_op op;

	if (y->target > 0)
		t->period = (uint64_t)(smart_cycles_per_sec() *
				       y->run->com.threads * y->coros /
				       y->target);
	meter_start(&t->m, w);
	while (!kit_runner_stopping(&y->runner) && op_take(y)) {
		pace(t, w);
		op = op_pick(y->w, &t->rng);
		if (y->w->churn)
			op = churn_pick(t, op);
		meter_op(t, w, op, op_one(y, w, t, op));
	}
}

/* One step of the sweep's scan: the entries of kv[0..n) after `last`
 * (klen bytes; the first one may be it again), each strictly above the
 * one before and whole; preloaded keys counted in *pre.  The entries
 * new, or -1 at the first entry that fails (a validation failure). */
static int scan_step(const struct ycsb *y, const struct ycsb_kv *kv, unsigned n,
		     char *last, uint64_t *pre)
{
	size_t kl = (size_t)y->key_size;
	int fresh = 0;

	for (unsigned i = 0; i < n; i++, fresh++) {
		int c = kv[i].klen == kl ? memcmp(kv[i].key, last, kl) : -1;

		if (!i && !c) {
			fresh--; /* the key it started from */
			continue;
		}
		if (c <= 0 || !kv_ok(kv[i].key, kl, kv[i].val, kv[i].vlen,
				     (unsigned)y->value_size))
			return -1;
		memcpy(last, kv[i].key, kl);
		*pre += !memcmp(last, "user", 4);
	}
	return fresh;
}

/* The sweep's last check (a structure with range scans): one scan of the
 * whole structure from "u" (every key of the run starts with it; the
 * run's own records, "#smart-bench:...", sort before and are not the
 * workload's), YCSB_SCAN_MAX entries at a time:
 * keys strictly ascending (a loop or a step back is a failure, never an
 * endless scan), every value whole and written for its key (the new keys
 * a killed client left too), and every preloaded key met exactly once. */
static void sweep_scan(struct ycsb *y, smart_worker_t *w, struct ycsb_task *t)
{
	size_t kl = (size_t)y->key_size;
	uint64_t pre = 0;
	unsigned n = YCSB_SCAN_MAX;
	char last[256];
	int rc = 0, fresh;

	memset(last, 0, kl);
	last[0] = 'u';
	while (n == YCSB_SCAN_MAX && !kit_runner_stopping(&y->runner)) {
		rc = y->dsi->scan(y->h, w, last, kl, YCSB_SCAN_MAX, t->kv,
				  t->sbuf, t->sbuf_cap, &n);
		fresh = rc ? 0 : scan_step(y, t->kv, n, last, &pre);
		if (rc || fresh < 0) {
			t->th->vfail += !rc;
			break;
		}
		t->th->scanned += (uint64_t)fresh;
	}
	if (rc)
		count_err(t->th, rc);
	else if (pre != y->keys && !kit_runner_stopping(&y->runner))
		t->th->vfail++;
}

/* The sweep: each key read (it must be there, whole) and then updated,
 * once, by whichever task takes it; then the first task scans the whole
 * structure (sweep_scan) where it can. */
static void sweep_task(smart_worker_t *w, void *arg)
{
	struct ycsb_task *t = arg;
	struct ycsb *y = t->th->y;
	uint64_t k;

	meter_start(&t->m, w);
	while (!kit_runner_stopping(&y->runner) &&
	       (k = atomic_fetch_add(&y->sweep_next, 1)) < y->keys) {
		meter_op(t, w, OP_READ, op_read(y, w, t, k));
		meter_op(t, w, OP_UPDATE, op_write(y, w, t, k, 0));
		atomic_fetch_add_explicit(&y->sweep.done, 1,
					  memory_order_relaxed);
	}
	if (y->dsi->scan && !t->idx && !t->th->idx)
		sweep_scan(y, w, t);
}

/* The bulk preload's input: keys 0.. in order (their order as keys too:
 * zero-padded), each with a fresh value, counted for the progress line. */
static int bulk_next(void *arg, const void **key, size_t *klen,
		     const void **val, size_t *vlen)
{
	struct ycsb_task *t = arg;
	struct ycsb *y = t->th->y;
	uint64_t k = atomic_load_explicit(&y->load.done, memory_order_relaxed);

	if (k == y->keys || kit_runner_stopping(&y->runner))
		return 0;
	key_render(y, k, t->key);
	value_make(t, (unsigned)y->value_size);
	*key = t->key;
	*klen = (size_t)y->key_size;
	*val = t->val;
	*vlen = (size_t)y->value_size;
	atomic_fetch_add_explicit(&y->load.done, 1, memory_order_relaxed);
	return 1;
}

/* One task of thread 0 loads the whole key space in one call. */
static void bulk_task(struct ycsb_task *t, smart_worker_t *w)
{
	struct ycsb *y = t->th->y;
	uint64_t loaded = 0;
	int rc;

	if (t->th->idx || t->idx)
		return;
	rc = y->dsi->bulk(y->h, w, bulk_next, t, &loaded);
	if (!rc && loaded != y->keys)
		rc = SMART_EAGAIN; /* stopped by a signal */
	if (rc)
		count_err(t->th, rc);
}

/* A key already there is a conflict of the preload's own (a retried
 * insert that had landed), not a reason to stop. */
static void load_task(smart_worker_t *w, void *arg)
{
	struct ycsb_task *t = arg;
	struct ycsb *y = t->th->y;
	uint64_t k;
	int rc;

	if (y->dsi->bulk) {
		bulk_task(t, w);
		return;
	}

	while (!kit_runner_stopping(&y->runner) &&
	       (k = atomic_fetch_add(&y->load_next, 1)) < y->keys) {
		rc = op_write(y, w, t, k, 1);
		if (rc) {
			count_err(t->th, rc);
			if (rc != SMART_EEXIST)
				break;
		}
		atomic_fetch_add_explicit(&y->load.done, 1,
					  memory_order_relaxed);
	}
}

/* ---- threads ---- */

static int spawn_all(struct ycsb_thread *th, smart_worker_t *w,
		     struct ycsb_task *tasks, smart_task_fn fn)
{
	int i, rc = 0;

	for (i = 0; !rc && i < th->y->coros; i++)
		rc = smart_task_spawn(w, fn, &tasks[i]);
	return rc ? rc : smart_worker_run(w);
}

static int tasks_init(struct ycsb_thread *th, struct ycsb_task *tasks)
{
	const struct ycsb *y = th->y;
	int i;

	for (i = 0; i < y->coros; i++) {
		tasks[i].th = th;
		tasks[i].idx = i;
		smart_rng_seed(&tasks[i].rng,
			       kit_task_seed(y->run->com.seed, th->idx, i));
		tasks[i].val = malloc((size_t)y->value_size);
		tasks[i].rval = malloc((size_t)y->value_size + 64);
		if (!tasks[i].val || !tasks[i].rval)
			return SMART_ENOMEM;
		if (!y->w->pct[OP_SCAN] && !(y->w->sweep && y->dsi->scan))
			continue;
		tasks[i].sbuf_cap = (size_t)YCSB_SCAN_MAX *
				    (size_t)(y->key_size + y->value_size);
		tasks[i].kv = calloc(YCSB_SCAN_MAX, sizeof(*tasks[i].kv));
		tasks[i].sbuf = malloc(tasks[i].sbuf_cap);
		if (!tasks[i].kv || !tasks[i].sbuf)
			return SMART_ENOMEM;
	}
	return 0;
}

static void tasks_free(struct ycsb_task *tasks, int n)
{
	int i;

	for (i = 0; tasks && i < n; i++) {
		free(tasks[i].val);
		free(tasks[i].rval);
		free(tasks[i].kv);
		free(tasks[i].sbuf);
	}
	free(tasks);
}

static void *thread_main(void *arg)
{
	struct ycsb_thread *th = arg;
	struct ycsb *y = th->y;
	struct ycsb_task *tasks = calloc((size_t)y->coros, sizeof(*tasks));
	smart_worker_t *w = NULL;
	int rc = tasks ? tasks_init(th, tasks) : SMART_ENOMEM;

	if (!rc)
		rc = smart_worker_create(y->run->env.ctx, &w);
	if (!rc && !y->no_preload)
		rc = spawn_all(th, w, tasks, load_task);
	kit_runner_ready(&y->runner);
	if (kit_runner_await(&y->runner, KIT_RUN) == KIT_RUN && !rc) {
		kit_count_begin();
		rc = spawn_all(th, w, tasks,
			       y->w->sweep ? sweep_task : run_task);
		kit_count_end();
	}
	atomic_fetch_sub(&y->running, 1);
	/* free what this worker retired before it goes (the keeper would,
	 * later): the report counts blocks freed at the end of the run; a
	 * run stopped by a lost blade has nothing to wait for */
	for (int i = 0;
	     w && !kit_runner_failed(&y->runner) && i < y->run->env.nblades;
	     i++)
		(void)smart_epoch_drain(w, y->run->env.blade[i], 2000);
	smart_worker_destroy(w);
	tasks_free(tasks, y->coros);
	th->rc = rc;
	return NULL;
}

/* ---- the run ---- */

static int load_errors(const struct ycsb *y)
{
	const struct ycsb_thread *th;
	int i, rc;

	for (i = 0; i < y->run->com.threads; i++) {
		th = &y->t[i];
		if (!th->rc && !th->errors)
			continue;
		rc = th->rc ? th->rc : th->first_err;
		fprintf(stderr,
			BENCH_TOOL ": preload failed: %s (%" PRIu64
				   " errors)\n",
			smart_strerror(rc), th->errors);
		return rc;
	}
	return 0;
}

/* Round trips and bytes per op, of each kind and of all, and the slowest
 * op. */
static void rt_fill(struct ycsb *y, double ops)
{
	struct ycsb_result *r = &y->res;
	uint64_t rt[OP__N] = { 0 }, bytes[OP__N] = { 0 }, all = 0, alloc = 0;
	uint64_t max = 0;
	int i, k;

	for (i = 0; i < y->run->com.threads; i++) {
		for (k = 0; k < OP__N; k++) {
			rt[k] += y->t[i].rt[k];
			alloc += y->t[i].rt_alloc[k];
			bytes[k] += y->t[i].bytes[k];
		}
		if (y->t[i].max_cycles > max)
			max = y->t[i].max_cycles;
	}
	for (k = 0; k < OP__N; k++) {
		all += rt[k];
		r->rt[k] = r->n[k] ? (double)rt[k] / (double)r->n[k] : 0;
		r->bytes[k] = r->n[k] ? (double)bytes[k] / (double)r->n[k] : 0;
	}
	r->rt_per_op = (double)all / ops;
	r->alloc_rt_per_op = (double)alloc / ops;
	r->max_us = (double)max * 1e6 / smart_cycles_per_sec();
}

/* Each kind's latency: the quantiles from the merged samples, min, avg
 * and max exact. */
static void op_lat_fill(struct ycsb *y)
{
	double us = 1e6 / smart_cycles_per_sec();
	uint64_t min, max, sum;
	smart_hist_t h;
	int i, k;

	for (k = 0; k < OP__N; k++) {
		smart_hist_init(&h);
		min = UINT64_MAX, max = 0, sum = 0;
		for (i = 0; i < y->run->com.threads; i++) {
			const struct ycsb_thread *th = &y->t[i];

			smart_hist_merge(&h, &th->lat[k]);
			if (th->ops[k] && th->lat_min[k] < min)
				min = th->lat_min[k];
			max = th->lat_max[k] > max ? th->lat_max[k] : max;
			sum += th->lat_sum[k];
		}
		kit_lat_from_cycles(&h, &y->res.op_lat[k]);
		if (!y->res.n[k])
			continue;
		y->res.op_lat[k].min_us = (double)min * us;
		y->res.op_lat[k].max_us = (double)max * us;
		y->res.op_lat[k].avg_us = (double)sum / (double)y->res.n[k] *
					  us;
	}
}

static void result_fill(struct ycsb *y)
{
	const smart_stats_t *s = &y->win.st;
	struct ycsb_result *r = &y->res;
	smart_hist_t h;
	double ops;
	int i, k;

	smart_hist_init(&h);
	for (i = 0; i < y->run->com.threads; i++) {
		for (k = 0; k < OP__N; k++)
			r->n[k] += y->t[i].ops[k];
		r->errors += y->t[i].errors;
		r->vfail += y->t[i].vfail;
		r->scanned += y->t[i].scanned;
		if (y->t[i].errors && !r->first_err)
			r->first_err = y->t[i].first_err;
		if (y->t[i].rc && !r->first_err)
			r->first_err = y->t[i].rc;
		smart_hist_merge(&h, &y->t[i].hist);
	}
	for (k = 0; k < OP__N; k++)
		r->ops += r->n[k];
	ops = r->ops ? (double)r->ops : 1;
	r->mops = (double)r->ops / y->win.secs / 1e6;
	kit_lat_from_cycles(&h, &r->lat);
	op_lat_fill(y);
	rt_fill(y, ops);
	r->retries_per_op = (double)s->c[SMART_STAT_RETRIES] / ops;
	r->rdma_ops_per_op = (double)(s->c[SMART_STAT_READS] +
				      s->c[SMART_STAT_WRITES] +
				      s->c[SMART_STAT_CASES] +
				      s->c[SMART_STAT_FAAS]) /
			     ops;
	r->bytes_per_op = (double)(s->c[SMART_STAT_BYTES_READ] +
				   s->c[SMART_STAT_BYTES_WRITTEN]) /
			  ops;
}

/* Where the blades' memory is, summed over them. */
void ycsb_mem_fill(struct ycsb *y)
{
	const struct kit_env *e = &y->run->env;
	struct smart_alloc_usage u, *m = &y->res.mem;
	int i;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < e->nblades; i++) {
		if (smart_alloc_usage(y->main_worker, e->blade[i], &u))
			return;
		m->size += u.size;
		m->reserved += u.reserved;
		m->unclaimed += u.unclaimed;
		m->pooled += u.pooled;
		m->cached += u.cached;
		m->used += u.used;
		m->free += u.free;
		m->clients = u.clients > m->clients ? u.clients : m->clients;
		m->fenced += u.fenced;
	}
	y->res.mem_ok = 1;
}

/* The preload's errors are counted apart: the window starts from zero.
 * A table this run made and preloaded gets its key space recorded, so
 * that others may join it. */
static int preload(struct ycsb *y)
{
	int i, rc, sig;

	sig = kit_runner_wait_ready(&y->runner,
				    y->no_preload ? NULL : &y->load);
	rc = load_errors(y);
	if (!rc && sig) {
		fprintf(stderr,
			BENCH_TOOL ": stopped by signal %d before the "
				   "run\n",
			sig);
		rc = SMART_EAGAIN;
	}
	for (i = 0; !rc && i < y->run->com.threads; i++)
		y->t[i].errors = 0, y->t[i].first_err = 0;
	if (!rc && y->table && !y->joined) {
		rc = ycsb_share_publish(y, y->main_worker);
		if (!rc)
			fprintf(stderr,
				"table %s: preloaded; others may join "
				"it (--table %s --no-preload)\n",
				y->table, y->table);
	}
	return rc;
}

/* SMART_BENCH_TEST_LATE, a test hook: the main thread lets every
 * worker finish its share before it goes on, as a preempted main thread
 * would, so that whatever it does after the start is tested as coming
 * late.  Only for the runs that end by themselves (the sweep, --ops). */
static void late_hook(struct ycsb *y)
{
	if (!y->w->sweep && !y->ops_max)
		return;
	while (atomic_load(&y->running) > 0)
		sched_yield();
}

/* The sweep's window, and --ops', lasts until every thread has made its
 * share (a stop signal cuts it short: the report then fails a sweep). */
static int done_wait(struct ycsb *y)
{
	int sig = 0;

	while (atomic_load(&y->running) > 0) {
		if (!sig && (sig = kit_signal_wait(0.01)))
			kit_runner_set(&y->runner, KIT_STOP);
		if (y->w->sweep)
			kit_progress_tick(&y->sweep);
	}
	if (y->w->sweep)
		kit_progress_end(&y->sweep);
	y->res.swept = atomic_load(&y->sweep.done);
	return sig;
}

/* A run stopped by a fatal error (kit_fatal) reports no result, and says
 * so with how many ops had succeeded (kit_runner_stopped). */
static int stopped(struct ycsb *y, int rc)
{
	uint64_t ok = 0;

	for (int i = 0; i < y->run->com.threads; i++)
		for (int k = 0; k < OP__N; k++)
			ok += y->t[i].ops[k];
	kit_runner_stopped(&y->runner, &y->win, y->run->com.seconds,
			   &y->run->env, BENCH_TOOL, "ycsb", rc, ok,
			   "operations had succeeded");
	return rc;
}

int ycsb_run(void *m, struct bench_run *r)
{
	struct ycsb *y = m;
	smart_ctx_t *ctx = r->env.ctx;
	smart_stats_t end;
	int i, rc;

	for (i = 0; i < r->com.threads; i++) {
		y->t[i].y = y;
		y->t[i].idx = i;
		smart_hist_init(&y->t[i].hist);
	}
	atomic_store(&y->ins_next, y->keys);
	atomic_store(&y->acked, y->keys);
	atomic_store(&y->running, r->com.threads);
	kit_progress_start(&y->load, "preload", "keys", y->keys);
	rc = kit_runner_start(&y->runner, r->com.threads, thread_main, y->t,
			      sizeof(*y->t));
	if (rc) {
		fprintf(stderr, BENCH_TOOL ": starting the threads: %s\n",
			smart_strerror(rc));
		return rc;
	}
	rc = preload(y);
	if (!rc) {
		kit_window_open(&y->win, ctx);
		/* before the workers run: a start after would zero the keys
		 * they had already swept (test_bench:bt-sweep-late) */
		if (y->w->sweep)
			kit_progress_start(&y->sweep, "sweep", "keys", y->keys);
		kit_runner_set(&y->runner, KIT_RUN);
		if (getenv("SMART_BENCH_TEST_LATE"))
			late_hook(y);
		y->res.stop_sig = y->w->sweep || y->ops_max ?
					  done_wait(y) :
					  kit_window_sleep(&y->win, ctx,
							   &y->runner,
							   r->com.seconds);
	}
	kit_runner_set(&y->runner, KIT_STOP);
	kit_window_end(&y->win);
	kit_runner_join(&y->runner);
	if (rc)
		return rc;
	rc = kit_runner_failed(&y->runner);
	if (rc)
		return stopped(y, rc);
	if (y->res.stop_sig)
		fprintf(stderr,
			BENCH_TOOL ": the window ended by signal %d "
				   "after %.2f s\n",
			y->res.stop_sig, y->win.secs);
	kit_window_close(&y->win, ctx);
	result_fill(y);
	/* reclamation over the whole run, after the workers drained */
	if (!smart_stats_snapshot(ctx, &end)) {
		y->res.retired = end.c[SMART_STAT_EPOCH_RETIRED];
		y->res.freed = end.c[SMART_STAT_EPOCH_FREED];
	}
	return 0;
}
