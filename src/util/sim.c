/*
 * The virtual-time engine (sim.h, docs/sim.md): fibers on Boost.Context's
 * fcontext (as the runtime's tasks, runtime/task.c), a binary min-heap of
 * the runnable ones keyed by (vt, id), and the clock hook of clock.h.
 *
 * The engine runs in the OS thread's own context and is the only code
 * that jumps into a fiber; a fiber only jumps back to the engine (from
 * any depth: a worker's task on its own stack may yield straight to the
 * engine, and is resumed there, its worker's scheduler context untouched).
 * So s->main is always the engine's latest context and a fiber's fctx is
 * where it stopped.
 *
 * Invariants (beyond sim.h's):
 *  - The running fiber is not in the heap; every other live fiber is.
 *  - smart__sim_vt points at the running fiber's clock while it runs and
 *    is NULL while the engine runs; smart__sim_cur likewise.
 *  - A fiber's clock is only written by the fiber itself (charge, sleep).
 */
#include "util/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "smart/sim.h"
#include "smart/status.h"
#include "util/fiber.h"

struct smart__sim_thread {
	uint64_t vt; /* virtual clock, ns (the hook points here) */
	uint64_t id; /* spawn order: the tie break */
	struct smart__sim *s;
	smart__sim_fn fn;
	void *arg;
	smart__fctx_t fctx; /* where it stopped */
	void *stack;	    /* mapping, guard page first */
	size_t stack_len;
	int done;
	void *asan_fake;
	uint64_t syncs;	      /* sync points passed (and sleeps) */
	const void *idle_key; /* the queue its last empty poll found empty */
	uint64_t idle_sync;   /* ... at sync point number idle_sync */
};

struct smart__sim {
	struct smart__sim_cfg cfg;
	size_t page;
	struct smart__sim_thread **heap; /* runnable, min (vt, id) */
	uint32_t nheap;
	uint32_t nthreads;		/* spawned, for ids and max_threads */
	struct smart__sim_thread **all; /* [max_threads] */
	smart__fctx_t main;		/* the engine's context */
	const void *asan_main_bottom;
	size_t asan_main_size;
	uint64_t rng;
	uint64_t end_ns;
	uint64_t switches;
	uint64_t skips, skipped; /* idle skips, the sync points they charged */
	struct smart__sim_source *sources; /* in order of addition */
	int running;
};

/* The fiber running on this OS thread, NULL outside one. */
static __thread struct smart__sim_thread *smart__sim_cur
	__attribute__((tls_model("initial-exec")));

static int earlier(const struct smart__sim_thread *a,
		   const struct smart__sim_thread *b)
{
	return a->vt < b->vt || (a->vt == b->vt && a->id < b->id);
}

