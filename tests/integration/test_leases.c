/*
 * Client leases and liveness (docs/leases.md), with real processes:
 *  - basics: ids, renewal, BYE releases the word, the API's errors;
 *  - stopped: a client stopped with SIGSTOP is fenced by its peers after
 *    lease_ms (not before lease_ms / 2, not after lease_ms plus two
 *    renewal periods); resumed, its ops fail with SMART_EFENCED and not
 *    one of the ops it had queued executes;
 *  - killed: a client killed with SIGKILL is fenced by the blade at once
 *    (its session closed) and seen dead within a renewal period;
 *  - fence_api: smart_lease_fence() stops another client;
 *  - dead_holder / stopped_holder: a client holding a lock (a word naming
 *    its id) and an epoch announcement is killed (SIGKILL) or stopped
 *    (SIGSTOP): another client's operation on the same key (take the
 *    lock, update, release) succeeds again within lease_ms plus one
 *    renewal period, and its retired blocks are freed (the dead client's
 *    announcement taken back);
 *  - dead_blade: smartd killed under a running client: the client's ops
 *    fail within the documented bound (shm, where memory outlives it);
 *  - own_ahead: a client's own word found one ahead of what its keeper
 *    wrote (the CAS of a renewal whose completion was lost did run) is
 *    caught up with, not taken for a theft: no fence;
 *  - far_slot: a word that stands still in slot 700 of a table with 800
 *    slots in use (the keeper reads it piece by piece) is fenced within
 *    lease_ms plus the rounds of one pass over the pieces;
 *  - dead_id: the id of a killed client is not handed to a newcomer, even
 *    when the blade's round robin comes back to it (a lock word of the
 *    dead holder would name a live client: never taken over);
 *  - qps_first: a dropped session's responder QPs are destroyed before its
 *    lease is fenced (peers act on the fence; a WR still arriving on a
 *    live responder would land under them).
 * Times are measured and printed.  The bounds asserted are the
 * documented ones, on the protocol's clock: an upper bound in the
 * observer keeper's renewal periods plus the periods the test's threads
 * waited for a CPU (harness/lease_blade.h's lb_mark); a lower bound less
 * what the stopped client's keeper waited for a CPU before it stopped (a
 * late last renewal ends its lease sooner).  Both are measured, none is a
 * guess: an idle machine adds nothing.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blade/blade_int.h"
#include "harness/lease_blade.h"
#include "harness/smartd_proc.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "wire/services.h"

#define LEASE_MS  400
#define PERIOD_MS (LEASE_MS / 8)
#define PERIODS	  (LEASE_MS / PERIOD_MS)

static char secret_path[] = "/tmp/smart-lease-secret-XXXXXX";

static smart_blade_t *blade_start(void)
{
	return lb_blade_start(8 << 20, LEASE_MS);
}

static smart_ctx_t *ctx_open(const char *addr, uint16_t *blade)
{
	return lb_ctx_open(addr, secret_path, blade);
}

#define now_ms lb_now_ms

/* Poll until alive(id) is 0; returns the ms it took, or -1 on timeout (a
 * guard against a hang, not a bound). */
static int64_t wait_dead(smart_worker_t *w, uint16_t blade, uint16_t id,
			 int timeout_ms)
{
	uint64_t t0 = now_ms();
	int rc;

	while ((rc = smart_lease_alive(w, blade, id)) == 1) {
		if (now_ms() - t0 > (uint64_t)timeout_ms)
			return -1;
		sleep_ms(2);
	}
	CHECK_EQ(rc, 0);
	return (int64_t)(now_ms() - t0);
}

/* The thread of process pid named name, or 0. */
static pid_t thread_named(pid_t pid, const char *name)
{
	char path[320], comm[32];
	struct dirent *e;
	pid_t tid = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	CHECK(d != NULL);
	while (!tid && (e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid,
			 e->d_name);
		f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, name, strlen(name)))
			tid = (pid_t)atoi(e->d_name);
		if (f)
			fclose(f);
	}
	closedir(d);
	return tid;
}

/* Wait (a guard against a hang, not a bound) until ctx's keeper has
 * renewed n times more. */
static void renewals_wait(smart_ctx_t *ctx, uint64_t n)
{
	struct lb_mark m0;
	uint64_t waited, t0 = now_ms();

	lb_mark(ctx, &m0);
	while (lb_periods_since(ctx, &m0, 0, PERIOD_MS, &waited) < n) {
		CHECK_MSG(now_ms() - t0 < 60000, "no renewal in 60 s");
		sleep_ms(1);
	}
}

/* The ns thread `name` of process pid waited for a CPU so far, in whole
 * ms rounded up. */
