/*
 * Core internals: ctx, QP groups, workers, tasks, chains and batches.
 *
 * Ownership (docs/design.md §3):
 *  - ctx: process wide; its mutex guards the blade table, the worker list
 *    and the QP groups (all slow path).
 *  - QP group: the CQ and the per-blade QPs used by one worker (per-thread
 *    modes) or by several (shared, mux:K).  Only a shared group's transport
 *    objects are created SMART_TP_SHARED; its completions may be polled by
 *    any member, so batch/task counters are then touched atomically.
 *  - worker: one OS thread.  Its scheduler, tasks, chains and stats are
 *    never touched by another thread (except completion counters in a
 *    shared group, see above, and relaxed stats reads by snapshots).
 *  - task: a coroutine.  It owns up to SMART_TASK_CHAINS open WR chains
 *    (one per blade) and SMART_TASK_BATCHES posted ones in flight.
 *
 * A batch is one posted chain.  Every WR of the chain carries the batch's
 * address as wr_id; the last one is signalled and has bit 0 set, so an
 * error completion of an earlier (unsignalled) WR is told apart from the
 * completion that ends the batch.  Batches are 8-byte aligned.
 */
#ifndef SMART_CORE_H
#define SMART_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "smart/smart.h"
#include "smart/backoff.h"
#include "smart/hook.h"
#include "runtime/service.h"
#include "transport/transport.h"
#include "util/fiber.h"
#include "util/clock.h"
#include "util/mutant.h"
#include "util/compiler.h"
#include "util/log.h"

#define SMART_TASK_CHAINS  4
#define SMART_TASK_BATCHES 8
#define SMART_TASK_BOUNCES 64
#define SMART_OP_MAX_LEN   (UINT32_C(1) << 30)
#define SMART_RETRY_HIST   17 /* retries per op: 0..15, 16 = more */
/* Sync latency is sampled (1 sync in SMART_LAT_SAMPLE, ops.c): a clock
 * read costs as much as a quarter of an shm op on some CPUs. */
#define SMART_LAT_SAMPLE   16

enum smart__qp_mode {
	SMART_QPM_AUTO, /* per-thread-db with ThrdAwareAlloc, else
				 * per-thread */
	SMART_QPM_SHARED,
	SMART_QPM_MUX,
	SMART_QPM_PER_THREAD,
	SMART_QPM_PER_THREAD_DB,
};

/* Parsed option values; the table in options.c describes every field. */
struct smart__optvals {
	char transport[16];
	int qp_mode;
	int qp_mux; /* K of mux:K */
	int max_tasks;
	uint64_t spin_ns; /* idle polling before a wait yields */
	uint64_t task_stack;
	int chain_max;
	int qp_depth;
	int cq_depth;
	uint64_t buf_pool;
	int hugepages; /* -1 auto, 0 off, 1 on */
	char secret_file[1024];
	uint64_t connect_timeout_ns;
	int log_level;
	int latency_stats;
	char nic_model[256];	    /* shm RNIC model spec, "" = off */
	char shm_adversarial[256];  /* shm adversarial spec, "" = off */
	int techniques;		    /* SMART_TECH_* switches */
	int credit;		    /* fixed WR cap per worker, 0 = tuner */
	uint64_t tune_interval_ns;  /* the tuner's epoch, Δ */
	int stable_epochs;	    /* epochs the chosen cap is kept */
	uint64_t backoff_window_ns; /* conflict-avoidance window */
	int conflict_level; /* 1 backoff, 2 + dyn. limit, 3 + coro throttle */
	char device[64];    /* verbs */
	int ib_port;
	int gid_index;
	int mtu;
	int ib_timeout;
	int ib_retry;
	int traffic_class;
	int service_level;
	int gid_type;	     /* SMART_TP_GID_* */
	smart_log_fn log_fn; /* smart_log_set_handler; NULL: stderr */
	void *log_arg;
};

struct smart_opts {
	struct smart__optvals v;
};

const char *smart__qp_mode_name(int mode);

