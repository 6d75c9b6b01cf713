/*
 * test_bt, merges: readers sent from a dead leaf to its taker, scans
 * beside merges and splits, the grace before a node is reused, forged
 * merge inputs, a merge across two blades and merges redone by takers
 * after their merger was killed.
 */
#include "bt_test.h"

/* Raw node fields (bt_layout.h; 512-byte nodes, 12-byte keys: entries
 * from byte 56, internal ones 24 bytes, leaf ones 32). */
static uint64_t raw_u64(const uint8_t *n, size_t off)
{
	uint64_t v;

	memcpy(&v, n + off, 8);
	return v;
}

/* A reader whose cached parent predates a merge is sent to the dead
 * leaf, and from there to the leaf that took its keys in (the dead leaf
 * still holds its old fences: without the forward it would look like the
 * key's leaf, and empty). */
void test_stale_forward(void)
{
	struct smart_bt_config c;
	struct smart_bt_stats st;
	struct world wd;
	smart_bt_t *a;
	char k[16], v[16];
	unsigned i;
	size_t n;

	world_start(&wd, NULL, 512, 12, 12);
	for (i = 0; i < 100; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_insert(wd.t, wd.w, k, strlen(k), k, 9));
	}
	smart_bt_config_init(&c);
	c.spec_entries = 0;
	CHECK_OK(smart_bt_open(wd.w, 1, 3, &c, &a));
	key_of(k, 0);
	CHECK_OK(smart_bt_search(a, wd.w, k, strlen(k), v, sizeof(v), &n));
	/* the writer deletes from the first key on until the first leaf
	 * empties and takes its neighbour in */
	for (i = 0; i < 100; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_delete(wd.t, wd.w, k, strlen(k)));
		CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
		if (st.merges)
			break;
	}
	CHECK_EQ(st.merges, 1);
	/* the reader's cached parent still names the neighbour */
	key_of(k, i + 1);
	CHECK_OK(smart_bt_search(a, wd.w, k, strlen(k), v, sizeof(v), &n));
	CHECK(n == 9 && !memcmp(v, k, 9));
	smart_bt_close(a, wd.w);
	world_stop(&wd);
}

/* A scan standing between two leaves (the hook "bt.scan.next": it has
 * taken the first leaf L, k0..k6, and goes to its sibling R next) while
 * another client empties L, so that L takes R in, then fills L again
 * until it splits at k6, below the scan's cursor k7: the scan reaches R
 * dead, goes to L, which now ends at k6, and must move right from there
 * (to the split's new leaf, which holds k7..k13).  Before the fix:
 * SMART_EPROTO ("not a tree") after 7 entries. */
struct msplit {
	smart_bt_t *t; /* the other client's object */
	smart_worker_t *w;
	int fired;
};

static int msplit_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct msplit *m = arg;
	struct smart_bt_stats st;
	char k[16];
	unsigned i;

	(void)w;
	if (strcmp(point, "bt.scan.next") || m->fired)
		return 0;
	m->fired = 1;
	for (i = 0; i < 7; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_delete(m->t, m->w, k, strlen(k)));
	}
	CHECK_OK(smart_bt_stats(m->t, NULL, &st));
	CHECK_EQ(st.merges, 1); /* L took R in */
	for (i = 0; i < 7; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_insert(m->t, m->w, k, strlen(k), "w", 1));
	}
	/* L is full (14): one more below the cursor splits it at k6 */
	CHECK_OK(smart_bt_insert(m->t, m->w, "k00000003x", 10, "x", 1));
	CHECK_OK(smart_bt_stats(m->t, NULL, &st));
	CHECK_EQ(st.leaf_splits, 1);
	return 0;
}