static int64_t thread_waited_ms(pid_t pid, const char *name)
{
	pid_t tid = thread_named(pid, name);

	CHECK_GT(tid, 0);
	return (int64_t)((sched_wait_ns(pid, tid) + 999999) / 1000000);
}

static void test_basics(void)
{
	smart_blade_t *b = blade_start();
	const char *addr = smart_blade_address(b);
	struct smart_blade_info info;
	smart_worker_t *wa, *wb;
	uint16_t blade, ia, ib, x;
	smart_ctx_t *a = ctx_open(addr, &blade), *c;
	uint64_t w0, w1;
	smart_gaddr_t slot;

	c = ctx_open(addr, &blade);
	CHECK_OK(smart_ctx_blade_info(a, blade, &info));
	CHECK_EQ(info.lease_ms, LEASE_MS);
	CHECK_OK(smart_lease_id(a, blade, &ia));
	CHECK_OK(smart_lease_id(c, blade, &ib));
	CHECK_EQ(info.lease_id, ia);
	CHECK_NE(ia, 0);
	CHECK_NE(ib, 0);
	CHECK_NE(ia, ib);
	CHECK_EQ(smart_lease_id(a, 9, &x), SMART_ENOENT);
	CHECK_EQ(smart_lease_id(NULL, blade, &x), SMART_EINVAL);
	CHECK_OK(smart_worker_create(a, &wa));
	CHECK_OK(smart_worker_create(c, &wb));
	CHECK_EQ(smart_lease_alive(wa, blade, ia), 1);
	CHECK_EQ(smart_lease_alive(wa, blade, ib), 1);
	CHECK_EQ(smart_lease_alive(wa, blade, 0), SMART_EINVAL);
	CHECK_EQ(smart_lease_alive(wa, 9, ib), SMART_ENOENT);
	CHECK_EQ(smart_lease_fence(wa, blade, ia), SMART_EINVAL);
	CHECK_EQ(smart_ctx_fenced(a), 0);
	/* the keeper renews: the counter has moved once it counted two
	 * renewals more (the first may have been in flight at the read) */
	slot = smart_gaddr(blade, 4096 + 64 + 16 * (ib % 1024));
	CHECK_OK(smart_read_sync(wa, slot, 8, &w0));
	CHECK_EQ(w0 >> 48, ib);
	renewals_wait(c, 2);
	CHECK_OK(smart_read_sync(wa, slot, 8, &w1));
	CHECK_GT(w1, w0);
	/* well past a lease: nobody was fenced by mistake */
	sleep_ms(2 * LEASE_MS);
	CHECK_EQ(smart_lease_alive(wa, blade, ib), 1);
	CHECK_EQ(smart_ctx_fenced(a) | smart_ctx_fenced(c), 0);
	/* a clean close releases the word: the id is dead at once */
	CHECK_OK(smart_worker_destroy(wb));
	CHECK_OK(smart_ctx_destroy(c));
	CHECK_GE(wait_dead(wa, blade, ib, 1000), 0);
	CHECK_OK(smart_read_sync(wa, slot, 8, &w1));
	CHECK_U64_EQ(w1, 0);
	CHECK_OK(smart_worker_destroy(wa));
	CHECK_OK(smart_ctx_destroy(a));
	smart_blade_destroy(b);
}

/* A client process: connect, report its id, then FAA a counter in a loop
 * until an op fails; report that status and exit. */
struct child {
	pid_t pid;
	int rd; /* from the child: id, then the final status */
	uint16_t id;
};

/* The client role (child_start): args are the blade's address, the
 * secret file, the counter and the pipe to write to. */
static void child_main(char **args)
{
	smart_gaddr_t counter = strtoull(args[2], NULL, 0);
	int wr = atoi(args[3]);
	smart_worker_t *w;
	uint16_t blade, id;
	smart_ctx_t *ctx = lb_ctx_open(args[0], args[1], &blade);
	int rc;

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_lease_id(ctx, blade, &id));
	CHECK_EQ(write(wr, &id, sizeof(id)), (ssize_t)sizeof(id));
	do
		rc = smart_faa_sync(w, counter, 1, NULL);
	while (!rc);
	CHECK_EQ(write(wr, &rc, sizeof(rc)), (ssize_t)sizeof(rc));
}

/* Start child role `role` on the blade at addr with the word g; returns
 * its pid, the pipe it writes to in p. */
