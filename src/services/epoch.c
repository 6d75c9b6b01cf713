/*
 * Epoch-based reclamation in the core (include/smart/epoch.h; docs/design.md
 * §5.4; docs/epochs.md has the safety argument).
 *
 * Remote state per domain (a blade's epoch table, src/wire/services.h):
 * the global epoch G and 1024 announcement words client:16 | ACTIVE |
 * epoch:47.  Local state per worker and domain (struct smart__ebr): the
 * worker's word, the tasks inside in entry order, the G it last learnt,
 * and its retired blocks.
 *
 * A task entering takes the worker's cached G as its epoch; tasks enter in
 * non-decreasing epoch order, so the oldest task inside, the head of the
 * list, holds the worker's minimum.  The word says ACTIVE | e with e <=
 * that minimum whenever a task is inside.  It is rewritten only when the
 * worker goes from idle to active (e = the entering task's epoch), from
 * active to idle, or when its oldest task left and G has moved past e
 * (advance to the new minimum), and every 64 enters to learn G.  A rewrite
 * is queued as "dirty" and rides at the front of the first chain any task
 * of the worker posts to the domain blade (smart__ebr_prepend, called by
 * ops.c): WRITE word, READ G.  So every read of the domain blade a task
 * posts after entering executes after its announcement (RC order on the
 * worker's QP; a new QP gets the word again first), and no enter costs a
 * round trip.  Going idle is posted at once by the exiting task, without
 * waiting (the main context waits: nothing may poll for it later).
 *
 * Retire appends (addr, size, r = 0) to the worker's list.  A scan (by a
 * task leaving its section, or the keeper for orphans) FAAs G, getting g,
 * and reads all words in the same batch (a task posts it without waiting:
 * its next sync waits for it along with its next operation's first reads,
 * so a scan costs no round trip of its own, and a later exit uses the
 * results); the entries present when it was
 * issued and still undated get r = g, which is >= G when they were
 * unlinked; an entry is freed when r < every ACTIVE word of a live client
 * (dead clients' words are taken back).  Lists hold at most EBR_CAP
 * entries; the oldest half goes to the ctx's orphans (the keeper's) beyond
 * that, and everything left when a worker is destroyed.
 *
 * Invariants: only the owner thread touches a struct smart__ebr; tasks
 * interleave only at syncs, so every multi-step change below is done
 * between syncs or guarded by `claiming` / `scanning`.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/core.h"
#include "services/lease.h"
#include "services/svc.h"
#include "util/mutant.h"
#include "wire/services.h"

#define EBR_CAP	      4096	 /* retired entries per worker and domain */
#define EBR_BATCH     64	 /* retired since the last scan: scan now */
#define EBR_LEARN     63	 /* read G along every 64th enter */
#define EBR_NONE      UINT64_MAX /* no word written yet */
#define EBR_FREE_STEP 64	 /* blocks freed per pass of a scan */

struct ebr_ret {
	uint64_t addr; /* gaddr */
	uint64_t size;
	uint64_t r; /* G at or after the unlink; 0 = not yet */
};

struct smart__ebr {
	struct smart__blade *b;
	int slot; /* announcement word, -1 = none */
	int claiming, scanning, dirty;
	uint64_t word;			 /* the word as (to be) written */
	uint64_t pub;			 /* the word as last queued */
	uint64_t gcache;		 /* largest G learnt */
	uint64_t *gbuf;			 /* registered: G read back here */
	struct smart__task *head, *tail; /* tasks inside */
	int active;
	unsigned enters;
	struct ebr_ret *ret;
	size_t n, since_scan;
	/* a scan posted by a task without waiting (ebr_scan_post): its
	 * results land in scan_buf (G, then the table) and are used once
	 * that task completed a sync after posting */
	uint64_t *scan_buf; /* registered, 8 + 8 * SLOTS bytes */
	struct smart__task *scan_task;
	uint64_t scan_mark; /* scan_task->syncs when posted */
	uint64_t scan_errs; /* scan_task->sync_errors then */
	size_t scan_n0;	    /* entries present when posted */
	int scan_posted;
};