void test_scan_merge_split(void)
{
	static struct smart_bt_entry ent[200];
	static char buf[200 * 32];
	struct smart_bt_config c;
	struct smart_bt_stats st0, st;
	struct msplit m = { NULL, NULL, 0 };
	struct world wd;
	smart_bt_t *sc;
	smart_ctx_t *c2;
	uint64_t rights;
	char k[16];
	unsigned i;
	size_t n = 0;
	int rc;

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 100); /* leaves of 7 keys: k0..k6, k7..k13, ... */
	c2 = fixture_ctx_at(smart_blade_address(wd.f.blade), 1);
	CHECK_OK(smart_worker_create(c2, &m.w));
	CHECK_OK(smart_bt_open(m.w, 1, 3, NULL, &m.t));
	/* no index cache: the scan reads leaf after leaf along the chain
	 * (none ahead, which would hold R as it was before the merge) */
	smart_bt_config_init(&c);
	c.cache_bytes = 0;
	CHECK_OK(smart_bt_open(wd.w, 1, 3, &c, &sc));
	CHECK_OK(smart_bt_stats(sc, NULL, &st0));
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, msplit_hook, &m));
	rc = smart_bt_scan(sc, wd.w, "k", 1, NULL, 0, ent, 200, buf,
			   sizeof(buf), &n);
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));
	CHECK_OK(smart_bt_stats(sc, NULL, &st));
	rights = st.move_rights - st0.move_rights;
	printf("scan across a merge then a split of the leaf it stood "
	       "after: %s, %zu entries, %llu moves right\n",
	       smart_status_name(rc), n, (unsigned long long)rights);
	CHECK_EQ(m.fired, 1);
	CHECK_OK(rc);
	/* k0..k6 from L as the scan read it, k7..k99 after: each once, in
	 * order (k00000003x came in below the cursor) */
	CHECK_EQ(n, 100);
	for (i = 0; i < n; i++) {
		key_of(k, i);
		CHECK_MSG(ent[i].key_len == strlen(k) &&
				  !memcmp(ent[i].key, k, ent[i].key_len),
			  "scan: %.*s where %s belongs", (int)ent[i].key_len,
			  (const char *)ent[i].key, k);
	}
	CHECK_GE(rights, 1); /* the path: right from the absorber */
	smart_bt_close(sc, wd.w);
	smart_bt_close(m.t, m.w);
	CHECK_OK(smart_worker_destroy(m.w));
	CHECK_OK(smart_ctx_destroy(c2));
	world_stop(&wd);
}

/* A scan standing between leaf L and its sibling R (the hook
 * "bt.scan.next") while another client empties L, so that L takes R in
 * and R is retired, then inserts keys far right, whose splits allocate
 * nodes: R's block must not be one of them while the scan may still read
 * it (its epoch section began before the retire).  Without the grace R
 * is freed at once and reused for a new leaf of the "z" keys: the scan
 * reads that leaf where R was and fails (SMART_EPROTO). */
static int grace_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct msplit *m = arg;
	struct smart_bt_stats st;
	char k[16];
	unsigned i;

	(void)w;
	if (strcmp(point, "bt.scan.next") || m->fired)
		return 0;
	m->fired = 1;
	for (i = 0; i < 7; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_delete(m->t, m->w, k, strlen(k)));
	}
	CHECK_OK(smart_bt_stats(m->t, NULL, &st));
	CHECK_EQ(st.merges, 1);	   /* R retired */
	for (i = 0; i < 40; i++) { /* splits far right: new nodes */
		snprintf(k, sizeof(k), "z%04u", i);
		CHECK_OK(smart_bt_insert(m->t, m->w, k, strlen(k), "z", 1));
	}
	CHECK_OK(smart_bt_stats(m->t, NULL, &st));
	CHECK_GE(st.leaf_splits, 2);
	return 0;
}

