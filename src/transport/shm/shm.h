/*
 * shm transport internals: one host, no RDMA (DESIGN.md §3, "shm").
 *
 * The blade's region is a memfd that every client maps; READ and WRITE are
 * word-wise copies in increasing address order, CAS and FAA are CPU atomics
 * on the mapping.  Like a NIC, the transport executes WRs asynchronously:
 * post() validates nothing but room and queues the chain as a doorbell on
 * the QP's CQ; poll() prefetches the targets of every queued WR in one
 * burst, then executes the doorbells in FIFO order and produces
 * completions.  Executing at poll time lets the cache misses of many posted
 * WRs overlap (memory-level parallelism), which is what an RNIC pipeline
 * gives real RDMA.  Order per QP is the SQ order.
 *
 * Locks: none unless the QP/CQ was created SMART_TP_SHARED; then post holds
 * the QP lock and, inside it, the CQ lock (order QP -> CQ); poll holds only
 * the CQ lock.  The SQ head is advanced only by the executor (CQ lock), the
 * tail only by posters (QP lock).
 *
 * The optional RNIC model (shm_model.c, docs/nic-model.md) hangs off
 * d->model, copied into every CQ and QP at creation; NULL means off, and
 * then post and poll test it once and run exactly the unmodelled code.
 * With it, post also takes the QP's doorbell spinlock (order QP ->
 * doorbell -> CQ) and stamps each WR with its modelled completion time;
 * poll executes a WR only once that time has come.
 */
#ifndef SMART_TRANSPORT_SHM_H
#define SMART_TRANSPORT_SHM_H

#include <pthread.h>
#include <stdint.h>

#include "transport/transport.h"
#include "util/clock.h"
#include "util/compiler.h"
#include "util/spinlock.h"

#define SHM_MAX_MR	 256
#define SHM_MAX_INLINE	 64
#define SHM_MAX_SEND_WR	 65536
#define SHM_MAX_CQE	 (1u << 20)

#define SHM_REGION_MAGIC 0x524d4853u	/* "SHMR" */
#define SHM_QP_MAGIC	 0x514d4853u	/* "SHMQ" */
#define SHM_ACC_MAGIC	 0x414d4853u	/* "SHMA" */
#define SHM_BLOB_VERSION 1

struct shm_mr {
	struct smart_tp_mr pub;
	size_t map_len;		/* bytes mapped (rounded to the page size) */
	int slot;
};

struct shm_model;

struct smart_tp_domain {
	const struct smart__log *log;
	struct shm_model *model;	/* RNIC model, NULL = off */
	pthread_mutex_t lock;	/* registration only, never the data path */
	struct shm_mr *_Atomic mrs[SHM_MAX_MR];
	uint32_t gen;		/* key generation, under lock */
	uint32_t next_id;
	/* remotes failed so far: poll reads this once and looks at each
	 * doorbell's remote only when it is non-zero (rare) */
	_Atomic uint32_t failures;
};

struct smart_tp_remote {
	_Atomic int failed;	/* remote_fail(): execute nothing more */
	struct smart_tp_domain *d;	/* counts it in d->failures */
	uint8_t *map;		/* this process's mapping of the region */
	uint64_t size;
	uint64_t map_len;
	uint64_t base;		/* the blade's address of byte 0 */
	uint32_t rkey;
	int hugepages;
};

struct smart_tp_responder {
	uint32_t id;
};

struct shm_wqe {
	struct smart_tp_wr wr;
	uint64_t due;		/* model: completion time in model ticks */
	uint8_t inl[SHM_MAX_INLINE];
};

struct shm_db {
	struct smart_tp_qp *qp;
	uint32_t n;
};

struct smart_tp_cq {
	struct smart_tp_domain *d;
	struct shm_model *model;	/* d->model */
	uint32_t flags;
	smart_spinlock_t lock;
	struct smart_tp_wc *wc;	/* completion ring */
	uint32_t wc_mask, wc_head, wc_tail;
	struct shm_db *db;	/* doorbell FIFO awaiting execution */
	uint32_t db_mask, db_head, db_tail;
	uint32_t touch_gen;	/* poll pass number, for shm_touch */
};

/* DOOMED: the remote failed; the next WR completes with an error, then
 * the QP is in ERR and flushes everything behind it. */
enum { SHM_QP_RESET, SHM_QP_RTS, SHM_QP_DOOMED, SHM_QP_ERR };