/* One connected blade. */
struct smart__blade {
	uint16_t id;
	/* 0, or why every op to the blade fails: SMART_ECONN when it is
	 * gone (its session closed), SMART_EFENCED when this ctx is fenced.
	 * Next to size: op_check reads both. */
	_Atomic int fail;
	uint64_t size;
	uint32_t chunk_shift;
	uint64_t nchunks;
	uint64_t first_chunk; /* chunks below it are the blade's own */
	uint64_t base;	      /* remote address of offset 0 */
	uint32_t rkey;
	/* device memory (smart_dm_alloc): ops whose offset has
	 * SMART_GADDR_DM address it from 0 with dm_rkey; dm_len 0: none */
	uint32_t dm_rkey;
	uint64_t dm_len;
	struct smart_tp_remote *remote;
	struct smart__boot *boot; /* control session, under boot_lock */
	pthread_mutex_t boot_lock;
	/* leases (keeper.c, lease.c; docs/leases.md) */
	uint16_t lease_id;	    /* our client id on this blade */
	uint32_t lease_ms;	    /* the blade's lease duration */
	uint64_t joined;	    /* lease clock when the HELLO went out */
	struct smart__lease *lease; /* the keeper's state for it */
};

/* Lease clock: TSC cycles where the TSC is invariant, else ns. */
static inline uint64_t smart__lease_now(const struct smart__clock *c)
{
	return c->use_tsc ? smart__rdtsc() : smart__mono_ns();
}

/* One QP of a group to one blade. */
struct smart__qp {
	struct smart_tp_qp *tqp;
	struct smart_tp_cq *cq; /* the group's CQ it was made on */
	uint16_t blade;
	uint32_t responder;
	_Atomic int broken; /* an error completion was seen */
	/* no count of WRs in flight: a retired QP is freed once no busy
	 * batch names it (worker.c group_reap), which the posts and the
	 * completions then need not keep up per op */
	/* posters that found the send queue full take a ticket and post
	 * in ticket order (ops.c): room freed goes to the longest waiter */
	_Atomic uint32_t room_next, room_turn;
	struct smart__qp *retired_next;
};

struct smart__group {
	struct smart_ctx *ctx;
	int index;			/* mux group number; -1 when private */
	int shared;			/* several workers use it */
	int refs;			/* under ctx->lock */
	pthread_mutex_t lock;		/* QP creation and repair */
	struct smart_tp_cq *_Atomic cq; /* replaced when it fails */
	_Atomic uint32_t cq_gen;	/* replacements so far */
	uint32_t cq_flags;
	struct smart__dead_cq *dead_cqs; /* failed CQs, freed with the
						 * group (after their QPs) */
	struct smart__qp *_Atomic qps[SMART_BLADE_ID_MAX + 1];
	struct smart__qp *retired; /* broken QPs awaiting their flushes */
	struct smart__group *next;
};

