/*
 * Tasks: coroutines on Boost.Context's fcontext, scheduled per worker.
 *
 * The scheduler runs in the worker's main context.  It jumps into a
 * task, and a task jumps back to it, or - a task that must wait for its
 * batches while another is ready and the scheduler would run that one
 * next without polling first - straight into that task (one switch
 * instead of two and a turn of the scheduler's loop).  Every jump passes
 * what it leaves as its data: the task, or &w->main_task for the
 * scheduler; the side that resumes stores the context it came from there
 * (task_resumed, task_switch_in).  So w->sched_fctx is always the
 * scheduler's latest context, and a task's fctx is where it stopped, and
 * w->cur is set by whoever jumps.  Stacks are mmap'ed with a PROT_NONE guard page
 * below them and kept on a free list for reuse (a spawn after the first
 * does no system call).
 *
 * Polling policy: the scheduler runs every ready task before it polls the
 * CQ, so that the ops those tasks posted are all in flight together (their
 * prefetches overlap on shm, their WRs pipeline on a NIC); it polls at least
 * once per max_tasks switches so yield loops cannot starve completions.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/core.h"
#include "util/mutant.h"

/* Unmap a task's stack.  ASan first forgets the redzones still marked on
 * it (task_entry never returns, so its frame's are never cleared): GCC
 * 12's libasan does not clear shadow on munmap, so a later mapping at the
 * same address (a region attached by the shm transport, seen in CI) would
 * be reported as a stack-buffer-underflow on its first write (php-src
 * #13903 and llvm-project #53891 describe the same). */
static void task_stack_unmap(void *stack, size_t len)
{
	smart__fiber_asan_forget(stack, len);
	munmap(stack, len);
}

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Chains and bounce slots of a task (or of the main context). */
int smart__task_init_slot(struct smart_worker *w, struct smart__task *t)
{
	struct smart_ctx *ctx = w->ctx;
	int i, n = ctx->o.chain_max;
	void *bounce;

	for (i = 0; i < SMART_TASK_CHAINS; i++) {
		/* 2 more: the announcement a post may put in front */
		t->chains[i].wr = calloc((size_t)n + 2,
					 sizeof(struct smart_tp_wr));
		if (!t->chains[i].wr)
			goto err;
	}
	if (smart_buf_alloc(w, SMART_TASK_BOUNCES * SMART_BOUNCE_MAX, &bounce))
		goto err;
	t->bounce_mem = bounce;
	t->w = w;
	for (i = 0; i < SMART_TASK_BATCHES; i++)
		t->batches[i].task = t; /* for good: they are the task's */
	return 0;
err:
	for (i = 0; i < SMART_TASK_CHAINS; i++) {
		free(t->chains[i].wr);
		t->chains[i].wr = NULL;
	}
	return SMART_ENOMEM;
}

void smart__task_fini_slot(struct smart_worker *w, struct smart__task *t)
{
	int i;

	for (i = 0; i < SMART_TASK_CHAINS; i++)
		free(t->chains[i].wr);
	if (t->bounce_mem)
		smart_buf_free(w, t->bounce_mem);
	smart__scratch_fini(w, t);
	if (t->stack)
		task_stack_unmap(t->stack, t->stack_len);
}

static struct smart__task *task_slot_new(struct smart_worker *w)
{
	size_t pg = page_size();
	size_t len = ((w->ctx->o.task_stack + pg - 1) & ~(pg - 1)) + pg;
	struct smart__task *t;

