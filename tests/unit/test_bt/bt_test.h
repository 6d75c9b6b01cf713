/*
 * test_bt's shared part (tests/unit/test_bt/, one test program, its cases
 * in files by subject; main.c has the table and says what each covers):
 * the world of a case (a blade, a worker, a tree), keys and values by
 * number, raw node fields for forging, the killed-writer helpers several
 * subjects use (torn_run: a child killed at a hook, then the tree healed),
 * and every case's and child role's declaration.
 */

#ifndef SMART_TEST_BT_H
#define SMART_TEST_BT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "smart/bt.h"
#include "smart/ht.h"
#include "blade/blade_int.h"   /* the lease round robin, set by hand */
#include "ds/bt/bt_internal.h" /* the tree's salt, to forge nodes */

#define BLADE_SIZE (128u << 20)

void key_of(char *k, unsigned i);
void val_of(char *v, unsigned i, unsigned gen);
struct world {
	struct fixture f;
	smart_worker_t *w;
	smart_bt_t *t;
};

void world_start(struct world *wd, const char *adv, unsigned node,
		 unsigned key_max, unsigned val_max);
uint64_t ctx_stat(smart_ctx_t *ctx, enum smart_stat id);
void world_stop(struct world *wd);
uint32_t forged_crc(const struct world *wd, const uint8_t *node, size_t len);
void fill(struct world *wd, unsigned lo, unsigned hi);
void expect_val(struct world *wd, unsigned i, unsigned gen);
void scan_check(struct world *wd, const unsigned char *present, unsigned nkeys,
		unsigned from, unsigned to, unsigned slice);
void dead_holder_on(struct world *wd_);
int torn_run(struct world *wd, const char *sc, int at);
void torn_k5(struct world *wd, uint64_t repairs);
void torn_expect(struct world *wd, unsigned lo, unsigned hi);
void world2_start(struct world *wd, smart_blade_t **b2);
void fresh_tree(struct world *wd, struct smart_alloc_usage *u0);
void none_twice(struct world *wd);
void drop_back_to(struct world *wd, const struct smart_alloc_usage *u0);

/* the cases (main.c's table) and child roles, by file */
/* basics.c */
void test_semantics(void);
void test_grow_and_scan(void);
void test_named(void);
void test_stale_root(void);
void test_bulk(void);
void test_shrink(void);
void test_drop(void);
/* cost.c */
void test_update_bytes(void);
void test_round_trips(void);
/* forged.c */
void test_corrupt_node(void);
void test_parent_is_leaf(void);
void test_foreign_node(void);
void test_torn_node(void);
void test_spec_verify(void);
void test_nobody_lock(void);
void test_forged_record(void);
void test_forged_len(void);
void test_adopt_torn(void);
/* merge.c */
void test_stale_forward(void);
void test_scan_merge_split(void);
void test_retire_grace(void);
void test_merge_forged(void);
void child_taker2(char **args);
void test_merge_two_takers(void);
void test_merge_unlocked(void);
void child_merger(char **args);
void child_taker(char **args);
void test_merge_blades(void);
void test_redo_retire(void);
/* dead.c */
void child_holder(char **args);
void test_dead_holder(void);
void child_torn(char **args);
void test_torn_holder(void);
void child_splitter(char **args);
void test_dead_splitter(void);
void child_inner_splitter(char **args);
void test_dead_inner_splitter(void);
void test_sep_twice(void);
void child_older(char **args);
void test_older_record(void);
void test_scan_ahead(void);
/* kept.c */
void test_close_kept(void);
void child_kept_reopen(char **args);
void test_close_kept_reopen(void);
void test_kept_retry(void);
void test_handover_limit(void);
/* concurrent.c */
void test_concurrent(void);
void test_adversarial(void);
void test_device_locks(void);

#endif