struct smart_ctx {
	const struct smart__svc *svc; /* the services' hooks */
	struct smart__optvals o;
	struct smart__log log;
	struct smart__clock clock;
	const struct smart_tp_ops *tp;
	struct smart_tp_domain *dom;
	struct smart_tp_caps caps;
	char *secret;
	size_t secret_len;
	pthread_mutex_t lock;
	struct smart__blade *_Atomic blades[SMART_BLADE_ID_MAX + 1];
	struct smart__group *groups;
	struct smart_worker *workers;
	int next_worker;
	int live_workers;
	char qp_mode_effective[24];
	int db_fallbacks; /* per-thread-db CQs without a doorbell */
	/* the registered local buffer pool (bufpool.c) */
	struct smart_tp_mr *pool;
	pthread_mutex_t pool_lock;
	uint64_t pool_bump;
	void *pool_free[32]; /* free lists by log2 class */
	uint8_t *pool_class; /* class of the block at each 64-B granule */
	/* adaptive work-request throttling (throttle.c) */
	struct smart__tuner {
		_Atomic int cap;	    /* C_max in force, WRs/worker */
		_Atomic uint64_t epoch_end; /* TSC */
		_Atomic int busy;	    /* a worker runs the step */
		uint64_t epoch_start, last_acks, epoch_cycles;
		int phase, cand, stable_left;
		double tput[8];
		uint64_t epochs;
	} tuner;
	char tech_names[64]; /* the switches in force, as text */
	/* leases (lease.c) and the keeper thread (keeper.c) */
	_Atomic int fenced; /* every op fails with SMART_EFENCED */
	/* a fence has begun (smart__ctx_fence's first store): a connect
	 * from then on is refused, and one it raced fails its own blade */
	_Atomic int fencing;
	/* a structure left blade state naming our lease ids (smart_ctx_
	 * taint): our sessions end without a BYE, so the ids are buried */
	_Atomic int tainted;
	/* structures' things in blade memory that may still name our ids
	 * and that they settle themselves (smart_ctx_hold): while any, our
	 * sessions end without a BYE too */
	_Atomic long holds;
	/* interleaving hook (smart/hook.h): arg stored before fn */
	_Atomic(smart_hook_fn) hook_fn;
	void *_Atomic hook_arg;
	_Atomic uint64_t lease_until; /* lease clock: self-fence after it */
	struct smart__keeper *keeper;
	uint16_t blade_list[SMART_BLADE_ID_MAX + 1]; /* connect order */
	_Atomic int nblade_list;
	_Atomic uint64_t lease_renewals, leases_fenced;
	/* retired blocks no worker holds any more: the keeper frees them */
	pthread_mutex_t orphan_lock;
	struct smart__orphan {
		uint16_t blade;
		uint64_t addr, size, r;
	} * orphans;
	size_t norphans, orphan_cap;
	/* stats of destroyed workers */
	uint64_t retired_stats[SMART_STAT__COUNT];
	uint64_t retired_retry_hist[SMART_RETRY_HIST];
	smart_hist_t *retired_hist;
};

/* Has our own lease run out, the TSC just read (the worker's poll)?  No
 * second clock read where the lease clock is the TSC, and none at all
 * while the ctx holds no lease (UINT64_MAX: no blade, e.g. a messaging-
 * only ctx).  Where the TSC is not invariant the lease clock is
 * clock_gettime, a system call when the kernel's clocksource is not the
 * TSC (hpet, as in the TCG guests of tests/vm): once per poll it took
 * over a third of a messaging poll loop's CPU there (perf: read_hpet
 * alone 18%).  lease_until is the services' (leases), read here. */
static inline int smart__lease_expired_at(const struct smart_ctx *ctx,
					  uint64_t tsc)
{
	uint64_t until = atomic_load_explicit(&ctx->lease_until,
					      memory_order_relaxed);

	if (until == UINT64_MAX)
		return 0;
	return (ctx->clock.use_tsc ? tsc : smart__mono_ns()) > until;
}

struct smart__task;

struct smart__batch {
	struct smart__task *task;
	struct smart__qp *qp;
	uint32_t n; /* WRs in the chain */
	uint32_t busy;
} __attribute__((aligned(8)));

struct smart__chain {
	uint16_t blade;
	uint16_t n;
	struct smart_tp_wr *wr; /* chain_max entries */
};

/* A result to deliver at sync: copy len bytes from src (a bounce slot) to
 * dst, and for a CAS compare the old value with expect (for the stats). */
struct smart__bounce {
	void *dst;	 /* where the caller wants it, NULL for none */
	const void *src; /* where the transport put it */
	uint32_t len;
	uint32_t is_cas;
	uint64_t expect;
};

enum smart__task_state {
	SMART_TASK_FREE,
	SMART_TASK_READY,
	SMART_TASK_RUNNING,
	SMART_TASK_WAITING,
	SMART_TASK_PARKED, /* waiting for backoff admission */
	SMART_TASK_DONE,
};

/* A task's registered scratch (scratch.c): a stack over a few segments. */
#define SMART_SCRATCH_SEGS 8
struct smart__scratch {
	void *seg[SMART_SCRATCH_SEGS];
	uint32_t len[SMART_SCRATCH_SEGS];
	int cur;      /* segment of the top */
	uint32_t top; /* bytes used in seg[cur] */
};

