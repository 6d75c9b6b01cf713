/*
 * counter: the README's program, with every error checked.  It joins one
 * memory blade, allocates an 8-byte counter in the blade's memory, has 8
 * tasks (coroutines) of one worker add 1 to it with one-sided fetch-and-adds,
 * reads it back and prints "counter = 8".
 *
 *   build:  cc counter.c $(pkg-config --cflags --libs smart)
 *   blade:  smartd --size 64M --secret-file ~/.smart-secret
 *   run:    SMART_SECRET_FILE=~/.smart-secret ./a.out 127.0.0.1:7470
 *
 * Options come from SMART_* environment variables; SMART_SECRET_FILE names
 * the file holding the blade's shared secret.  Exit status: 0 when the
 * counter reads 8; 1 on any error, after printing the call that failed and
 * smart_strerror() of its status; 2 for bad usage.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include <smart/smart.h>

#define TASKS 8

struct counter {
	smart_gaddr_t addr;
	int err; /* the first error a task met, or 0 */
};

/* Print what failed and why; returns rc so that callers can test it. */
static int check(const char *what, int rc)
{
	if (rc)
		fprintf(stderr, "counter: %s: %s\n", what, smart_strerror(rc));
	return rc;
}

/*
 * One task: queue a FAA on the task's chain, then post it and wait.  The
 * tasks of a worker never run in parallel, so c->err needs no lock.
 */
static void add_one(smart_worker_t *w, void *arg)
{
	struct counter *c = arg;
	uint64_t old;
	int rc;

	rc = smart_faa(w, c->addr, 1, &old);
	if (!rc)
		rc = smart_sync(w);
	if (rc && !c->err)
		c->err = rc;
}

/* Spawn the tasks and run them until all have returned; nonzero on error.
 * A spawn failure still runs the tasks already spawned: a worker with live
 * tasks cannot be destroyed. */
static int count(smart_worker_t *w, struct counter *c)
{
	int rc = 0;

	for (int i = 0; i < TASKS && !rc; i++)
		rc = check("smart_task_spawn", smart_task_spawn(w, add_one, c));
	if (check("smart_worker_run", smart_worker_run(w)))
		return 1;
	return rc || check("a task's smart_faa or smart_sync", c->err);
}

/* The counter's life on the blade: allocate, zero, count, read, free. */
static int run(smart_worker_t *w, uint16_t blade)
{
	struct counter c = { .addr = SMART_GADDR_NULL, .err = 0 };
	uint64_t value = 0;
	int rc;

	if (check("smart_alloc", smart_alloc(w, blade, sizeof(value), &c.addr)))
		return 1;
	/* A block from smart_alloc holds whatever was there: start at 0. */
	rc = check("smart_write_sync",
		   smart_write_sync(w, c.addr, &value, sizeof(value)));
	if (!rc)
		rc = count(w, &c);
	if (!rc)
		rc = check("smart_read_sync",
			   smart_read_sync(w, c.addr, sizeof(value), &value));
	if (check("smart_free", smart_free(w, c.addr, sizeof(value))) || rc)
		return 1;
	printf("counter = %" PRIu64 "\n", value);
	if (value != TASKS) {
		fprintf(stderr, "counter: expected %d\n", TASKS);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	smart_ctx_t *ctx;
	smart_worker_t *w = NULL;
	uint16_t blade;
	int status = 1;

	if (argc != 2) {
		fprintf(stderr,
			"usage: %s HOST:PORT  (the blade's secret "
			"file in SMART_SECRET_FILE)\n",
			argv[0]);
		return 2;
	}
	/* NULL options: the defaults and the SMART_* environment. */
	if (check("smart_ctx_create", smart_ctx_create(NULL, &ctx)))
		return 1;
	if (!check("smart_ctx_connect",
		   smart_ctx_connect(ctx, argv[1], &blade)) &&
	    !check("smart_worker_create", smart_worker_create(ctx, &w)))
		status = run(w, blade);
	if (check("smart_worker_destroy", smart_worker_destroy(w)))
		status = 1;
	if (check("smart_ctx_destroy", smart_ctx_destroy(ctx)))
		status = 1;
	return status;
}