static uint64_t ebr_epoch_of(uint64_t word)
{
	return word & SMART_EPOCH_MASK;
}

static void ebr_mark_dirty(struct smart_worker *w, struct smart__ebr *d)
{
	if (!d->dirty) {
		d->dirty = 1;
		w->ebr_dirty++;
	}
}

static uint64_t ebr_learn(struct smart__ebr *d)
{
	uint64_t g = __atomic_load_n(d->gbuf, __ATOMIC_RELAXED);

	if (g > d->gcache)
		d->gcache = g;
	return d->gcache;
}

static struct smart__ebr *ebr_get(struct smart_worker *w, uint16_t blade)
{
	struct smart__blade *b = smart__blade_get(w->ctx, blade);
	struct smart__ebr *d;

	if (!b)
		return NULL;
	d = w->ebr[blade];
	if (d)
		return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->ret = malloc(EBR_CAP * sizeof(*d->ret));
	if (!d->ret || smart_buf_alloc(w, 8, (void **)&d->gbuf)) {
		free(d->ret);
		free(d);
		return NULL;
	}
	/* now, not on an operation's path */
	if (smart_buf_alloc(w, 8 + 8 * SMART_EPOCH_SLOTS,
			    (void **)&d->scan_buf))
		d->scan_buf = NULL; /* scans are then waited for */
	*d->gbuf = 1;
	d->b = b;
	d->slot = -1;
	d->word = d->pub = EBR_NONE;
	d->gcache = 1;
	w->ebr[blade] = d;
	return d;
}

/* Is the client of announcement word v dead?  Its word goes back. */
static int ebr_owner_dead(struct smart_worker *w, struct smart__ebr *d,
			  uint64_t v)
{
	uint16_t id = (uint16_t)(v >> 48);

	return id != d->b->lease_id && smart_lease_alive(w, d->b->id, id) == 0;
}

/* Take an announcement word: a free one, or one a dead client left. */
static int ebr_claim(struct smart_worker *w, struct smart__ebr *d)
{
	uint64_t *tab, old, mine = smart_epoch_word(d->b->lease_id, 0, 0);
	size_t mark = smart_scratch_mark(w);
	int rc, i;

	rc = smart_scratch_alloc(w, 8 * SMART_EPOCH_SLOTS, (void **)&tab);
	if (!rc)
		rc = smart_read_sync(w,
				     smart_gaddr(d->b->id,
						 SMART_EPOCH_ANN_OFF(0)),
				     8 * SMART_EPOCH_SLOTS, tab);
	for (i = 0; !rc && i < SMART_EPOCH_SLOTS; i++) {
		if (tab[i] && !ebr_owner_dead(w, d, tab[i]))
			continue;
		rc = smart_cas_sync(w,
				    smart_gaddr(d->b->id,
						SMART_EPOCH_ANN_OFF(i)),
				    tab[i], mine, &old);
		if (!rc && old == tab[i]) {
			d->slot = i;
			d->word = d->pub = mine;
			break;
		}
	}
	smart_scratch_release(w, mark);
	if (!rc && d->slot < 0)
		rc = SMART_ENOSPC;
	return rc;
}

int smart_epoch_enter(smart_worker_t *w, uint16_t blade)
{
	struct smart__task *t;
	struct smart__ebr *d;
	int rc;

	if (!w)
		return SMART_EINVAL;
	t = smart__cur_task(w);
	if (t->ebr_dom) {
		if (t->ebr_dom->b->id != blade)
			return SMART_EINVAL;
		t->ebr_depth++;
		return 0;
	}
	d = ebr_get(w, blade);
	if (!d)
		return smart__blade_get(w->ctx, blade) ? SMART_ENOMEM :
							 SMART_ENOENT;
	while (d->claiming) /* another task claims the word */
		smart_task_yield(w);
	if (d->slot < 0) {
		d->claiming = 1;
		rc = ebr_claim(w, d);
		d->claiming = 0;
		if (rc)
			return rc;
	}
	t->ebr_dom = d;
	t->ebr_depth = 1;
	t->ebr_epoch = ebr_learn(d);
	t->ebr_next = NULL;
	t->ebr_prev = d->tail;
	if (d->tail)
		d->tail->ebr_next = t;
	else
		d->head = t;
	d->tail = t;
	if (d->active++ == 0) {
		d->word = smart_epoch_word(d->b->lease_id, 1, t->ebr_epoch);
		ebr_mark_dirty(w, d);
	} else if (!(++d->enters & EBR_LEARN)) {
		ebr_mark_dirty(w, d); /* same word again, and G back */
	}
	SMART_STAT_INC(w, SMART_STAT_EPOCH_ENTERS);
	return 0;
}

