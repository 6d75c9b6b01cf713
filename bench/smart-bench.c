/*
 * smart-bench: data-structure benchmarks on Smart (DESIGN.md §7).
 *
 * `smart-bench ycsb` runs YCSB on Smart-HT: T threads, each with its own
 * worker and C coroutines; every coroutine keeps one operation in flight.
 * Without --connect an embedded blade is started in the process (with a
 * random secret, as smart-perf does); several --connect shard the table
 * over several blades.  The table is created, N keys are preloaded by all
 * coroutines, then the workload's mix runs for S seconds.
 *
 * Keys are "user" + zero-padded decimal, key_size bytes in all.  A value
 * is value_size - 4 random bytes followed by the CRC-32C of the key and
 * those bytes, so every read checks that it got a whole value written for
 * that very key; a mismatch is a validation failure (there must be none).
 *
 * Invariants: no mutable globals (the run lives in struct bench); a
 * thread's counters are written by its own coroutines only, which never
 * run in parallel, and read by main after the join.  Exit status: 0, 1 on
 * a failed run (setup, errors, validation failures), 2 on bad input.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "smart/smart.h"
#include "smart/ht.h"

#define BENCH_BLADES_MAX	SMART_HT_SHARDS_MAX
#define BENCH_LAT_SAMPLE	8	/* one op in 8 is timed */
#define BENCH_ACK_WINDOW	(1u << 16)	/* D: inserts in flight, max */
#define BENCH_ROOT_FIRST	16	/* root entries tried for the table */

enum wl_op { OP_READ, OP_UPDATE, OP_INSERT, OP_RMW, OP__N };
static const char *const op_names[] = { "read", "update", "insert", "rmw" };

/* A workload: percentages of each op, and the read key chooser. */
struct workload {
	const char *name;
	const char *title;
	int pct[OP__N];
	int latest;	/* D: reads favour recent inserts */
};

static const struct workload workloads[] = {
	{ "a", "YCSB-A (50% read, 50% update)", { 50, 50, 0, 0 }, 0 },
	{ "b", "YCSB-B (95% read, 5% update)", { 95, 5, 0, 0 }, 0 },
	{ "c", "YCSB-C (100% read)", { 100, 0, 0, 0 }, 0 },
	{ "d", "YCSB-D (95% read latest, 5% insert)", { 95, 0, 5, 0 }, 1 },
	{ "e", "YCSB-E (95% scan, 5% insert)", { 0, 0, 0, 0 }, 0 },
	{ "f", "YCSB-F (50% read, 50% read-modify-write)", { 50, 0, 0, 50 },
	  0 },
	{ "update-only", "update-only (100% update)", { 0, 100, 0, 0 }, 0 },
	{ "read-only", "read-only (100% read)", { 100, 0, 0, 0 }, 0 },
};
#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

struct bench_cfg {
	const struct workload *wl;
	const char *ds;
	uint64_t keys;
	unsigned value_size, key_size;
	double zipf;		/* 0 with --uniform */
	int uniform;
	int threads, coros;
	double seconds;
	const char *techniques;	/* --techniques */
	const char *nic_model;
	const char *qp_mode;
	const char *connect[BENCH_BLADES_MAX];
	int nconnect;
	const char *secret_file;
	uint64_t blade_size;	/* 0: computed */
	uint64_t seed;
	int json;
	const char *csv;
	const char *opts[32];	/* --opt key=value */
	int nopts;
	uint64_t keys_asked;	/* before scaling down to fit memory */
};

struct bench;

struct bench_thread {
	struct bench *b;
	int idx;
	pthread_t th;
	uint64_t ops[OP__N];
	uint64_t errors, vfail;
	int first_err;
	smart_hist_t hist;	/* op latency in cycles (sampled) */
	int rc;
};

struct bench {
	const struct bench_cfg *cfg;
	smart_ctx_t *ctx;
	smart_blade_t *blade;
	uint16_t blades[BENCH_BLADES_MAX];
	int nblades;
	uint64_t blade_bytes;	/* sum of the blades' regions */
	smart_ht_t *ht;
	unsigned root;
	uint64_t capacity;	/* keys the table is sized for */
	smart_zipf_t zipf;
	char secret[32];	/* the embedded blade's */
	atomic_int phase;	/* 0 load, 1 wait, 2 run, 3 stop */
	atomic_int loaded_threads;
	_Atomic uint64_t load_next;	/* next key to preload */
	_Atomic uint64_t loaded;
	_Atomic uint64_t ins_next;	/* D: next key to insert */
	_Atomic uint64_t acked;		/* D: [0, acked) all inserted */
	atomic_flag ack_lock;
	_Atomic uint8_t *ack_done;	/* D: ring of finished inserts */
	struct bench_thread *t;
	double load_secs;
};

struct bench_task {
	struct bench_thread *bt;
	smart_rng_t rng;
	char key[SMART_HT_KEY_MAX + 1];
	uint8_t *val, *rval;
};

struct bench_result {
	uint64_t ops, n[OP__N], errors, vfail;
	int first_err;
	double secs, mops, p50_us, p99_us, p999_us;
	double retries_per_op, rdma_ops_per_op, bytes_per_op;
	smart_stats_t st;
};

/* ---- keys and values ---- */

static void key_render(const struct bench_cfg *c, uint64_t k, char *out)
{
	snprintf(out, SMART_HT_KEY_MAX + 1, "user%0*" PRIu64,
		 (int)c->key_size - 4, k);
}

static uint32_t value_crc(const char *key, size_t klen, const uint8_t *v,
			  size_t n)
{
	return smart_crc32c(smart_crc32c(0, key, klen), v, n);
}

static void value_make(struct bench_task *t, unsigned size)
{
	unsigned n = size - 4, i;
	uint32_t crc;

	for (i = 0; i < n; i += 8) {
		uint64_t r = smart_rng_next(&t->rng);

		memcpy(t->val + i, &r, n - i < 8 ? n - i : 8);
	}
	crc = value_crc(t->key, strlen(t->key), t->val, n);
	memcpy(t->val + n, &crc, 4);
}