	if (w->ntask_slots >= w->ctx->o.max_tasks)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->stack = mmap(NULL, len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (t->stack == MAP_FAILED || mprotect(t->stack, pg, PROT_NONE) ||
	    smart__task_init_slot(w, t)) {
		if (t->stack != MAP_FAILED)
			task_stack_unmap(t->stack, len);
		t->stack = NULL;
		free(t);
		return NULL;
	}
	t->stack_len = len;
	t->guard = pg;
	w->all_tasks[w->ntask_slots++] = t;
	return t;
}

static void ready_push(struct smart_worker *w, struct smart__task *t)
{
	smart__task_ready(w, t);
}

static void task_entry(smart__transfer_t tr)
{
	struct smart_worker *w = ((struct smart__task *)tr.data)->w;
	struct smart__task *t = w->cur; /* set by whoever jumped here */

	smart__task_resumed(w, tr, NULL);
	t->fn(w, t->arg);
	/* A task that returned inside an epoch section would keep the
	 * worker's announcement active for good, and so stop reclamation for
	 * every client of that blade: leave it (a caller bug, said for
	 * each such task). */
	if (smart_unlikely(t->ebr_dom != NULL)) {
		smart__warn(&w->ctx->log, "a task returned inside "
					  "smart_epoch_enter(): left for it");
		t->ebr_depth = 1;
		w->ctx->svc->task_left_epoch(w);
	}
	/* Ops the task left queued or in flight are finished for it, so
	 * that no completion can reach a recycled task. */
	if (t->nchains || atomic_load(&t->inflight))
		smart_sync(w);
	t->state = SMART_TASK_DONE;
	smart__fiber_asan_enter(NULL, w->asan_main_bottom, w->asan_main_size);
	jump_fcontext(w->sched_fctx, t);
}

int smart_task_spawn(smart_worker_t *w, smart_task_fn fn, void *arg)
{
	struct smart__task *t;

	if (!w || !fn)
		return SMART_EINVAL;
	if (w->live >= w->ctx->o.max_tasks)
		return SMART_EAGAIN;
	t = w->free_tasks;
	if (t)
		w->free_tasks = t->next;
	else if (!(t = task_slot_new(w)))
		return SMART_ENOMEM;
	t->fn = fn;
	t->arg = arg;
	t->round_trips = 0;
	t->alloc_round_trips = 0;
	t->bytes = 0;
	t->fence_next = 0;
	atomic_store(&t->first_error, 0);
	/* a recycled slot keeps its scratch segments, empty */
	t->scratch.cur = 0;
	t->scratch.top = 0;
	t->fctx = make_fcontext((char *)t->stack + t->stack_len,
				t->stack_len - t->guard, task_entry);
	w->live++;
	SMART_STAT_INC(w, SMART_STAT_TASKS_SPAWNED);
	ready_push(w, t);
	return 0;
}

/* Jump from the scheduler into t until it, or a task it switched to,
 * comes back (yields, waits or ends). */
static void task_switch_in(struct smart_worker *w, struct smart__task *t)
{
	void *fake = NULL;
	smart__transfer_t tr;

	t->state = SMART_TASK_RUNNING;
	w->cur = t;
	w->run = t;
	smart__fiber_asan_enter(&fake, smart__stack_bottom(t),
				t->stack_len - t->guard);
	tr = jump_fcontext(t->fctx, &w->main_task);
	smart__fiber_asan_entered(fake, NULL, NULL);
	t = tr.data; /* the task that came back */
	t->fctx = tr.fctx;
	w->cur = NULL;
	w->run = &w->main_task;
	SMART_STAT_INC(w, SMART_STAT_TASK_SWITCHES);
	if (t->state == SMART_TASK_DONE) {
		w->live--;
		t->state = SMART_TASK_FREE;
		t->next = w->free_tasks;
		w->free_tasks = t;
	}
}

/* From inside a task: back to the scheduler. */
static void task_switch_out(struct smart_worker *w, struct smart__task *t)
{
	smart__transfer_t tr;

	smart__fiber_asan_enter(&t->asan_fake_stack, w->asan_main_bottom,
				w->asan_main_size);
	tr = jump_fcontext(w->sched_fctx, t);
	smart__task_resumed(w, tr, t->asan_fake_stack);
}

void smart_task_yield(smart_worker_t *w)
{
	struct smart__task *t = w->cur;

	if (!t) {
		smart__worker_wait_poll(w);
		return;
	}
	ready_push(w, t);
	task_switch_out(w, t);
}

/* The main context has no task to switch to: it polls until its batches
 * land (out of line: tasks are the common case). */
static __attribute__((noinline)) void main_wait(struct smart_worker *w,
						struct smart__task *t)
{
	while (atomic_load_explicit(&t->inflight, memory_order_acquire))
		if (!smart__worker_wait_poll(w) && w->internal)
			smart__idle_pause();
}

/* May a task waiting for its batches make the scheduler's next poll
 * itself?  Only when that poll is next (no other task ready, none
 * sleeping, no other worker completing its batches) and it runs no layer
 * above: a messaging endpoint's handlers run inside its poller, and they
 * must go on running outside any task (docs/rpc.md), where ops they queue
 * go to the main context's chains, not the waiting task's. */
static inline int task_polls_in_place(const struct smart_worker *w,
				      struct smart__task *t)
{
	return !w->ready_head && !w->direct_off &&
	       (!w->npollers || SMART_M_TASK_WAIT_POLLS_HANDLERS) &&
	       atomic_load_explicit(&t->inflight, memory_order_relaxed);
}

/* Park the current task until its batches complete (smart__task_wake).
 * When it may (task_polls_in_place) it polls first, and switches out only
 * when its batches are still in flight after that poll, that is when it
 * really waits; the tasks the poll wakes are queued as the scheduler's
 * poll would queue them.  A wait for something else (a message: inflight
 * 0) switches out at once, and the scheduler's polls give the CPU away
 * when nothing comes (smart__worker_wait_poll). */
void smart__task_wait(struct smart_worker *w, struct smart__task *t)
{
	if (smart_unlikely(t == &w->main_task)) {
		main_wait(w, t);
		return;
	}
	if (task_polls_in_place(w, t)) {
		w->since_poll = 0;
		smart__worker_poll(w);
		if (!atomic_load_explicit(&t->inflight, memory_order_acquire))
			return;
	}
	t->state = SMART_TASK_WAITING;
	if (smart__task_switch_direct(w))
		smart__task_switch_to(w, t, smart__ready_pop(w));
	smart__task_wait_out(w, t);
}

void smart__task_wait_out(struct smart_worker *w, struct smart__task *t)
{
	while (t->state == SMART_TASK_WAITING)
		task_switch_out(w, t);
}

/* Park the current task until smart__task_unpark (backoff admission). */
void smart__task_park(struct smart_worker *w, struct smart__task *t)
{
	t->state = SMART_TASK_PARKED;
	while (t->state == SMART_TASK_PARKED)
		task_switch_out(w, t);
}

void smart__task_unpark(struct smart_worker *w, struct smart__task *t)
{
	if (t->state == SMART_TASK_PARKED)
		ready_push(w, t);
}

/* Park the current task until the TSC reaches deadline.  Sleepers wait
 * off the run queue, so they neither spin nor delay the CQ polling of the
 * tasks that have work (a yield loop would do both). */
void smart__task_sleep(struct smart_worker *w, struct smart__task *t,
		       uint64_t deadline)
{
	t->wake_at = deadline;
	t->next = w->sleepers;
	w->sleepers = t;
	w->direct_off = 1;
	if (!w->next_wake || deadline < w->next_wake)
		w->next_wake = deadline;
	t->state = SMART_TASK_PARKED;
	while (t->state == SMART_TASK_PARKED)
		task_switch_out(w, t);
}

/* Wake the sleepers whose deadline passed. */
static void wake_sleepers(struct smart_worker *w)
{
	struct smart__task **pp = &w->sleepers, *t;
	uint64_t now = w->now, next = 0;

	if (now < w->next_wake)
		return;
	while ((t = *pp)) {
		if (t->wake_at <= now) {
			*pp = t->next;
			ready_push(w, t);
			continue;
		}
		if (!next || t->wake_at < next)
			next = t->wake_at;
		pp = &t->next;
	}
	w->next_wake = next;
	w->direct_off = w->shared || w->sleepers;
}

/* A task's last batch completed (owner thread only). */
void smart__task_wake(struct smart_worker *w, struct smart__task *t)
{
	if (t->state == SMART_TASK_WAITING && t != &w->main_task)
		ready_push(w, t);
}

/* Shared groups: another worker may have completed our batches; find our
 * waiting tasks whose counters reached zero. */
static void scan_waiting(struct smart_worker *w)
{
	int i;

	for (i = 0; i < w->ntask_slots; i++) {
		struct smart__task *t = w->all_tasks[i];

		if (t->state == SMART_TASK_WAITING &&
		    !atomic_load_explicit(&t->inflight, memory_order_acquire))
			ready_push(w, t);
	}
}

int smart_worker_run(smart_worker_t *w)
{
	struct smart__task *t;

	if (!w)
		return SMART_EINVAL;
	if (w->cur)
		return SMART_EINVAL;
	while (w->live) {
		t = smart__ready_pop(w);
		if (!t || ++w->since_poll >= w->max_tasks) {
			w->since_poll = 0;
			if (t)
				smart__worker_poll(w);
			else /* every task waits */
				smart__worker_wait_poll(w);
			if (w->group->shared)
				scan_waiting(w);
			if (w->sleepers)
				wake_sleepers(w);
			if (w->credit_head) /* credits came back */
				smart__credit_wake(w);
		}
		if (t)
			task_switch_in(w, t);
	}
	return 0;
}

int smart_worker_tasks(const smart_worker_t *w)
{
	return w ? w->live : 0;
}

int smart_worker_in_task(const smart_worker_t *w)
{
	return w && w->cur;
}

uint64_t smart_task_round_trips(const smart_worker_t *w, uint64_t *alloc)
{
	const struct smart__task *t;

	if (!w) {
		if (alloc)
			*alloc = 0;
		return 0;
	}
	t = w->cur ? w->cur : &w->main_task;
	if (alloc)
		*alloc = t->alloc_round_trips;
	return t->round_trips;
}

uint64_t smart_task_bytes(const smart_worker_t *w)
{
	if (!w)
		return 0;
	return (w->cur ? w->cur : &w->main_task)->bytes;
}

void smart__tasks_destroy(struct smart_worker *w)
{
	int i;

	for (i = 0; i < w->ntask_slots; i++) {
		smart__task_fini_slot(w, w->all_tasks[i]);
		free(w->all_tasks[i]);
	}
	w->ntask_slots = 0;
	w->free_tasks = NULL;
}