static void heap_push(struct smart__sim *s, struct smart__sim_thread *t)
{
	uint32_t i = s->nheap++;

	while (i && earlier(t, s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = t;
}

static struct smart__sim_thread *heap_pop(struct smart__sim *s)
{
	struct smart__sim_thread *top = s->heap[0], *last;
	uint32_t i = 0, c;

	last = s->heap[--s->nheap];
	while ((c = 2 * i + 1) < s->nheap) {
		if (c + 1 < s->nheap && earlier(s->heap[c + 1], s->heap[c]))
			c++;
		if (!earlier(s->heap[c], last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	s->heap[i] = last;
	return top;
}

int smart__sim_create(const struct smart__sim_cfg *cfg, struct smart__sim **out)
{
	struct smart__sim *s;
	uint32_t max;

	if (!cfg || !out)
		return SMART_EINVAL;
	max = cfg->max_threads ? cfg->max_threads : 1024;
	s = calloc(1, sizeof(*s));
	if (!s)
		return SMART_ENOMEM;
	s->cfg = *cfg;
	s->cfg.max_threads = max;
	if (!s->cfg.stack)
		s->cfg.stack = 256 << 10;
	s->page = (size_t)sysconf(_SC_PAGESIZE);
	s->cfg.stack = (s->cfg.stack + s->page - 1) & ~(s->page - 1);
	s->rng = cfg->seed * 0x9E3779B97F4A7C15ull + 1; /* never 0 */
	s->heap = calloc(max, sizeof(*s->heap));
	s->all = calloc(max, sizeof(*s->all));
	if (!s->heap || !s->all) {
		smart__sim_destroy(s);
		return SMART_ENOMEM;
	}
	*out = s;
	return 0;
}

static void thread_free(struct smart__sim_thread *t)
{
	smart__fiber_asan_forget(t->stack, t->stack_len);
	munmap(t->stack, t->stack_len);
	free(t);
}

void smart__sim_destroy(struct smart__sim *s)
{
	uint32_t i;

	if (!s)
		return;
	while (s->sources) { /* outliving their engine: detached */
		s->sources->s = NULL;
		s->sources = s->sources->link;
	}
	for (i = 0; s->all && i < s->nthreads; i++)
		thread_free(s->all[i]);
	free(s->all);
	free(s->heap);
	free(s);
}

/* A fiber ends by jumping back for good. */
static void fiber_entry(smart__transfer_t tr)
{
	struct smart__sim_thread *t = tr.data;

	smart__fiber_asan_entered(NULL, &t->s->asan_main_bottom,
				  &t->s->asan_main_size);
	t->s->main = tr.fctx;
	t->fn(t->arg);
	t->done = 1;
	smart__fiber_asan_enter(NULL, t->s->asan_main_bottom,
				t->s->asan_main_size);
	jump_fcontext(t->s->main, NULL);
}

int smart__sim_spawn(struct smart__sim *s, smart__sim_fn fn, void *arg,
		     uint64_t at)
{
	struct smart__sim_thread *t;

	if (!s || !fn)
		return SMART_EINVAL;
	if (s->nthreads >= s->cfg.max_threads)
		return SMART_EAGAIN;
	t = calloc(1, sizeof(*t));
	if (!t)
		return SMART_ENOMEM;
	t->stack_len = s->cfg.stack + s->page;
	t->stack = mmap(NULL, t->stack_len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (t->stack == MAP_FAILED || mprotect(t->stack, s->page, PROT_NONE)) {
		if (t->stack != MAP_FAILED)
			munmap(t->stack, t->stack_len);
		free(t);
		return SMART_ENOMEM;
	}
	t->s = s;
	t->fn = fn;
	t->arg = arg;
	t->id = s->nthreads;
	t->vt = !at && smart__sim_cur ? smart__sim_cur->vt : at;
	t->fctx = make_fcontext((char *)t->stack + t->stack_len, s->cfg.stack,
				fiber_entry);
	s->all[s->nthreads++] = t;
	heap_push(s, t);
	return 0;
}

/* Run t until it syncs, sleeps or ends. */
static void engine_switch_in(struct smart__sim *s, struct smart__sim_thread *t)
{
	void *fake = NULL;
	smart__transfer_t tr;

	smart__sim_cur = t;
	smart__sim_vt = &t->vt;
	s->switches++;
	smart__fiber_asan_enter(&fake, (char *)t->stack + s->page,
				s->cfg.stack);
	tr = jump_fcontext(t->fctx, t);
	smart__fiber_asan_entered(fake, NULL, NULL);
	smart__sim_vt = NULL;
	smart__sim_cur = NULL;
	t->fctx = tr.fctx;
	if (t->vt > s->end_ns)
		s->end_ns = t->vt;
	if (!t->done)
		heap_push(s, t);
}

int smart__sim_run(struct smart__sim *s)
{
	if (!s || smart__sim_cur || s->running)
		return SMART_EINVAL;
	s->running = 1;
	while (s->nheap)
		engine_switch_in(s, heap_pop(s));
	s->running = 0;
	return 0;
}

uint64_t smart__sim_end_ns(const struct smart__sim *s)
{
	return s ? s->end_ns : 0;
}

uint64_t smart__sim_switches(const struct smart__sim *s)
{
	return s ? s->switches : 0;
}

uint64_t smart__sim_skips(const struct smart__sim *s, uint64_t *polls)
{
	if (polls)
		*polls = s ? s->skipped : 0;
	return s ? s->skips : 0;
}

struct smart__sim *smart__sim_self(void)
{
	return smart__sim_cur ? smart__sim_cur->s : NULL;
}

void smart__sim_require(const char *what)
{
	if (smart__sim_cur)
		return;
	fprintf(stderr,
		"smart sim: %s called from a thread that is not "
		"simulated (it would inject real time): abort\n",
		what);
	abort();
}

uint64_t smart__sim_now(void)
{
	smart__sim_require("smart__sim_now");
	return smart__sim_cur->vt;
}

void smart__sim_charge(uint64_t ns)
{
	smart__sim_require("smart__sim_charge");
	smart__sim_cur->vt += ns;
}

/* Back to the engine; resumed when this fiber is the earliest again. */
static void fiber_switch_out(struct smart__sim_thread *t)
{
	struct smart__sim *s = t->s;
	smart__transfer_t tr;

	smart__fiber_asan_enter(&t->asan_fake, s->asan_main_bottom,
				s->asan_main_size);
	tr = jump_fcontext(s->main, NULL);
	smart__fiber_asan_entered(t->asan_fake, &s->asan_main_bottom,
				  &s->asan_main_size);
	s->main = tr.fctx;
}

/* The source whose next event is earliest (the first added on a tie),
 * NULL when it is later than `now` or there is none. */
static struct smart__sim_source *source_due(struct smart__sim *s, uint64_t now)
{
	struct smart__sim_source *src, *best = NULL;
	uint64_t n, min = UINT64_MAX;

	for (src = s->sources; src; src = src->link) {
		n = src->next_ns(src);
		if (n < min) {
			min = n;
			best = src;
		}
	}
	return min <= now ? best : NULL;
}

/* Yield only when another fiber is earlier: "no switch while still the
 * earliest" keeps a lone or leading thread at full speed.  Then, the
 * earliest of all, run the sources' events up to its time: every fiber
 * has passed them, and none can add one as early any more. */
static void fiber_yield_if_late(struct smart__sim_thread *t)
{
	struct smart__sim *s = t->s;
	struct smart__sim_source *src;

	if (s->nheap && earlier(s->heap[0], t))
		fiber_switch_out(t);
	while ((src = source_due(s, t->vt)))
		src->step(src);
}

void smart__sim_source_add(struct smart__sim_source *src)
{
	struct smart__sim_source **pp;

	smart__sim_require("smart__sim_source_add");
	src->s = smart__sim_cur->s;
	src->link = NULL;
	for (pp = &src->s->sources; *pp; pp = &(*pp)->link)
		;
	*pp = src;
}

void smart__sim_source_del(struct smart__sim_source *src)
{
	struct smart__sim_source **pp;

	if (!src->s)
		return;
	for (pp = &src->s->sources; *pp && *pp != src; pp = &(*pp)->link)
		;
	if (*pp)
		*pp = src->link;
	src->s = NULL;
}

uint64_t smart__sim_rand(void)
{
	struct smart__sim *s;

	smart__sim_require("smart__sim_rand");
	s = smart__sim_cur->s;
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 0x2545F4914F6CDD1Dull;
}

/* One sync point's CPU: base + U[0, jitter_ns). */
static void sync_charge(struct smart__sim_thread *t, uint64_t base)
{
	uint64_t j;

	j = t->s->cfg.jitter_ns ? smart__sim_rand() % t->s->cfg.jitter_ns : 0;
	t->vt += base + j;
	t->syncs++;
}

/* A poll's base cost: poll_ns, or sync_ns when the table has none. */
static uint64_t poll_base(const struct smart__sim *s)
{
	return s->cfg.poll_ns ? s->cfg.poll_ns : s->cfg.sync_ns;
}

void smart__sim_sync(void)
{
	smart__sim_require("smart__sim_sync");
	sync_charge(smart__sim_cur, smart__sim_cur->s->cfg.sync_ns);
	fiber_yield_if_late(smart__sim_cur);
}

void smart__sim_sync_poll(void)
{
	smart__sim_require("smart__sim_sync_poll");
	sync_charge(smart__sim_cur, poll_base(smart__sim_cur->s));
	fiber_yield_if_late(smart__sim_cur);
}

void smart__sim_reaped(int n)
{
	smart__sim_require("smart__sim_reaped");
	if (n > 0)
		smart__sim_cur->vt += (uint64_t)n *
				      smart__sim_cur->s->cfg.wc_ns;
}

int smart__sim_idle_again(const void *key)
{
	struct smart__sim_thread *t;
	int again;

	smart__sim_require("smart__sim_idle_again");
	t = smart__sim_cur;
	again = t->idle_key == key && t->idle_sync + 1 == t->syncs;
	t->idle_key = key;
	t->idle_sync = t->syncs;
	return again;
}

uint64_t smart__sim_idle_skip(uint64_t until)
{
	struct smart__sim_thread *t;
	uint64_t n = 0, cap;

	smart__sim_require("smart__sim_idle_skip");
	t = smart__sim_cur;
	cap = t->s->cfg.idle_skip_ns;
	if (!cap || until == UINT64_MAX || until <= t->vt)
		return 0;
	if (until - t->vt > cap)
		until = t->vt + cap;
	/* the elided polls' charges, drawn as they would have been */
	while (t->vt < until) {
		sync_charge(t, poll_base(t->s));
		n++;
	}
	t->idle_sync = t->syncs; /* still a loop of empty polls */
	t->s->skips++;
	t->s->skipped += n;
	fiber_yield_if_late(t);
	return n;
}

void smart__sim_sleep_until(uint64_t at)
{
	struct smart__sim_thread *t;

	smart__sim_require("smart__sim_sleep_until");
	t = smart__sim_cur;
	if (at > t->vt)
		t->vt = at;
	t->syncs++;
	fiber_yield_if_late(t);
}

/* ------------------------------------------------------------------ */
/* The public face (smart/sim.h)                                       */

/* One key=value of a spec into cfg; 0 or SMART_EINVAL. */
static int sim_spec_item(struct smart__sim_cfg *cfg, const char *item)
{
	static const char *const keys[] = { "seed",	    "sync_ns",
					    "jitter_ns",    "max_threads",
					    "idle_skip_ns", "poll_ns",
					    "wc_ns" };
	const char *eq = strchr(item, '=');
	unsigned long long v;
	char *end;
	size_t i;

	if (!strcmp(item, "default"))
		return 0;
	if (!eq || eq[1] < '0' || eq[1] > '9')
		return SMART_EINVAL;
	v = strtoull(eq + 1, &end, 10);
	for (i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		if (!strncmp(item, keys[i], (size_t)(eq - item)) &&
		    !keys[i][eq - item])
			break;
	if (*end || i == sizeof(keys) / sizeof(*keys) ||
	    (i >= 1 && v > 1000000000ull) || (i == 3 && (!v || v > 65536)))
		return SMART_EINVAL;
	if (i == 0)
		cfg->seed = v;
	else if (i == 1)
		cfg->sync_ns = v;
	else if (i == 2)
		cfg->jitter_ns = v;
	else if (i == 3)
		cfg->max_threads = (uint32_t)v;
	else if (i == 4)
		cfg->idle_skip_ns = v;
	else if (i == 5)
		cfg->poll_ns = v;
	else
		cfg->wc_ns = v;
	return 0;
}

static int sim_spec_parse(const char *spec, struct smart__sim_cfg *cfg)
{
	char buf[256], *tok, *save = NULL;
	int rc = 0;

	/* The frozen CPU cost table (docs/sim.md §2.1: fitted on the
	 * technique-off points only; a spec's keys override it one by one). */
	*cfg = (struct smart__sim_cfg){ .seed = 1,
					.sync_ns = 90,
					.jitter_ns = 45,
					.poll_ns = 1050,
					.wc_ns = 5 };
	if (!spec || !*spec)
		return 0;
	if (strlen(spec) >= sizeof(buf))
		return SMART_EINVAL;
	strcpy(buf, spec);
	for (tok = strtok_r(buf, ",", &save); tok && !rc;
	     tok = strtok_r(NULL, ",", &save))
		rc = sim_spec_item(cfg, tok);
	return rc;
}

int smart_sim_run(const char *spec, void (*fn)(void *), void *arg)
{
	struct smart__sim_cfg cfg;
	struct smart__sim *s;
	int rc;

	if (!fn || smart__sim_cur || sim_spec_parse(spec, &cfg))
		return SMART_EINVAL;
	rc = smart__sim_create(&cfg, &s);
	if (rc)
		return rc;
	/* virtual time starts at 1 s: never 0, which some code treats as
	 * "unset" */
	rc = smart__sim_spawn(s, fn, arg, UINT64_C(1000000000));
	if (!rc)
		rc = smart__sim_run(s);
	smart__sim_destroy(s);
	return rc;
}

int smart_sim_spawn(void (*fn)(void *), void *arg)
{
	if (!smart__sim_cur)
		return SMART_EINVAL;
	return smart__sim_spawn(smart__sim_cur->s, fn, arg, 0);
}

int smart_sim_active(void)
{
	return smart__sim_cur != NULL;
}

int smart_sim_sleep_ns(uint64_t ns)
{
	if (!smart__sim_cur)
		return SMART_EINVAL;
	smart__sim_sleep_until(smart__sim_cur->vt + ns);
	return 0;
}