static int value_ok(const struct bench_task *t, size_t len, unsigned size)
{
	uint32_t crc;

	if (len != size)
		return 0;
	memcpy(&crc, t->rval + size - 4, 4);
	return crc == value_crc(t->key, strlen(t->key), t->rval, size - 4);
}

/* ---- key choice ---- */

/* Scrambled Zipf, as YCSB: the Zipf rank is hashed over the key space so
 * that the hot keys are spread over the table instead of being 0, 1, ... */
static uint64_t key_existing(struct bench *b, smart_rng_t *r)
{
	const struct bench_cfg *c = b->cfg;

	if (c->uniform)
		return smart_rng_below(r, c->keys);
	return smart_hash64(&(uint64_t){ smart_zipf_next(&b->zipf, r) }, 8,
			    c->seed) % c->keys;
}

/* D's "latest": rank 0 is the newest fully inserted key. */
static uint64_t key_latest(struct bench *b, smart_rng_t *r)
{
	uint64_t top = atomic_load_explicit(&b->acked, memory_order_acquire);
	uint64_t d = b->cfg->uniform ? smart_rng_below(r, top) :
		     smart_zipf_next(&b->zipf, r) % top;

	return top - 1 - d;
}

/* D: mark insert k finished; whoever gets the lock advances `acked`
 * over the finished prefix (a late mark waits for the next insert). */
static void insert_ack(struct bench *b, uint64_t k)
{
	uint64_t a;

	atomic_store(&b->ack_done[k % BENCH_ACK_WINDOW], 1);
	if (atomic_flag_test_and_set(&b->ack_lock))
		return;
	a = atomic_load(&b->acked);
	while (atomic_load(&b->ack_done[a % BENCH_ACK_WINDOW])) {
		atomic_store(&b->ack_done[a % BENCH_ACK_WINDOW], 0);
		a++;
	}
	atomic_store_explicit(&b->acked, a, memory_order_release);
	atomic_flag_clear(&b->ack_lock);
}

/* ---- operations ---- */

static int op_read(struct bench *b, smart_worker_t *w, struct bench_task *t,
		   uint64_t k)
{
	const struct bench_cfg *c = b->cfg;
	size_t len = 0;
	int rc;

	key_render(c, k, t->key);
	rc = smart_ht_search(b->ht, w, t->key, c->key_size, t->rval,
			     c->value_size + 64, &len);
	if (!rc && !value_ok(t, len, c->value_size))
		t->bt->vfail++;
	return rc;
}

static int op_write(struct bench *b, smart_worker_t *w, struct bench_task *t,
		    uint64_t k, int insert)
{
	const struct bench_cfg *c = b->cfg;

	key_render(c, k, t->key);
	value_make(t, c->value_size);
	return insert ? smart_ht_insert(b->ht, w, t->key, c->key_size, t->val,
					c->value_size) :
			smart_ht_update(b->ht, w, t->key, c->key_size, t->val,
					c->value_size);
}

static int op_insert_new(struct bench *b, smart_worker_t *w,
			 struct bench_task *t)
{
	uint64_t k = atomic_fetch_add(&b->ins_next, 1);
	int rc = op_write(b, w, t, k, 1);

	insert_ack(b, k);
	return rc;
}

static enum wl_op op_pick(const struct workload *wl, smart_rng_t *r)
{
	int x = (int)smart_rng_below(r, 100), i;

	for (i = 0; i < OP__N - 1; i++) {
		if (x < wl->pct[i])
			return (enum wl_op)i;
		x -= wl->pct[i];
	}
	return (enum wl_op)i;
}

static int op_one(struct bench *b, smart_worker_t *w, struct bench_task *t,
		  enum wl_op op)
{
	const struct workload *wl = b->cfg->wl;
	uint64_t k;
	int rc;

	switch (op) {
	case OP_READ:
		k = wl->latest ? key_latest(b, &t->rng) :
		    key_existing(b, &t->rng);
		return op_read(b, w, t, k);
	case OP_UPDATE:
		return op_write(b, w, t, key_existing(b, &t->rng), 0);
	case OP_INSERT:
		return op_insert_new(b, w, t);
	default:
		k = key_existing(b, &t->rng);
		rc = op_read(b, w, t, k);
		return rc ? rc : op_write(b, w, t, k, 0);
	}
}

static void count_err(struct bench_thread *bt, int rc)
{
	if (!bt->errors++)
		bt->first_err = rc;
}

static void run_task(smart_worker_t *w, void *arg)
{
	struct bench_task *t = arg;
	struct bench_thread *bt = t->bt;
	struct bench *b = bt->b;
	uint64_t t0 = 0, n = 0;
	enum wl_op op;
	int rc;

	while (atomic_load_explicit(&b->phase, memory_order_relaxed) < 3) {
		op = op_pick(b->cfg->wl, &t->rng);
		if (!(n & (BENCH_LAT_SAMPLE - 1)))
			t0 = smart_cycles();
		rc = op_one(b, w, t, op);
		if (!(n++ & (BENCH_LAT_SAMPLE - 1)))
			smart_hist_add(&bt->hist, smart_cycles() - t0);
		bt->ops[op]++;
		if (rc)
			count_err(bt, rc);
	}
}

static void load_task(smart_worker_t *w, void *arg)
{
	struct bench_task *t = arg;
	struct bench *b = t->bt->b;
	uint64_t k;
	int rc;

	while ((k = atomic_fetch_add(&b->load_next, 1)) < b->cfg->keys) {
		rc = op_write(b, w, t, k, 1);
		if (rc) {
			count_err(t->bt, rc);
			if (rc != SMART_EEXIST)
				break;
		}
		atomic_fetch_add_explicit(&b->loaded, 1, memory_order_relaxed);
	}
}

/* ---- threads ---- */

static int spawn_all(struct bench_thread *bt, smart_worker_t *w,
		     struct bench_task *tasks, smart_task_fn fn)
{
	int i, rc = 0;

	for (i = 0; !rc && i < bt->b->cfg->coros; i++)
		rc = smart_task_spawn(w, fn, &tasks[i]);
	return rc ? rc : smart_worker_run(w);
}