struct smart__task {
	struct smart_worker *w;
	smart__fctx_t fctx;
	void *stack; /* mapping including the guard page */
	size_t stack_len;
	size_t guard; /* guard page bytes at the bottom */
	smart_task_fn fn;
	void *arg;
	int state;
	_Atomic int inflight; /* batches posted and not completed */
	_Atomic int first_error;
	struct smart__task *next; /* ready queue or free list */
	struct smart__chain chains[SMART_TASK_CHAINS];
	int nchains;
	struct smart__batch batches[SMART_TASK_BATCHES];
	struct smart__batch *posting; /* being posted (not yet in flight) */
	/* the QP of a chain whose post waits for a free batch or for credits
	 * (ops.c): no busy batch names it yet, group_reap keeps it */
	struct smart__qp *pinned;
	uint8_t *bounce_mem; /* SMART_TASK_BOUNCES x SMART_BOUNCE_MAX */
	struct smart__bounce rec[SMART_TASK_BOUNCES];
	int nrec;	      /* results to deliver at sync */
	int nslot;	      /* bounce slots in use */
	uint64_t sample_t0;   /* op_sync_fast's latency sample: its start */
	int bo_retries;	      /* retries of the guarded op in progress */
	uint64_t round_trips; /* syncs that waited (smart_task_round_trips) */
	uint64_t alloc_round_trips; /* of which in smart_alloc/free */
	uint64_t bytes;		    /* payload posted (smart_task_bytes) */
	int fence_next;		    /* smart_fence: flag the next WR */
	uint64_t syncs;	      /* syncs completed, and failed: never reset */
	uint64_t sync_errors; /* (epoch.c waits on a slot's task by them) */
	uint64_t wake_at;     /* TSC deadline while sleeping in a backoff */
	int bo_admitted;
	int credit_need; /* WRs a task parked for credits waits to post */
	/* epoch-based reclamation (epoch.c): the domain the task is in */
	struct smart__ebr *ebr_dom;
	uint64_t ebr_epoch;
	int ebr_depth;
	struct smart__task *ebr_prev, *ebr_next;
	struct smart__scratch scratch;
	void *asan_fake_stack;
};

struct smart__ralloc;

/* A poller of a layer above (runtime/service.h). */
#define SMART_WORKER_POLLERS 4
struct smart__poller {
	int (*fn)(struct smart_worker *w, void *arg);
	void *arg;
};

/* Registered buffers cached by a worker (bufpool.c): classes 64 B .. 64
 * KiB, up to SMART_BUF_CACHE blocks each. */
#define SMART_BUF_CLASSES 17
#define SMART_BUF_CACHE	  16
struct smart__bufcache {
	unsigned n;
	void *v[SMART_BUF_CACHE];
};

/* Hot fields first and together (the op path touches the scheduler, the
 * credits, the clock and the stats on every op); the per-blade tables and
 * the main context's task, big and touched one entry at a time, last. */
/* A transport's post1 (transport.h): one one-sided WR on a plain QP. */
typedef int (*smart__post1_fn)(struct smart_tp_qp *qp,
			       const struct smart_tp_wr *wr);

