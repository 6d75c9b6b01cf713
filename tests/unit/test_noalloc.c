/*
 * Proof that the op fast path allocates no heap memory, makes no system
 * call on shm and takes no lock shared between workers.
 *
 * This binary interposes malloc/calloc/realloc/free (glibc exports the
 * real ones as __libc_*) and counts calls.  After a warm-up that creates
 * the worker, its tasks and its QP, it runs many READ/WRITE/CAS/FAA ops,
 * in place and through bounce slots, in chains longer than chain_max and
 * with more results than bounce slots, from tasks and from the main
 * context, and requires the count to stay at zero.  The second case does
 * the same for Smart-HT operations of every kind (searches, updates that
 * allocate blocks and retire the old ones, deletes, inserts, with
 * reclamation scans freeing blocks), and also requires that the registered
 * pool's mutex was not taken (SMART_STAT_POOL_LOCKS).  Under ASan the
 * allocator cannot be interposed, so the test skips there (it runs in the
 * normal build).
 *
 * System calls: fast_path_no_syscall runs the first case's ops again, in
 * a child process, on a thread under a seccomp filter that traps every
 * system call but the thread's and the process's exit (and the return
 * from the trap's handler): the handler counts each and makes it fail
 * with ENOSYS.  After the ops the thread makes one getpid(), which must
 * be the only call counted (the count can fail).  In a child: the filter
 * and the thread's worker, which cannot be destroyed without system
 * calls, end with it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "smart/ht.h"

#if defined(__SANITIZE_ADDRESS__)
#define NOALLOC_SKIP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NOALLOC_SKIP 1
#endif
#endif

#ifndef NOALLOC_SKIP
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

/* The one mutable global of the project: a test-only counter that the
 * interposed allocator must reach without any context. */
static atomic_long heap_calls;

void *malloc(size_t n)
{
	atomic_fetch_add(&heap_calls, 1);
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	atomic_fetch_add(&heap_calls, 1);
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	atomic_fetch_add(&heap_calls, 1);
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (p)
		atomic_fetch_add(&heap_calls, 1);
	__libc_free(p);
}
#endif

#ifndef NOALLOC_SKIP
#define OPS 20000

struct job {
	uint16_t blade;
	uint64_t off;
	void *buf; /* registered */
};

static void mixed_ops(smart_worker_t *w, struct job *j, int rounds)
{
	smart_gaddr_t g = smart_gaddr(j->blade, j->off);
	uint64_t local8 = 0, old;
	uint8_t small[48];
	int i, k;

	memset(small, 7, sizeof(small));
	for (i = 0; i < rounds; i++) {
		/* registered, in place */
		CHECK_OK(smart_write(w, g, j->buf, 256));
		CHECK_OK(smart_read(w, g, 256, j->buf));
		/* unregistered, bounced; inline write */
		CHECK_OK(smart_write(w, smart_gaddr_add(g, 512), small, 48));
		CHECK_OK(smart_read(w, smart_gaddr_add(g, 512), 48, small));
		CHECK_OK(smart_cas(w, smart_gaddr_add(g, 1024), 0, 1, &old));
		CHECK_OK(smart_faa(w, smart_gaddr_add(g, 1032), 1, &local8));
		CHECK_OK(smart_sync(w));
		/* an op and its sync in one call, registered (op_sync_fast,
		 * ops.c: posted without a chain) */
		CHECK_OK(smart_write_sync(w, g, j->buf, 8));
		CHECK_OK(smart_read_sync(w, g, 8, j->buf));
		CHECK_OK(smart_cas_sync(w, smart_gaddr_add(g, 1024), 1, 0,
					j->buf));
		CHECK_OK(
			smart_faa_sync(w, smart_gaddr_add(g, 1032), 1, j->buf));
		/* a chain longer than chain_max and more results than slots */
		for (k = 0; k < 80; k++)
			CHECK_OK(smart_faa(w, smart_gaddr_add(g, 1040), 1,
					   NULL));
		CHECK_OK(smart_sync(w));
	}
}

static void job_task(smart_worker_t *w, void *arg)
{
	mixed_ops(w, arg, OPS / 100);
}

/* What fast_path_run does: 8 tasks of OPS / 100 rounds, then 100 rounds
 * from the main context, 90 ops a round. */
#define FAST_PATH_OPS (8 * OPS / 100 * 90 + 100 * 90)

/* A worker of f's client with 8 jobs on f's blade, each its buffer from
 * the pool, warmed up: its task slots, stacks, QP and the QP's responder
 * exist. */
static smart_worker_t *fast_path_warm(struct fixture *f, struct job *jobs)
{
	smart_worker_t *w;
	int i;

	CHECK_OK(smart_worker_create(f->ctx, &w));
	for (i = 0; i < 8; i++) {
		jobs[i] = (struct job){ f->id, (uint64_t)(1 << 20) + i * 4096,
					NULL };
		CHECK_OK(smart_buf_alloc(w, 256, &jobs[i].buf));
	}
	for (i = 0; i < 8; i++)
		CHECK_OK(smart_task_spawn(w, job_task, &jobs[i]));
	CHECK_OK(smart_worker_run(w));
	mixed_ops(w, &jobs[0], 1);
	return w;
}