static int tasks_init(struct bench_thread *bt, struct bench_task *tasks)
{
	const struct bench_cfg *c = bt->b->cfg;
	int i;

	for (i = 0; i < c->coros; i++) {
		tasks[i].bt = bt;
		smart_rng_seed(&tasks[i].rng, c->seed * 1000003 +
			       (uint64_t)bt->idx * 1000 + (uint64_t)i);
		tasks[i].val = malloc(c->value_size);
		tasks[i].rval = malloc(c->value_size + 64);
		if (!tasks[i].val || !tasks[i].rval)
			return SMART_ENOMEM;
	}
	return 0;
}

static void tasks_free(struct bench_task *tasks, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		free(tasks[i].val);
		free(tasks[i].rval);
	}
	free(tasks);
}

static void wait_phase(struct bench *b, int phase)
{
	while (atomic_load(&b->phase) < phase)
		usleep(100);
}

static void *thread_main(void *arg)
{
	struct bench_thread *bt = arg;
	struct bench *b = bt->b;
	struct bench_task *tasks = calloc((size_t)b->cfg->coros,
					  sizeof(*tasks));
	smart_worker_t *w = NULL;
	int rc = tasks ? tasks_init(bt, tasks) : SMART_ENOMEM;

	if (!rc)
		rc = smart_worker_create(b->ctx, &w);
	if (!rc)
		rc = spawn_all(bt, w, tasks, load_task);
	atomic_fetch_add(&b->loaded_threads, 1);
	wait_phase(b, 2);
	if (!rc && atomic_load(&b->phase) == 2)
		rc = spawn_all(bt, w, tasks, run_task);
	if (w)
		smart_worker_destroy(w);
	if (tasks)
		tasks_free(tasks, b->cfg->coros);
	bt->rc = rc;
	return NULL;
}

/* ---- setup ---- */

/* A KV block (16-byte header, key, value) as the allocator hands it
 * out: a power of two of at least 64 bytes. */
static uint64_t kv_bytes(const struct bench_cfg *c)
{
	uint64_t n = 16 + c->key_size + c->value_size, p = 64;

	while (p < n)
		p *= 2;
	return p;
}

/* Table bytes per key at load factor 1/2 (7 slots in 64 B, plus the
 * overflow third) and the key's KV block. */
static uint64_t bytes_per_key(const struct bench_cfg *c)
{
	return 2 * 64 * 3 / (7 * 2) + 1 + kv_bytes(c);
}

/* Allocator chunks (1 MiB) that workers hold partly used, the superblock
 * chunk and the table's directories and descriptor.  A worker may hold
 * one chunk per coroutine: its coroutines refill a size class at once
 * (each claims a chunk while another's claim is in flight). */
static uint64_t headroom(const struct bench_cfg *c)
{
	return (UINT64_C(8) << 20) + (uint64_t)(c->threads + 1) *
	       (uint64_t)(c->coros + 1) * (1u << 20);
}

static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	unsigned long long kb = 0;

	if (!f)
		return UINT64_C(4) << 30;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb ? (uint64_t)kb << 10 : UINT64_C(4) << 30;
}

/* D inserts into the table while it runs: room for a generous estimate
 * (5% of 3 Mops per thread), at most 4 N. */
static uint64_t insert_room(const struct bench_cfg *c)
{
	double est = 0.05 * 3e6 * c->threads * c->seconds;
	uint64_t cap = c->keys * 4;

	if (c->wl->pct[OP_INSERT] == 0)
		return 0;
	return est < (double)cap ? (uint64_t)est : cap;
}

/* Updates write a new KV block and leak the old one (docs/ht.md §5, as
 * Smart-HT does), so the blade needs room for every write of the run: a
 * generous estimate of 2 Mops per thread (per core at most). */
static uint64_t write_room(const struct bench_cfg *c)
{
	const int *p = c->wl->pct;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	double thr = c->threads < cpus || cpus < 1 ? c->threads : (double)cpus;

	return (uint64_t)(2e6 * thr * c->seconds * (p[OP_UPDATE] + p[OP_RMW]) /
			  100 * (double)kv_bytes(c));
}

/* Keys are scaled down when the table would take more than half of the
 * memory there is (embedded: 60% of what the machine has available;
 * connected blades: their regions).  Says so on stderr. */
static int size_memory(struct bench *b, struct bench_cfg *c, uint64_t budget)
{
	uint64_t per = bytes_per_key(c), hr = headroom(c) * (uint64_t)
		       (c->nconnect ? c->nconnect : 1);
	uint64_t need = (c->keys + insert_room(c)) * per + hr;

	if (need > budget / 2) {
		uint64_t fit = budget / 2 > hr ? (budget / 2 - hr) / per : 0;

		if (c->wl->pct[OP_INSERT])
			fit /= 5;
		if (fit < 1000) {
			fprintf(stderr, "smart-bench: not enough memory for "
				"even 1000 keys (%" PRIu64 " MiB)\n",
				budget >> 20);
			return SMART_ENOSPC;
		}
		fprintf(stderr, "smart-bench: scaling keys down from %" PRIu64
			" to %" PRIu64 " to fit %" PRIu64 " MiB\n", c->keys,
			fit, budget >> 20);
		c->keys = fit;
	}
	b->capacity = c->keys + insert_room(c);
	need = b->capacity * per + hr + write_room(c);
	if (need > budget)
		fprintf(stderr, "smart-bench: the run may outgrow the blade "
			"(%" PRIu64 " MiB; updates leak their old values)\n",
			budget >> 20);
	if (!c->nconnect && !c->blade_size)
		c->blade_size = need < budget ? need : budget;
	if (c->blade_size && c->blade_size < (16u << 20))
		c->blade_size = 16u << 20;
	return 0;
}

/* An embedded blade with a random secret, handed to our own ctx directly
 * (smart_ctx_set_secret) once it exists. */
static int embedded_blade(struct bench *b)
{
	struct smart_blade_config bc;
	int rc = smart_secret_generate(b->secret, sizeof(b->secret));

	if (rc)
		return rc;
	smart_blade_config_init(&bc);
	bc.size = b->cfg->blade_size;
	bc.listen = "127.0.0.1:0";
	bc.secret = b->secret;
	bc.secret_len = sizeof(b->secret);
	return smart_blade_create(&bc, &b->blade);
}

