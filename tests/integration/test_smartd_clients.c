/*
 * The full stack across processes over the shm transport: a real smartd
 * (SMART_BIN_DIR/smartd) and two client processes that share it, using
 * only the public API.
 *
 * The clients meet on a shared arrival counter first, so their work
 * overlaps in time.  Each runs 2 worker threads x 8 tasks.  Every task
 * adds 1 with FAA to one shared counter word and increments another by
 * read + CAS loops, and allocates NBLK blocks with smart_alloc, each
 * filled with words tagged (client, task, block, word).  A client then
 * publishes a directory of its blocks in root entry <client>.  The test
 * process then checks, as a third client: the exact counter totals,
 * every block still holding its own tags (an allocation handed to two
 * owners would have been overwritten) and no two published ranges
 * overlapping.  A client with a wrong secret gets SMART_EACCES and smartd
 * keeps serving; SIGTERM ends smartd with exit status 0.
 *
 * SMART_TEST_SCALE (percent of the increments) and SMART_TEST_SLOW (hang
 * guards stretched) are for slow links (tests/verbs/lossy.sh).
 *
 * Invariants of the harness: nothing waits unboundedly.  alarm() bounds
 * the whole case; its handler and an atexit handler SIGKILL smartd and the
 * clients, and every child also dies with its parent (PR_SET_PDEATHSIG).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/smartd_proc.h"
#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/smart.h"

#define SECRET	     "clients-secret-4b1d"
#define WRONG_SECRET "clients-secret-XXXX"
#define CLIENTS	     2
_Static_assert(1 + CLIENTS <= GUARD_PIDS,
	       "the guard holds smartd and the clients");
#define THREADS	  2
#define TASKS	  8
#define NBLK	  12
#define FAA_BATCH 8
/* increments per round: SMART_TEST_SCALE percent (1..100, default 100)
 * of 25 FAA batches and 50 CASes, at least one of each (a link where an
 * op costs tens of milliseconds, tests/verbs/lossy.sh); the totals the
 * test checks follow */
static int scale_of(int full)
{
	int n = full * test_env_int("SMART_TEST_SCALE", 1, 100, 100) / 100;

	return n ? n : 1;
}
#define FAA_PER_ROUND (scale_of(25) * FAA_BATCH)
#define CAS_PER_ROUND scale_of(50)
#define NFAA	      (NBLK * FAA_PER_ROUND) /* per task */
#define NCAS	      (NBLK * CAS_PER_ROUND) /* per task */
#define TASKS_ALL     (THREADS * TASKS)	     /* per client */
#define DIR_MAGIC     UINT64_C(0x52494473746e6c63)
#define DIR_BYTES     (16 + TASKS_ALL * NBLK * 16)
#define ROOT_COUNTERS 2
#define BUF_BYTES     4096
#define COUNTER_BYTES 24 /* FAA counter, CAS counter, arrivals */

/* Block sizes, all multiples of 8 (tags are words), up to BUF_BYTES. */
static const uint32_t blk_sizes[NBLK] = {
	8, 16, 24, 40, 64, 72, 104, 256, 520, 1000, 2048, 4096,
};

/* In a fresh child: die with the parent, even if it is already gone. */
static void die_with_parent(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
}

/* smartd on 127.0.0.1:0, 64 MiB in 256-KiB chunks. */
static void daemon_start(struct smartd_proc *d, const char *secret_path)
{
	const char *argv[] = { "smartd",   "--size",	    "64M",
			       "--listen", "127.0.0.1:0",   "--chunk-size",
			       "256K",	   "--secret-file", secret_path,
			       NULL };

	smartd_spawn(d, argv, "smartd: blade 0 serving 67108864 bytes on ");
	guard.pids[0] = d->pid;
}

static void daemon_stop(struct smartd_proc *d)
{
	smartd_stop(d);
	guard.pids[0] = 0;
}