/* The measured ops (FAST_PATH_OPS), from tasks and the main context. */
static void fast_path_run(smart_worker_t *w, struct job *jobs)
{
	for (int i = 0; i < 8; i++)
		CHECK_OK(smart_task_spawn(w, job_task, &jobs[i]));
	CHECK_OK(smart_worker_run(w));
	mixed_ops(w, &jobs[0], 100);
}
#endif

static void test_fast_path_no_heap(void)
{
#ifdef NOALLOC_SKIP
	test_skip("the allocator cannot be interposed under AddressSanitizer");
#else
	struct fixture f;
	struct job jobs[8];
	smart_worker_t *w;
	long before;
	int i;

	fixture_start(&f, 8 << 20, 0, NULL);
	w = fast_path_warm(&f, jobs);
	before = atomic_load(&heap_calls);
	fast_path_run(w, jobs);
	CHECK_EQ(atomic_load(&heap_calls) - before, 0);
	printf("heap calls during %d ops: %ld\n", FAST_PATH_OPS,
	       atomic_load(&heap_calls) - before);

	for (i = 0; i < 8; i++)
		smart_buf_free(w, jobs[i].buf);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
#endif
}

#if !defined(NOALLOC_SKIP) && defined(__x86_64__)
#define SYSCALL_CHECK 1
/* What the trap's handler saw: written by the handler, which can reach
 * nothing else (test-only, as heap_calls). */
static atomic_long sys_calls;
static atomic_int sys_first = -1;

static void sys_trap(int sig, siginfo_t *si, void *uc)
{
	int none = -1;

	(void)sig;
	atomic_fetch_add(&sys_calls, 1);
	atomic_compare_exchange_strong(&sys_first, &none, si->si_syscall);
	((ucontext_t *)uc)->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
}

/* From now on this thread's system calls trap (sys_trap), but exit,
 * exit_group and rt_sigreturn; 0, or -1 where seccomp is refused. */