static pid_t spawn_on(const char *role, const char *addr, smart_gaddr_t g,
		      int p[2])
{
	char word[24], fd[12];

	CHECK_EQ(pipe(p), 0);
	snprintf(word, sizeof(word), "%llu", (unsigned long long)g);
	snprintf(fd, sizeof(fd), "%d", p[1]);
	return test_spawn(role, (const char *[]){ addr, secret_path, word, fd,
						  NULL });
}

static void child_start(struct child *c, const char *addr,
			smart_gaddr_t counter)
{
	int p[2];

	c->pid = spawn_on("client", addr, counter, p);
	CHECK_GE(c->pid, 0);
	guard_add(c->pid);
	close(p[1]);
	c->rd = p[0];
	CHECK_EQ(read(c->rd, &c->id, sizeof(c->id)), (ssize_t)sizeof(c->id));
}

static int child_status(struct child *c)
{
	int rc = 0, st;

	CHECK_EQ(read(c->rd, &rc, sizeof(rc)), (ssize_t)sizeof(rc));
	CHECK_EQ(waitpid(c->pid, &st, 0), c->pid);
	guard_del(c->pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(c->rd);
	return rc;
}

static uint64_t counter_now(smart_worker_t *w, smart_gaddr_t g)
{
	uint64_t v;

	CHECK_OK(smart_read_sync(w, g, 8, &v));
	return v;
}

/* A blade, this process's ctx and worker on it, a zeroed counter and a
 * child process FAAing it. */
struct scene {
	smart_blade_t *b;
	uint16_t blade;
	smart_ctx_t *a;
	smart_worker_t *w;
	smart_gaddr_t g;
	struct child c;
};

static void scene_start_lease(struct scene *s, uint32_t lease_ms)
{
	s->b = lb_blade_start(8 << 20, lease_ms);
	s->a = ctx_open(smart_blade_address(s->b), &s->blade);
	CHECK_OK(smart_worker_create(s->a, &s->w));
	CHECK_OK(smart_alloc(s->w, s->blade, 8, &s->g));
	CHECK_OK(smart_write_sync(s->w, s->g, &(uint64_t){ 0 }, 8));
	child_start(&s->c, smart_blade_address(s->b), s->g);
}

static void scene_start(struct scene *s)
{
	scene_start_lease(s, LEASE_MS);
}

static void scene_stop(struct scene *s)
{
	CHECK_OK(smart_worker_destroy(s->w));
	CHECK_OK(smart_ctx_destroy(s->a));
	smart_blade_destroy(s->b);
}

static void test_stopped(void)
{
	struct scene sc;
	smart_stats_t st;
	struct lb_mark m0;
	uint64_t v0, v1, t0, per, waited;
	int64_t ms, late;
	int stat;

	scene_start(&sc);
	sleep_ms(LEASE_MS / 2);
	t0 = now_ms();
	lb_mark(sc.a, &m0);
	CHECK_EQ(kill(sc.c.pid, SIGSTOP), 0);
	CHECK_EQ(waitpid(sc.c.pid, &stat, WUNTRACED), sc.c.pid);
	CHECK(WIFSTOPPED(stat));
	late = thread_waited_ms(sc.c.pid, "smart-keeper");
	v0 = counter_now(sc.w, sc.g);
	CHECK_GT(v0, 0);
	CHECK_GE(wait_dead(sc.w, sc.blade, sc.c.id, 60000), 0);
	ms = (int64_t)(now_ms() - t0);
	per = lb_periods_since(sc.a, &m0, 0, PERIOD_MS, &waited);
	printf("stopped client fenced after %lld ms, %llu renewal periods "
	       "(lease %d ms, %d periods; this thread waited %llu periods "
	       "for a CPU, its keeper %lld ms)\n",
	       (long long)ms, (unsigned long long)per, LEASE_MS, PERIODS,
	       (unsigned long long)waited, (long long)late);
	/* not before half a lease after its last renewal, which its keeper
	 * issued at most a period (and its own wait) before it stopped */
	CHECK_GE(ms + late, LEASE_MS / 2);
	/* its last renewal seen a period late, the fence at the first scan
	 * a lease later, our look's period */
	CHECK_LE(per, PERIODS + 3 + waited);
	/* it was this ctx's keeper that fenced it (the path was taken) */
	CHECK_OK(smart_stats_snapshot(sc.a, &st));
	CHECK_EQ(st.leases_fenced, 1);
	CHECK_GT(st.lease_renewals, 0);
	CHECK_EQ(st.fenced, 0);
	/* fenced while stopped: resumed, it executes at most the one FAA
	 * its poll was already executing when SIGSTOP hit (the documented
	 * window: one poll's batch), never the ones it queues afterwards */
	v1 = counter_now(sc.w, sc.g);
	CHECK_EQ(kill(sc.c.pid, SIGCONT), 0);
	CHECK_EQ(child_status(&sc.c), SMART_EFENCED);
	CHECK_LE(counter_now(sc.w, sc.g) - v1, 1);
	scene_stop(&sc);
}

/* Self-fencing, alone: the client's keeper thread is frozen (ptrace stops
 * that one thread), so nothing renews its lease and nothing tells its
 * worker; the worker must stop by itself at lease_ms / 2, before a peer
 * may fence the lease and act on it.  After the peer's fence the counter
 * must not move again, and the client's ops fail with SMART_EFENCED. */
static void test_frozen_keeper(void)
{
	struct scene sc;
	uint64_t v1, v2, t0;
	pid_t tid, r;
	int64_t ms, late;
	int st;

	scene_start(&sc);
	sleep_ms(PERIOD_MS);
	tid = thread_named(sc.c.pid, "smart-keeper");
	CHECK_GT(tid, 0);
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
		printf("skipped: ptrace refused (%s): the keeper cannot be "
		       "frozen alone here\n",
		       strerror(errno));
		kill(sc.c.pid, SIGKILL);
		waitpid(sc.c.pid, &st, 0);
		guard_del(sc.c.pid);
		close(sc.c.rd);
		scene_stop(&sc);
		return;
	}
	t0 = now_ms(); /* before the freeze: a late look only adds */
	CHECK_EQ(ptrace(PTRACE_INTERRUPT, tid, NULL, NULL), 0);
	CHECK_EQ(waitpid(tid, &st, __WALL), tid);
	CHECK(WIFSTOPPED(st));
	/* how late its renewals could be: what it waited for a CPU */
	late = (int64_t)((sched_wait_ns(sc.c.pid, tid) + 999999) / 1000000);
	CHECK_GE(wait_dead(sc.w, sc.blade, sc.c.id, 60000), 0);
	ms = (int64_t)(now_ms() - t0);
	/* seen dead when it exits on its EFENCED (the blade sees the
	 * session close) or when this peer fences it, whichever is first */
	printf("frozen keeper: the client seen dead after %lld ms (its "
	       "keeper waited %lld ms for a CPU)\n",
	       (long long)ms, (long long)late);
	/* not before half a lease after its last renewal, issued at most a
	 * period (and the keeper's own wait) before the freeze */
	CHECK_GE(ms + late, LEASE_MS / 2 - PERIOD_MS);
	/* nothing of the client lands any more but, at most, the one FAA
	 * its poll was executing when a preemption hit (the documented
	 * window, as in case stopped: a worker kept off the CPU between its
	 * poll's lease check and the FAA for half a lease executes it after
	 * this peer's fence); without self-fencing it never stops */
	v1 = counter_now(sc.w, sc.g);
	sleep_ms(2 * PERIOD_MS);
	v2 = counter_now(sc.w, sc.g);
	printf("frozen keeper: counter %llu at the fence, %llu %d ms later\n",
	       (unsigned long long)v1, (unsigned long long)v2, 2 * PERIOD_MS);
	CHECK_LE(v2 - v1, 1);
	/* its ops failed by themselves; the traced keeper's exit is ours to
	 * collect before the process can be */
	CHECK_EQ(read(sc.c.rd, &st, sizeof(st)), (ssize_t)sizeof(st));
	CHECK_EQ(st, SMART_EFENCED);
	close(sc.c.rd);
	do
		r = waitpid(-1, &st, __WALL);
	while (r > 0 && r != sc.c.pid);
	CHECK_EQ(r, sc.c.pid);
	guard_del(sc.c.pid);
	scene_stop(&sc);
}