void test_retire_grace(void)
{
	static struct smart_bt_entry ent[200];
	static char buf[200 * 32];
	struct smart_bt_config c;
	struct msplit m = { NULL, NULL, 0 };
	struct world wd;
	smart_bt_t *sc;
	smart_ctx_t *c2;
	char k[16];
	unsigned i;
	size_t n = 0;
	int rc;

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 100);
	c2 = fixture_ctx_at(smart_blade_address(wd.f.blade), 1);
	CHECK_OK(smart_worker_create(c2, &m.w));
	CHECK_OK(smart_bt_open(m.w, 1, 3, NULL, &m.t));
	smart_bt_config_init(&c);
	c.cache_bytes = 0; /* leaf after leaf: it reads R's block */
	CHECK_OK(smart_bt_open(wd.w, 1, 3, &c, &sc));
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, grace_hook, &m));
	rc = smart_bt_scan(sc, wd.w, "k", 1, "z", 1, ent, 200, buf, sizeof(buf),
			   &n);
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));
	printf("scan beside a merge and splits that allocate: %s, %zu "
	       "entries\n",
	       smart_status_name(rc), n);
	CHECK_EQ(m.fired, 1);
	CHECK_OK(rc);
	CHECK_EQ(n, 100); /* k0..k6 as read, then R's keys from L, ... */
	for (i = 0; i < n; i++) {
		key_of(k, i);
		CHECK(ent[i].key_len == strlen(k) &&
		      !memcmp(ent[i].key, k, ent[i].key_len));
	}
	smart_bt_close(sc, wd.w);
	smart_bt_close(m.t, m.w);
	CHECK_OK(smart_worker_destroy(m.w));
	CHECK_OK(smart_ctx_destroy(c2));
	world_stop(&wd);
}

/* A merge checks what it reads under the locks (a peer's bytes, whole,
 * CRC valid): R must be L's live right neighbour, and P's entry before
 * R's must name L.  Each forged here: R made dead (forwarding to L), or
 * P's leftmost child (L) replaced by another leaf.  The merge must be
 * skipped (L stays empty), not done over nodes that are not what it
 * thinks. */
static void merge_forged_on(int parent)
{
	struct smart_bt_stats st;
	struct world wd;
	uint64_t meta, root, la, ra, other;
	uint8_t *p, *r;
	char k[16], v[16];
	unsigned i;
	size_t n;

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 100); /* P: leftmost L (k0..k6), R (k7..k13), ... */
	key_of(k, 0);
	CHECK_OK(smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v), &n));
	CHECK_OK(smart_root_get(wd.w, 1, 3, &meta));
	CHECK_OK(smart_read_sync(wd.w, meta + 32, 8, &root));
	CHECK_OK(smart_buf_alloc(wd.w, 512, (void **)&p));
	CHECK_OK(smart_buf_alloc(wd.w, 512, (void **)&r));
	CHECK_OK(smart_read_sync(wd.w, root, 512, p));
	la = raw_u64(p, 24);
	ra = raw_u64(p, 56);
	other = raw_u64(p, 56 + 24);
	if (parent) { /* P's leftmost: another leaf than L */
		memcpy(p + 24, &other, 8);
		*(uint32_t *)p = forged_crc(&wd, p, 512);
		CHECK_OK(smart_write_sync(wd.w, root, p, 512));
	} else { /* R dead, forwarding to L */
		CHECK_OK(smart_read_sync(wd.w, ra, 512, r));
		r[9] |= 4;
		memcpy(r + 24, &la, 8);
		memset(r + 56, 0, 512 - 56);
		*(uint32_t *)r = forged_crc(&wd, r, 512);
		CHECK_OK(smart_write_sync(wd.w, ra, r, 512));
	}
	/* wd.t's cached P still leads to L */
	for (i = 0; i < 7; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_delete(wd.t, wd.w, k, strlen(k)));
	}
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	printf("a merge over a forged %s: %llu merged, %llu skipped\n",
	       parent ? "parent" : "neighbour", (unsigned long long)st.merges,
	       (unsigned long long)st.merge_skips);
	CHECK_EQ(st.merges, 0);
	CHECK_EQ(st.merge_skips, 1); /* the path: refused */
	smart_buf_free(wd.w, r);
	smart_buf_free(wd.w, p);
	world_stop(&wd);
}

void test_merge_forged(void)
{
	merge_forged_on(0);
	merge_forged_on(1);
}

/* A taker child stopped at `point` until the parent says go on (one byte
 * each way), then stopped no more. */
struct pause_at {
	int out, in;
	const char *point, *then; /* where it stops, in turn */
};

static int pause_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct pause_at *a = arg;
	char c;

	(void)w;
	if (a->point && !strcmp(point, a->point)) {
		a->point = a->then;
		a->then = NULL;
		CHECK_EQ(write(a->out, "p", 1), 1);
		CHECK_EQ(read(a->in, &c, 1), 1);
	}
	return 0;
}

