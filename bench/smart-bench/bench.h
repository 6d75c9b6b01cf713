/*
 * smart-bench's modules: what a benchmark gives the runner (main.c), so
 * that `smart-bench <name> [flags]` needs nothing of the benchmark but
 * its entry in the module table.  A new benchmark (the B+tree, SmallBank,
 * TATP, RPC) is one more struct bench_module and its own files.
 *
 * The runner's sequence for a module m:
 *
 *   create  m's state with its defaults (its flags' base)
 *   parse   m's flags and the kit's common flags (kit_parse)
 *   check   what no single flag says: refuse with kit_bad (exit 2)
 *   setup   the environment (kit_env_open), the data, the preload
 *   run     the measured window
 *   report  the table (unless --json) and the result as a record, which
 *           the runner prints as JSON (--json) and appends as CSV (--csv)
 *   destroy m's state, before the runner closes the environment
 *
 * Exit status: 0; 1 when setup or run failed, or report found the run
 * wrong (errors, failed validations: the results are still printed); 2
 * for bad input.  Whoever decides a failure says why on stderr.
 */
#ifndef SMART_BENCH_H
#define SMART_BENCH_H

#include "kit.h"

#define BENCH_TOOL "smart-bench"

/* What the runner holds for a module: the common flags and, after setup,
 * the environment. */
struct bench_run {
	struct kit_common com;
	struct kit_env env;
};

struct bench_module {
	const char *name;
	const char *summary;	      /* one line of smart-bench --help */
	const char *about;	      /* its --help, after the usage line */
	const struct kit_flag *flags; /* base: the module's state */
	const struct kit_col *csv;    /* --csv columns */
	/* NULL when out of memory */
	void *(*create)(struct bench_run *r);
	void (*check)(void *m, struct bench_run *r);
	/* 0, or an error already said on stderr */
	int (*setup)(void *m, struct bench_run *r);
	int (*run)(void *m, struct bench_run *r);
	/* 0, or the error that makes the run a failure (said on stderr) */
	int (*report)(void *m, struct bench_run *r, struct kit_rec *rec);
	void (*destroy)(void *m);
};

/* The modules. */
extern const struct bench_module bench_ycsb, bench_rpc, bench_chan,
	bench_stream;

#endif