/* Inside the Soft-RoCE VM the suite runs again over verbs (the fixture's
 * SMART_TEST_TRANSPORT); smartd follows SMART_TRANSPORT. */
static smart_ctx_t *ctx_open(const char *secret_path)
{
	return fixture_ctx(
		(const char *[]){ "secret_file", secret_path, NULL });
}

static uint64_t tag(unsigned client, unsigned task, unsigned blk, uint64_t word)
{
	return (UINT64_C(0xa5) << 56) | ((uint64_t)client << 48) |
	       ((uint64_t)task << 40) | ((uint64_t)blk << 32) | word;
}

struct blk {
	uint64_t gaddr, size;
};

struct task_arg {
	smart_gaddr_t counters; /* COUNTER_BYTES, see counters_get() */
	uint16_t blade;
	unsigned client, task;
	struct blk blk[NBLK];
};

/* FAA_PER_ROUND increments, FAA_BATCH per sync; olds must increase. */
static void faa_round(smart_worker_t *w, struct task_arg *a, uint64_t *last)
{
	uint64_t old[FAA_BATCH];

	for (int b = 0; b < FAA_PER_ROUND / FAA_BATCH; b++) {
		for (int i = 0; i < FAA_BATCH; i++)
			CHECK_OK(smart_faa(w, a->counters, 1, &old[i]));
		CHECK_OK(smart_sync(w));
		for (int i = 0; i < FAA_BATCH; i++) {
			/* one task's ops execute in queueing order */
			CHECK_MSG(*last == UINT64_MAX || old[i] > *last,
				  "task %u: FAA old values must increase: "
				  "%llu after %llu",
				  a->task, (unsigned long long)old[i],
				  (unsigned long long)*last);
			*last = old[i];
		}
	}
}

/* CAS_PER_ROUND increments, each: read, then CAS until it wins. */
static void cas_round(smart_worker_t *w, struct task_arg *a)
{
	smart_gaddr_t g = smart_gaddr_add(a->counters, 8);
	uint64_t cur, old;

	for (int i = 0; i < CAS_PER_ROUND; i++) {
		CHECK_OK(smart_read_sync(w, g, 8, &cur));
		for (;;) {
			CHECK_OK(smart_cas_sync(w, g, cur, cur + 1, &old));
			if (old == cur)
				break;
			CHECK_MSG(old > cur,
				  "CAS counter went back: read %llu,"
				  " then saw %llu",
				  (unsigned long long)cur,
				  (unsigned long long)old);
			cur = old;
		}
	}
}

static void blk_fill(struct task_arg *a, int i, uint64_t *buf)
{
	for (uint64_t k = 0; k < a->blk[i].size / 8; k++)
		buf[k] = tag(a->client, a->task, (unsigned)i, k);
}

static void client_task(smart_worker_t *w, void *p)
{
	struct task_arg *a = p;
	uint64_t last = UINT64_MAX;
	void *buf;

	CHECK_OK(smart_buf_alloc(w, BUF_BYTES, &buf));
	for (int i = 0; i < NBLK; i++) {
		/* rotate sizes so the tasks' allocations interleave */
		uint32_t size = blk_sizes[(i + a->task) % NBLK];

		faa_round(w, a, &last);
		CHECK_OK(smart_alloc(w, a->blade, size, &a->blk[i].gaddr));
		a->blk[i].size = size;
		blk_fill(a, i, buf);
		CHECK_OK(smart_write_sync(w, a->blk[i].gaddr, buf, size));
		cas_round(w, a);
	}
	smart_buf_free(w, buf);
}

struct thread_arg {
	smart_ctx_t *ctx;
	struct task_arg *tasks; /* TASKS of them */
};

static void *client_thread(void *p)
{
	struct thread_arg *t = p;
	smart_worker_t *w;

	CHECK_OK(smart_worker_create(t->ctx, &w));
	for (int i = 0; i < TASKS; i++)
		CHECK_OK(smart_task_spawn(w, client_task, &t->tasks[i]));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_worker_destroy(w));
	return NULL;
}