/* args: blade address, pipe out, pipe in, the key, the op ("search": it
 * meets L torn and heals it; "upsert": it takes R's lock over), where its
 * redo stops ("first": its first word taken, "taken": all it could take;
 * "first+done": first, then once its redo is done).  At the end it sends
 * the nodes it retired, and once told, frees them and exits. */
void child_taker2(char **args)
{
	smart_ctx_t *c = fixture_ctx_at(args[0], 1);
	int search = !strcmp(args[4], "search");
	struct pause_at a = {
		atoi(args[1]), atoi(args[2]),
		strcmp(args[5], "taken") ? "bt.redo.first" : "bt.redo.taken",
		strcmp(args[5], "first+done") ? NULL : "bt.redo.done"
	};
	smart_worker_t *w;
	smart_bt_t *t;
	char v[16];
	size_t n;
	uint64_t r;
	int rc;

	CHECK_OK(smart_worker_create(c, &w));
	CHECK_OK(smart_bt_open(w, 1, 3, NULL, &t));
	CHECK_OK(smart_ctx_set_hook(c, pause_hook, &a));
	if (search)
		rc = smart_bt_search(t, w, args[3], strlen(args[3]), v,
				     sizeof(v), &n);
	else
		rc = smart_bt_upsert(t, w, args[3], strlen(args[3]), "t", 1);
	CHECK(search ? rc == SMART_ENOENT : rc == 0);
	r = ctx_stat(c, SMART_STAT_EPOCH_RETIRED);
	CHECK_EQ(write(a.out, &r, sizeof(r)), (ssize_t)sizeof(r));
	/* freed once the other taker left its section too */
	CHECK_EQ(read(a.in, v, 1), 1);
	CHECK_OK(smart_epoch_drain(w, 1, 5000));
	smart_bt_close(t, w);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
	exit(0);
}

struct taker_proc {
	pid_t pid;
	int out[2], in[2]; /* child -> parent, parent -> child */
};

static void taker_start(struct world *wd, struct taker_proc *tp,
			const char *key, const char *mode, const char *stop)
{
	char o[12], i[12], c;

	CHECK_EQ(pipe(tp->out), 0);
	CHECK_EQ(pipe(tp->in), 0);
	snprintf(o, sizeof(o), "%d", tp->out[1]);
	snprintf(i, sizeof(i), "%d", tp->in[0]);
	tp->pid = test_spawn("taker2",
			     (const char *[]){ smart_blade_address(wd->f.blade),
					       o, i, key, mode, stop, NULL });
	CHECK_GE(tp->pid, 0);
	close(tp->out[1]);
	close(tp->in[0]);
	CHECK_EQ(read(tp->out[0], &c, 1), 1); /* stopped in its redo */
}

/* Let it go on until it stops again. */
static void taker_step(struct taker_proc *tp)
{
	char c;

	CHECK_EQ(write(tp->in[1], "g", 1), 1);
	CHECK_EQ(read(tp->out[0], &c, 1), 1);
}

/* Let it go on; its retired count once its op ended. */
static uint64_t taker_finish(struct taker_proc *tp)
{
	uint64_t r = ~0ull;

	CHECK_EQ(write(tp->in[1], "g", 1), 1);
	CHECK_EQ(read(tp->out[0], &r, sizeof(r)), (ssize_t)sizeof(r));
	return r;
}

/* Let it free what it retired and exit. */
static void taker_end(struct taker_proc *tp)
{
	int status;

	CHECK_EQ(write(tp->in[1], "g", 1), 1);
	CHECK_EQ(waitpid(tp->pid, &status, 0), tp->pid);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status));
	close(tp->out[0]);
	close(tp->in[1]);
}

