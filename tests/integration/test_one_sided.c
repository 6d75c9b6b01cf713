/*
 * One-sidedness end to end: READ, WRITE, CAS, FAA and smart_alloc keep
 * completing, with the right results, while the smartd process serving
 * the memory is stopped with SIGSTOP (docs/design.md §4, rule 6).  Only the
 * public API is used.
 *
 * Sequence: start smartd (SMART_BIN_DIR/smartd, 127.0.0.1:0), connect,
 * write known data, let two worker threads connect their QPs (control
 * plane: needs the blade's CPU), SIGSTOP smartd and wait until every one
 * of its threads is in state 'T', then run 2 threads x 8 tasks of mixed
 * ops and check every result, and check that smartd was stopped all along.
 * Then SIGCONT, connect a NEW ctx (which needs the blade's CPU: proves it
 * lives again), SIGTERM, and require exit status 0 within 5 s.
 *
 * Invariants of the harness: nothing waits unboundedly.  alarm() bounds
 * the case; its handler and an atexit handler SIGCONT + SIGKILL smartd, so
 * no stopped process is ever left behind, and smartd also dies with the
 * test process (PR_SET_PDEATHSIG).  Random choices use fixed seeds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/smartd_proc.h"
#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/smart.h"

#define SECRET	       "one-sided-secret-77"
#define THREADS	       2
#define TASKS	       8
#define TASKS_ALL      (THREADS * TASKS)
#define DATA_BYTES     (256 << 10) /* the known data, read by all */
#define SCRATCH_BYTES  4096	   /* per task, written by its owner */
#define ROUNDS	       25
#define BATCH	       4 /* READs or WRITEs per sync */
#define RW_PER_ROUND   (30 * BATCH)
#define FAA_PER_ROUND  120
#define FAA_BATCH      8
#define INC_PER_ROUND  40 /* CAS increments of the shared word */
#define PCAS_PER_ROUND 80 /* CAS on the task's private word */
#define MAX_RW	       512
#define NALLOC	       4
#define ALLOC_BYTES    512
/* Each task's registered buffers: a batch of spans, or a whole scratch. */
#define TBUF_BYTES     SCRATCH_BYTES

_Static_assert(BATCH *MAX_RW <= TBUF_BYTES && ALLOC_BYTES <= TBUF_BYTES,
	       "task buffers too small");

static void daemon_start(struct smartd_proc *d, const char *secret_path)
{
	const char *argv[] = { "smartd",      "--size", "32M", "--listen",
			       "127.0.0.1:0", "--id",	"5",   "--secret-file",
			       secret_path,   NULL };

	smartd_spawn(d, argv, "smartd: blade 5 serving 33554432 bytes on ");
	guard.pids[0] = d->pid;
}

static void daemon_stop(struct smartd_proc *d)
{
	smartd_stop(d);
	guard.pids[0] = 0;
}

/* State letter of /proc/<pid>/task/<tid>/stat (after "(comm) "). */
static char thread_state(pid_t pid, const char *tid)
{
	char path[300], buf[512], *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' ? rp[2] : '?';
}

/* Count smartd's threads and those in the stopped state 'T'. */
static void proc_states(pid_t pid, int *threads, int *stopped, char *other)
{
	char dir[64];
	struct dirent *e;
	DIR *d;

	*threads = *stopped = 0;
	*other = '-';
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	CHECK_MSG(d != NULL, "opendir(%s): %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL) {
		char s;

		if (e->d_name[0] == '.')
			continue;
		s = thread_state(pid, e->d_name);
		++*threads;
		if (s == 'T')
			++*stopped;
		else
			*other = s;
	}
	closedir(d);
}

/* Wait (at most 5 s) until all of smartd's threads are stopped (want 1)
 * or none is (want 0). */
static void wait_stopped(pid_t pid, int want)
{
	int threads = 0, stopped = 0;
	char other = '-';

	for (int t = 0; t <= 5000; t += 10) {
		proc_states(pid, &threads, &stopped, &other);
		if (threads > 0 && stopped == (want ? threads : 0))
			return;
		sleep_ms(10);
	}
	TEST_FAIL("smartd: expected %s of its %d threads in state T, got %d "
		  "(another state: %c)",
		  want ? "all" : "none", threads, stopped, other);
}