static int opt_kv(smart_opts_t *o, const char *arg)
{
	int rc = smart_opts_set_kv(o, arg);

	if (rc)
		fprintf(stderr, "smart-bench: --opt %s: %s (want key=value)\n",
			arg, smart_strerror(rc));
	return rc;
}

/* The library options of the run; bad ones are the user's input, so
 * check_cfg() builds them once before anything starts. */
static int opts_build(const struct bench_cfg *c, const char *secret_file,
		      smart_opts_t **out)
{
	smart_opts_t *o;
	char n[16];
	int i, rc = smart_opts_create(&o);

	if (rc)
		return rc;
	if (c->techniques)
		rc = smart_opts_set(o, "techniques", c->techniques);
	if (!rc && c->nic_model)
		rc = smart_opts_set(o, "nic_model", c->nic_model);
	if (!rc && c->qp_mode)
		rc = smart_opts_set(o, "qp_mode", c->qp_mode);
	if (!rc && secret_file)
		rc = smart_opts_set(o, "secret_file", secret_file);
	if (!rc && c->coros > 32) {
		snprintf(n, sizeof(n), "%d", c->coros * 2 > 1024 ? 1024 :
			 c->coros * 2);
		rc = smart_opts_set(o, "max_tasks", n);
	}
	if (rc)
		fprintf(stderr, "smart-bench: bad library option (--techniques, "
			"--nic-model, --qp-mode or the environment): %s\n",
			smart_strerror(rc));
	for (i = 0; !rc && i < c->nopts; i++)
		rc = opt_kv(o, c->opts[i]);
	if (rc)
		smart_opts_destroy(o);
	else
		*out = o;
	return rc;
}

static int ctx_make(struct bench *b, const char *secret_file)
{
	smart_opts_t *o;
	int rc = opts_build(b->cfg, secret_file, &o);

	if (rc)
		return rc;
	rc = smart_ctx_create(o, &b->ctx);
	smart_opts_destroy(o);
	return rc;
}

static int connect_all(struct bench *b)
{
	const struct bench_cfg *c = b->cfg;
	int i, rc = 0;

	if (!c->nconnect)
		return smart_ctx_connect(b->ctx, smart_blade_address(b->blade),
				     &b->blades[b->nblades++]);
	for (i = 0; !rc && i < c->nconnect; i++) {
		rc = smart_ctx_connect(b->ctx, c->connect[i],
				   &b->blades[b->nblades]);
		if (rc)
			fprintf(stderr, "smart-bench: connect %s: %s\n",
				c->connect[i], smart_strerror(rc));
		else
			b->nblades++;
	}
	return rc;
}

/* Geometry for `capacity` keys at load factor 1/2: 2^depth subtables of
 * `buckets` main buckets (each with half an overflow bucket) per shard. */
static void table_geometry(const struct bench *b, struct smart_ht_config *hc)
{
	uint64_t per_shard = b->capacity / (uint64_t)b->nblades + 1;
	uint64_t slots = 2 * per_shard, nb;
	unsigned depth = 4;

	for (;;) {
		nb = slots * 2 / (21 * (UINT64_C(1) << depth)) + 1;
		if (nb <= (1u << 20) || depth == SMART_HT_DEPTH_MAX)
			break;
		depth++;
	}
	nb = (nb + 63) & ~UINT64_C(63);
	hc->depth = depth;
	hc->buckets = nb > (1u << 20) ? 1u << 20 : (unsigned)nb;
	hc->blades = b->blades;
	hc->nblades = (unsigned)b->nblades;
}

/* The first free root entry from BENCH_ROOT_FIRST on names the table (a
 * long-running smartd keeps the tables of earlier runs). */
static int table_create(struct bench *b, smart_worker_t *w)
{
	struct smart_ht_config hc;
	unsigned r;
	int rc = SMART_EEXIST;

	smart_ht_config_init(&hc);
	table_geometry(b, &hc);
	for (r = BENCH_ROOT_FIRST; r < SMART_ROOT_ENTRIES && rc ==
	     SMART_EEXIST; r++) {
		rc = smart_ht_create(w, b->blades[0], r, &hc, &b->ht);
		b->root = r;
	}
	if (rc)
		fprintf(stderr, "smart-bench: creating the table: %s\n",
			smart_strerror(rc));
	return rc;
}

static int bench_setup(struct bench *b, struct bench_cfg *c)
{
	uint64_t budget = mem_available() / 10 * 6;
	int i, rc;

	if (!c->nconnect) {
		if (c->blade_size)
			budget = c->blade_size;
		rc = size_memory(b, c, budget);
		if (!rc)
			rc = embedded_blade(b);
		if (!rc)
			rc = ctx_make(b, NULL);
		if (!rc)
			rc = smart_ctx_set_secret(b->ctx, b->secret,
						  sizeof(b->secret));
		if (!rc)
			rc = connect_all(b);
	} else {
		rc = ctx_make(b, c->secret_file);
		if (!rc)
			rc = connect_all(b);
		budget = UINT64_MAX;
		for (i = 0; !rc && i < b->nblades; i++) {
			struct smart_blade_info bi;

			rc = smart_ctx_blade_info(b->ctx, b->blades[i], &bi);
			if (!rc && bi.alloc_max < budget)
				budget = bi.alloc_max;
		}
		if (!rc)
			rc = size_memory(b, c, budget * (uint64_t)b->nblades);
	}
	for (i = 0; !rc && i < b->nblades; i++) {
		struct smart_blade_info bi;

		rc = smart_ctx_blade_info(b->ctx, b->blades[i], &bi);
		b->blade_bytes += rc ? 0 : bi.size;
	}
	if (!rc && !c->uniform)
		rc = smart_zipf_init(&b->zipf, c->keys, c->zipf);
	return rc;
}

/* ---- the run ---- */