/* Hand the oldest half of the list to the keeper (bounded lists). */
static void ebr_to_orphans(struct smart_worker *w, struct smart__ebr *d,
			   size_t k)
{
	struct smart_ctx *ctx = w->ctx;
	size_t i;

	pthread_mutex_lock(&ctx->orphan_lock);
	for (i = 0; i < k; i++) {
		struct smart__orphan *o;

		if (ctx->norphans == ctx->orphan_cap) {
			size_t cap = ctx->orphan_cap ? 2 * ctx->orphan_cap :
						       1024;
			void *p = realloc(ctx->orphans, cap * sizeof(*o));

			if (!p)
				break; /* leaked: counted below */
			ctx->orphans = p;
			ctx->orphan_cap = cap;
		}
		o = &ctx->orphans[ctx->norphans++];
		*o = (struct smart__orphan){ d->b->id, d->ret[i].addr,
					     d->ret[i].size, d->ret[i].r };
	}
	pthread_mutex_unlock(&ctx->orphan_lock);
	if (i < k)
		SMART_STAT_ADD(w, SMART_STAT_EPOCH_LEAKED, k - i);
	memmove(d->ret, d->ret + k, (d->n - k) * sizeof(*d->ret));
	d->n -= k;
	smart__keeper_kick(ctx);
}

int smart_epoch_retire(smart_worker_t *w, uint16_t blade, smart_gaddr_t addr,
		       size_t size)
{
	struct smart__ebr *d;

	if (!w || !size || addr == SMART_GADDR_NULL || smart_gaddr_is_dm(addr))
		return SMART_EINVAL; /* device memory: smart_dm_free */
	d = ebr_get(w, blade);
	if (!d)
		return smart__blade_get(w->ctx, blade) ? SMART_ENOMEM :
							 SMART_ENOENT;
	if (d->n == EBR_CAP && !d->scanning)
		ebr_to_orphans(w, d, EBR_CAP / 2);
	if (d->n == EBR_CAP)
		return SMART_ENOMEM; /* a scan holds the list: rare */
	d->ret[d->n++] = (struct ebr_ret){ addr, size, 0 };
	d->since_scan++;
	SMART_STAT_INC(w, SMART_STAT_EPOCH_RETIRED);
	return 0;
}

/* The smallest epoch announced by a live client, or UINT64_MAX. */
static uint64_t ebr_min(struct smart_worker *w, struct smart__ebr *d,
			const uint64_t *tab)
{
	uint64_t min = UINT64_MAX;
	int i;

	for (i = 0; i < SMART_EPOCH_SLOTS; i++) {
		uint64_t v = tab[i];

		if (!(v & SMART_EPOCH_ACTIVE))
			continue;
		if (!SMART_M_EBR_NO_TAKEBACK && ebr_owner_dead(w, d, v)) {
			/* taken back: a dead client stops nobody */
			(void)smart_cas_sync(
				w,
				smart_gaddr(d->b->id, SMART_EPOCH_ANN_OFF(i)),
				v, 0, NULL);
			SMART_STAT_INC(w, SMART_STAT_EPOCH_TAKEN_BACK);
			continue;
		}
		if (ebr_epoch_of(v) < min)
			min = ebr_epoch_of(v);
	}
	return min;
}

/* Queue a scan's reads: FAA G (into g), all announcement words (tab). */
static int ebr_scan_queue(struct smart_worker *w, struct smart__ebr *d,
			  uint64_t *g, uint64_t *tab)
{
	int rc = smart_faa(w, smart_gaddr(d->b->id, SMART_EPOCH_GLOBAL_OFF), 1,
			   g);

	if (!rc)
		rc = smart_read(w,
				smart_gaddr(d->b->id, SMART_EPOCH_ANN_OFF(0)),
				8 * SMART_EPOCH_SLOTS, tab);
	return rc;
}