static void check_still_stopped(pid_t pid, const char *when)
{
	int threads, stopped;
	char other;

	proc_states(pid, &threads, &stopped, &other);
	CHECK_MSG(threads > 0 && stopped == threads,
		  "%s: expected all %d "
		  "threads of smartd in state T, got %d (another: %c)",
		  when, threads, stopped, other);
}

/* Inside the Soft-RoCE VM the suite runs again over verbs (the fixture's
 * SMART_TEST_TRANSPORT); smartd follows SMART_TRANSPORT. */
static smart_ctx_t *ctx_open(const char *secret_path)
{
	return fixture_ctx(
		(const char *[]){ "secret_file", secret_path, NULL });
}

/* Byte x of the known data: little-endian bytes of a mixed word index. */
static uint8_t data_byte(uint64_t x)
{
	uint64_t v = (x / 8 + 1) * UINT64_C(0x9e3779b97f4a7c15) ^ 0xc0ffee;

	return (uint8_t)(v >> (8 * (x % 8)));
}

struct shared {
	smart_gaddr_t data;	/* DATA_BYTES of data_byte() */
	smart_gaddr_t counters; /* word 0: FAA, word 1: CAS increments */
	uint16_t blade;
};

struct task_arg {
	const struct shared *sh;
	smart_gaddr_t scratch; /* SCRATCH_BYTES + the private CAS word */
	unsigned id;
	uint8_t shadow[SCRATCH_BYTES]; /* what scratch must hold */
	uint64_t pcas;		       /* what the private word must hold */
	smart_rng_t rng;
	uint64_t faa_last;
	uint8_t *rbuf, *wbuf; /* registered, TBUF_BYTES each */
};

/* Check len bytes read at data offset off. */
static void check_data(const uint8_t *p, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		CHECK_MSG(p[i] == data_byte(off + i),
			  "READ data[%llu]: "
			  "expected 0x%02x, got 0x%02x",
			  (unsigned long long)(off + i), data_byte(off + i),
			  p[i]);
}

/* BATCH reads of random spans; those of <= 64 B into an unregistered
 * buffer (the bounce path), the others in place. */
static void read_batch(smart_worker_t *w, struct task_arg *a)
{
	uint8_t small[BATCH][64];
	uint64_t off[BATCH];
	size_t len[BATCH];

	for (int i = 0; i < BATCH; i++) {
		len[i] = 1 + smart_rng_below(&a->rng, MAX_RW);
		off[i] = smart_rng_below(&a->rng, DATA_BYTES - len[i] + 1);
		CHECK_OK(smart_read(w, smart_gaddr_add(a->sh->data, off[i]),
				    len[i],
				    len[i] <= 64 ? small[i] :
						   a->rbuf + i * MAX_RW));
	}
	CHECK_OK(smart_sync(w));
	for (int i = 0; i < BATCH; i++)
		check_data(len[i] <= 64 ? small[i] : a->rbuf + i * MAX_RW,
			   off[i], len[i]);
}

/* BATCH writes of random bytes to random spans of the task's scratch. */
static void write_batch(smart_worker_t *w, struct task_arg *a)
{
	for (int i = 0; i < BATCH; i++) {
		size_t len = 1 + smart_rng_below(&a->rng, MAX_RW);
		uint64_t off = smart_rng_below(&a->rng,
					       SCRATCH_BYTES - len + 1);
		uint8_t *src = a->wbuf + i * MAX_RW;

		for (size_t k = 0; k < len; k++)
			src[k] = (uint8_t)smart_rng_next(&a->rng);
		memcpy(a->shadow + off, src, len);
		CHECK_OK(smart_write(w, smart_gaddr_add(a->scratch, off), src,
				     len));
	}
	CHECK_OK(smart_sync(w));
}

static void check_scratch(smart_worker_t *w, struct task_arg *a, void *buf)
{
	const uint8_t *p = buf;

	CHECK_OK(smart_read_sync(w, a->scratch, SCRATCH_BYTES, buf));
	for (size_t i = 0; i < SCRATCH_BYTES; i++)
		CHECK_MSG(p[i] == a->shadow[i],
			  "task %u scratch[%zu]: "
			  "expected 0x%02x, got 0x%02x",
			  a->id, i, a->shadow[i], p[i]);
}