struct smart_worker {
	struct smart_ctx *ctx;
	int index;    /* -1 for the keeper's internal worker */
	int internal; /* the keeper's: not listed, not in stats */
	struct smart__group *group;
	/* group->shared and ctx->o.max_tasks, copied at creation (neither
	 * changes): the scheduler's and the sync's tests read one word */
	int shared;
	int max_tasks;
	/* shared, or a task sleeps (w->sleepers): no task switches straight
	 * to another, none polls in place (task.c); kept with sleepers, so
	 * that those tests read one word */
	int direct_off;
	const struct smart_tp_ops *tp;
	/* tp->post1 when the group is private (a one-WR sync posts its WR
	 * in one call, ops.c), else NULL: one test on the post */
	smart__post1_fn post1;
	/* scheduler */
	smart__fctx_t sched_fctx;
	struct smart__task *cur; /* NULL in the main context */
	/* cur, or &main_task in the main context (smart__cur_task): set
	 * with cur wherever cur is */
	struct smart__task *run;
	struct smart__task *ready_head, *ready_tail;
	struct smart__task *free_tasks;
	struct smart__task **all_tasks; /* every task slot, for scans */
	int ntask_slots;
	int live;
	int since_poll;
	uint32_t cq_gen; /* the group's CQ generation last seen */
	/* domains with an announcement to post (epoch.c), and
	 * WorkReqThrot on (set at creation): side by side, so that the
	 * one-WR sync (ops.c task_sync1) tests both by one load */
	union {
		struct {
			int ebr_dirty;
			int throttle;
		};
		uint64_t sync1_off;
	};
	struct smart__task *sleepers; /* parked until their wake_at */
	uint64_t next_wake;	      /* earliest wake_at of sleepers */
	uint64_t now;		      /* the TSC as the last poll read it */
	uint64_t busy_at;     /* the TSC of the last poll that found work */
	uint64_t spin_cycles; /* o.spin_ns in TSC cycles */
	int npollers;
	struct smart__poller pollers[SMART_WORKER_POLLERS];
	/* work-request throttling: credits = WRs this worker may still post */
	_Atomic int credit;
	int cap_seen; /* the tuner's cap the credits reflect */
	/* tasks parked for credits, FIFO (throttle.c); the scheduler's
	 * polls hand them credits as completions return them */
	struct smart__task *credit_head, *credit_tail;
	/* stats */
	uint64_t stats[SMART_STAT__COUNT];
	/* chains of one WR posted by post1 (ops.c): each one WR and one
	 * doorbell, added to SMART_STAT_WRS_POSTED and SMART_STAT_DOORBELLS
	 * where the stats are read (stats.c, worker.c), not kept in both */
	uint64_t posts1;
	/* ops with their sync in one call (smart_read_sync & co.) that took
	 * op_sync_fast's way and whose WR post1 took (ops.c): each one WR,
	 * one doorbell and one sync that waited, added to those four stats
	 * as posts1 and syncs_waited are; tests read it to know the way ran */
	uint64_t sync_ops;
	/* ... and those whose WR post1 refused, posted in turn (a full send
	 * queue, a waiter for room): tests read it, the stats do not */
	uint64_t sync_ops_turned;
	/* syncs that waited for their batches (ops.c): added to
	 * SMART_STAT_SYNCS and SMART_STAT_ROUND_TRIPS where the stats are
	 * read, as posts1 */
	uint64_t syncs_waited;
	uint64_t retry_hist[SMART_RETRY_HIST];
	smart_hist_t *hist;
	/* conflict avoidance (backoff.c) */
	struct smart__backoff {
		int level;	   /* C_max = unit << level, 0..10; -1:
					 * no backoff */
		uint64_t unit;	   /* the unit of the last retry */
		int nmax;	   /* coroutines admitted at once */
		int no_coro_throt; /* 1: windows never lower nmax */
		/* the smoothed retry rate; a step down on probation
		 * (direction, the rate before it, its age); a failed probe
		 * holds the next off for `hold` windows */
		double p_avg, p_probe;
		int probe_dir, probe_age;
		int hold, holds;
		int active; /* admitted now */
		struct smart__task *wait_head, *wait_tail;
		uint64_t win_end, win_retries, win_done;
		smart_rng_t rng;
	} bo;
	const void *asan_main_bottom; /* main stack, for ASan's fibers */
	size_t asan_main_size;
	struct smart_worker *next;    /* ctx list */
	struct smart__task main_task; /* the main context's ops */
	struct smart__qp *qp[SMART_BLADE_ID_MAX + 1]; /* cache of group's */
	/* round-trip estimate per blade (cycles, sampled syncs; ops.c) */
	uint32_t rtt[SMART_BLADE_ID_MAX + 1];
	/* a QP was opened since the last sample: that sample timed the
	 * connect's control-session exchange, not a round trip */
	int rtt_skip;
	/* reclamation state per domain blade (epoch.c), created on use */
	struct smart__ebr *ebr[SMART_BLADE_ID_MAX + 1];
	/* remote allocator state, per blade, created on first use */
	struct smart__ralloc *ralloc[SMART_BLADE_ID_MAX + 1];
	struct smart__bufcache bufcache[SMART_BUF_CLASSES];
};

