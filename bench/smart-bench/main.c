/*
 * smart-bench: the runner of the benchmarks, of the data structures and of
 * messaging (docs/design.md §9).
 *
 * `smart-bench <benchmark> [flags]` finds the benchmark in the module
 * table and takes it through create, parse, check, setup, run, report and
 * destroy (bench.h); the flags every benchmark shares, the blades, the
 * window and the output come from the kit (bench/kit).
 *
 * Invariants: the runner knows no benchmark but by its table entry; it
 * owns the environment (closed last, after the module's state) and the
 * --json/--csv output of the record a module reports.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "dtx_bench.h"

static const struct bench_module *const modules[] = {
	&bench_ycsb, &bench_smallbank, &bench_tatp,
	&bench_rpc,  &bench_chan,      &bench_stream,
};
#define NMODULES (sizeof(modules) / sizeof(modules[0]))

/* The benchmarks first, from the table, then the flags they share. */
static void usage(FILE *f)
{
	char about[1024];
	struct kit_common com;
	struct kit_cli cli = {
		.tool = BENCH_TOOL,
		.synopsis = BENCH_TOOL " BENCHMARK [flags]",
		.about = about,
		.group = { { kit_common_flags, &com,
			     "flags of every benchmark" } },
	};
	size_t i, n;

	n = (size_t)snprintf(about, sizeof(about),
			     "benchmarks (" BENCH_TOOL
			     " BENCHMARK --help for their own flags):\n");
	for (i = 0; i < NMODULES && n < sizeof(about); i++)
		n += (size_t)snprintf(about + n, sizeof(about) - n,
				      "  %-10s %s\n", modules[i]->name,
				      modules[i]->summary);
	kit_usage(&cli, f);
}

static const struct bench_module *module_find(const char *name)
{
	size_t i;

	for (i = 0; i < NMODULES; i++)
		if (!strcmp(name, modules[i]->name))
			return modules[i];
	return NULL;
}

static void unknown(const char *name)
{
	char built[128] = "";
	size_t i;

	for (i = 0; i < NMODULES; i++) {
		if (i)
			strncat(built, ", ", sizeof(built) - strlen(built) - 1);
		strncat(built, modules[i]->name,
			sizeof(built) - strlen(built) - 1);
	}
	kit_bad(BENCH_TOOL, NULL, name, "unknown benchmark (built: %s)", built);
}

/* The runner's output of a module's record. */
static int report(const struct bench_module *mod, void *m, struct bench_run *r)
{
	struct kit_rec rec;
	int verdict, rc = 0;

	kit_rec_init(&rec);
	verdict = mod->report(m, r, &rec);
	kit_rec_provenance(&rec, &r->com);
	if (r->com.json)
		kit_rec_json(&rec, stdout);
	if (r->com.csv)
		rc = kit_rec_csv(&rec, mod->csv, r->com.csv, BENCH_TOOL);
	return verdict ? verdict : rc;
}

/* Setup, the run, the report and teardown: on the main thread, or
 * (--sim) as the first simulated thread. */
struct bench_body {
	const struct bench_module *mod;
	void *m;
	struct bench_run *r;
	int rc;
};

static void bench_body(void *arg)
{
	struct bench_body *b = arg;

	b->rc = b->mod->setup(b->m, b->r);
	if (!b->rc)
		b->rc = b->mod->run(b->m, b->r);
	if (!b->rc)
		b->rc = report(b->mod, b->m, b->r);
	b->mod->destroy(b->m);
	kit_env_close(&b->r->env);
}

static int bench_main(const struct bench_module *mod, int argc, char **argv)
{
	struct bench_body body = { .mod = mod };
	char synopsis[64];
	struct bench_run r;
	struct kit_cli cli = {
		.tool = BENCH_TOOL,
		.synopsis = synopsis,
		.about = mod->about,
	};
	void *m;
	int rc;

	/* before any thread: a stop signal ends the window, not the run */
	kit_signals_block();
	memset(&r, 0, sizeof(r));
	kit_common_init(&r.com, BENCH_TOOL);
	m = mod->create(&r);
	if (!m) {
		fprintf(stderr, BENCH_TOOL ": %s\n",
			smart_strerror(SMART_ENOMEM));
		return 1;
	}
	snprintf(synopsis, sizeof(synopsis), BENCH_TOOL " %s [flags]",
		 mod->name);
	cli.group[0] = (struct kit_group){ mod->flags, m, NULL };
	cli.group[1] = (struct kit_group){ kit_common_flags, &r.com,
					   "common flags" };
	kit_common_command(&r.com, argc, argv, 0);
	kit_parse(&cli, argc, argv);
	mod->check(m, &r);
	body.m = m;
	body.r = &r;
	rc = kit_sim_main(&r.com, bench_body, &body);
	if (rc)
		fprintf(stderr, BENCH_TOOL ": --sim: %s\n", smart_strerror(rc));
	return rc || body.rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	const struct bench_module *mod;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf(BENCH_TOOL " %s\n", SMART_VERSION_STRING);
		return 0;
	}
	mod = module_find(argv[1]);
	if (!mod)
		unknown(argv[1]);
	return bench_main(mod, argc - 1, argv + 1);
}