struct smart_tp_qp {
	struct smart_tp_domain *d;
	struct shm_model *model;	/* d->model */
	struct shm_doorbell *db;	/* model: this QP's doorbell */
	struct smart_tp_cq *cq;
	struct smart_tp_remote *r;
	uint32_t flags;
	smart_spinlock_t lock;
	int state;
	uint32_t id;
	struct shm_wqe *sq;
	uint32_t sq_mask;
	_Atomic uint32_t sq_head;	/* next WR to execute */
	uint32_t sq_tail;		/* next free entry */
	uint32_t touch_gen;	/* last poll pass that prefetched for it */
};

/* Take and release a QP or CQ lock: only objects shared by threads have
 * one that is really taken. */
static inline void shm_lock(uint32_t flags, smart_spinlock_t *l)
{
	if (flags & SMART_TP_SHARED)
		smart_spin_lock(l);
}

static inline void shm_unlock(uint32_t flags, smart_spinlock_t *l)
{
	if (flags & SMART_TP_SHARED)
		smart_spin_unlock(l);
}

/* shm_mem.c: look up a local MR by key, NULL when the key is stale. */
static inline struct shm_mr *shm_mr_lookup(struct smart_tp_domain *d,
					   uint32_t lkey)
{
	uint32_t slot = (lkey & 0xffff) - 1;

	if (smart_unlikely(slot >= SHM_MAX_MR))
		return NULL;
	struct shm_mr *mr = atomic_load_explicit(&d->mrs[slot],
						 memory_order_acquire);
	return mr && mr->pub.lkey == lkey ? mr : NULL;
}

/* Table entries implemented in shm_mem.c and shm_qp.c. */
int smart__shm_domain_open(const struct smart_tp_cfg *cfg,
			   struct smart_tp_domain **out);
void smart__shm_domain_close(struct smart_tp_domain *d);
void smart__shm_query_caps(struct smart_tp_domain *d,
			   struct smart_tp_caps *out);
int smart__shm_mr_alloc(struct smart_tp_domain *d, size_t len, int hugepages,
			int shareable, struct smart_tp_mr **out);
void smart__shm_mr_free(struct smart_tp_domain *d, struct smart_tp_mr *mr);
int smart__shm_region_blob(struct smart_tp_domain *d, struct smart_tp_mr *mr,
			   void *blob, size_t *len);
int smart__shm_accept(struct smart_tp_domain *d, struct smart_tp_mr *region,
		      const void *client_blob, size_t client_len,
		      void *blob_out, size_t *blob_len,
		      struct smart_tp_responder **out);
void smart__shm_responder_destroy(struct smart_tp_responder *r);
int smart__shm_remote_attach(struct smart_tp_domain *d, const void *blob,
			     size_t len, int fd, struct smart_tp_remote **out);
void smart__shm_remote_detach(struct smart_tp_remote *r);
void smart__shm_remote_fail(struct smart_tp_remote *r);
uint64_t smart__shm_remote_base(const struct smart_tp_remote *r);
uint32_t smart__shm_remote_rkey(const struct smart_tp_remote *r);

int smart__shm_cq_create(struct smart_tp_domain *d, uint32_t depth,
			 uint32_t flags, struct smart_tp_cq **out);
void smart__shm_cq_destroy(struct smart_tp_cq *cq);
int smart__shm_poll(struct smart_tp_cq *cq, struct smart_tp_wc *wc, int max);
int smart__shm_qp_create(struct smart_tp_domain *d, struct smart_tp_cq *cq,
			 const struct smart_tp_qp_attr *attr,
			 struct smart_tp_qp **out);
int smart__shm_qp_blob(struct smart_tp_qp *qp, void *blob, size_t *len);
int smart__shm_qp_connect(struct smart_tp_qp *qp, struct smart_tp_remote *r,
			  const void *peer_blob, size_t len);
void smart__shm_qp_destroy(struct smart_tp_qp *qp);
int smart__shm_post(struct smart_tp_qp *qp, const struct smart_tp_wr *wrs,
		    int n);
int smart__shm_qp_in_error(const struct smart_tp_qp *qp);
void smart__shm_domain_stats(struct smart_tp_domain *d,
			     struct smart_tp_stats *out);

/*
 * The RNIC model (shm_model.c).  Parameters as the spec gives them; the
 * model converts them to ticks of its clock once, at domain open.
 */
