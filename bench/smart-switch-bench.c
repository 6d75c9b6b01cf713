/*
 * smart-switch-bench: the cost of a coroutine switch.
 *
 * N tasks on one worker yield to each other in a loop; a yield goes task ->
 * scheduler -> next task (two fcontext jumps plus the run-queue work), which
 * is what an op that waits costs in switching.  Each run times a fixed
 * number of yields; the median over runs is reported, per yield and per
 * jump.  The CQ is polled by the scheduler as usual (once per max_tasks
 * switches), so the figure includes that share.  Public API and the kit
 * (flags) only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit.h"

struct sw_cfg {
	int tasks;
	int yields; /* per task per run */
	int runs;
	int json;
};

static void yield_task(smart_worker_t *w, void *arg)
{
	long i, n = *(const long *)arg;

	for (i = 0; i < n; i++)
		smart_task_yield(w);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int run(smart_worker_t *w, const struct sw_cfg *c, double *ns)
{
	uint64_t t0, t1;
	long n = c->yields;
	int i, rc;

	for (i = 0; i < c->tasks; i++) {
		rc = smart_task_spawn(w, yield_task, &n);
		if (rc)
			return rc;
	}
	t0 = smart_now_ns();
	rc = smart_worker_run(w);
	t1 = smart_now_ns();
	*ns = (double)(t1 - t0) / ((double)c->tasks * (double)c->yields);
	return rc;
}

#define S struct sw_cfg
static const struct kit_flag sw_flags[] = {
	KIT_INT("tasks", S, tasks, 1, 1024, "N",
		"tasks yielding to each other [8]"),
	KIT_INT("yields", S, yields, 1, 1e9, "N",
		"yields per task per run "
		"[200000]"),
	KIT_INT("runs", S, runs, 1, 101, "N",
		"runs; the median is reported "
		"[9]"),
	KIT_FLAG("json", S, json, "one JSON object instead of the line"),
	KIT_END,
};
#undef S

static void parse(int argc, char **argv, struct sw_cfg *c)
{
	struct kit_cli cli = {
		.tool = "smart-switch-bench",
		.synopsis = "smart-switch-bench [flags]",
		.about = "  The cost of a coroutine switch (yield: task -> "
			 "scheduler -> task).\n",
		.group = { { sw_flags, c, NULL } },
	};

	kit_parse(&cli, argc, argv);
}

static int bench(const struct sw_cfg *c, smart_worker_t *w)
{
	double ns[101], med;
	int i, rc;

	for (i = 0; i < c->runs; i++) {
		rc = run(w, c, &ns[i]);
		if (rc)
			return rc;
	}
	qsort(ns, (size_t)c->runs, sizeof(ns[0]), cmp_double);
	med = ns[c->runs / 2];
	if (c->json)
		printf("{\"tasks\":%d,\"yields_per_run\":%ld,\"runs\":%d,"
		       "\"yield_ns_median\":%.2f,\"jump_ns_median\":%.2f,"
		       "\"yield_ns_min\":%.2f,\"yield_ns_max\":%.2f}\n",
		       c->tasks, (long)c->yields * c->tasks, c->runs, med,
		       med / 2, ns[0], ns[c->runs - 1]);
	else
		printf("coroutine switch: %d tasks, %d runs of %ld yields: "
		       "median %.2f ns per yield (task->scheduler->task), "
		       "%.2f ns per jump; min %.2f, max %.2f\n",
		       c->tasks, c->runs, (long)c->yields * c->tasks, med,
		       med / 2, ns[0], ns[c->runs - 1]);
	return 0;
}

int main(int argc, char **argv)
{
	struct sw_cfg c = { .tasks = 8, .yields = 200000, .runs = 9 };
	smart_opts_t *o = NULL;
	smart_ctx_t *ctx = NULL;
	smart_worker_t *w = NULL;
	int rc;

	parse(argc, argv, &c);
	rc = smart_opts_create(&o);
	if (!rc && c.tasks > 64) {
		char buf[16];

		snprintf(buf, sizeof(buf), "%d", c.tasks);
		rc = smart_opts_set(o, "max_tasks", buf);
	}
	if (!rc)
		rc = smart_opts_set(o, "buf_pool", "4M");
	if (!rc)
		rc = smart_ctx_create(o, &ctx);
	if (!rc)
		rc = smart_worker_create(ctx, &w);
	if (!rc)
		rc = bench(&c, w);
	if (rc)
		fprintf(stderr, "smart-switch-bench: %s\n", smart_strerror(rc));
	if (w)
		smart_worker_destroy(w);
	if (ctx)
		smart_ctx_destroy(ctx);
	smart_opts_destroy(o);
	return rc ? 1 : 0;
}