/* one writer (the worker), relaxed readers (snapshots): util/compiler.h */
#define SMART_STAT_ADD(w, id, v) smart_counter_add(&(w)->stats[id], (v))
#define SMART_STAT_INC(w, id)	 SMART_STAT_ADD(w, id, 1)

static inline struct smart__task *smart__cur_task(struct smart_worker *w)
{
	return w->run;
}

static inline struct smart__blade *smart__blade_get(struct smart_ctx *ctx,
						    uint16_t id)
{
	if (smart_unlikely(id > SMART_BLADE_ID_MAX))
		return NULL;
	return atomic_load_explicit(&ctx->blades[id], memory_order_acquire);
}

/* worker.c (the poll and the pollers: runtime/service.h) */
/* internal: a worker of the library's own (the keeper's), outside the
 * ctx's list, its stats and its worker count */
int smart__worker_create(struct smart_ctx *ctx, int internal,
			 struct smart_worker **out);
int smart__worker_qp_slow(struct smart_worker *w, uint16_t blade,
			  struct smart__qp **out);

/* The worker's QP to a blade: its cache unless empty or seen broken (the
 * transport reports a broken QP through an error completion; until we see
 * one, posting to it is right: at worst it flushes). */
static inline struct smart__qp *smart__worker_qp_cached(struct smart_worker *w,
							uint16_t blade)
{
	struct smart__qp *qp = w->qp[blade];

	/* In a shared group another worker may have replaced the QP: the
	 * cache is only good while it is still the group's. */
	if (smart_likely(
		    qp &&
		    !atomic_load_explicit(&qp->broken, memory_order_relaxed) &&
		    (!w->shared ||
		     qp == atomic_load_explicit(&w->group->qps[blade],
						memory_order_acquire))))
		return qp;
	return NULL;
}

/* smart__worker_qp_cached where the group is private (w->post1 is set
 * only there, worker.c): no other worker replaces its QPs, so only the
 * broken flag (set by its own polls and posts) is read. */
static inline struct smart__qp *smart__worker_qp_private(struct smart_worker *w,
							 uint16_t blade)
{
	struct smart__qp *qp = w->qp[blade];

	if (smart_likely(qp && !atomic_load_explicit(&qp->broken,
						     memory_order_relaxed)))
		return qp;
	return NULL;
}

/* The cache's QP (smart__worker_qp_cached), else a new one. */
static inline int smart__worker_qp(struct smart_worker *w, uint16_t blade,
				   struct smart__qp **out)
{
	struct smart__qp *qp = smart__worker_qp_cached(w, blade);

	if (smart_likely(qp != NULL)) {
		*out = qp;
		return 0;
	}
	return smart__worker_qp_slow(w, blade, out);
}
void smart__qp_broken(struct smart_worker *w, struct smart__qp *qp);

/* ops.c: post the task's chain to a blade now, even an empty one (so that
 * a dirty announcement goes out), without waiting */
void smart__post_blade(struct smart_worker *w, struct smart__task *t,
		       uint16_t blade);

/* scratch.c */
void smart__scratch_fini(struct smart_worker *w, struct smart__task *t);

/* task.c */
int smart__task_init_slot(struct smart_worker *w, struct smart__task *t);
void smart__task_fini_slot(struct smart_worker *w, struct smart__task *t);
void smart__tasks_destroy(struct smart_worker *w);