/* A killed client is seen dead through the blade (its session closed),
 * not through its lease running out: the lease here is a minute, and the
 * wait gives up after 10 s, so only the blade's fence can end it (no
 * clock race: mutant BLADE_NO_EOF_FENCE waits the whole 10 s). */
#define KILLED_LEASE_MS 60000

static void test_killed(void)
{
	struct scene sc;
	int64_t ms;
	int st;

	scene_start_lease(&sc, KILLED_LEASE_MS);
	sleep_ms(PERIOD_MS);
	CHECK_EQ(kill(sc.c.pid, SIGKILL), 0);
	CHECK_EQ(waitpid(sc.c.pid, &st, 0), sc.c.pid);
	guard_del(sc.c.pid);
	close(sc.c.rd);
	ms = wait_dead(sc.w, sc.blade, sc.c.id, 10000);
	printf("killed client seen dead after %lld ms (lease %d ms)\n",
	       (long long)ms, KILLED_LEASE_MS);
	CHECK_GE(ms, 0);
	scene_stop(&sc);
}

static void test_fence_api(void)
{
	smart_blade_t *b = blade_start();
	uint16_t blade;
	smart_ctx_t *a = ctx_open(smart_blade_address(b), &blade);
	smart_worker_t *w;
	smart_gaddr_t g;
	struct child c;

	CHECK_OK(smart_worker_create(a, &w));
	CHECK_OK(smart_alloc(w, blade, 8, &g));
	child_start(&c, smart_blade_address(b), g);
	CHECK_EQ(smart_lease_alive(w, blade, c.id), 1);
	CHECK_OK(smart_lease_fence(w, blade, c.id));
	CHECK_EQ(smart_lease_alive(w, blade, c.id), 0);
	CHECK_OK(smart_lease_fence(w, blade, c.id)); /* idempotent */
	CHECK_EQ(child_status(&c), SMART_EFENCED);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(a));
	smart_blade_destroy(b);
}

