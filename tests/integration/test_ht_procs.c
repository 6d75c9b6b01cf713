/*
 * Smart-HT used by several compute processes at once: smartd serves the
 * memory, the parent creates a small table (so that it splits), and three
 * client processes, each with its own ctx and 2 threads x 4 tasks,
 * open it through the root entry and run inserts of their own keys,
 * upserts of shared keys, and deletes of half of their keys, with
 * reclamation on.  The parent then checks every key: each client's kept
 * keys hold their values, its deleted keys are gone, and every shared key
 * holds a value some client wrote.  Splits must have happened.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/smartd_proc.h"
#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "smart/ht.h"

#define PROCS	      3
#define THREADS	      2
#define TASKS	      4
#define KEYS_PER_TASK 150
#define SHARED	      16
#define SECRET	      "ht-procs-secret-77"

struct ctxs {
	const char *addr, *secret_path;
	int proc;
};

static smart_ctx_t *ctx_open(const char *addr, const char *secret_path)
{
	smart_ctx_t *ctx = fixture_ctx((const char *[]){
		"secret_file", secret_path, "buf_pool", "16M", NULL });
	uint16_t id;

	CHECK_OK(smart_ctx_connect(ctx, addr, &id));
	CHECK_EQ(id, 0);
	return ctx;
}

struct task_arg {
	smart_ht_t *t;
	int proc, thread, task;
};

static void key_of(char *k, int proc, int thread, int task, int i)
{
	snprintf(k, 32, "p%d-t%d-k%d-%05d", proc, thread, task, i);
}

static void client_task(smart_worker_t *w, void *p)
{
	struct task_arg *a = p;
	char k[32];
	uint64_t v;
	int i, rc;

	for (i = 0; i < KEYS_PER_TASK; i++) {
		key_of(k, a->proc, a->thread, a->task, i);
		v = (uint64_t)i * 1000 + (uint64_t)a->proc;
		CHECK_OK(smart_ht_insert(a->t, w, k, strlen(k), &v, 8));
		snprintf(k, sizeof(k), "shared-%d", i % SHARED);
		v = ((uint64_t)a->proc << 32) | (uint64_t)i;
		rc = smart_ht_upsert(a->t, w, k, strlen(k), &v, 8);
		CHECK_MSG(rc == 0 || rc == SMART_ERETRY, "upsert: %s",
			  smart_strerror(rc));
	}
	for (i = 0; i < KEYS_PER_TASK; i += 2) {
		key_of(k, a->proc, a->thread, a->task, i);
		CHECK_OK(smart_ht_delete(a->t, w, k, strlen(k)));
	}
}

struct thread_arg {
	smart_ctx_t *ctx;
	int proc, thread;
};

static void *client_thread(void *p)
{
	struct thread_arg *ta = p;
	struct task_arg args[TASKS];
	smart_worker_t *w;
	smart_ht_t *t;
	int i;

	CHECK_OK(smart_worker_create(ta->ctx, &w));
	CHECK_OK(smart_ht_open(w, 0, 3, NULL, &t));
	for (i = 0; i < TASKS; i++) {
		args[i] = (struct task_arg){ t, ta->proc, ta->thread, i };
		CHECK_OK(smart_task_spawn(w, client_task, &args[i]));
	}
	CHECK_OK(smart_worker_run(w));
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	return NULL;
}

/* A client process (test_spawn): args are smartd's address, the secret
 * file and the client's number. */
static void client(char **args)
{
	struct thread_arg ta[THREADS];
	pthread_t th[THREADS];
	smart_ctx_t *ctx = ctx_open(args[0], args[1]);
	int proc = atoi(args[2]), i;

	for (i = 0; i < THREADS; i++) {
		ta[i] = (struct thread_arg){ ctx, proc, i };
		CHECK(!pthread_create(&th[i], NULL, client_thread, &ta[i]));
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	CHECK_OK(smart_ctx_destroy(ctx));
}

/* Every key of every client: the odd ones kept, the even ones gone. */
static void verify(smart_worker_t *w, smart_ht_t *t)
{
	int p, th, tk, i, rc;
	uint64_t v;
	size_t n;
	char k[32];

	for (p = 0; p < PROCS; p++)
		for (th = 0; th < THREADS; th++)
			for (tk = 0; tk < TASKS; tk++)
				for (i = 0; i < KEYS_PER_TASK; i++) {
					key_of(k, p, th, tk, i);
					rc = smart_ht_search(t, w, k, strlen(k),
							     &v, 8, &n);
					if (i % 2 == 0) {
						CHECK_EQ(rc, SMART_ENOENT);
						continue;
					}
					CHECK_OK(rc);
					CHECK_U64_EQ(v, (uint64_t)i * 1000 +
								(uint64_t)p);
				}
	for (i = 0; i < SHARED; i++) {
		snprintf(k, sizeof(k), "shared-%d", i);
		CHECK_OK(smart_ht_search(t, w, k, strlen(k), &v, 8, &n));
		CHECK_LT(v >> 32, PROCS);
		CHECK_EQ((v & 0xffffffff) % SHARED, (uint64_t)i);
	}
}

static void test_processes(void)
{
	const char *argv[] = { "smartd",   "--size",	    "256M",
			       "--listen", "127.0.0.1:0",   "--chunk-size",
			       "256K",	   "--secret-file", NULL,
			       NULL };
	char secret_path[] = "/tmp/smart-htp-XXXXXX";
	struct smart_ht_config cfg;
	struct smart_ht_stats st;
	struct smartd_proc d;
	smart_worker_t *w;
	smart_ctx_t *ctx;
	smart_ht_t *t;
	pid_t pids[PROCS];
	int i, status;

	test_secret_file(secret_path, sizeof(secret_path), secret_path, SECRET);
	argv[8] = secret_path;
	alarm(120);
	smartd_spawn(&d, argv, "smartd: blade 0 serving");
	ctx = ctx_open(d.addr, secret_path);
	CHECK_OK(smart_worker_create(ctx, &w));
	smart_ht_config_init(&cfg);
	cfg.depth = 0; /* one small subtable: it must split */
	cfg.buckets = 16;
	cfg.reclaim = 1;
	CHECK_OK(smart_ht_create(w, 0, 3, &cfg, &t));
	for (i = 0; i < PROCS; i++) {
		char proc[12];

		snprintf(proc, sizeof(proc), "%d", i);
		pids[i] = test_spawn("client",
				     (const char *[]){ d.addr, secret_path,
						       proc, NULL });
		CHECK_GE(pids[i], 0);
	}
	for (i = 0; i < PROCS; i++) {
		status = smartd_wait_bounded(pids[i], 100000);
		CHECK_MSG(status != -1 && WIFEXITED(status) &&
				  WEXITSTATUS(status) == 0,
			  "client process %d failed (status 0x%x)", i, status);
	}
	verify(w, t);
	CHECK_OK(smart_ht_stats(t, w, &st));
	printf("%d processes: %u subtables, global depth %u\n", PROCS,
	       st.subtables, st.global_depth);
	CHECK_GT(st.subtables, 1);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
	smartd_stop(&d);
	unlink(secret_path);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "processes", test_processes },
		{ NULL, NULL },
	};
	static const struct test_child children[] = {
		{ "client", client },
		{ NULL, NULL },
	};

	return test_main_children(argc, argv, cases, children);
}