static void faa_round(smart_worker_t *w, struct task_arg *a)
{
	uint64_t old[FAA_BATCH];

	for (int b = 0; b < FAA_PER_ROUND / FAA_BATCH; b++) {
		for (int i = 0; i < FAA_BATCH; i++)
			CHECK_OK(smart_faa(w, a->sh->counters, 1, &old[i]));
		CHECK_OK(smart_sync(w));
		for (int i = 0; i < FAA_BATCH; i++) {
			CHECK_MSG(a->faa_last == UINT64_MAX ||
					  old[i] > a->faa_last,
				  "task %u: FAA old "
				  "values must increase: %llu after %llu",
				  a->id, (unsigned long long)old[i],
				  (unsigned long long)a->faa_last);
			a->faa_last = old[i];
		}
	}
}

/* Shared increments (read, CAS until it wins), then CAS on the private
 * word, alternately failing (wrong expect) and succeeding. */
static void cas_round(smart_worker_t *w, struct task_arg *a)
{
	smart_gaddr_t g = smart_gaddr_add(a->sh->counters, 8);
	smart_gaddr_t pw = smart_gaddr_add(a->scratch, SCRATCH_BYTES);
	uint64_t cur, old;

	for (int i = 0; i < INC_PER_ROUND; i++) {
		CHECK_OK(smart_read_sync(w, g, 8, &cur));
		for (;;) {
			CHECK_OK(smart_cas_sync(w, g, cur, cur + 1, &old));
			if (old == cur)
				break;
			cur = old;
		}
	}
	for (int i = 0; i < PCAS_PER_ROUND; i++) {
		uint64_t expect = (i & 1) ? a->pcas : a->pcas + 7;

		CHECK_OK(smart_cas_sync(w, pw, expect, a->pcas + 1, &old));
		CHECK_MSG(old == a->pcas,
			  "task %u private CAS: expected old "
			  "%llu, got %llu",
			  a->id, (unsigned long long)a->pcas,
			  (unsigned long long)old);
		if (i & 1)
			a->pcas++;
	}
}

/* Allocation while stopped: chunk claims are CAS on the superblock. */
static void alloc_round(smart_worker_t *w, struct task_arg *a)
{
	uint8_t *p = a->wbuf, *back = a->rbuf;
	smart_gaddr_t g;

	CHECK_OK(smart_alloc(w, a->sh->blade, ALLOC_BYTES, &g));
	for (size_t k = 0; k < ALLOC_BYTES; k++)
		p[k] = (uint8_t)(a->id * 31 + k);
	CHECK_OK(smart_write(w, g, p, ALLOC_BYTES));
	CHECK_OK(smart_read(w, g, ALLOC_BYTES, back));
	CHECK_OK(smart_sync(w));
	CHECK_MSG(!memcmp(p, back, ALLOC_BYTES),
		  "task %u: a block allocated "
		  "while smartd was stopped did not read back",
		  a->id);
}

static void one_sided_task(smart_worker_t *w, void *p)
{
	struct task_arg *a = p;

	CHECK_OK(smart_buf_alloc(w, TBUF_BYTES, (void **)&a->rbuf));
	CHECK_OK(smart_buf_alloc(w, TBUF_BYTES, (void **)&a->wbuf));
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < RW_PER_ROUND / BATCH; i++) {
			read_batch(w, a);
			write_batch(w, a);
		}
		faa_round(w, a);
		cas_round(w, a);
		if (r % (ROUNDS / NALLOC) == 0 &&
		    r / (ROUNDS / NALLOC) < NALLOC)
			alloc_round(w, a);
		if (r % 5 == 4)
			check_scratch(w, a, a->rbuf);
	}
	check_scratch(w, a, a->rbuf);
	smart_buf_free(w, a->rbuf);
	smart_buf_free(w, a->wbuf);
}

struct thread_arg {
	smart_ctx_t *ctx;
	const struct shared *sh;
	struct task_arg *tasks; /* TASKS of them */
	pthread_barrier_t *ready, *go;
};

