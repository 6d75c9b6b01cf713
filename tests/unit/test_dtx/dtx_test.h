/*
 * test_dtx's shared part (tests/unit/test_dtx/, one test program, its
 * cases in files by subject; main.c has the table and says what each
 * covers): the world of a case (two blades, a worker, a database),
 * recording committed transactions into a serialization graph
 * (tests/harness/dsg.h), loading and running the workloads shared with
 * smart-bench (bench/workloads/: SmallBank, TATP) as the round-trip
 * counts and the stress runs use them, and every case's declaration.
 */

#ifndef SMART_TEST_DTX_H
#define SMART_TEST_DTX_H

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/core.h"
#include "harness/blade_fixture.h"
#include "harness/dsg.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "smart/dtx.h"
#include "smallbank.h"
#include "tatp.h"
#include "transport/shm/shm.h"

#define BLADE_SIZE (64u << 20)

/* ==== a world: one or two blades, a worker, a database =================== */

struct world {
	struct fixture f;
	smart_blade_t *b2;
	smart_worker_t *w;
	smart_dtx_t *d;
};

extern const uint16_t two_blades[2];
void world_start(struct world *wd, const char *adv);
void world_stop(struct world *wd);
void cfg_two(struct smart_dtx_config *c, const struct smart_dtx_table *t,
	     unsigned nt);
void record(struct dsg *h, const smart_dtx_txn_t *x, int nitems, uint64_t tag);
void print_stats(const char *what, const struct smart_dtx_stats *s);
void api_put_new(struct world *wd, smart_dtx_txn_t *x, uint32_t table,
		 uint64_t key, const void *val, size_t len);
enum { T_SMALL = 3, T_BIG = 5 }; /* table ids of the api case */

struct api_scan {
	unsigned n;
	uint64_t keys;
	int stop; /* return 42 from the first record */
};

/* ==== the shared workloads (bench/workloads/) ============================ */

/* SmallBank's accounts here: 256-byte values (a balance and 30 words
 * derived from it and the key after the magic), so that a torn read
 * (words of two versions) shows. */
#define SB_VALUE 256

void sb_test_cfg(struct sb_cfg *c, unsigned accounts, int64_t bal);
void load_unit(smart_dtx_txn_t *x, smart_worker_t *w, const struct wl_rec *r,
	       int n, struct dsg *h, uint64_t tag);
void sb_load(smart_dtx_t *d, smart_worker_t *w, const struct sb_cfg *c,
	     struct dsg *h);
void wl_whole(const struct wl_txn *t, const char *what);
int sb_once(struct wl_txn *t, const struct sb_cfg *c, int type,
	    const struct wl_params *p, struct wl_outcome *o);
/* ---- the SmallBank workload ---------------------------------------------- */

#define SB_THREADS_MAX 4

#define SB_TASKS_MAX 8

#define SB_RETRIES 100000 /* aborts in a row: a livelock */

/* The hook: at "dtx.exec.done" the task yields 0..3 times (a counter,
 * not the clock), so that others run between its exec and commit. */
struct sb_hook {
	_Atomic unsigned n;
	_Atomic unsigned long calls;
};

int sb_hook_fn(smart_worker_t *w, const char *point, void *arg);
void backoff(smart_worker_t *w, smart_rng_t *r, unsigned tries);
/* What a thread's tasks run: FORD's mix over every account, or (to make
 * torn reads common on the adversarial transport) one task writing the
 * two hottest accounts as fast as it can, or one task reading them
 * through an object without address cache, whose every read is a bucket
 * read: eight records in one copy, in which a write and the unlock behind
 * it land whole. */
enum sb_role { SB_MIX, SB_WRITER, SB_READER };

struct sb_thread_cfg {
	enum sb_role role;
	unsigned tasks, commits; /* commits per task */
};

struct sb_run;

struct sb_task {
	struct sb_run *run;
	const struct sb_thread_cfg *cfg;
	smart_dtx_t *d;
	unsigned id;
	smart_rng_t r, backoff; /* the workload's draws; backoffs */
	struct wl_txn t;	/* the transaction object's workload state */
	struct dsg h;
	int64_t delta;
	uint64_t commits, conflicts, failed, by_type[SB_NTYPES];
	unsigned max_retries;
};

struct sb_run {
	smart_ctx_t *ctx;
	struct sb_cfg cfg;	  /* read only while the tasks run */
	_Atomic uint64_t commits; /* by every task */
	struct sb_task task[SB_THREADS_MAX][SB_TASKS_MAX];
};

/* the cases (main.c's table) and child roles, by file */
/* dsg.c */
void test_dsg(void);
/* api.c */
void test_api(void);
void test_eexist(void);
void test_forged_descriptor(void);
void test_insert_zero(void);
void test_insert_twice(void);
/* anomalies.c */
void test_dekker(void);
void test_skew(void);
/* unlock.c */
void test_unlock_lost(void);
void test_unlock_lost_gone(void);
void test_unlock_lost_rfu(void);
/* cost.c */
void test_round_trips(void);
/* smallbank.c */
void test_smallbank(void);
void test_adversarial(void);
/* tatp.c */
void test_tatp(void);

#endif
