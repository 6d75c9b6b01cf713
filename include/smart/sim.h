/** @file
 * The virtual-time simulator (docs/sim.md): run a program's threads as
 * simulated threads (fibers) on the calling OS thread, in virtual time,
 * over the "sim" transport (transport=sim), so that unchanged code runs
 * at the paper's scale (96 threads) on one core, deterministically by
 * seed.  A simulation: its numbers are a model's, never measurements.
 *
 * Rules: the ctx must be created on a simulated thread (inside
 * smart_sim_run), or its first post aborts; a simulated thread must not
 * block on another simulated thread by any means but the library's ops,
 * smart_sim_sleep_ns() and smart_sim_yield() (a mutex or condition
 * variable held across a switch would deadlock the one OS thread).
 */
#ifndef SMART_SIM_H
#define SMART_SIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Run fn(arg) as the first simulated thread of a new engine on the
 * calling thread, and return when it and every thread it spawned have
 * returned.  spec: NULL, "" or "default", or key=value,... of seed
 * (default 1), sync_ns (CPU per post, 90), jitter_ns (45), max_threads
 * (1024), idle_skip_ns (0: off; the longest skip of a loop of empty
 * polls, docs/sim.md §1.1), poll_ns (a poll's CPU, 1050; 0: sync_ns) and
 * wc_ns (per completion reaped, 5): the CPU cost table, docs/sim.md §1.3,
 * fitted on technique-off data, §2.1.  Returns 0; SMART_EINVAL for a bad spec or when
 * called from a simulated thread; SMART_ENOMEM.  Thread: any real one. */
int smart_sim_run(const char *spec, void (*fn)(void *), void *arg);

/** A new simulated thread running fn(arg), starting at the caller's
 * virtual time.  0, SMART_EINVAL (not on a simulated thread, NULL fn),
 * SMART_EAGAIN (max_threads), SMART_ENOMEM.  Thread: a simulated one. */
int smart_sim_spawn(void (*fn)(void *), void *arg);

/** 1 on a simulated thread, else 0.  Thread: any. */
int smart_sim_active(void);

/** Sleep ns of virtual time (others run).  0, or SMART_EINVAL when not on
 * a simulated thread.  Thread: a simulated one. */
int smart_sim_sleep_ns(uint64_t ns);

#ifdef __cplusplus
}
#endif

#endif