/* A merge redone by two takers at once: the merger killed inside its
 * write (bt.merge.torn, L half written); a reader heals L (it reads L
 * torn) and a writer into R takes R's lock over.  reader_first: the
 * reader stops with L's word taken, the writer takes R's and P's and
 * stops; the reader goes on (its part: L alone) and ends, then the
 * writer.  Else the writer takes R's word and stops, the reader takes
 * L's and P's and stops; the writer writes R and stops once its redo is
 * done (its write then waits for L, the reader's), the reader goes on,
 * then the writer.  Before, neither saw all of the merge land (each
 * found a word of the other's) and neither retired R: its 512 bytes
 * stayed allocated after the drop.  Now the one that finishes last finds
 * R dead and named by nobody and retires it, the only retire; the first
 * finds R not written (reader_first) or P still naming it. */
static void merge_two_takers_on(int reader_first)
{
	struct smart_alloc_usage u0;
	struct taker_proc rd, wr;
	struct world wd;
	uint64_t r1, r2;
	char kl[16], kr[16];
	int done;

	fresh_tree(&wd, &u0);
	fill(&wd, 0, 200);
	done = torn_run(&wd, "merge", -1);
	CHECK_GT(done, 0);
	key_of(kl, 0);			/* in L, deleted */
	key_of(kr, (unsigned)done + 1); /* in R */
	if (reader_first) {
		taker_start(&wd, &rd, kl, "search", "first");
		taker_start(&wd, &wr, kr, "upsert", "taken");
		r1 = taker_finish(&rd);
		r2 = taker_finish(&wr);
	} else {
		taker_start(&wd, &wr, kr, "upsert", "first+done");
		taker_start(&wd, &rd, kl, "search", "taken");
		taker_step(&wr);
		r2 = taker_finish(&rd);
		r1 = taker_finish(&wr);
	}
	taker_end(&rd);
	taker_end(&wr);
	printf("a merge redone by two takers, the %s's part first: the "
	       "first to finish retired %llu node(s), the last %llu\n",
	       reader_first ? "reader" : "writer", (unsigned long long)r1,
	       (unsigned long long)r2);
	CHECK_EQ(r1, 0); /* the path: R not written, or P naming it */
	CHECK_EQ(r2, 1);
	torn_expect(&wd, (unsigned)done + 1, 200);
	drop_back_to(&wd, &u0);
}

void test_merge_two_takers(void)
{
	merge_two_takers_on(1);
	merge_two_takers_on(0);
}

/* A merger killed after its unlock, before its retire (the hook
 * bt.merge.unlocked): nothing of the tree names R, and its merger's
 * record is all that knows of it.  adopt: the third object opened after
 * it adopts the dead merger's area (the two spare ones go first) and
 * retires R from the record; else the drop does (freed at once).
 * Before, R stayed allocated after the drop. */
static void merge_unlocked_on(int adopt)
{
	struct smart_alloc_usage u0;
	smart_bt_t *x[3];
	struct world wd;
	uint64_t r0, r;
	int done, i;

	fresh_tree(&wd, &u0);
	fill(&wd, 0, 200);
	done = torn_run(&wd, "merge_unlocked", -1);
	CHECK_GT(done, 0);
	r0 = ctx_stat(wd.f.ctx, SMART_STAT_EPOCH_RETIRED);
	for (i = 0; adopt && i < 3; i++)
		CHECK_OK(smart_bt_open(wd.w, 1, 3, NULL, &x[i]));
	r = ctx_stat(wd.f.ctx, SMART_STAT_EPOCH_RETIRED) - r0;
	printf("a merger killed between its unlock and its retire, %s: "
	       "%llu node(s) retired by the opener\n",
	       adopt ? "its area adopted" : "then the drop",
	       (unsigned long long)r);
	CHECK_EQ(r, (uint64_t)adopt);
	for (i = 0; adopt && i < 3; i++)
		smart_bt_close(x[i], wd.w);
	torn_expect(&wd, (unsigned)done + 1, 200);
	drop_back_to(&wd, &u0);
}

void test_merge_unlocked(void)
{
	merge_unlocked_on(1);
	merge_unlocked_on(0);
}

/* ---- a merge across two blades, its merger killed between them ---- */

#define MB_KEYS_MAX 2000u

static uint64_t raw_child(const uint8_t *p, unsigned j)
{
	return j ? raw_u64(p, 56 + 24 * (size_t)(j - 1)) : raw_u64(p, 24);
}