static void *worker_thread(void *p)
{
	struct thread_arg *t = p;
	smart_worker_t *w;
	uint64_t v;

	CHECK_OK(smart_worker_create(t->ctx, &w));
	/* the first op connects this worker's QP: control plane, before
	 * the blade is stopped */
	CHECK_OK(smart_read_sync(w, t->sh->data, 8, &v));
	pthread_barrier_wait(t->ready);
	pthread_barrier_wait(t->go);
	for (int i = 0; i < TASKS; i++)
		CHECK_OK(smart_task_spawn(w, one_sided_task, &t->tasks[i]));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_worker_destroy(w));
	return NULL;
}

/* Known data, counters, and one zeroed scratch area per task. */
static void setup(smart_worker_t *w, struct shared *sh, struct task_arg *ta)
{
	static const uint64_t zero[2];
	uint8_t *buf;

	CHECK_OK(smart_buf_alloc(w, DATA_BYTES, (void **)&buf));
	for (uint64_t x = 0; x < DATA_BYTES; x++)
		buf[x] = data_byte(x);
	CHECK_OK(smart_alloc(w, sh->blade, DATA_BYTES, &sh->data));
	CHECK_OK(smart_write_sync(w, sh->data, buf, DATA_BYTES));
	CHECK_OK(smart_alloc(w, sh->blade, 16, &sh->counters));
	CHECK_OK(smart_write_sync(w, sh->counters, zero, sizeof(zero)));
	memset(buf, 0, SCRATCH_BYTES + 8);
	for (unsigned t = 0; t < TASKS_ALL; t++) {
		memset(&ta[t], 0, sizeof(ta[t]));
		ta[t].sh = sh;
		ta[t].id = t;
		ta[t].faa_last = UINT64_MAX;
		smart_rng_seed(&ta[t].rng, 1000 + t);
		CHECK_OK(smart_alloc(w, sh->blade, SCRATCH_BYTES + 8,
				     &ta[t].scratch));
		CHECK_OK(smart_write_sync(w, ta[t].scratch, buf,
					  SCRATCH_BYTES + 8));
	}
	smart_buf_free(w, buf);
}

/* After the run, still with smartd stopped: every result as expected. */
static void verify(smart_worker_t *w, const struct shared *sh,
		   struct task_arg *ta)
{
	uint64_t c[2], v;
	uint8_t *buf;

	CHECK_OK(smart_read_sync(w, sh->counters, sizeof(c), c));
	CHECK_MSG(c[0] == (uint64_t)TASKS_ALL * ROUNDS * FAA_PER_ROUND,
		  "FAA counter: expected %llu, got %llu",
		  (unsigned long long)TASKS_ALL * ROUNDS * FAA_PER_ROUND,
		  (unsigned long long)c[0]);
	CHECK_MSG(c[1] == (uint64_t)TASKS_ALL * ROUNDS * INC_PER_ROUND,
		  "CAS counter: expected %llu, got %llu",
		  (unsigned long long)TASKS_ALL * ROUNDS * INC_PER_ROUND,
		  (unsigned long long)c[1]);
	CHECK_OK(smart_buf_alloc(w, DATA_BYTES, (void **)&buf));
	for (unsigned t = 0; t < TASKS_ALL; t++) {
		check_scratch(w, &ta[t], buf);
		CHECK_OK(smart_read_sync(w,
					 smart_gaddr_add(ta[t].scratch,
							 SCRATCH_BYTES),
					 8, &v));
		CHECK_MSG(v == (uint64_t)ROUNDS * PCAS_PER_ROUND / 2 &&
				  v == ta[t].pcas,
			  "task %u private word: expected "
			  "%d, got %llu",
			  t, ROUNDS * PCAS_PER_ROUND / 2,
			  (unsigned long long)v);
	}
	CHECK_OK(smart_read_sync(w, sh->data, DATA_BYTES, buf));
	check_data(buf, 0, DATA_BYTES);
	smart_buf_free(w, buf);
}