static void sleep_s(double secs)
{
	struct timespec ts = { (time_t)secs,
			       (long)((secs - (double)(time_t)secs) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Wait for the preload, printing progress on stderr every second. */
static void load_wait(struct bench *b)
{
	uint64_t t0 = smart_now_ns(), tick = t0, last = 0, now, n;

	while (atomic_load(&b->loaded_threads) < b->cfg->threads) {
		sleep_s(0.01);
		now = smart_now_ns();
		if (now - tick < 1000000000)
			continue;
		n = atomic_load(&b->loaded);
		fprintf(stderr, "preload: %" PRIu64 "/%" PRIu64 " keys, "
			"%.0f keys/s\n", n, b->cfg->keys,
			(double)(n - last) * 1e9 / (double)(now - tick));
		tick = now;
		last = n;
	}
	b->load_secs = (double)(smart_now_ns() - t0) / 1e9;
	fprintf(stderr, "preload: %" PRIu64 " keys in %.2f s (%.0f keys/s)\n",
		(uint64_t)atomic_load(&b->loaded), b->load_secs,
		(double)atomic_load(&b->loaded) / (b->load_secs > 0 ?
						   b->load_secs : 1e-9));
}

static int load_errors(const struct bench *b)
{
	const struct bench_thread *bt;
	int i;

	for (i = 0; i < b->cfg->threads; i++) {
		bt = &b->t[i];
		if (bt->rc || bt->errors) {
			fprintf(stderr, "smart-bench: preload failed: %s (%"
				PRIu64 " errors)\n", smart_strerror(bt->rc ?
				bt->rc : bt->first_err), bt->errors);
			return bt->rc ? bt->rc : bt->first_err;
		}
	}
	return 0;
}

static void stats_delta(smart_ctx_t *ctx, const smart_stats_t *s0,
			smart_stats_t *d)
{
	int i;

	smart_stats_snapshot(ctx, d);
	for (i = 0; i < SMART_STAT__COUNT; i++)
		d->c[i] -= s0->c[i];
	d->db_rings -= s0->db_rings;
	d->db_contended -= s0->db_contended;
	d->wqe_misses -= s0->wqe_misses;
	d->retries_per_op = d->c[SMART_STAT_GUARDED_OPS] ?
		(double)d->c[SMART_STAT_RETRIES] /
		(double)d->c[SMART_STAT_GUARDED_OPS] : 0;
}

static void result_fill(struct bench *b, struct bench_result *r)
{
	const smart_stats_t *s = &r->st;
	double cps = smart_cycles_per_sec(), ops;
	smart_hist_t h;
	int i, k;

	smart_hist_init(&h);
	for (i = 0; i < b->cfg->threads; i++) {
		for (k = 0; k < OP__N; k++)
			r->n[k] += b->t[i].ops[k];
		r->errors += b->t[i].errors;
		r->vfail += b->t[i].vfail;
		if (b->t[i].errors && !r->first_err)
			r->first_err = b->t[i].first_err;
		if (b->t[i].rc && !r->first_err)
			r->first_err = b->t[i].rc;
		smart_hist_merge(&h, &b->t[i].hist);
	}
	for (k = 0; k < OP__N; k++)
		r->ops += r->n[k];
	ops = r->ops ? (double)r->ops : 1;
	r->mops = (double)r->ops / r->secs / 1e6;
	r->p50_us = smart_hist_quantile(&h, 0.5) / cps * 1e6;
	r->p99_us = smart_hist_quantile(&h, 0.99) / cps * 1e6;
	r->p999_us = smart_hist_quantile(&h, 0.999) / cps * 1e6;
	r->retries_per_op = (double)s->c[SMART_STAT_RETRIES] / ops;
	r->rdma_ops_per_op = (double)(s->c[SMART_STAT_READS] +
		s->c[SMART_STAT_WRITES] + s->c[SMART_STAT_CASES] +
		s->c[SMART_STAT_FAAS]) / ops;
	r->bytes_per_op = (double)(s->c[SMART_STAT_BYTES_READ] +
		s->c[SMART_STAT_BYTES_WRITTEN]) / ops;
}

static int threads_start(struct bench *b)
{
	int i;

	for (i = 0; i < b->cfg->threads; i++) {
		b->t[i].b = b;
		b->t[i].idx = i;
		smart_hist_init(&b->t[i].hist);
		if (pthread_create(&b->t[i].th, NULL, thread_main, &b->t[i])) {
			atomic_store(&b->phase, 3);
			while (i--)
				pthread_join(b->t[i].th, NULL);
			return SMART_ESYS;
		}
	}
	return 0;
}

static int bench_run(struct bench *b, struct bench_result *r)
{
	smart_stats_t s0;
	uint64_t t0, t1;
	int i, rc;

	atomic_store(&b->ins_next, b->cfg->keys);
	atomic_store(&b->acked, b->cfg->keys);
	rc = threads_start(b);
	if (rc)
		return rc;
	load_wait(b);
	rc = load_errors(b);
	atomic_store(&b->phase, rc ? 3 : 1);
	for (i = 0; !rc && i < b->cfg->threads; i++)
		b->t[i].errors = 0, b->t[i].first_err = 0;
	smart_stats_snapshot(b->ctx, &s0);
	t0 = smart_now_ns();
	atomic_store(&b->phase, rc ? 3 : 2);
	if (!rc)
		sleep_s(b->cfg->seconds);
	atomic_store(&b->phase, 3);
	t1 = smart_now_ns();
	for (i = 0; i < b->cfg->threads; i++)
		pthread_join(b->t[i].th, NULL);
	if (rc)
		return rc;
	r->secs = (double)(t1 - t0) / 1e9;
	stats_delta(b->ctx, &s0, &r->st);
	result_fill(b, r);
	return 0;
}

/* ---- output ---- */

static const char *dist_name(const struct bench_cfg *c, char *buf, size_t n)
{
	if (c->uniform)
		snprintf(buf, n, "uniform");
	else
		snprintf(buf, n, "scrambled Zipf %.2f", c->zipf);
	return buf;
}

static void print_rule(void)
{
	printf("-------------------------------------------------------------"
	       "--------------------------\n");
}

static void print_header(const struct bench *b)
{
	const struct bench_cfg *c = b->cfg;
	char d[48];

	print_rule();
	printf("                %s on Smart-HT (smart-bench %s)\n",
	       c->wl->title, SMART_VERSION_STRING);
	printf(" Transport      : %s, QP mode %s\n",
	       smart_ctx_transport(b->ctx), smart_ctx_qp_mode(b->ctx));
	printf(" Techniques     : %s\n", smart_ctx_techniques(b->ctx));
	printf(" NIC model      : %s\n", c->nic_model ? c->nic_model : "off");
	printf(" Blades         : %s, %d x %" PRIu64 " MiB, table at root "
	       "%u\n", c->nconnect ? "connected" : "embedded", b->nblades,
	       b->blade_bytes / (uint64_t)b->nblades >> 20, b->root);
	printf(" Keys           : %" PRIu64 "%s x (%u B key, %u B value), "
	       "%s\n", c->keys, c->keys != c->keys_asked ?
	       " (scaled down)" : "", c->key_size, c->value_size,
	       dist_name(c, d, sizeof(d)));
	printf(" Threads x coros: %d x %d (one operation in flight per "
	       "coroutine)\n", c->threads, c->coros);
	printf(" Duration       : %.1f s after a %.2f s preload\n",
	       c->seconds, b->load_secs);
	print_rule();
}

static void print_table(const struct bench *b, const struct bench_result *r)
{
	int k;

	print_header(b);
	printf(" %-12s %-11s %-8s %-8s %-8s %-8s %-11s %-11s %-9s %s\n",
	       "workload", "#ops", "Mops", "p50[us]", "p99[us]", "p999[us]",
	       "retries/op", "rdma-ops/op", "bytes/op", "errors");
	printf(" %-12s %-11" PRIu64 " %-8.3f %-8.2f %-8.2f %-8.2f %-11.4f "
	       "%-11.2f %-9.1f %" PRIu64 "\n", b->cfg->wl->name, r->ops,
	       r->mops, r->p50_us, r->p99_us, r->p999_us, r->retries_per_op,
	       r->rdma_ops_per_op, r->bytes_per_op, r->errors);
	print_rule();
	printf(" mix:");
	for (k = 0; k < OP__N; k++)
		if (r->n[k])
			printf(" %s %.1f%%", op_names[k],
			       100.0 * (double)r->n[k] / (double)r->ops);
	printf("; validation failures %" PRIu64 "; %.3f Mops per thread\n",
	       r->vfail, r->mops / b->cfg->threads);
	printf(" library: credit cap %d (%s), doorbells %" PRIu64
	       " (contended %" PRIu64 "), retries per guarded op %.4f\n",
	       r->st.credit_cap, r->st.throttle_phase, r->st.db_rings,
	       r->st.db_contended, r->st.retries_per_op);
	if (r->errors)
		printf(" errors: %" PRIu64 ", the first %s (%s)\n", r->errors,
		       smart_status_name(r->first_err),
		       smart_strerror(r->first_err));
}

static void print_json(const struct bench *b, const struct bench_result *r)
{
	const struct bench_cfg *c = b->cfg;

	printf("{\"workload\":\"%s\",\"ds\":\"%s\",\"threads\":%d,"
	       "\"coros\":%d,\"keys\":%" PRIu64 ",\"keys_asked\":%" PRIu64
	       ",\"key_size\":%u,\"value_size\":%u,\"zipf\":%.3f,"
	       "\"distribution\":\"%s\",\"seconds\":%.3f,\"ops\":%" PRIu64
	       ",\"mops\":%.4f,\"p50_us\":%.3f,\"p99_us\":%.3f,"
	       "\"p999_us\":%.3f,\"retries_per_op\":%.4f,"
	       "\"rdma_ops_per_op\":%.4f,\"bytes_per_op\":%.2f,",
	       c->wl->name, c->ds, c->threads, c->coros, c->keys,
	       c->keys_asked, c->key_size, c->value_size, c->uniform ? 0 :
	       c->zipf, c->uniform ? "uniform" : "zipf", r->secs, r->ops,
	       r->mops, r->p50_us, r->p99_us, r->p999_us, r->retries_per_op,
	       r->rdma_ops_per_op, r->bytes_per_op);
	printf("\"reads\":%" PRIu64 ",\"updates\":%" PRIu64 ",\"inserts\":%"
	       PRIu64 ",\"rmws\":%" PRIu64 ",\"errors\":%" PRIu64
	       ",\"first_error\":\"%s\",\"validation_failures\":%" PRIu64
	       ",", r->n[OP_READ], r->n[OP_UPDATE], r->n[OP_INSERT],
	       r->n[OP_RMW], r->errors, r->errors ?
	       smart_status_name(r->first_err) : "", r->vfail);
	printf("\"techniques\":\"%s\",\"qp_mode_effective\":\"%s\",\"transport\":"
	       "\"%s\",\"nic_model\":\"%s\",\"blades\":%d,\"embedded\":%s,"
	       "\"load_secs\":%.3f,\"credit_cap\":%d,\"throttle_phase\":"
	       "\"%s\",\"db_contended\":%" PRIu64 ",\"guarded_retries_per_op\""
	       ":%.4f,\"reads_per_op\":%.4f}\n",
	       smart_ctx_techniques(b->ctx), smart_ctx_qp_mode(b->ctx),
	       smart_ctx_transport(b->ctx), c->nic_model ? c->nic_model : "",
	       b->nblades, c->nconnect ? "false" : "true", b->load_secs,
	       r->st.credit_cap, r->st.throttle_phase, r->st.db_contended,
	       r->st.retries_per_op, (double)r->st.c[SMART_STAT_READS] /
	       (double)(r->ops ? r->ops : 1));
}

/* One line per run; a header first when the file is new or empty.  The
 * options list has commas, so it is joined with '+'. */
static int print_csv(const struct bench *b, const struct bench_result *r)
{
	const struct bench_cfg *c = b->cfg;
	char o[64], *p;
	FILE *f = fopen(c->csv, "a");

	if (!f) {
		fprintf(stderr, "smart-bench: --csv %s: %s\n", c->csv,
			strerror(errno));
		return SMART_ESYS;
	}
	snprintf(o, sizeof(o), "%s", smart_ctx_techniques(b->ctx));
	for (p = o; *p; p++)
		if (*p == ',')
			*p = '+';
	if (ftell(f) == 0)
		fprintf(f, "workload,ds,techniques,threads,coros,keys,value_size,"
			"zipf,mops,p50_us,p99_us,p999_us,retries_per_op,"
			"rdma_ops_per_op,bytes_per_op,errors,"
			"validation_failures,qp_mode,transport,nic_model\n");
	fprintf(f, "%s,%s,%s,%d,%d,%" PRIu64 ",%u,%.3f,%.4f,%.3f,%.3f,%.3f,"
		"%.4f,%.4f,%.2f,%" PRIu64 ",%" PRIu64 ",%s,%s,\"%s\"\n",
		c->wl->name, c->ds, o, c->threads, c->coros, c->keys,
		c->value_size, c->uniform ? 0 : c->zipf, r->mops, r->p50_us,
		r->p99_us, r->p999_us, r->retries_per_op, r->rdma_ops_per_op,
		r->bytes_per_op, r->errors, r->vfail,
		smart_ctx_qp_mode(b->ctx), smart_ctx_transport(b->ctx),
		c->nic_model ? c->nic_model : "off");
	return fclose(f) ? SMART_ESYS : 0;
}

/* ---- arguments ---- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: smart-bench ycsb [options]\n"
"  YCSB on a Smart data structure.  Without --connect an embedded blade is\n"
"  started in this process; several --connect shard the table over blades.\n"
"  --ds NAME             data structure: ht [ht]\n"
"  --workload W          a|b|c|d|e|f|update-only|read-only [a]\n"
"  --keys N              keys preloaded (scaled down to fit memory) [100000]\n"
"  --key-size B          key bytes (\"user\" + digits), 8..255 [16]\n"
"  --value-size B        value bytes, 8..8192 (last 4: a CRC) [8]\n"
"  --zipf THETA          scrambled Zipf, theta in [0,1) [0.99]\n"
"  --uniform             uniform keys instead of Zipf\n"
"  --threads T           worker threads, 1..256 [1]\n"
"  --coros C             coroutines per thread, 1..1024 [8]\n"
"  --seconds S           run time after the preload [3]\n"
"  --techniques LIST           techniques: ThrdAwareAlloc,WorkReqThrot,\n"
"                        ConflictAvoid,SpecLookup or None [all]\n"
"  --nic-model SPEC      shm RNIC model: default or key=value,... [off]\n"
"  --qp-mode M           shared | mux:K | per-thread | per-thread-db\n"
"  --opt KEY=VALUE       any library option (smart-perf --list-options)\n"
"  --connect HOST:PORT   a running smartd (repeat for more blades, max 16)\n"
"  --secret-file F       secret for --connect (or SMART_SECRET_FILE)\n"
"  --blade-size SIZE     embedded blade region [from keys and value size]\n"
"  --seed N              RNG seed [1]\n"
"  --json                one JSON object instead of the table\n"
"  --csv FILE            append one CSV line (header when new)\n"
"  --help, --version\n");
}

static int bad_arg(const char *opt, const char *val)
{
	fprintf(stderr, "smart-bench: bad value '%s' for --%s (see --help)\n",
		val ? val : "", opt);
	return 2;
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	unsigned long long v;
	int shift = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		shift = 10, end++;
	else if (*end == 'M' || *end == 'm')
		shift = 20, end++;
	else if (*end == 'G' || *end == 'g')
		shift = 30, end++;
	if (errno || *end || v > (UINT64_MAX >> 1) >> shift)
		return -1;
	v <<= shift;
	if (v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double d;

	if (!s || !*s)
		return -1;
	errno = 0;
	d = strtod(s, &end);
	if (errno || *end || !(d >= lo && d < hi))
		return -1;
	*out = d;
	return 0;
}

enum { O_DS = 256, O_WL, O_KEYS, O_VSIZE, O_KSIZE, O_ZIPF, O_UNIFORM,
       O_THREADS, O_COROS, O_SECONDS, O_OPTS, O_NIC, O_QPMODE, O_OPT,
       O_CONNECT, O_SECRET, O_BSIZE, O_SEED, O_JSON, O_CSV, O_HELP,
       O_VERSION };

static const struct option long_opts[] = {
	{ "ds", 1, 0, O_DS }, { "workload", 1, 0, O_WL },
	{ "keys", 1, 0, O_KEYS }, { "value-size", 1, 0, O_VSIZE },
	{ "key-size", 1, 0, O_KSIZE }, { "zipf", 1, 0, O_ZIPF },
	{ "uniform", 0, 0, O_UNIFORM }, { "threads", 1, 0, O_THREADS },
	{ "coros", 1, 0, O_COROS }, { "seconds", 1, 0, O_SECONDS },
	{ "techniques", 1, 0, O_OPTS }, { "nic-model", 1, 0, O_NIC },
	{ "qp-mode", 1, 0, O_QPMODE }, { "opt", 1, 0, O_OPT },
	{ "connect", 1, 0, O_CONNECT }, { "secret-file", 1, 0, O_SECRET },
	{ "blade-size", 1, 0, O_BSIZE }, { "seed", 1, 0, O_SEED },
	{ "json", 0, 0, O_JSON }, { "csv", 1, 0, O_CSV },
	{ "help", 0, 0, O_HELP }, { "version", 0, 0, O_VERSION },
	{ 0, 0, 0, 0 },
};

/* Integer options: bounds and where the value goes. */
static int set_int(int id, uint64_t v, struct bench_cfg *c)
{
	switch (id) {
	case O_KEYS: c->keys = v; break;
	case O_VSIZE: c->value_size = (unsigned)v; break;
	case O_KSIZE: c->key_size = (unsigned)v; break;
	case O_THREADS: c->threads = (int)v; break;
	case O_COROS: c->coros = (int)v; break;
	case O_BSIZE: c->blade_size = v; break;
	default: c->seed = v; break;
	}
	return 0;
}

static int set_num(int id, const char *arg, struct bench_cfg *c)
{
	uint64_t v, lo = 0, hi = UINT64_MAX >> 1;

	if (id == O_ZIPF) {
		c->uniform = 0;
		return parse_double(arg, 0, 1, &c->zipf);
	}
	if (id == O_SECONDS)
		return parse_double(arg, 1e-3, 86400, &c->seconds);
	switch (id) {
	case O_KEYS: lo = 1; hi = UINT64_C(1) << 34; break;
	case O_VSIZE: lo = 8; hi = SMART_HT_VALUE_MAX; break;
	case O_KSIZE: lo = 8; hi = SMART_HT_KEY_MAX; break;
	case O_THREADS: lo = 1; hi = 256; break;
	case O_COROS: lo = 1; hi = 1024; break;
	case O_BSIZE: lo = 16u << 20; hi = UINT64_C(1) << 40; break;
	default: break;
	}
	if (parse_u64(arg, lo, hi, &v))
		return -1;
	return set_int(id, v, c);
}

static const struct workload *workload_find(const char *s)
{
	size_t i;

	for (i = 0; i < NWORKLOADS; i++)
		if (!strcmp(s, workloads[i].name))
			return &workloads[i];
	return NULL;
}

/* Options without a number.  Returns -1 to go on, or an exit status. */
static int set_str(int id, const char *arg, struct bench_cfg *c)
{
	switch (id) {
	case O_DS: c->ds = arg; break;
	case O_WL:
		c->wl = workload_find(arg);
		if (!c->wl) {
			fprintf(stderr, "smart-bench: unknown workload '%s' "
				"(a b c d e f update-only read-only)\n", arg);
			return 2;
		}
		break;
	case O_UNIFORM: c->uniform = 1; break;
	case O_OPTS: c->techniques = arg; break;
	case O_NIC: c->nic_model = arg; break;
	case O_QPMODE: c->qp_mode = arg; break;
	case O_SECRET: c->secret_file = arg; break;
	case O_JSON: c->json = 1; break;
	case O_CSV: c->csv = arg; break;
	case O_OPT:
		if (c->nopts == 32)
			return bad_arg("opt", "(more than 32)");
		c->opts[c->nopts++] = arg;
		break;
	case O_CONNECT:
		if (c->nconnect == BENCH_BLADES_MAX)
			return bad_arg("connect", "(more than 16 blades)");
		c->connect[c->nconnect++] = arg;
		break;
	default:
		return -2;
	}
	return -1;
}

static int parse_args(int argc, char **argv, struct bench_cfg *c)
{
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		if (ch == O_HELP) {
			usage(stdout);
			return 0;
		}
		if (ch == O_VERSION) {
			printf("smart-bench %s\n", SMART_VERSION_STRING);
			return 0;
		}
		if (ch == '?') {
			usage(stderr);
			return 2;
		}
		rc = set_str(ch, optarg, c);
		if (rc == -2 && set_num(ch, optarg, c))
			return bad_arg(long_opts[ch - O_DS].name, optarg);
		if (rc >= 0)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "smart-bench: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	return -1;
}

/* What the arguments cannot say alone.  -1 to go on, or exit status. */
static int check_cfg(struct bench_cfg *c)
{
	smart_opts_t *o;
	double room = 1;
	unsigned i;

	if (strcmp(c->ds, "ht")) {
		fprintf(stderr, "smart-bench: ds %s is not built yet (only "
			"ht)\n", c->ds);
		return 2;
	}
	if (!strcmp(c->wl->name, "e")) {
		fprintf(stderr, "smart-bench: workload e is not supported by "
			"ht (no range scans)\n");
		return 2;
	}
	for (i = 4; i < c->key_size && room < 1e19; i++)
		room *= 10;
	if ((double)c->keys * 5 >= room) {
		fprintf(stderr, "smart-bench: --key-size %u leaves %u digits: "
			"too few for %" PRIu64 " keys\n", c->key_size,
			c->key_size - 4, c->keys);
		return 2;
	}
	if (!c->secret_file)
		c->secret_file = getenv("SMART_SECRET_FILE");
	c->keys_asked = c->keys;
	if (opts_build(c, NULL, &o))
		return 2;
	smart_opts_destroy(o);
	return -1;
}

static int bench_main(struct bench *b, struct bench_cfg *c)
{
	struct bench_result r;
	smart_worker_t *w = NULL;
	int rc;

	memset(&r, 0, sizeof(r));
	rc = bench_setup(b, c);
	if (!rc)
		rc = smart_worker_create(b->ctx, &w);
	if (!rc)
		rc = table_create(b, w);
	b->t = rc ? NULL : calloc((size_t)c->threads, sizeof(*b->t));
	b->ack_done = rc ? NULL : calloc(BENCH_ACK_WINDOW, 1);
	if (!rc && (!b->t || !b->ack_done))
		rc = SMART_ENOMEM;
	if (!rc)
		rc = bench_run(b, &r);
	if (!rc && c->json)
		print_json(b, &r);
	else if (!rc)
		print_table(b, &r);
	if (!rc && c->csv)
		rc = print_csv(b, &r);
	if (b->ht)
		smart_ht_close(b->ht);
	if (w)
		smart_worker_destroy(w);
	if (!rc && (r.errors || r.vfail || r.first_err))
		rc = r.vfail ? SMART_EPROTO : r.first_err ? r.first_err :
		     SMART_EPROTO;
	return rc;
}

int main(int argc, char **argv)
{
	struct bench_cfg cfg = { .wl = &workloads[0], .ds = "ht",
				 .keys = 100000, .value_size = 8,
				 .key_size = 16, .zipf = 0.99, .threads = 1,
				 .coros = 8, .seconds = 3, .seed = 1 };
	struct bench b = { .cfg = &cfg, .ack_lock = ATOMIC_FLAG_INIT };
	int rc;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("smart-bench %s\n", SMART_VERSION_STRING);
		return 0;
	}
	if (strcmp(argv[1], "ycsb")) {
		fprintf(stderr, "smart-bench: unknown benchmark '%s' (ycsb; "
			"smallbank and tatp are not built yet)\n", argv[1]);
		return 2;
	}
	rc = parse_args(argc - 1, argv + 1, &cfg);
	if (rc < 0)
		rc = check_cfg(&cfg);
	if (rc >= 0)
		return rc;
	rc = bench_main(&b, &cfg);
	if (rc)
		fprintf(stderr, "smart-bench: %s\n", smart_strerror(rc));
	free(b.t);
	free((void *)b.ack_done);
	if (b.ctx)
		smart_ctx_destroy(b.ctx);
	if (b.blade)
		smart_blade_destroy(b.blade);
	return rc ? 1 : 0;
}
