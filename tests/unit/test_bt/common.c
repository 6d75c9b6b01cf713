/*
 * test_bt: helpers shared by the subjects (bt_test.h): the world, keys and
 * values, model scans, killed writers and their healing, a second blade,
 * a fresh tree and its drop back to the allocator's first usage.
 */
#include "bt_test.h"
#include "harness/sched.h"

void key_of(char *k, unsigned i)
{
	snprintf(k, 16, "k%08u", i);
}

void val_of(char *v, unsigned i, unsigned gen)
{
	snprintf(v, 16, "v%u.%u", i, gen);
}

void world_start(struct world *wd, const char *adv, unsigned node,
		 unsigned key_max, unsigned val_max)
{
	const char *kv[] = { "shm_adversarial", adv, NULL };
	struct smart_bt_config c;

	fixture_start(&wd->f, BLADE_SIZE, 1, adv ? kv : NULL);
	CHECK_OK(smart_worker_create(wd->f.ctx, &wd->w));
	smart_bt_config_init(&c);
	c.node_size = node;
	c.key_max = key_max;
	c.val_max = val_max;
	c.locks = 4096;
	CHECK_OK(smart_bt_create(wd->w, 1, 3, &c, &wd->t));
}

uint64_t ctx_stat(smart_ctx_t *ctx, enum smart_stat id)
{
	smart_stats_t st;

	CHECK_OK(smart_stats_snapshot(ctx, &st));
	return st.c[id];
}

void world_stop(struct world *wd)
{
	smart_bt_close(wd->t, wd->w);
	CHECK_OK(smart_worker_destroy(wd->w));
	fixture_stop(&wd->f);
}

/* The crc a node of wd's tree carries (seeded with the tree's salt). */
uint32_t forged_crc(const struct world *wd, const uint8_t *node, size_t len)
{
	return smart_crc32c(wd->t->salt, node + 4, len - 4);
}

/* Keys [lo, hi) inserted with the value "v". */
void fill(struct world *wd, unsigned lo, unsigned hi)
{
	char k[16];

	for (; lo < hi; lo++) {
		key_of(k, lo);
		CHECK_OK(smart_bt_insert(wd->t, wd->w, k, strlen(k), "v", 1));
	}
}

void expect_val(struct world *wd, unsigned i, unsigned gen)
{
	char k[16], v[16], got[32];
	size_t n = 0;

	key_of(k, i);
	val_of(v, i, gen);
	CHECK_OK(smart_bt_search(wd->t, wd->w, k, strlen(k), got, sizeof(got),
				 &n));
	CHECK_MSG(n == strlen(v) && !memcmp(got, v, n), "key %s: %.*s, not %s",
		  k, (int)n, got, v);
}

/* Scan [from, to) of the keys 0..nkeys-1 that are in (present[i]) against
 * the model, in slices of `slice` entries. */
void scan_check(struct world *wd, const unsigned char *present, unsigned nkeys,
		unsigned from, unsigned to, unsigned slice)
{
	struct smart_bt_entry ent[64];
	char buf[64 * 32], k[16], tk[16], cur[16];
	size_t n, cur_len;
	unsigned i = from, j;

	key_of(cur, from);
	cur_len = strlen(cur);
	key_of(tk, to);
	for (;;) {
		CHECK_OK(smart_bt_scan(wd->t, wd->w, cur, cur_len, tk,
				       strlen(tk), ent, slice, buf, sizeof(buf),
				       &n));
		for (j = 0; j < n; j++) {
			while (i < to && i < nkeys && !present[i])
				i++;
			CHECK_MSG(i < to, "scan returned past its end");
			key_of(k, i);
			CHECK_MSG(ent[j].key_len == strlen(k) &&
					  !memcmp(ent[j].key, k,
						  ent[j].key_len),
				  "scan: %.*s where %s belongs",
				  (int)ent[j].key_len, (const char *)ent[j].key,
				  k);
			i++;
		}
		if (n < slice)
			break;
		/* continue just after the last key: append a 0 byte */
		memcpy(cur, ent[n - 1].key, ent[n - 1].key_len);
		cur[ent[n - 1].key_len] = 0;
		cur_len = ent[n - 1].key_len + 1u;
	}
	while (i < to && i < nkeys && !present[i])
		i++;
	CHECK_MSG(i >= to || i >= nkeys, "scan missed key %u", i);
}