/* ---- a dead holder of a lock and an announcement ----------------------- */

/* The lock word holds its holder's client id (0 = free).  Take it, or
 * take it over from a holder whose lease is gone. */
static int lock_try(smart_worker_t *w, uint16_t blade, smart_gaddr_t lock,
		    uint16_t me)
{
	uint64_t old;

	uint64_t held;

	CHECK_OK(smart_cas_sync(w, lock, 0, me, &old));
	if (!old)
		return 1;
	if (smart_lease_alive(w, blade, (uint16_t)old) != 0)
		return 0;
	held = old;
	CHECK_OK(smart_cas_sync(w, lock, held, me, &old));
	return old == held; /* taken over from the dead holder */
}

/* The holder role (holder_case): args as child_main's, the word being
 * the lock. */
static void holder_main(char **args)
{
	smart_gaddr_t lock = strtoull(args[2], NULL, 0);
	smart_worker_t *w;
	uint16_t blade, id;
	smart_ctx_t *ctx = lb_ctx_open(args[0], args[1], &blade);
	uint64_t old, v;

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_lease_id(ctx, blade, &id));
	CHECK_OK(smart_cas_sync(w, lock, 0, id, &old));
	CHECK_EQ(old, 0);
	CHECK_OK(smart_epoch_enter(w, blade));
	CHECK_OK(smart_read_sync(w, lock, 8, &v)); /* announced */
	CHECK_EQ(write(atoi(args[3]), &id, sizeof(id)), (ssize_t)sizeof(id));
	for (;;)
		pause(); /* holding both, forever */
}

static void holder_case(int sig)
{
	smart_blade_t *b = blade_start();
	uint16_t blade, me, hid;
	smart_ctx_t *a = ctx_open(smart_blade_address(b), &blade);
	smart_worker_t *w;
	smart_gaddr_t lock, key, g;
	smart_stats_t st;
	struct lb_mark m0;
	uint64_t t0, took, freed_at = 0, v, per, waited;
	int p[2], status, got = 0;
	pid_t pid;

	CHECK_OK(smart_worker_create(a, &w));
	CHECK_OK(smart_lease_id(a, blade, &me));
	CHECK_OK(smart_alloc(w, blade, 8, &lock));
	CHECK_OK(smart_alloc(w, blade, 8, &key));
	CHECK_OK(smart_write_sync(w, lock, &(uint64_t){ 0 }, 8));
	pid = spawn_on("holder", smart_blade_address(b), lock, p);
	CHECK_GE(pid, 0);
	guard.pids[0] = pid;
	CHECK_EQ(read(p[0], &hid, sizeof(hid)), (ssize_t)sizeof(hid));
	/* held: our op on the key waits, our retired blocks stay */
	CHECK_EQ(lock_try(w, blade, lock, me), 0);
	for (int i = 0; i < 16; i++) {
		CHECK_OK(smart_alloc(w, blade, 64, &g));
		CHECK_OK(smart_epoch_retire(w, blade, g, 64));
	}
	CHECK_EQ(smart_epoch_drain(w, blade, 50), SMART_ETIMEDOUT);
	lb_mark(a, &m0);
	CHECK_EQ(kill(pid, sig), 0);
	t0 = smart_now_ns();
	/* 60 s: a guard against a hang, not a bound */
	while (!got && smart_now_ns() - t0 < 60000ull * 1000000) {
		if ((got = lock_try(w, blade, lock, me)))
			break;
		if (!freed_at && !smart_epoch_drain(w, blade, 1))
			freed_at = smart_now_ns();
		sleep_ms(2);
	}
	took = (smart_now_ns() - t0) / 1000000;
	per = lb_periods_since(a, &m0, 0, PERIOD_MS, &waited);
	CHECK(got);
	/* the operation on the key: update under the lock, release */
	CHECK_OK(smart_faa_sync(w, key, 1, NULL));
	CHECK_OK(smart_write_sync(w, lock, &(uint64_t){ 0 }, 8));
	CHECK_OK(smart_read_sync(w, key, 8, &v));
	CHECK_EQ(v, 1);
	if (!freed_at && !smart_epoch_drain(w, blade, 2 * LEASE_MS))
		freed_at = smart_now_ns();
	CHECK(freed_at);
	CHECK_OK(smart_stats_snapshot(a, &st));
	printf("%s holder: its lock taken over after %llu ms (%llu renewal "
	       "periods, %llu waited for a CPU), its announcement taken back "
	       "(blocks freed) after %llu ms (lease %d ms, renewal period %d "
	       "ms)\n",
	       sig == SIGKILL ? "killed" : "stopped", (unsigned long long)took,
	       (unsigned long long)per, (unsigned long long)waited,
	       (unsigned long long)((freed_at - t0) / 1000000), LEASE_MS,
	       PERIOD_MS);
	/* within a lease and a period: its last renewal seen a period late,
	 * the fence at the first scan a lease later, our look's period */
	CHECK_LE(per, PERIODS + 3 + waited);
	CHECK_EQ(st.c[SMART_STAT_EPOCH_FREED], 16);
	CHECK_EQ(st.c[SMART_STAT_EPOCH_TAKEN_BACK], 1);
	if (sig == SIGSTOP)
		kill(pid, SIGKILL);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	guard.pids[0] = 0;
	close(p[0]);
	close(p[1]);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(a));
	smart_blade_destroy(b);
}

