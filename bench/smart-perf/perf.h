/*
 * smart-perf inside: the configuration, the state of a run and what its
 * files share.  main.c has the flags and the run's setup, load.c the
 * threads and their workload (framework and raw), report.c the table,
 * JSON and CSV.
 *
 * Invariants: no mutable globals; the run's state is in struct perf,
 * which the threads read and only main writes between runs; a thread
 * writes only its own struct perf_thread, read by main after the join.
 */
#ifndef SMART_PERF_H
#define SMART_PERF_H

#include <stdatomic.h>
#include <stdint.h>

#include "kit.h"

enum perf_op { OP_READ, OP_WRITE, OP_CAS, OP_FAA, OP_CAS_INCR, OP__N };

/* The names of --op, NULL-terminated (a KIT_CHOICE table). */
extern const char *const perf_op_names[];

struct perf_cfg {
	struct kit_common com;
	int op;
	uint64_t size;
	int depth; /* coroutines per thread */
	int raw, vs_raw, rounds;
	int batch;	/* ops per sync per coroutine */
	int dynamic_ms; /* re-draw the active threads this often */
	uint64_t keys;	/* cas-incr: counters */
	uint64_t span;	/* bytes the offsets spread over */
	double zipf;	/* cas-incr: theta, 0 = uniform */
	int sweep;	/* --sweep: sizes 2, 4, ... up to --size, a run each */
	int lat;	/* --lat: idle latency, one op at a time, each timed */
};

struct perf;

struct perf_thread {
	struct perf *p;
	int idx;
	smart_worker_t *w;
	uint64_t ops;
	smart_hist_t hist; /* op latency in cycles */
	int err;
};

struct perf {
	const struct perf_cfg *cfg;
	struct kit_env env;
	uint8_t *raw_base;  /* embedded blade's mapping, for --raw */
	uint64_t lo, slots; /* offsets: lo + slot * stride */
	uint64_t stride;
	smart_worker_t *w0;    /* the main thread's: allocated the span */
	smart_gaddr_t span_ga; /* the span, allocated from the blade */
	uint64_t span_len;
	struct kit_runner run;
	atomic_int active; /* --dynamic: threads below this index run */
	struct perf_thread *t;
	int raw;	   /* this run */
	uint64_t size;	   /* this run's op size (--sweep: each in turn) */
	smart_zipf_t zipf; /* cas-incr key popularity */
	int rc;		   /* perf_body's result */
};

struct perf_result {
	uint64_t size; /* the op size of the run */
	uint64_t ops;
	double mops;
	double mb_per_s;  /* 10^6 bytes per second (JSON/CSV mb_per_s) */
	double mib_per_s; /* 2^20: perftest's MB/sec, the table's */
	struct kit_lat lat;
	struct kit_window win; /* its time and the library's stats */
};

/* One run of cfg->com.seconds, framework or raw.  Returns 0 or the first
 * error of a thread. */
int perf_run_once(struct perf *p, int raw, struct perf_result *res);

void perf_print_header(const struct perf *p);
void perf_print_row(const struct perf *p, const struct perf_result *r, int raw);
/* --lat: perftest's latency table, its header and one row per run. */
void perf_print_lat_header(const struct perf *p);
void perf_print_lat_row(const struct perf *p, const struct perf_result *r);
/* --json and --csv: the result as a record; ratio < 0 when not --vs-raw. */
int perf_report(const struct perf *p, const struct perf_result *r, int raw,
		double ratio);

#endif