/* The shared counters (word 0: FAA, word 1: CAS, word 2: clients
 * arrived): the first client to publish a zeroed block in root
 * ROOT_COUNTERS wins; the other frees its own and uses the winner's. */
static smart_gaddr_t counters_get(smart_worker_t *w, uint16_t blade)
{
	static const uint64_t zero[COUNTER_BYTES / 8];
	smart_gaddr_t mine, old;

	CHECK_OK(smart_alloc(w, blade, COUNTER_BYTES, &mine));
	CHECK_OK(smart_write_sync(w, mine, zero, sizeof(zero)));
	CHECK_OK(smart_root_cas(w, blade, ROOT_COUNTERS, 0, mine, &old));
	if (old == 0)
		return mine;
	CHECK_MSG(smart_gaddr_blade(old) == blade,
		  "root %d: expected 0 or a gaddr on blade %u, got 0x%llx",
		  ROOT_COUNTERS, blade, (unsigned long long)old);
	CHECK_OK(smart_free(w, mine, COUNTER_BYTES));
	return old;
}

/* Wait (at most 10 s) until every client arrived, so that their work
 * overlaps in time whatever the scheduling. */
static void rendezvous(smart_worker_t *w, smart_gaddr_t counters)
{
	smart_gaddr_t g = smart_gaddr_add(counters, 16);
	uint64_t n = 0;

	CHECK_OK(smart_faa_sync(w, g, 1, NULL));
	for (int t = 0; t < 10000; t++) {
		CHECK_OK(smart_read_sync(w, g, 8, &n));
		if (n >= CLIENTS)
			return;
		sleep_ms(1);
	}
	TEST_FAIL("expected %d clients to arrive within 10 s, got %llu",
		  CLIENTS, (unsigned long long)n);
}

/* Publish the directory of the client's blocks in root entry <client>. */
static void dir_publish(smart_worker_t *w, uint16_t blade, unsigned client,
			const struct task_arg *tasks)
{
	uint64_t *d;
	smart_gaddr_t g;
	size_t n = 2;

	CHECK_OK(smart_buf_alloc(w, DIR_BYTES, (void **)&d));
	d[0] = DIR_MAGIC;
	d[1] = TASKS_ALL * NBLK;
	for (int t = 0; t < TASKS_ALL; t++)
		for (int i = 0; i < NBLK; i++) {
			d[n++] = tasks[t].blk[i].gaddr;
			d[n++] = tasks[t].blk[i].size;
		}
	CHECK_OK(smart_alloc(w, blade, DIR_BYTES, &g));
	CHECK_OK(smart_write_sync(w, g, d, DIR_BYTES));
	CHECK_OK(smart_root_set(w, blade, client, g));
	smart_buf_free(w, d);
}

static void client_run(const char *addr, const char *secret_path,
		       unsigned client)
{
	static struct task_arg tasks[TASKS_ALL];
	struct thread_arg targ[THREADS];
	pthread_t th[THREADS];
	smart_ctx_t *ctx = ctx_open(secret_path);
	smart_worker_t *w;
	struct smart_blade_info info;
	smart_gaddr_t counters;
	uint16_t blade;

	CHECK_OK(smart_ctx_connect(ctx, addr, &blade));
	CHECK_OK(smart_ctx_blade_info(ctx, blade, &info));
	CHECK_EQ(info.size, 64 << 20);
	CHECK_OK(smart_worker_create(ctx, &w));
	counters = counters_get(w, blade);
	rendezvous(w, counters);
	for (unsigned t = 0; t < TASKS_ALL; t++)
		tasks[t] = (struct task_arg){ .counters = counters,
					      .blade = blade,
					      .client = client,
					      .task = t };
	for (int i = 0; i < THREADS; i++) {
		targ[i] = (struct thread_arg){ ctx, &tasks[i * TASKS] };
		CHECK(!pthread_create(&th[i], NULL, client_thread, &targ[i]));
	}
	for (int i = 0; i < THREADS; i++)
		CHECK(!pthread_join(th[i], NULL));
	dir_publish(w, blade, client, tasks);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
}