static void test_dead_holder(void)
{
	holder_case(SIGKILL);
}

static void test_stopped_holder(void)
{
	holder_case(SIGSTOP);
}

/* smartd killed under a client that keeps writing (shm keeps the memory
 * mapped): ops must fail, within the keeper's reaction time. */
static void test_dead_blade(void)
{
	const char *argv[] = { "smartd",    "--size",	    "16M",
			       "--listen",  "127.0.0.1:0",  "--secret-file",
			       secret_path, "--chunk-size", "64K",
			       NULL };
	struct smartd_proc d;
	smart_worker_t *w;
	smart_gaddr_t g;
	uint16_t blade;
	smart_ctx_t *a;
	uint64_t t0, ms, w0;
	int64_t waited;
	int rc, st, n = 0;

	smartd_spawn(&d, argv, "smartd: blade 0 serving");
	guard.pids[GUARD_PIDS - 1] = d.pid;
	a = ctx_open(d.addr, &blade);
	CHECK_OK(smart_worker_create(a, &w));
	CHECK_OK(smart_alloc(w, blade, 8, &g));
	CHECK_OK(smart_write_sync(w, g, &(uint64_t){ 7 }, 8));
	CHECK_EQ(kill(d.pid, SIGKILL), 0);
	CHECK_EQ(waitpid(d.pid, &st, 0), d.pid);
	guard.pids[GUARD_PIDS - 1] = 0;
	w0 = sched_wait_all_ns(getpid());
	t0 = smart_now_ns();
	/* 60 s: a guard against a hang, not the bound */
	while (!(rc = smart_write_sync(w, g, &(uint64_t){ 8 }, 8)) &&
	       smart_now_ns() - t0 < 60000000000ull)
		n++;
	ms = (smart_now_ns() - t0) / 1000000;
	/* the keeper (and this thread) had to run: plus their wait */
	waited = (int64_t)lb_periods_of(sched_wait_all_ns(getpid()), w0, 1);
	printf("dead blade: ops failed with %s after %llu ms (%d more "
	       "succeeded on the orphaned memory; its threads waited %lld "
	       "ms for a CPU)\n",
	       smart_status_name(rc), (unsigned long long)ms, n,
	       (long long)waited);
	CHECK(rc == SMART_ECONN || rc == SMART_EQP);
	CHECK_LE(ms, 1000 + (uint64_t)waited);
	/* and every later op fails at once */
	CHECK_EQ(smart_write_sync(w, g, &(uint64_t){ 9 }, 8), SMART_ECONN);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(a));
	close(d.out);
}

/* A renewal's CAS can execute while its completion is lost (a failed
 * CQ); the next renewal then finds the word one ahead of its counter.
 * Played here by moving the word from outside, once. */