/* A parent P on blade `pb` with adjacent children L (not on pb) and R
 * (on pb), R not P's leftmost: L's keys (the first of them, in key
 * order, as numbers) into *first, how many into *cnt; 0 if none. */
static int find_merge(struct world *wd, uint16_t pb, unsigned *first,
		      unsigned *cnt)
{
	uint64_t meta, root, pa, la, ra;
	uint8_t *top, *p, *l;
	unsigned i, j, k, lo;
	uint16_t count;

	CHECK_OK(smart_root_get(wd->w, 1, 3, &meta));
	CHECK_OK(smart_read_sync(wd->w, meta + 32, 8, &root));
	CHECK_OK(smart_buf_alloc(wd->w, 512, (void **)&top));
	CHECK_OK(smart_buf_alloc(wd->w, 512, (void **)&p));
	CHECK_OK(smart_buf_alloc(wd->w, 512, (void **)&l));
	CHECK_OK(smart_read_sync(wd->w, root, 512, top));
	if (top[8] != 2) /* root, parents, leaves */
		count = 0, top[10] = top[11] = 0;
	memcpy(&count, top + 10, 2);
	for (i = 0; i <= count; i++) {
		pa = raw_child(top, i);
		if (smart_gaddr_blade(pa) != pb)
			continue;
		CHECK_OK(smart_read_sync(wd->w, pa, 512, p));
		memcpy(&count, p + 10, 2);
		for (j = 1; j <= count; j++) {
			la = raw_child(p, j - 1);
			ra = raw_child(p, j);
			if (smart_gaddr_blade(la) == pb ||
			    smart_gaddr_blade(ra) != pb)
				continue;
			CHECK_OK(smart_read_sync(wd->w, la, 512, l));
			*cnt = 0;
			lo = ~0u;
			for (k = 0; k < 14; k++) {
				const uint8_t *e = l + 56 + 32 * k;
				unsigned num;

				if (!e[0])
					continue;
				CHECK_EQ(sscanf((const char *)e + 8, "k%8u",
						&num),
					 1);
				lo = num < lo ? num : lo;
				++*cnt;
			}
			*first = lo;
			smart_buf_free(wd->w, l);
			smart_buf_free(wd->w, p);
			smart_buf_free(wd->w, top);
			return 1;
		}
		memcpy(&count, top + 10, 2);
	}
	smart_buf_free(wd->w, l);
	smart_buf_free(wd->w, p);
	smart_buf_free(wd->w, top);
	return 0;
}

/* The killed merger (args: both blades' addresses, the pipe, L's first
 * key and count, the point): deletes L's keys; the last one empties L,
 * whose merge with R spans both blades; it stops at the point and is
 * killed there: "bt.log.landed", where blade 1's part of the log landed
 * and blade 2's is not posted; "bt.merge.torn", once the log is
 * committed and half of L's new bytes landed. */
struct stop_at {
	int fd;
	const char *point, *or_point;
};

static int landed_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct stop_at *a = arg;

	(void)w;
	if (!strcmp(point, a->point) ||
	    (a->or_point && !strcmp(point, a->or_point))) {
		CHECK_EQ(write(a->fd, "x", 1), 1);
		for (;;)
			pause();
	}
	return 0;
}

void child_merger(char **args)
{
	smart_ctx_t *c = fixture_ctx_at(args[0], 1);
	unsigned first = (unsigned)atoi(args[3]), cnt = (unsigned)atoi(args[4]);
	smart_worker_t *w;
	smart_bt_t *t;
	uint16_t id;
	struct stop_at a = { atoi(args[2]), args[5], NULL };
	char k[16];
	unsigned i;

	CHECK_OK(smart_ctx_connect(c, args[1], &id));
	CHECK_EQ(id, 2);
	CHECK_OK(smart_worker_create(c, &w));
	CHECK_OK(smart_bt_open(w, 1, 3, NULL, &t));
	CHECK_OK(smart_ctx_set_hook(c, landed_hook, &a));
	for (i = 0; i < cnt; i++) {
		key_of(k, first + i);
		CHECK_OK(smart_bt_delete(t, w, k, strlen(k)));
	}
	TEST_FAIL("the merge did not stop at its seam");
}