static pid_t client_spawn(const char *addr, const char *secret_path,
			  unsigned client)
{
	pid_t parent = getpid(), pid;

	/* a plain fork (not test_spawn): this process has no ctx yet, so no
	 * thread that could hold a lock */
	fflush(NULL);
	pid = fork();
	CHECK_GE(pid, 0);
	if (pid == 0) {
		die_with_parent(parent);
		client_run(addr, secret_path, client);
		exit(0);
	}
	guard.pids[1 + client] = pid;
	return pid;
}

static void client_wait(pid_t pid, unsigned client)
{
	int st = smartd_wait_bounded(pid, 45000 * (int)test_slow());

	CHECK_MSG(st != -1, "client %u did not finish within %u s", client,
		  45 * test_slow());
	guard.pids[1 + client] = 0;
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "client %u: expected exit 0, got %s %d", client,
		  WIFEXITED(st) ? "exit" : "signal",
		  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

static void check_wrong_secret(const char *addr)
{
	char path[] = "/tmp/smart-wrong-secret-XXXXXX";
	smart_ctx_t *ctx;
	uint16_t blade = 0xffff;
	int rc;

	secret_file(path, WRONG_SECRET);
	ctx = ctx_open(path);
	rc = smart_ctx_connect(ctx, addr, &blade);
	unlink(path);
	CHECK_MSG(rc == SMART_EACCES,
		  "connect with a wrong secret: expected "
		  "SMART_EACCES, got %s",
		  smart_status_name(rc));
	CHECK_OK(smart_ctx_destroy(ctx));
}

static void check_counters(smart_worker_t *w, uint16_t blade)
{
	const uint64_t want = (uint64_t)CLIENTS * TASKS_ALL;
	uint64_t g, c[COUNTER_BYTES / 8];

	CHECK_OK(smart_root_get(w, blade, ROOT_COUNTERS, &g));
	CHECK_MSG(g != 0, "root %d: no counters published", ROOT_COUNTERS);
	CHECK_OK(smart_read_sync(w, g, sizeof(c), c));
	CHECK_MSG(c[2] == CLIENTS, "arrivals: expected %d, got %llu", CLIENTS,
		  (unsigned long long)c[2]);
	CHECK_MSG(c[0] == want * NFAA, "FAA counter: expected %llu, got %llu",
		  (unsigned long long)(want * NFAA), (unsigned long long)c[0]);
	CHECK_MSG(c[1] == want * NCAS, "CAS counter: expected %llu, got %llu",
		  (unsigned long long)(want * NCAS), (unsigned long long)c[1]);
}

/* Every word of the block of (client, task, blk) must hold its own tag. */
static void check_block(smart_worker_t *w, const uint64_t *e, void *buf,
			unsigned client, unsigned task, unsigned blk)
{
	const uint64_t *v = buf;

	CHECK_MSG(e[1] == blk_sizes[(blk + task) % NBLK],
		  "client %u task %u "
		  "block %u: expected size %u, directory says %llu",
		  client, task, blk, blk_sizes[(blk + task) % NBLK],
		  (unsigned long long)e[1]);
	CHECK_OK(smart_read_sync(w, e[0], e[1], buf));
	for (uint64_t k = 0; k < e[1] / 8; k++)
		CHECK_MSG(v[k] == tag(client, task, blk, k),
			  "client %u task %u block %u at 0x%llx word %llu: "
			  "expected tag 0x%016llx, got 0x%016llx (overlap?)",
			  client, task, blk, (unsigned long long)e[0],
			  (unsigned long long)k,
			  (unsigned long long)tag(client, task, blk, k),
			  (unsigned long long)v[k]);
}

static int cmp_blk(const void *x, const void *y)
{
	const struct blk *a = x, *b = y;

	return a->gaddr < b->gaddr ? -1 : a->gaddr > b->gaddr;
}

#define RANGES (CLIENTS * (TASKS_ALL * NBLK + 1) + 1)

/* Verify a client's directory and blocks; append its ranges to r. */
static void check_client(smart_worker_t *w, uint16_t blade, unsigned client,
			 struct blk *r, size_t *nr)
{
	uint64_t *d, g;
	void *buf;

	CHECK_OK(smart_root_get(w, blade, client, &g));
	CHECK_MSG(smart_gaddr_blade(g) == blade,
		  "root %u: expected a gaddr "
		  "on blade %u, got 0x%llx",
		  client, blade, (unsigned long long)g);
	CHECK_OK(smart_buf_alloc(w, DIR_BYTES, (void **)&d));
	CHECK_OK(smart_buf_alloc(w, BUF_BYTES, &buf));
	CHECK_OK(smart_read_sync(w, g, DIR_BYTES, d));
	CHECK_U64_EQ(d[0], DIR_MAGIC);
	CHECK_EQ(d[1], TASKS_ALL * NBLK);
	r[(*nr)++] = (struct blk){ g, DIR_BYTES };
	for (unsigned t = 0; t < TASKS_ALL; t++)
		for (unsigned i = 0; i < NBLK; i++) {
			const uint64_t *e = &d[2 + 2 * (t * NBLK + i)];

			check_block(w, e, buf, client, t, i);
			r[(*nr)++] = (struct blk){ e[0], e[1] };
		}
	smart_buf_free(w, buf);
	smart_buf_free(w, d);
}

static void check_no_overlap(struct blk *r, size_t n)
{
	qsort(r, n, sizeof(*r), cmp_blk);
	for (size_t i = 1; i < n; i++)
		CHECK_MSG(r[i - 1].gaddr + r[i - 1].size <= r[i].gaddr,
			  "allocations overlap: [0x%llx, +%llu) and 0x%llx",
			  (unsigned long long)r[i - 1].gaddr,
			  (unsigned long long)r[i - 1].size,
			  (unsigned long long)r[i].gaddr);
}

static void verify(const char *addr, const char *secret_path)
{
	static struct blk ranges[RANGES];
	smart_ctx_t *ctx = ctx_open(secret_path);
	smart_worker_t *w;
	uint16_t blade;
	uint64_t g;
	size_t n = 0;

	CHECK_OK(smart_ctx_connect(ctx, addr, &blade));
	CHECK_OK(smart_worker_create(ctx, &w));
	check_counters(w, blade);
	for (unsigned c = 0; c < CLIENTS; c++)
		check_client(w, blade, c, ranges, &n);
	CHECK_OK(smart_root_get(w, blade, ROOT_COUNTERS, &g));
	ranges[n++] = (struct blk){ g, COUNTER_BYTES };
	CHECK_EQ(n, RANGES);
	check_no_overlap(ranges, n);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
}

static void test_clients(void)
{
	char path[] = "/tmp/smart-clients-secret-XXXXXX";
	struct smartd_proc d;
	pid_t pid[CLIENTS];

	guard_init(60);
	secret_file(path, SECRET);
	daemon_start(&d, path);
	for (unsigned c = 0; c < CLIENTS; c++)
		pid[c] = client_spawn(d.addr, path, c);
	for (unsigned c = 0; c < CLIENTS; c++)
		client_wait(pid[c], c);
	check_wrong_secret(d.addr);
	/* smartd still serves after the refusal: the verifier connects */
	verify(d.addr, path);
	daemon_stop(&d);
	alarm(0);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "clients", test_clients },
		{ NULL, NULL },
	};

	unsetenv("SMART_SECRET_FILE");
	return test_main(argc, argv, cases);
}