static void test_own_ahead(void)
{
	smart_blade_t *b = blade_start();
	const char *addr = smart_blade_address(b);
	uint16_t blade, id;
	smart_ctx_t *a = ctx_open(addr, &blade), *c = ctx_open(addr, &blade);
	smart_worker_t *wc;
	smart_stats_t st0, st1;
	smart_gaddr_t slot;
	uint64_t v, old = 0;

	CHECK_OK(smart_lease_id(a, blade, &id));
	CHECK_OK(smart_worker_create(c, &wc));
	slot = smart_gaddr(blade, 4096 + 64 + 16 * (id % 1024));
	do { /* the keeper may renew meanwhile: until our CAS lands */
		CHECK_OK(smart_read_sync(wc, slot, 8, &v));
		CHECK_EQ(v >> 48, id);
		CHECK_OK(smart_cas_sync(wc, slot, v, v + 1, &old));
	} while (old != v);
	CHECK_OK(smart_stats_snapshot(a, &st0));
	sleep_ms(2 * LEASE_MS);
	CHECK_OK(smart_stats_snapshot(a, &st1));
	CHECK_EQ(smart_ctx_fenced(a), 0);
	CHECK_GT(st1.lease_renewals, st0.lease_renewals);
	CHECK_EQ(smart_lease_alive(wc, blade, id), 1);
	CHECK_OK(smart_worker_destroy(wc));
	CHECK_OK(smart_ctx_destroy(c));
	CHECK_OK(smart_ctx_destroy(a));
	smart_blade_destroy(b);
}

/* The keeper's table read comes in pieces of at most 252 slots (lease.c)
 * once more slots are in use than that: a client in a far piece is
 * still seen to stop.  The blade's table is written here by hand: a
 * slots_used of 800 and, in slot 700, a client that never renews. */
static void test_far_slot(void)
{
	smart_blade_t *b = blade_start();
	uint16_t blade, far = 700;
	smart_ctx_t *a = ctx_open(smart_blade_address(b), &blade);
	smart_worker_t *w;
	smart_stats_t st;
	struct lb_mark m0;
	uint64_t t0, per, waited;
	int64_t ms;

	CHECK_OK(smart_worker_create(a, &w));
	t0 = now_ms(); /* before the word is written: a late look adds */
	lb_mark(a, &m0);
	CHECK_OK(smart_write_sync(w, smart_gaddr(blade, 4096),
				  &(uint64_t){ 800 }, 8));
	CHECK_OK(smart_write_sync(w, smart_gaddr(blade, 4096 + 64 + 16 * far),
				  &(uint64_t){ (uint64_t)far << 48 | 5 }, 8));
	CHECK_EQ(smart_lease_alive(w, blade, far), 1);
	CHECK_GE(wait_dead(w, blade, far, 60000), 0);
	ms = (int64_t)(now_ms() - t0);
	per = lb_periods_since(a, &m0, 0, PERIOD_MS, &waited);
	/* 800 slots are 4 pieces: one pass is 4 rounds.  Its word first
	 * seen within a pass (and the round in flight), the fence at the
	 * first pass a lease later (a pass more when eight periods of
	 * completions fell just short of it), our look's period */
	printf("far slot: fenced after %lld ms, %llu renewal periods (lease "
	       "%d ms, %d periods; bound %d + %llu waited for a CPU)\n",
	       (long long)ms, (unsigned long long)per, LEASE_MS, PERIODS,
	       PERIODS + 10, (unsigned long long)waited);
	CHECK_GE(ms, LEASE_MS / 2);
	CHECK_LE(per, PERIODS + 10 + waited);
	CHECK_OK(smart_stats_snapshot(a, &st));
	CHECK_EQ(st.leases_fenced, 1);
	CHECK_EQ(st.fenced, 0);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(a));
	smart_blade_destroy(b);
}

/* A killed client's id, once the blade's round robin comes back to it
 * (set by hand here: it would take 65535 handshakes), is skipped: the
 * newcomer gets another id and the dead one stays dead.  A clean exit's
 * id does come back. */