/* A client killed (SIGKILL) while it holds a leaf's lock: the blade
 * fences it at once, and the next writer takes the lock over as soon as
 * its keeper sees that, within the bound of lease_ms plus a renewal
 * period (docs/leases.md); the tree is whole and the key unchanged. */
void dead_holder_on(struct world *wd_)
{
	struct smart_bt_stats st;
	struct world wd = *wd_;
	char fd[12], v[16];
	double t0, took, late;
	uint64_t w0;
	int p[2], status;
	pid_t pid;
	size_t n;

	CHECK_OK(smart_bt_insert(wd.t, wd.w, "k", 1, "alive", 5));
	CHECK_EQ(pipe(p), 0);
	snprintf(fd, sizeof(fd), "%d", p[1]);
	pid = test_spawn("holder",
			 (const char *[]){ smart_blade_address(wd.f.blade), fd,
					   NULL });
	CHECK_GE(pid, 0);
	close(p[1]);
	CHECK_EQ(read(p[0], v, 1), 1);
	close(p[0]);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	w0 = sched_wait_all_ns(getpid());
	t0 = test_now_ms();
	CHECK_OK(smart_bt_search(wd.t, wd.w, "k", 1, v, sizeof(v), &n));
	CHECK(n == 5 && !memcmp(v, "alive", 5)); /* readers never wait */
	alarm(20); /* a lock never taken over: fail, do not hang */
	CHECK_OK(smart_bt_update(wd.t, wd.w, "k", 1, "next", 4));
	alarm(0);
	took = test_now_ms() - t0;
	late = sched_waited_ms(w0);
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_EQ(st.lock_takeovers, 1);
	/* plus what this process's threads (the blade's, the keeper's,
	 * ours) waited for a CPU meanwhile: 0 on an idle machine */
	CHECK_LE(took,
		 SMART_LEASE_MS_DEFAULT + SMART_LEASE_MS_DEFAULT / 8 + late);
	CHECK_OK(smart_bt_search(wd.t, wd.w, "k", 1, v, sizeof(v), &n));
	CHECK(n == 4 && !memcmp(v, "next", 4));
	printf("lock of a killed holder taken over after %.1f ms (bound "
	       "%d)\n",
	       took, SMART_LEASE_MS_DEFAULT + SMART_LEASE_MS_DEFAULT / 8);
}

/* Start the torn child for scenario sc, wait for it to stop inside its
 * write, kill it; returns the ops it finished before that one. */
/* The blade's authenticated sessions, once no more than n: the blade
 * frees a dead client's session (fencing its lease, blade/session.c)
 * before it counts it gone, so a lease read after this sees it dead.
 * The blade's thread does that when it reads the EOF, at a time of its
 * own: under load, after this process has gone on (an adopter then found
 * the killed merger's lease alive and adopted nothing). */
static void sessions_down_to(struct world *wd, uint64_t n)
{
	struct smart_blade_stats st;
	int ms;

	for (ms = 0; ms < 20000; ms++) {
		CHECK_OK(smart_blade_stats(wd->f.blade, &st));
		if (st.active_sessions <= n)
			return;
		usleep(1000);
	}
	CHECK(!"the killed child's session was never freed");
}

int torn_run(struct world *wd, const char *sc, int at)
{
	struct smart_blade_stats st;
	char fd[12], n[12];
	int p[2], status, done = -1;
	pid_t pid;

	CHECK_OK(smart_blade_stats(wd->f.blade, &st));
	CHECK_EQ(pipe(p), 0);
	snprintf(fd, sizeof(fd), "%d", p[1]);
	snprintf(n, sizeof(n), "%d", at);
	pid = test_spawn("torn",
			 (const char *[]){ smart_blade_address(wd->f.blade), fd,
					   sc, n, NULL });
	CHECK_GE(pid, 0);
	close(p[1]);
	CHECK_EQ(read(p[0], &done, sizeof(done)), (ssize_t)sizeof(done));
	close(p[0]);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	sessions_down_to(wd, st.active_sessions);
	return done;
}

/* k00000005 holds "torn-5": the update a dead holder half wrote, finished
 * by a taker (a reader or a writer), with this many repairs in all. */
void torn_k5(struct world *wd, uint64_t repairs)
{
	struct smart_bt_stats st;
	char v[16];
	size_t n;

	alarm(20);
	CHECK_OK(smart_bt_search(wd->t, wd->w, "k00000005", 9, v, sizeof(v),
				 &n));
	alarm(0);
	CHECK(n == 6 && !memcmp(v, "torn-5", 6));
	CHECK_OK(smart_bt_stats(wd->t, NULL, &st));
	CHECK_EQ(st.repairs, repairs);
}

