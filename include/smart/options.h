/** @file
 * Options: every tunable of the library in one declarative table.
 *
 * Precedence, lowest first: the built-in default, the environment variable
 * SMART_<KEY> (key upper-cased, e.g. SMART_QP_MODE), then explicit calls to
 * smart_opts_set() (which is what the tools' flags do).  Values are strings
 * parsed and checked when set; sizes take K/M/G suffixes, times take
 * ns/us/ms/s suffixes.  `smart-perf --list-options` prints the table.
 *
 * Keys (default in brackets; `smart-perf --list-options` prints the table
 * with descriptions, and it is the authority):
 *   transport        shm | verbs                                   [shm]
 *   techniques       Smart's techniques switched on: ThrdAwareAlloc,
 *                    WorkReqThrot,ConflictAvoid,SpecLookup; None = off;
 *                    any other name is SMART_EINVAL          [all four]
 *   qp_mode          auto | shared | mux:K | per-thread | per-thread-db
 *                    (auto: per-thread-db with ThrdAwareAlloc)     [auto]
 *   credit           fixed WR cap per worker, 0 = the tuner        [0]
 *   tune_interval    WorkReqThrot: the tuner's epoch               [8ms]
 *   stable_epochs    WorkReqThrot: epochs a chosen cap is kept     [60]
 *   backoff_window   ConflictAvoid: retry-rate window              [1ms]
 *   max_tasks        coroutines per worker, 1..1024                [64]
 *   spin             a waiting worker that found nothing this long
 *                    yields the CPU at each empty poll             [20us]
 *   task_stack       coroutine stack size, 16K..64M  [64K; 512K in ASan builds]
 *   chain_max        WRs per chain before an implicit post, 1..64,
 *                    at most qp_depth (a chain fits one send queue) [16]
 *   qp_depth         send-queue entries per QP, 16..65536          [512]
 *   cq_depth         completion-queue entries per CQ, 64..1M       [4096]
 *   buf_pool         registered local buffer pool per ctx          [64M]
 *   hugepages        auto | on | off                               [auto]
 *   secret_file      file holding the blades' shared secret        []
 *   connect_timeout  bootstrap connect/handshake timeout           [5s]
 *   log_level        error | warn | info | debug                   [warn]
 *   latency_stats    1 = sampled sync latency histogram in stats   [1]
 *   nic_model        shm: RNIC model, "default" or k=v,... ; off    []
 *   shm_adversarial  shm: adversarial mode, "on" or k=v,... ; off   []
 *   device           verbs: RDMA device, empty = auto              []
 *   ib_port          verbs: port, 0 = first active                 [0]
 *   gid_index        verbs: GID index, -1 = RoCE v2 GID on Ethernet [-1]
 *   mtu              verbs: path MTU bytes, 0 = the port's          [0]
 *   ib_timeout       verbs: ACK timeout exponent (4.096us x 2^N)   [14]
 *   ib_retry         verbs: retries before an op fails             [6]
 *   traffic_class    verbs: GRH traffic class 0..255; on RoCE v2 the
 *                    DSCP is its top 6 bits (DSCP 26 = 104)          [0]
 *   service_level    verbs: service level 0..15 (IB SL; on RoCE the
 *                    802.1p priority when the netdev has a VLAN)     [0]
 *   gid_type         verbs: auto | roce-v2 | roce-v1 | ib: the kind of
 *                    GID, so of fabric; auto = RoCE v2 on Ethernet,
 *                    LID routing on InfiniBand; both ends of a
 *                    connection must agree (else SMART_EPROTO)      [auto]
 *
 * Thread safety: an options object is not thread safe; a ctx copies it at
 * creation, so it may be freed or reused afterwards.
 */
#ifndef SMART_OPTIONS_H
#define SMART_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct smart_opts smart_opts_t;

/** Create an options object holding the defaults overridden by SMART_* env
 * variables.  A bad env value fails with SMART_EINVAL and logs which one.
 * Thread: any. */
int smart_opts_create(smart_opts_t **out);

/** Create with the built-in defaults only (ignores the environment).
 * SMART_EINVAL for NULL out, SMART_ENOMEM.  Thread: any. */
int smart_opts_create_defaults(smart_opts_t **out);

/** Free an options object; NULL is a no-op.  Returns 0: it cannot fail.
 * Thread: the object's (an options object is not thread safe). */
int smart_opts_destroy(smart_opts_t *o);

/** Set key to value.  SMART_ENOENT for an unknown key, SMART_EINVAL for a
 * value that does not parse or is out of range (an unknown technique, a
 * NIC model the shm model would refuse; the old value is kept).
 * Thread: the object's (an options object is not thread safe). */
int smart_opts_set(smart_opts_t *o, const char *key, const char *value);

/** Set from one "key=value" string (the tools' --opt): SMART_EINVAL
 * without '=', otherwise as smart_opts_set().  No length limit beyond the
 * option's own.
 * Thread: the object's (an options object is not thread safe). */
int smart_opts_set_kv(smart_opts_t *o, const char *kv);

/** Copy the value of key, as a string, into buf.  SMART_ENOENT, or
 * SMART_ERANGE if buf is too small.
 * Thread: the object's (an options object is not thread safe). */
int smart_opts_get(const smart_opts_t *o, const char *key, char *buf,
		   size_t len);

/** Print every key with its current value, default and description.
 * Thread: the object's (an options object is not thread safe). */
void smart_opts_print(const smart_opts_t *o, FILE *f);

/** The levels of the library's messages (option log_level). */
enum smart_log_level {
	SMART_LOG_LEVEL_ERROR = 0,
	SMART_LOG_LEVEL_WARN = 1,
	SMART_LOG_LEVEL_INFO = 2,
	SMART_LOG_LEVEL_DEBUG = 3,
};

/** A log handler: one message of the library at `level` (at or below the
 * ctx's log_level), from `prefix` ("smart"), as one line without its
 * newline.  It may be called from any thread of the ctx, at once from
 * several: it must be thread safe, and must not call the library. */
typedef void (*smart_log_fn)(void *arg, int level, const char *prefix,
			     const char *msg);

/** The messages of every ctx created from o (smart_ctx_create_opts) go to
 * fn(arg, ...) instead of stderr; fn NULL: stderr again (the default).
 * Messages before a ctx exists (a bad SMART_* value in
 * smart_opts_create) and a blade's go to stderr.  SMART_EINVAL for NULL
 * o.  Thread: the object's (an options object is not thread safe). */
int smart_log_set_handler(smart_opts_t *o, smart_log_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