static void test_dead_id(void)
{
	smart_blade_t *b = blade_start();
	uint16_t blade, id2, id3;
	smart_ctx_t *a = ctx_open(smart_blade_address(b), &blade), *n;
	smart_worker_t *w;
	smart_gaddr_t g;
	struct child c;
	int st;

	CHECK_OK(smart_worker_create(a, &w));
	CHECK_OK(smart_alloc(w, blade, 8, &g));
	child_start(&c, smart_blade_address(b), g);
	CHECK_EQ(kill(c.pid, SIGKILL), 0);
	CHECK_EQ(waitpid(c.pid, &st, 0), c.pid);
	guard_del(c.pid);
	close(c.rd);
	CHECK_GE(wait_dead(w, blade, c.id, 10000), 0);
	/* no handshake is in flight: the control thread is idle */
	__atomic_store_n(&b->next_lease, c.id, __ATOMIC_SEQ_CST);
	n = ctx_open(smart_blade_address(b), &blade);
	CHECK_OK(smart_lease_id(n, blade, &id2));
	printf("dead client's id %u; the newcomer after the round robin came "
	       "back to it got %u; %llu ids buried\n",
	       c.id, id2, (unsigned long long)atomic_load(&b->n_dead_ids));
	CHECK_NE(id2, c.id);
	CHECK_EQ(smart_lease_alive(w, blade, c.id), 0);
	CHECK_EQ(smart_lease_alive(w, blade, id2), 1);
	CHECK_GE(atomic_load(&b->n_dead_ids), 1);
	CHECK_OK(smart_ctx_destroy(n)); /* a BYE: its id may come back */
	__atomic_store_n(&b->next_lease, id2, __ATOMIC_SEQ_CST);
	n = ctx_open(smart_blade_address(b), &blade);
	CHECK_OK(smart_lease_id(n, blade, &id3));
	CHECK_EQ(id3, id2);
	CHECK_OK(smart_ctx_destroy(n));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(a));
	smart_blade_destroy(b);
}

/* qps_first: the blade's transport, wrapped, notes at each responder's
 * destruction whether the lease of the client it served is fenced yet. */
struct qps_first {
	struct smart_tp_ops ops;
	const struct smart_tp_ops *real;
	struct smart_blade *b;
	_Atomic uint16_t id; /* the watched client's */
	_Atomic int destroyed, fenced_before;
};

static struct qps_first qf;

static void qf_responder_destroy(struct smart_tp_responder *r)
{
	uint16_t id = atomic_load(&qf.id);
	const struct smart_lease_table *t =
		(const void *)((const uint8_t *)qf.b->mr->addr +
			       SMART_LEASE_OFF);
	uint64_t word = __atomic_load_n(&t->slot[smart_lease_slot_of(id)].word,
					__ATOMIC_SEQ_CST);

	if (id && smart_lease_word_id(word) == id) {
		atomic_fetch_add(&qf.destroyed, 1);
		if (word & SMART_LEASE_FENCED)
			atomic_fetch_add(&qf.fenced_before, 1);
	}
	qf.real->responder_destroy(r);
}

static void test_qps_first(void)
{
	smart_blade_t *b = blade_start();
	uint16_t blade;
	smart_ctx_t *a;
	smart_worker_t *w;
	smart_gaddr_t g;
	struct child c;
	int st;

	/* before any session: the control thread has not read ops yet */
	qf.b = b;
	qf.real = b->ops;
	qf.ops = *b->ops;
	qf.ops.responder_destroy = qf_responder_destroy;
	__atomic_store_n(&b->ops, &qf.ops, __ATOMIC_SEQ_CST);
	a = ctx_open(smart_blade_address(b), &blade);
	CHECK_OK(smart_worker_create(a, &w));
	CHECK_OK(smart_alloc(w, blade, 8, &g));
	child_start(&c, smart_blade_address(b), g);
	atomic_store(&qf.id, c.id);
	CHECK_EQ(kill(c.pid, SIGKILL), 0);
	CHECK_EQ(waitpid(c.pid, &st, 0), c.pid);
	guard_del(c.pid);
	close(c.rd);
	CHECK_GE(wait_dead(w, blade, c.id, 10000), 0);
	printf("killed client: %d responders destroyed, %d of them after its "
	       "lease was fenced\n",
	       atomic_load(&qf.destroyed), atomic_load(&qf.fenced_before));
	CHECK_GT(atomic_load(&qf.destroyed), 0);
	CHECK_EQ(atomic_load(&qf.fenced_before), 0);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(a));
	smart_blade_destroy(b);
}

int main(int argc, char **argv)
{
	test_children(argc, argv,
		      (struct test_child[]){ { "client", child_main },
					     { "holder", holder_main },
					     { 0 } });
	guard_init(120);
	secret_file(secret_path, LB_SECRET);
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "basics", test_basics },
				 { "stopped", test_stopped },
				 { "killed", test_killed },
				 { "frozen_keeper", test_frozen_keeper },
				 { "fence_api", test_fence_api },
				 { "dead_holder", test_dead_holder },
				 { "stopped_holder", test_stopped_holder },
				 { "dead_blade", test_dead_blade },
				 { "own_ahead", test_own_ahead },
				 { "far_slot", test_far_slot },
				 { "dead_id", test_dead_id },
				 { "qps_first", test_qps_first },
				 { 0 } });
}