/* Keys [lo, hi) are there, and nothing else below hi (searched one by
 * one, then scanned). */
void torn_expect(struct world *wd, unsigned lo, unsigned hi)
{
	unsigned char present[256];
	char k[16], v[16];
	unsigned i;
	size_t n;

	CHECK(hi <= sizeof(present));
	for (i = 0; i < hi; i++) {
		key_of(k, i);
		present[i] = i >= lo;
		CHECK_EQ(smart_bt_search(wd->t, wd->w, k, strlen(k), v,
					 sizeof(v), &n),
			 i >= lo ? 0 : SMART_ENOENT);
	}
	scan_check(wd, present, hi, 0, hi, 16);
}

/* Two blades (1 and 2), a tree of 512-byte nodes over both, no key. */
void world2_start(struct world *wd, smart_blade_t **b2)
{
	static const uint16_t two[2] = { 1, 2 };
	struct smart_bt_config c;

	fixture_start(&wd->f, BLADE_SIZE, 1, NULL);
	*b2 = fixture_add_blade(&wd->f, BLADE_SIZE, 2);
	CHECK_OK(smart_worker_create(wd->f.ctx, &wd->w));
	smart_bt_config_init(&c);
	c.node_size = 512;
	c.key_max = 12;
	c.val_max = 12;
	c.locks = 4096;
	c.blades = two;
	c.nblades = 2;
	CHECK_OK(smart_bt_create(wd->w, 1, 3, &c, &wd->t));
}

/* A fresh blade and a 512-byte-node tree on it, with the blade's use
 * before the tree in *u0 (a new worker: no allocator cache held). */
void fresh_tree(struct world *wd, struct smart_alloc_usage *u0)
{
	struct smart_bt_config c;

	fixture_start(&wd->f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(wd->f.ctx, &wd->w));
	CHECK_OK(smart_alloc_usage(wd->w, 1, u0));
	smart_bt_config_init(&c);
	c.node_size = 512;
	c.key_max = 12;
	c.val_max = 12;
	c.locks = 4096;
	CHECK_OK(smart_bt_create(wd->w, 1, 3, &c, &wd->t));
}

/* Drop the tree (and drain what its deletes retired): it cannot be
 * opened any more, and the blade holds exactly what it held before it
 * (u0), once the worker gave its allocator caches back. */
/* The blocks of a tree's node size the allocator hands out next are
 * all distinct: none was freed twice (a dead leaf retired by two). */
void none_twice(struct world *wd)
{
	smart_gaddr_t a[64];
	unsigned i, j;

	for (i = 0; i < 64; i++) {
		CHECK_OK(smart_alloc(wd->w, 1, 512, &a[i]));
		for (j = 0; j < i; j++)
			CHECK_MSG(a[j] != a[i], "block %llx handed out twice",
				  (unsigned long long)a[i]);
	}
	for (i = 0; i < 64; i++)
		CHECK_OK(smart_free(wd->w, a[i], 512));
}

void drop_back_to(struct world *wd, const struct smart_alloc_usage *u0)
{
	struct smart_alloc_usage u;
	smart_bt_t *t;

	CHECK_OK(smart_bt_drop(wd->t, wd->w));
	CHECK_EQ(smart_bt_open(wd->w, 1, 3, NULL, &t), SMART_ENOENT);
	CHECK_OK(smart_epoch_drain(wd->w, 1, 5000));
	/* no retired block whose free failed, none freed twice */
	CHECK_EQ(ctx_stat(wd->f.ctx, SMART_STAT_EPOCH_LEAKED), 0);
	none_twice(wd);
	CHECK_OK(smart_worker_destroy(wd->w));
	CHECK_OK(smart_worker_create(wd->f.ctx, &wd->w));
	CHECK_OK(smart_alloc_usage(wd->w, 1, &u));
	printf("held %llu bytes before the tree, %llu after its drop\n",
	       (unsigned long long)(u0->used + u0->cached),
	       (unsigned long long)(u.used + u.cached));
	CHECK_EQ(u.used + u.cached, u0->used + u0->cached);
	CHECK_EQ(u.free, u0->free);
	CHECK_OK(smart_worker_destroy(wd->w));
	fixture_stop(&wd->f);
}