/* The ops were really issued (and none failed) while smartd was stopped. */
static void check_stats(smart_ctx_t *ctx)
{
	static const struct {
		enum smart_stat id;
		uint64_t min;
	} want[] = {
		{ SMART_STAT_READS, TASKS_ALL * ROUNDS * RW_PER_ROUND },
		{ SMART_STAT_WRITES, TASKS_ALL * ROUNDS * RW_PER_ROUND },
		{ SMART_STAT_FAAS, TASKS_ALL * ROUNDS * FAA_PER_ROUND },
		{ SMART_STAT_CASES,
		  TASKS_ALL * ROUNDS * (INC_PER_ROUND + PCAS_PER_ROUND) },
		{ SMART_STAT_CAS_FAILS,
		  TASKS_ALL * ROUNDS * PCAS_PER_ROUND / 2 },
		{ SMART_STAT_ALLOCS, TASKS_ALL * NALLOC },
	};
	smart_stats_t st;

	CHECK_OK(smart_stats_snapshot(ctx, &st));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		printf("  %s: %llu\n", smart_stat_name(want[i].id),
		       (unsigned long long)st.c[want[i].id]);
		CHECK_MSG(st.c[want[i].id] >= want[i].min,
			  "stat %s: expected "
			  ">= %llu, got %llu",
			  smart_stat_name(want[i].id),
			  (unsigned long long)want[i].min,
			  (unsigned long long)st.c[want[i].id]);
	}
	CHECK_MSG(st.c[SMART_STAT_ERRORS] == 0,
		  "stat errors: expected 0, got "
		  "%llu",
		  (unsigned long long)st.c[SMART_STAT_ERRORS]);
	fflush(stdout);
}

/* While smartd is stopped: the threads' tasks, then the checks. */
static void run_stopped(struct smartd_proc *d, smart_ctx_t *ctx,
			smart_worker_t *w, const struct shared *sh,
			struct task_arg *ta)
{
	struct thread_arg targ[THREADS];
	pthread_barrier_t ready, go;
	pthread_t th[THREADS];

	CHECK(!pthread_barrier_init(&ready, NULL, THREADS + 1));
	CHECK(!pthread_barrier_init(&go, NULL, THREADS + 1));
	for (int i = 0; i < THREADS; i++) {
		targ[i] = (struct thread_arg){ ctx, sh, &ta[i * TASKS], &ready,
					       &go };
		CHECK(!pthread_create(&th[i], NULL, worker_thread, &targ[i]));
	}
	pthread_barrier_wait(&ready);
	CHECK_EQ(kill(d->pid, SIGSTOP), 0);
	wait_stopped(d->pid, 1);
	pthread_barrier_wait(&go);
	for (int i = 0; i < THREADS; i++)
		CHECK(!pthread_join(th[i], NULL));
	check_still_stopped(d->pid, "after the ops");
	check_stats(ctx);
	verify(w, sh, ta);
	check_still_stopped(d->pid, "after the checks");
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&go);
}

/* A new client needs the blade's CPU for its handshake and QP. */
static void check_new_client(const char *addr, const char *secret_path,
			     const struct shared *sh)
{
	smart_ctx_t *ctx = ctx_open(secret_path);
	smart_worker_t *w;
	uint16_t blade;
	uint64_t c[2];

	CHECK_OK(smart_ctx_connect(ctx, addr, &blade));
	CHECK_EQ(blade, sh->blade);
	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_read_sync(w, sh->counters, sizeof(c), c));
	CHECK_EQ(c[0], TASKS_ALL * ROUNDS * FAA_PER_ROUND);
	CHECK_OK(smart_faa_sync(w, sh->counters, 1, NULL));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
}

static void test_stopped_blade(void)
{
	static struct task_arg ta[TASKS_ALL];
	char path[] = "/tmp/smart-one-sided-secret-XXXXXX";
	struct shared sh;
	struct smartd_proc d;
	smart_ctx_t *ctx;
	smart_worker_t *w;

	guard_init(60);
	secret_file(path, SECRET);
	daemon_start(&d, path);
	ctx = ctx_open(path);
	CHECK_OK(smart_ctx_connect(ctx, d.addr, &sh.blade));
	CHECK_EQ(sh.blade, 5);
	CHECK_OK(smart_worker_create(ctx, &w));
	setup(w, &sh, ta);
	run_stopped(&d, ctx, w, &sh, ta);
	CHECK_EQ(kill(d.pid, SIGCONT), 0);
	wait_stopped(d.pid, 0);
	check_new_client(d.addr, path, &sh);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
	daemon_stop(&d);
	alarm(0);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "stopped_blade", test_stopped_blade },
		{ NULL, NULL },
	};

	unsetenv("SMART_SECRET_FILE");
	return test_main(argc, argv, cases);
}