/* throttle.c */
enum { TUNER_OFF, TUNER_NO_NIC, TUNER_FIXED, TUNER_UPDATE, TUNER_STABLE };
#define SMART_TUNER_UNLIMITED 256
/* stats.c: the counts w keeps folded (posts1, syncs_waited, sync_ops)
 * added into the stats array c, where they count in two or four stats */
void smart__stats_add_folded(const struct smart_worker *w, uint64_t *c);
void smart__tuner_advance(struct smart__tuner *t, double rate, int stable);
void smart__tuner_init(struct smart_ctx *ctx);
void smart__tuner_step(struct smart_worker *w);
void smart__credit_wait(struct smart_worker *w, struct smart__task *t, int n);
void smart__credit_wake(struct smart_worker *w);
/* Credits move by relaxed load/store when only the owner touches them,
 * atomically when completions of a shared group may return them. */
static inline void smart__credit_add(struct smart_worker *w, int n)
{
	if (w->group->shared)
		atomic_fetch_add_explicit(&w->credit, n, memory_order_acq_rel);
	else
		atomic_store_explicit(
			&w->credit,
			atomic_load_explicit(&w->credit, memory_order_relaxed) +
				n,
			memory_order_relaxed);
}

/* The throttle's credit for the one WR of a sync's own way (ops.c
 * op_sync_fast, task_sync1), taken only when the general sync would take
 * it at once: nobody parked for credits (they go first, in order), the
 * cap in force the one the credits reflect (else credit_sync must move
 * them first), and credit_ready's room for one WR.  1 taken; 0, nothing
 * changed, when the general sync must decide (park, poll, sync the cap).
 * Always the sync's last test before its post: a refusal after it would
 * take the credit twice. */
static inline int smart__credit_take1(struct smart_worker *w)
{
	int c = atomic_load_explicit(&w->credit, memory_order_relaxed);

	if ((!SMART_M_THROT_FAST_OVERTAKE && w->credit_head) ||
	    (!SMART_M_THROT_FAST_NO_FLOOR && c < 1 && c < w->cap_seen) ||
	    (!SMART_M_THROT_FAST_CAP_STALE &&
	     atomic_load_explicit(&w->ctx->tuner.cap, memory_order_relaxed) !=
		     w->cap_seen))
		return 0;
	smart__credit_add(w, -1);
	return 1;
}

static inline void smart__credit_take(struct smart_worker *w,
				      struct smart__task *t, int n,
				      struct smart__qp *qp)
{
	if (smart_unlikely(w->throttle)) {
		t->pinned = qp; /* other tasks run while t parks */
		smart__credit_wait(w, t, n);
		t->pinned = NULL;
	}
}
void smart__tuner_describe(const struct smart_ctx *ctx, int *cap, char *phase,
			   size_t len);
/* backoff.c */
#define SMART_BACKOFF_C0                                                       \
	4096			   /* cycles: the unit until a round trip
					 * was measured */
#define SMART_BACKOFF_SHIFT_MAX 10 /* cap up to unit x 2^10 */
int smart__backoff_window(struct smart__backoff *bo, int max_tasks,
			  uint64_t retries, uint64_t done);
void smart__backoff_init(struct smart_worker *w);
void smart__task_park(struct smart_worker *w, struct smart__task *t);
void smart__task_unpark(struct smart_worker *w, struct smart__task *t);
void smart__task_sleep(struct smart_worker *w, struct smart__task *t,
		       uint64_t deadline);

/* task.c: t joins the back of w's run queue (owner thread only). */
static inline void smart__task_ready(struct smart_worker *w,
				     struct smart__task *t)
{
	t->state = SMART_TASK_READY;
	t->next = NULL;
	if (w->ready_tail)
		w->ready_tail->next = t;
	else
		w->ready_head = t;
	w->ready_tail = t;
}

/* task.c's switch, here so that the sync's common wait (ops.c) is inline
 * with it; smart__task_wait_out switches out until the task is woken. */
void smart__task_wait(struct smart_worker *w, struct smart__task *t);
void smart__task_wait_out(struct smart_worker *w, struct smart__task *t);