/* The killed taker (args: both blades' addresses, the pipe, L's first
 * key): it writes that key, which makes it take the dead merger's lock of
 * L over and redo the merge; it stops inside that redo, its words taken
 * and no node written ("bt.redo.taken"; before that point existed,
 * "bt.log.stamped", its redo's first stamps landed). */
void child_taker(char **args)
{
	smart_ctx_t *c = fixture_ctx_at(args[0], 1);
	struct stop_at a = { atoi(args[2]), "bt.redo.taken", "bt.log.stamped" };
	smart_worker_t *w;
	smart_bt_t *t;
	uint16_t id;
	char k[16];

	CHECK_OK(smart_ctx_connect(c, args[1], &id));
	CHECK_EQ(id, 2);
	CHECK_OK(smart_worker_create(c, &w));
	CHECK_OK(smart_bt_open(w, 1, 3, NULL, &t));
	CHECK_OK(smart_ctx_set_hook(c, landed_hook, &a));
	key_of(k, (unsigned)atoi(args[3]));
	CHECK_OK(smart_bt_upsert(t, w, k, strlen(k), "t", 1));
	TEST_FAIL("the taker did not stop in its redo");
}

static void kill_child(const char *name, const char **args, int *p)
{
	char c;
	int status;
	pid_t pid = test_spawn(name, args);

	CHECK_GE(pid, 0);
	close(p[1]);
	CHECK_EQ(read(p[0], &c, 1), 1);
	close(p[0]);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
}

/* Case: the parent P (with R) on blade pb, L on the other; the merger
 * killed at `point`: with "bt.log.landed" blade 1's part of the merge's
 * log lands, blade 2's does not (pb 2: L's blade landed alone; pb 1: R's
 * and P's), and nothing is redone; with "bt.merge.torn" the merge is
 * committed and redone whole.  Then every key is written anew (gen 1)
 * and must read back, by search and by scan. */
