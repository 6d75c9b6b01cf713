/** @file
 * Interleaving hooks (docs/design.md §10.1): named points between the steps
 * of a data structure's protocol ("ht.split.published", "ht.insert.placed",
 * ...; docs/ht.md lists Smart-HT's) at which a test can stop a client
 * while others run, fail it, or kill it.  They exist for tests: an
 * application has no reason to set one.
 *
 * The structure reads the ctx's hook (smart_ctx_hook(), a relaxed load)
 * once per operation or per step of one, and calls it at each point it passes, with the
 * worker of the operation and the point's name; without a hook a point
 * costs a predicted branch.  A hook runs on the worker's thread, inside
 * the operation's task: it may yield (smart_task_yield) to let other
 * tasks run, sleep, or _exit() the process.  What a structure does with
 * the hook's return value is its own: Smart-HT fails the operation with
 * a non-zero return (as a transport error there would), to test its
 * error paths.
 *
 * The ctx has two points of its own, with no worker (w is NULL):
 * "ctx.connect.publishing" in smart_ctx_connect, with the ctx's lock held,
 * right before the blade is published to the workers (a hook there may
 * fence the ctx, not connect), and "ctx.fence.read" in a fence, once it
 * has read the blades it fails (a hook there may connect, not fence: the
 * fence would run its own hook again).
 *
 * Thread safety: set the hook before the workers that should see it start
 * an operation; it is read with a relaxed atomic load.
 */
#ifndef SMART_HOOK_H
#define SMART_HOOK_H

#include "smart/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Called at a point; 0 to go on, a negative SMART_E* code to make the
 * operation fail there as if an op had returned it. */
typedef int (*smart_hook_fn)(smart_worker_t *w, const char *point, void *arg);

/** Install (fn NULL: remove) the hook of ctx.  SMART_EINVAL for NULL ctx.
 * Thread: any. */
int smart_ctx_set_hook(smart_ctx_t *ctx, smart_hook_fn fn, void *arg);

/** The hook of ctx, or NULL; *arg (when not NULL) receives its argument.
 * Thread: any. */
smart_hook_fn smart_ctx_hook(const smart_ctx_t *ctx, void **arg);

#ifdef __cplusplus
}
#endif
#endif