/* A scan's second half, with its results: date the n0 entries present
 * when it was issued, free what no live announcement can hold.  Returns
 * the number of blocks freed. */
static int ebr_scan_finish(struct smart_worker *w, struct smart__ebr *d,
			   uint64_t g, const uint64_t *tab, size_t n0)
{
	struct ebr_ret freed[EBR_FREE_STEP];
	size_t i, k, nf, total = 0;
	uint64_t min;

	SMART_STAT_INC(w, SMART_STAT_EPOCH_SCANS);
	if (g + 1 > d->gcache)
		d->gcache = g + 1;
	for (i = 0; i < n0; i++)
		if (!d->ret[i].r)
			d->ret[i].r = g;
	min = ebr_min(w, d, tab);
	/* take the freeable out of the list a step at a time, before the
	 * frees (which may sync and let other tasks append) */
	do {
		for (i = k = nf = 0; i < d->n; i++) {
			if (nf < EBR_FREE_STEP && d->ret[i].r &&
			    (d->ret[i].r < min || SMART_M_EBR_NO_GRACE))
				freed[nf++] = d->ret[i];
			else
				d->ret[k++] = d->ret[i];
		}
		d->n = k;
		for (i = 0; i < nf; i++)
			if (smart_free(w, freed[i].addr, freed[i].size))
				SMART_STAT_INC(w, SMART_STAT_EPOCH_LEAKED);
		SMART_STAT_ADD(w, SMART_STAT_EPOCH_FREED, nf);
		total += nf;
	} while (nf == EBR_FREE_STEP);
	return (int)total;
}

/* One scan, waited for: advance G, date what was retired before, free
 * what no live announcement can hold.  Returns the number of blocks freed,
 * or < 0. */
static int ebr_scan(struct smart_worker *w, struct smart__ebr *d)
{
	uint64_t *tab, *g;
	size_t mark, n0;
	int rc, rc2;

	if (d->scanning)
		return 0;
	d->scanning = 1;
	d->since_scan = 0;
	n0 = d->n;
	mark = smart_scratch_mark(w);
	rc = smart_scratch_alloc(w, 8 * SMART_EPOCH_SLOTS, (void **)&tab);
	if (!rc)
		rc = smart_scratch_alloc(w, 8, (void **)&g);
	if (!rc)
		rc = ebr_scan_queue(w, d, g, tab);
	rc2 = smart_sync(w);
	rc = rc ? rc : rc2;
	if (!rc)
		rc = ebr_scan_finish(w, d, *g, tab, n0);
	smart_scratch_release(w, mark);
	d->scanning = 0;
	return rc;
}

/* A task's scan without a round trip of its own: post it now, unwaited;
 * the task's next sync (its next operation's first) waits for it along
 * with its own reads, and a later exit uses the results.  `scanning`
 * stays set meanwhile, so the list is not reordered under n0. */
static void ebr_scan_post(struct smart_worker *w, struct smart__ebr *d,
			  struct smart__task *t)
{
	if (d->scanning)
		return;
	if (!d->scan_buf) {
		(void)ebr_scan(w, d); /* no buffer: the waited way */
		return;
	}
	if (ebr_scan_queue(w, d, d->scan_buf, d->scan_buf + 1)) {
		(void)smart_sync(w); /* settle what was queued */
		return;
	}
	smart__post_blade(w, t, d->b->id);
	d->scanning = 1;
	d->scan_posted = 1;
	d->since_scan = 0;
	d->scan_n0 = d->n;
	d->scan_task = t;
	d->scan_mark = t->syncs;
	d->scan_errs = t->sync_errors;
}

/* The posted scan has completed: its task synced since, or has nothing
 * in flight. */
static int scan_ready(const struct smart__ebr *d)
{
	const struct smart__task *t = d->scan_task;

	return t->syncs != d->scan_mark ||
	       !atomic_load_explicit(&t->inflight, memory_order_acquire);
}