static void merge_blades_on(uint16_t pb, const char *point, int taker)
{
	static struct smart_bt_entry ent[MB_KEYS_MAX];
	static char sbuf[MB_KEYS_MAX * 32];
	struct smart_bt_stats st;
	struct world wd;
	smart_blade_t *b2;
	char a1[128], a2[128], fd[12], f[12], c[12], k[16], v[16], got[32];
	unsigned first, cnt, i, nk, errs = 0, wrong = 0;
	int p[2], status, rc, bad = 0;
	size_t n;
	pid_t pid;

	world2_start(&wd, &b2);
	/* nodes go to either blade at random: grow until such a pair is */
	for (nk = 0; nk < MB_KEYS_MAX; nk += 200) {
		fill(&wd, nk, nk + 200);
		if (find_merge(&wd, pb, &first, &cnt))
			break;
	}
	CHECK_MSG(nk < MB_KEYS_MAX,
		  "no parent on blade %u with a pair L, R "
		  "to merge",
		  pb);
	nk += 200;
	snprintf(a1, sizeof(a1), "%s", smart_blade_address(wd.f.blade));
	snprintf(a2, sizeof(a2), "%s", smart_blade_address(b2));
	CHECK_EQ(pipe(p), 0);
	snprintf(fd, sizeof(fd), "%d", p[1]);
	snprintf(f, sizeof(f), "%u", first);
	snprintf(c, sizeof(c), "%u", cnt);
	pid = test_spawn("merger",
			 (const char *[]){ a1, a2, fd, f, c, point, NULL });
	CHECK_GE(pid, 0);
	close(p[1]);
	CHECK_EQ(read(p[0], fd, 1), 1);
	close(p[0]);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (taker) { /* ... and the merge's taker inside its redo */
		CHECK_EQ(pipe(p), 0);
		snprintf(fd, sizeof(fd), "%d", p[1]);
		kill_child("taker", (const char *[]){ a1, a2, fd, f, NULL }, p);
	}
	for (i = 0; i < nk; i++) {
		key_of(k, i);
		val_of(v, i, 1);
		rc = smart_bt_upsert(wd.t, wd.w, k, strlen(k), v, strlen(v));
		if (rc && !errs++)
			bad = rc;
	}
	for (i = 0; i < nk; i++) {
		key_of(k, i);
		val_of(v, i, 1);
		rc = smart_bt_search(wd.t, wd.w, k, strlen(k), got, sizeof(got),
				     &n);
		if (rc && !errs++)
			bad = rc;
		else if (!rc && (n != strlen(v) || memcmp(got, v, n)))
			wrong++;
	}
	key_of(k, 0);
	rc = smart_bt_scan(wd.t, wd.w, k, strlen(k), NULL, 0, ent, nk, sbuf,
			   sizeof(sbuf), &n);
	if (rc && !errs++)
		bad = rc;
	for (i = 0; !rc && i < n; i++) {
		key_of(k, i);
		val_of(v, i, 1);
		if (ent[i].key_len != strlen(k) ||
		    memcmp(ent[i].key, k, ent[i].key_len) ||
		    ent[i].val_len != strlen(v) ||
		    memcmp(ent[i].val, v, ent[i].val_len))
			wrong++;
	}
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	printf("merge across blades, merger killed at %s%s, %s "
	       "(L's keys k%u..+%u): %u errors (first %s), %u wrong values, "
	       "scan %zu of %u; %llu takeovers, %llu redone, %llu "
	       "uncommitted\n",
	       point,
	       taker ? " and its taker in the "
		       "redo" :
		       "",
	       pb == 2 ? "L's blade first" : "R's and P's blade first", first,
	       cnt, errs, smart_status_name(bad), wrong, rc ? (size_t)0 : n, nk,
	       (unsigned long long)st.lock_takeovers,
	       (unsigned long long)st.repairs,
	       (unsigned long long)st.uncommitted);
	CHECK_EQ(errs, 0);
	CHECK_EQ(wrong, 0);
	CHECK_EQ(n, nk);
	CHECK_GE(st.lock_takeovers, 1);
	if (!strcmp(point, "bt.log.landed")) {
		CHECK_GE(st.uncommitted, 1); /* the path: none redone */
		CHECK_EQ(st.repairs, 0);
	} else {
		CHECK_EQ(st.uncommitted, 0); /* all of it redone */
		CHECK_EQ(st.repairs, 1);
	}
	world_stop(&wd);
	smart_blade_destroy(b2);
}

void test_merge_blades(void)
{
	merge_blades_on(2, "bt.log.landed", 0); /* L's part landed alone */
	merge_blades_on(1, "bt.log.landed", 0); /* R's and P's alone */
	merge_blades_on(2, "bt.merge.torn", 0); /* committed, L half */
	merge_blades_on(1, "bt.merge.torn", 0);
	/* committed, L half written, and its taker killed in the redo:
	 * the next taker redoes the taker's copy, committed and whole */
	merge_blades_on(2, "bt.merge.torn", 1);
	merge_blades_on(1, "bt.merge.torn", 1);
}

/* A merge finished by a redo taker retires the leaf it killed (defect
 * 11): the merger is killed inside its write (bt.merge.torn, L half
 * written), a reader mends it, and after the drop every byte is back —
 * before, R stayed allocated for good (the merger's retire never ran). */
void test_redo_retire(void)
{
	struct smart_alloc_usage u0;
	struct smart_bt_stats st;
	struct world wd;
	uint64_t r0;
	int done;

	fresh_tree(&wd, &u0);
	fill(&wd, 0, 200);
	done = torn_run(&wd, "merge", -1);
	CHECK_GT(done, 0);
	r0 = ctx_stat(wd.f.ctx, SMART_STAT_EPOCH_RETIRED);
	alarm(20);
	torn_expect(&wd, (unsigned)done + 1, 200);
	alarm(0);
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_EQ(st.repairs, 1);
	printf("merge redone by a taker: %llu node(s) retired by it\n",
	       (unsigned long long)(ctx_stat(wd.f.ctx,
					     SMART_STAT_EPOCH_RETIRED) -
				    r0));
	CHECK_EQ(ctx_stat(wd.f.ctx, SMART_STAT_EPOCH_RETIRED) - r0, 1);
	drop_back_to(&wd, &u0);
}