struct shm_model_params {
	uint64_t rtt_ns;	/* network round trip added to every WR */
	double mops;		/* device rate, M WRs/s, whole domain */
	uint64_t doorbells;	/* the context's doorbell registers */
	uint64_t db_hold_ns;	/* MMIO time a post holds its doorbell */
	uint64_t wqe_cache;	/* WQE cache entries */
	uint64_t miss_ns;	/* extra device time of a WR that misses */
};

/* A doorbell register: a real spinlock held for the modelled MMIO time.
 * Its counters change only under the lock (relaxed load + store, no
 * read-modify-write) and are read by domain_stats from any thread. */
struct shm_doorbell {
	smart_spinlock_t lock;
	int index;
	_Atomic uint64_t rings, contended, misses;
	struct shm_doorbell *next;	/* own doorbells, under d->lock */
} smart_aligned_cl;

/* The model of one domain (one NIC).  Ticks are TSC cycles, or ns when
 * the clock has no invariant TSC. */
struct shm_model {
	struct shm_model_params p;
	struct smart__clock clock;
	int use_tsc;
	uint64_t rtt, hold, wr, miss;	/* parameters in ticks */
	uint32_t ndb, nded;		/* doorbells, of which dedicated */
	/* mapping state, under d->lock */
	uint32_t ded_used;	/* bit i: dedicated doorbell i taken */
	uint32_t next_shared;	/* round robin over the shared ones */
	int next_own;		/* index of the next own doorbell */
	struct shm_doorbell *dbs;	/* [ndb] */
	struct shm_doorbell *own;	/* list of own doorbells */
	struct smart_tp_stats retired;	/* of freed own doorbells */
	/* the device: written by every post, so on a line of their own */
	_Atomic uint64_t dev_busy smart_aligned_cl;	/* busy until */
	_Atomic uint64_t outstanding;	/* WRs posted, not executed */
};

static inline uint64_t shm_model_now(const struct shm_model *m)
{
	return m->use_tsc ? smart__rdtsc() : smart__mono_ns();
}

/* n executed (or forgotten) WRs leave the device. */
static inline void shm_model_retire(struct shm_model *m, uint32_t n)
{
	atomic_fetch_sub_explicit(&m->outstanding, n, memory_order_relaxed);
}

/* Parse a spec ("default" or key=value,...) over the defaults; 0 or
 * SMART_EINVAL with a log line naming the problem. */
int smart__shm_model_parse(const char *spec, struct shm_model_params *out,
			   const struct smart__log *log);
/* Domain open/close: d->model from the spec (spec NULL or "" = off). */
int smart__shm_model_open(struct smart_tp_domain *d, const char *spec);
void smart__shm_model_close(struct smart_tp_domain *d);
/* QP create/destroy: give the QP its doorbell, take it back. */
int smart__shm_model_qp_attach(struct smart_tp_qp *qp);
void smart__shm_model_qp_detach(struct smart_tp_qp *qp);
/* Ring the doorbell for the n WRs copied at the QP's SQ tail, stamp their
 * completion times and queue them on the CQ (the modelled half of post). */
int smart__shm_model_ring(struct smart_tp_qp *qp, uint32_t n);

/* For tests: the parameters in force (NULL when the model is off) and the
 * doorbell index of a QP (-1 without the model).  Indexes below
 * params->doorbells are the context's registers; a QP created with
 * SMART_TP_OWN_DOORBELL gets one of its own, numbered from there on. */
const struct shm_model_params *
smart__shm_model_params(const struct smart_tp_domain *d);
int smart__shm_qp_doorbell(const struct smart_tp_qp *qp);

/*
 * Option specs (shm_spec.c): "word" or key=value,... over a caller's
 * struct of defaults, every value range-checked, every refusal logged
 * with the option's name.
 */
struct shm_spec_key {
	const char *name;
	size_t off;		/* of a uint64_t, or of a double */
	int is_double;
	double min, max;
};

struct shm_spec {
	const char *what;	/* the option's name, first in messages */
	const struct shm_spec_key *keys;
	size_t nkeys;		/* at most 32 */
	const char *const *words;	/* NULL-ended words for "defaults" */
};

/* 0, or SMART_EINVAL with a log line; params may be half written then. */
int smart__shm_spec_parse(const struct shm_spec *s, const char *spec,
			  void *params, const struct smart__log *log);

#endif