/* Lowest usable stack byte (above the guard page). */
static inline void *smart__stack_bottom(const struct smart__task *t)
{
	return (char *)t->stack + t->guard;
}

static inline struct smart__task *smart__ready_pop(struct smart_worker *w)
{
	struct smart__task *t = w->ready_head;

	if (t) {
		w->ready_head = t->next;
		if (!w->ready_head)
			w->ready_tail = NULL;
	}
	return t;
}

/* A task resumed (or entered) by a jump from `from` (a task, or the
 * scheduler: &w->main_task): the context it left is stored where it
 * belongs.  ASan learns the main stack's bounds only from the scheduler's
 * jumps (a task's stack is not the main one).  save: the task's fake
 * stack, NULL for a fresh one. */
static inline void smart__task_resumed(struct smart_worker *w,
				       smart__transfer_t tr, void *save)
{
	struct smart__task *from = tr.data;

	if (from == &w->main_task) {
		smart__fiber_asan_entered(save, &w->asan_main_bottom,
					  &w->asan_main_size);
		w->sched_fctx = tr.fctx;
	} else {
		smart__fiber_asan_entered(save, NULL, NULL);
		from->fctx = tr.fctx;
	}
}

/* May a waiting task switch straight to the next ready one?  Only where
 * the scheduler's loop would do nothing else first (task_switch_to). */
static inline int smart__task_switch_direct(const struct smart_worker *w)
{
	return w->ready_head && !w->direct_off &&
	       w->since_poll + 1 < w->max_tasks;
}

/* From inside task t, which waits: straight into the next ready task n,
 * as the scheduler's next turn would (it would not poll: since_poll stays
 * below max_tasks, nobody sleeps, the group is the worker's own). */
static inline void smart__task_switch_to(struct smart_worker *w,
					 struct smart__task *t,
					 struct smart__task *n)
{
	smart__transfer_t tr;

	w->since_poll++;
	n->state = SMART_TASK_RUNNING;
	w->cur = n;
	w->run = n;
	SMART_STAT_INC(w, SMART_STAT_TASK_SWITCHES);
	smart__fiber_asan_enter(&t->asan_fake_stack, smart__stack_bottom(n),
				n->stack_len - n->guard);
	tr = jump_fcontext(n->fctx, t);
	smart__task_resumed(w, tr, t->asan_fake_stack);
}

/* ops.c */
void smart__batch_complete(struct smart_worker *w, struct smart__batch *b,
			   int shared);

/* smart__batch_complete for a group of one worker, inline in the poll's
 * dispatch loop: nobody else completes its batches or touches its
 * counters, so plain loads and stores do (the shared group's race for a
 * batch's busy word is not there to run).  The task is queued when its
 * last batch lands and it waits for it.  The WRs completed are summed in
 * *done: the poll counts them and returns their credits once, after its
 * loop (nothing in the loop takes credits). */
static inline void smart__batch_complete_own(struct smart_worker *w,
					     struct smart__batch *b,
					     uint64_t *done)
{
	struct smart__task *t = b->task;

	*done += b->n; /* the poll adds it to SMART_STAT_WRS_DONE (and the
			* credits) once */
	__atomic_store_n(&b->busy, 0, __ATOMIC_RELEASE);
	/* the main context never waits in that state (task.c main_wait) */
	if (smart_own_add_is_zero(&t->inflight, -1) &&
	    t->state == SMART_TASK_WAITING)
		smart__task_ready(w, t);
}

/* bufpool.c */
int smart__pool_create(struct smart_ctx *ctx);
void smart__bufcache_flush(struct smart_worker *w);
void smart__pool_destroy(struct smart_ctx *ctx);
static inline int smart__pool_owns(const struct smart_ctx *ctx, const void *p,
				   size_t len)
{
	uintptr_t a = (uintptr_t)p, base = (uintptr_t)ctx->pool->addr;

	/* a below base wraps to more than the pool's length */
	return a - base < ctx->pool->len && len <= ctx->pool->len - (a - base);
}

/* options.c */
void smart__tech_format(int bits, char *buf, size_t len);
#endif