static int sys_trap_all(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rt_sigreturn, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
				   .filter = f };
	struct sigaction sa = { .sa_sigaction = sys_trap,
				.sa_flags = SA_SIGINFO };

	if (sigaction(SIGSYS, &sa, NULL) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

struct sys_run {
	struct fixture *f;
	struct job jobs[8];
	int refused; /* seccomp refused (its errno): nothing measured */
};

/* The thread under the filter: warm up as fast_path_no_heap does, trap,
 * run the ops, one getpid(), and leave by the exit system call (its
 * worker stays: destroying it would make system calls). */
static void *sys_thread(void *arg)
{
	struct sys_run *r = arg;
	smart_worker_t *w = fast_path_warm(r->f, r->jobs);

	if (sys_trap_all()) {
		r->refused = errno;
		return NULL;
	}
	fast_path_run(w, r->jobs);
	syscall(SYS_getpid); /* the one the count must show */
	syscall(SYS_exit, 0);
	return NULL;
}

static void child_no_syscall(char **argv)
{
	struct fixture f;
	struct sys_run r = { &f, { { 0 } }, 0 };
	pthread_t th;

	(void)argv;
	fixture_start(&f, 8 << 20, 0, NULL);
	CHECK_OK(pthread_create(&th, NULL, sys_thread, &r));
	CHECK_OK(pthread_join(th, NULL));
	if (r.refused) {
		printf("   seccomp refused (%s): nothing measured\n",
		       strerror(r.refused));
		fflush(stdout);
		_exit(77);
	}
	printf("   system calls during %d ops, then one getpid(): %ld (the "
	       "first: number %d; getpid is %d)\n",
	       FAST_PATH_OPS, atomic_load(&sys_calls), atomic_load(&sys_first),
	       (int)SYS_getpid);
	fflush(stdout);
	/* the worker and the blade end with the process */
	_exit(atomic_load(&sys_calls) == 1 &&
			      atomic_load(&sys_first) == SYS_getpid ?
		      0 :
		      1);
}
#endif

/* The op fast path makes no system call on shm (the child above). */
static void test_fast_path_no_syscall(void)
{
#ifndef SYSCALL_CHECK
	test_skip("needs the allocator interposed (not under "
		  "AddressSanitizer) and x86-64's trap context");
#else
	pid_t pid = test_spawn("no_syscall", NULL);
	int st;

	CHECK_GT(pid, 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		test_skip("seccomp filters are refused here");
	CHECK_EQ(WEXITSTATUS(st), 0);
#endif
}

#ifndef NOALLOC_SKIP
#define HT_KEYS	  2000
#define HT_ROUNDS 300

struct ht_job {
	smart_ht_t *t;
	int id;
	uint64_t ops;
};

static void ht_key(char *k, int id, int i)
{
	snprintf(k, 24, "key-%d-%05d", id, i);
}

static void ht_task(smart_worker_t *w, void *p)
{
	struct ht_job *j = p;
	char k[24], v[100] = { 0 };
	size_t n;
	int i, r;

	for (r = 0; r < HT_ROUNDS; r++)
		for (i = 0; i < HT_KEYS / 8; i += 25) {
			ht_key(k, j->id, i + r % 25);
			v[0] = (char)r;
			CHECK_OK(smart_ht_search(j->t, w, k, strlen(k), v,
						 sizeof(v), &n));
			CHECK_OK(smart_ht_update(j->t, w, k, strlen(k), v,
						 sizeof(v)));
			CHECK_OK(smart_ht_delete(j->t, w, k, strlen(k)));
			CHECK_OK(smart_ht_insert(j->t, w, k, strlen(k), v,
						 sizeof(v)));
			CHECK_OK(smart_ht_upsert(j->t, w, k, strlen(k), v,
						 sizeof(v)));
			j->ops += 5;
		}
}

static void ht_load(smart_worker_t *w, void *p)
{
	struct ht_job *j = p;
	char k[24], v[100] = { 0 };

	for (int i = 0; i < HT_KEYS / 8; i++) {
		ht_key(k, j->id, i);
		CHECK_OK(smart_ht_insert(j->t, w, k, strlen(k), v, sizeof(v)));
	}
}
#endif

/* Smart-HT's operations: no heap, no lock shared between workers. */
static void test_ht_no_heap_no_lock(void)
{
#ifdef NOALLOC_SKIP
	test_skip("the allocator cannot be interposed under AddressSanitizer");
#else
	struct smart_ht_config hc;
	struct fixture f;
	struct ht_job jobs[8];
	smart_stats_t s0, s1;
	smart_worker_t *w;
	smart_ht_t *t;
	long before, heap;
	uint64_t ops = 0;
	int i;

	fixture_start(&f, 64 << 20, 0, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	smart_ht_config_init(&hc);
	hc.depth = 4; /* room enough: no split during the test */
	CHECK_OK(smart_ht_create(w, f.id, 3, &hc, &t));
	for (i = 0; i < 8; i++) {
		jobs[i] = (struct ht_job){ t, i, 0 };
		CHECK_OK(smart_task_spawn(w, ht_load, &jobs[i]));
	}
	CHECK_OK(smart_worker_run(w));
	/* warm-up: every class, scratch segment and cache in use once */
	for (i = 0; i < 8; i++)
		CHECK_OK(smart_task_spawn(w, ht_task, &jobs[i]));
	CHECK_OK(smart_worker_run(w));

	CHECK_OK(smart_stats_snapshot(f.ctx, &s0));
	before = atomic_load(&heap_calls);
	for (i = 0; i < 8; i++)
		CHECK_OK(smart_task_spawn(w, ht_task, &jobs[i]));
	CHECK_OK(smart_worker_run(w));
	heap = atomic_load(&heap_calls) - before; /* a snapshot mallocs */
	CHECK_OK(smart_stats_snapshot(f.ctx, &s1));
	for (i = 0; i < 8; i++)
		ops += jobs[i].ops;
	printf("Smart-HT: %llu ops measured after as many to warm up: %ld "
	       "heap calls, %llu pool locks, %llu blocks freed\n",
	       (unsigned long long)ops / 2, heap,
	       (unsigned long long)(s1.c[SMART_STAT_POOL_LOCKS] -
				    s0.c[SMART_STAT_POOL_LOCKS]),
	       (unsigned long long)(s1.c[SMART_STAT_EPOCH_FREED] -
				    s0.c[SMART_STAT_EPOCH_FREED]));
	CHECK_EQ(heap, 0);
	CHECK_EQ(s1.c[SMART_STAT_POOL_LOCKS] - s0.c[SMART_STAT_POOL_LOCKS], 0);
	/* the paths were taken: blocks were retired and freed meanwhile */
	CHECK_GT(s1.c[SMART_STAT_EPOCH_FREED] - s0.c[SMART_STAT_EPOCH_FREED],
		 1000);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
#endif
}

/* The counter must be able to fail: an allocation is seen. */
static void test_counter_sees_malloc(void)
{
#ifdef NOALLOC_SKIP
	test_skip("the allocator cannot be interposed under AddressSanitizer");
#else
	long before = atomic_load(&heap_calls);
	void *volatile p = malloc(16);

	free(p);
	CHECK_EQ(atomic_load(&heap_calls) - before, 2);
#endif
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "counter_sees_malloc", test_counter_sees_malloc },
		{ "fast_path_no_heap", test_fast_path_no_heap },
		{ "ht_no_heap_no_lock", test_ht_no_heap_no_lock },
		{ "fast_path_no_syscall", test_fast_path_no_syscall },
		{ NULL, NULL },
	};
	static const struct test_child children[] = {
#ifdef SYSCALL_CHECK
		{ "no_syscall", child_no_syscall },
#endif
		{ NULL, NULL },
	};

	return test_main_children(argc, argv, cases, children);
}