/* ... and without an error (a failed WR of that task may have been one of
 * the scan's: its results are then not used). */
static int scan_valid(const struct smart__ebr *d)
{
	const struct smart__task *t = d->scan_task;

	return t->sync_errors == d->scan_errs &&
	       (t->syncs != d->scan_mark ||
		!atomic_load(&((struct smart__task *)t)->first_error));
}

/* Use the posted scan's results once it has completed; with wait, poll
 * until it has. */
static void ebr_scan_reap(struct smart_worker *w, struct smart__ebr *d,
			  int wait)
{
	if (!d->scan_posted)
		return;
	while (!scan_ready(d)) {
		if (!wait)
			return;
		smart__worker_poll(w);
	}
	d->scan_posted = 0;
	if (scan_valid(d))
		(void)ebr_scan_finish(w, d, d->scan_buf[0], d->scan_buf + 1,
				      d->scan_n0);
	d->scanning = 0;
}

void smart_epoch_exit(smart_worker_t *w)
{
	struct smart__task *t;
	struct smart__ebr *d;
	uint64_t pub_e;

	if (!w)
		return;
	t = smart__cur_task(w);
	d = t->ebr_dom;
	if (!d || --t->ebr_depth)
		return;
	if (t->ebr_prev)
		t->ebr_prev->ebr_next = t->ebr_next;
	else
		d->head = t->ebr_next;
	if (t->ebr_next)
		t->ebr_next->ebr_prev = t->ebr_prev;
	else
		d->tail = t->ebr_prev;
	t->ebr_dom = NULL;
	pub_e = ebr_epoch_of(d->word);
	if (--d->active == 0) {
		/* idle: say so now, without waiting (others may be waiting
		 * for this worker's epoch) */
		d->word = smart_epoch_word(d->b->lease_id, 0, 0);
		ebr_mark_dirty(w, d);
		smart__post_blade(w, t, d->b->id);
		/* shm executes a WR only when its worker polls: a task's
		 * worker polls until the task ends, but the main context may
		 * go away for good, its announcement left ACTIVE */
		if (t == &w->main_task && atomic_load(&t->inflight)) {
			t->round_trips++; /* a wait like a sync's */
			SMART_STAT_INC(w, SMART_STAT_ROUND_TRIPS);
			smart__task_wait(w, t);
		}
	} else if (ebr_epoch_of(d->head->ebr_epoch) > pub_e &&
		   ebr_learn(d) > pub_e + 1) {
		/* the oldest left and G moved on: advance, lazily */
		d->word = smart_epoch_word(d->b->lease_id, 1,
					   d->head->ebr_epoch);
		ebr_mark_dirty(w, d);
	}
	ebr_scan_reap(w, d, 0);
	if (d->since_scan >= EBR_BATCH) {
		if (t == &w->main_task)
			(void)ebr_scan(w, d);
		else
			ebr_scan_post(w, d, t);
	}
}

int smart_epoch_drain(smart_worker_t *w, uint16_t blade, int timeout_ms)
{
	struct smart__ebr *d;
	uint64_t end;
	int rc;

	if (!w)
		return SMART_EINVAL;
	if (smart__cur_task(w)->ebr_dom)
		return SMART_EBUSY;
	if (!smart__blade_get(w->ctx, blade))
		return SMART_ENOENT;
	d = w->ebr[blade];
	if (d)
		ebr_scan_reap(w, d, 1); /* a posted scan first */
	if (!d || !d->n)
		return 0; /* nothing retired here */
	end = smart_now_ns() +
	      (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000;
	do {
		rc = ebr_scan(w, d);
		if (rc < 0)
			return rc;
		if (!d->n || timeout_ms <= 0)
			return 0;
		smart_task_yield(w);
		if (!smart_worker_in_task(w))
			smart__idle_pause();
	} while (smart_now_ns() < end);
	return SMART_ETIMEDOUT;
}

/* ops.c, when posting chain c: put a dirty announcement (and a READ of G)
 * in front of it.  The chain has room for 2 more WRs (task.c). */
void smart__ebr_prepend(struct smart_worker *w, struct smart__chain *c)
{
	struct smart__ebr *d = w->ebr[c->blade];
	struct smart__blade *b;
	struct smart_tp_wr *wr;
	int k;

	if (!d || !d->dirty)
		return;
	b = d->b;
	k = d->slot >= 0 && !SMART_M_EBR_NO_ANNOUNCE ? 2 : 1;
	memmove(c->wr + k, c->wr, (size_t)c->n * sizeof(*c->wr));
	wr = c->wr;
	if (k == 2)
		*wr++ = (struct smart_tp_wr){
			.remote = b->base + SMART_EPOCH_ANN_OFF(d->slot),
			.local = &d->word,
			.len = 8,
			.rkey = b->rkey,
			.lkey = w->ctx->pool->lkey,
			.opcode = SMART_TP_WRITE,
			.flags = SMART_TP_INLINE
		};
	*wr = (struct smart_tp_wr){ .remote = b->base + SMART_EPOCH_GLOBAL_OFF,
				    .local = d->gbuf,
				    .len = 8,
				    .rkey = b->rkey,
				    .lkey = w->ctx->pool->lkey,
				    .opcode = SMART_TP_READ };
	c->n += k;
	d->pub = d->word;
	d->dirty = 0;
	w->ebr_dirty--;
	SMART_STAT_INC(w, SMART_STAT_EPOCH_ANNOUNCES);
}

/* worker.c: a new QP to blade replaces a broken one (ops.c: a post to it
 * failed); the announcement may have died with it: write it again,
 * first. */
void smart__ebr_qp_new(struct smart_worker *w, uint16_t blade)
{
	struct smart__ebr *d = w->ebr[blade];

	if (d && d->slot >= 0 && d->pub != EBR_NONE)
		ebr_mark_dirty(w, d);
}

/* worker.c, at destroy: give the words back, hand what is retired to the
 * keeper. */
void smart__ebr_destroy(struct smart_worker *w)
{
	int i;

	for (i = 0; i <= SMART_BLADE_ID_MAX; i++) {
		struct smart__ebr *d = w->ebr[i];

		if (!d)
			continue;
		/* a posted scan must land before its buffer goes */
		ebr_scan_reap(w, d, 1);
		if (d->n)
			ebr_to_orphans(w, d, d->n);
		if (d->slot >= 0 && !atomic_load(&d->b->fail))
			(void)smart_write_sync(w,
					       smart_gaddr(d->b->id,
							   SMART_EPOCH_ANN_OFF(
								   d->slot)),
					       &(uint64_t){ 0 }, 8);
		smart_buf_free(w, d->gbuf);
		if (d->scan_buf)
			smart_buf_free(w, d->scan_buf);
		free(d->ret);
		free(d);
		w->ebr[i] = NULL;
	}
}

/* The keeper: scan for and free the orphans (the ctx's shared list).
 * Returns how many are left. */
size_t smart__ebr_orphans(struct smart_ctx *ctx, struct smart_worker *kw)
{
	size_t i, left;

	pthread_mutex_lock(&ctx->orphan_lock);
	for (i = 0; i < ctx->norphans; i++) {
		struct smart__orphan *o = &ctx->orphans[i];
		struct smart__ebr *d = ebr_get(kw, o->blade);

		if (!d || d->n == EBR_CAP || atomic_load(&d->b->fail))
			continue;
		d->ret[d->n++] = (struct ebr_ret){ o->addr, o->size, o->r };
		*o = ctx->orphans[--ctx->norphans];
		i--;
	}
	pthread_mutex_unlock(&ctx->orphan_lock);
	left = 0;
	for (i = 0; i <= SMART_BLADE_ID_MAX; i++) {
		struct smart__ebr *d = kw->ebr[i];

		if (d && d->n && !atomic_load(&d->b->fail))
			(void)ebr_scan(kw, d);
		left += d ? d->n : 0;
	}
	pthread_mutex_lock(&ctx->orphan_lock);
	left += ctx->norphans;
	pthread_mutex_unlock(&ctx->orphan_lock);
	return left;
}
