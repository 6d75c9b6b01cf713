/*
 * test_bt, bytes a peer or a bug forged: corrupt and torn nodes, a parent
 * rewritten as a leaf, a node of another tree, speculative lookups that
 * must check, forged lock words and redo records, a torn redo area adopted.
 */
#include "bt_test.h"

/* A 512-byte-node tree holding "a" -> "1" in its root leaf: that leaf's
 * address in *root and its bytes (a registered copy, for the caller to
 * free). */
static uint8_t *one_leaf(struct world *wd, uint64_t *root)
{
	uint64_t meta;
	uint8_t *node;

	world_start(wd, NULL, 512, 12, 12);
	CHECK_OK(smart_bt_insert(wd->t, wd->w, "a", 1, "1", 1));
	/* root entry -> descriptor -> root node (docs/bt.md §2) */
	CHECK_OK(smart_root_get(wd->w, 1, 3, &meta));
	CHECK_OK(smart_read_sync(wd->w, meta + 32, 8, root));
	CHECK_OK(smart_buf_alloc(wd->w, 512, (void **)&node));
	CHECK_OK(smart_read_sync(wd->w, *root, 512, node));
	return node;
}

/* A node a buggy client wrote, whole and with a valid CRC, with entry
 * lengths past the node: refused with SMART_EPROTO, no copy runs off. */
void test_corrupt_node(void)
{
	struct world wd;
	uint64_t root;
	uint8_t *node;
	char v[16];
	size_t n;

	node = one_leaf(&wd, &root);
	/* the first leaf entry (after the 32-byte header and 2 x 12 bytes of
	 * fences, rounded to 8): klen 60000 */
	node[32 + 24] = 0x60;
	node[32 + 24 + 1] = 0xea;
	*(uint32_t *)node = forged_crc(&wd, node, 512);
	CHECK_OK(smart_write_sync(wd.w, root, node, 512));
	CHECK_EQ(smart_bt_search(wd.t, wd.w, "a", 1, v, sizeof(v), &n),
		 SMART_EPROTO);
	CHECK_EQ(smart_bt_upsert(wd.t, wd.w, "b", 1, "2", 1), SMART_EPROTO);
	smart_buf_free(wd.w, node);
	world_stop(&wd);
}

/* A parent a buggy client rewrote as a leaf (whole, CRC valid): a split
 * under it must not put an internal entry into that leaf.  The writer
 * gives up (SMART_EPROTO: no parent of the level it needs), and the node
 * is left as it was. */
void test_parent_is_leaf(void)
{
	struct world wd;
	uint64_t meta, root;
	uint8_t *node, *again;
	char k[16];
	unsigned i;
	int rc = 0;

	world_start(&wd, NULL, 512, 12, 12);
	for (i = 0; i < 40; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_insert(wd.t, wd.w, k, strlen(k), k, 9));
	}
	CHECK_OK(smart_root_get(wd.w, 1, 3, &meta));
	CHECK_OK(smart_read_sync(wd.w, meta + 32, 8, &root));
	CHECK_OK(smart_buf_alloc(wd.w, 512, (void **)&node));
	CHECK_OK(smart_buf_alloc(wd.w, 512, (void **)&again));
	CHECK_OK(smart_read_sync(wd.w, root, 512, node));
	CHECK_GE(node[8], 1); /* level: the root is internal */
	memset(node, 0, 512);
	node[9] = 3; /* LOW_INF | HIGH_INF, level 0 */
	*(uint32_t *)node = forged_crc(&wd, node, 512);
	CHECK_OK(smart_write_sync(wd.w, root, node, 512));
	/* wd.t's cached root still leads to the leaves: they fill and
	 * split, and the separator goes up into the "parent" */
	for (i = 40; i < 200 && !rc; i++) {
		key_of(k, i);
		rc = smart_bt_insert(wd.t, wd.w, k, strlen(k), k, 9);
	}
	CHECK_MSG(rc == SMART_EPROTO || rc == SMART_ERETRY, "insert: %s",
		  smart_status_name(rc));
	CHECK_OK(smart_read_sync(wd.w, root, 512, again));
	CHECK(!memcmp(again, node, 512));
	smart_buf_free(wd.w, again);
	smart_buf_free(wd.w, node);
	world_stop(&wd);
}

/* A stale index cache leads into another tree's node (docs/bt.md §3): X,
 * an object of tree A, cached A's root P naming leaves R1 and R2; A's
 * first leaf empties twice and takes them in, both are retired and freed
 * (and the keys put back), and tree B (same node size, same blade) gets
 * one block for its descriptor and the other for its root leaf.  X's
 * descent goes P (cached) -> that block: B's leaf, whole, its fences
 * unbounded.  A node must prove its tree: before, X's search of a key of
 * A returned SMART_ENOENT and X's upsert wrote into B (under A's lock
 * word); now the block reads as no node of A, the cached parent is
 * dropped and X walks from the root. */
void test_foreign_node(void)
{
	struct smart_bt_config c;
	struct smart_bt_stats st;
	struct world wd;
	smart_bt_t *x, *b;
	uint64_t meta, root, r1, r2, broot;
	unsigned char present[100];
	uint8_t *node;
	char k[16], v[16];
	unsigned i;
	size_t n = 0;
	int rs, ru, rb;

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 100); /* leaves of 7 keys under one root */
	CHECK_OK(smart_root_get(wd.w, 1, 3, &meta));
	CHECK_OK(smart_read_sync(wd.w, meta + 32, 8, &root));
	CHECK_OK(smart_buf_alloc(wd.w, 512, (void **)&node));
	CHECK_OK(smart_read_sync(wd.w, root, 512, node));
	CHECK_EQ(node[8], 1);		/* level 1 */
	memcpy(&r1, node + 56, 8);	/* entry 0's child: k7..k13 */
	memcpy(&r2, node + 56 + 24, 8); /* entry 1's: k14..k20 */
	smart_bt_config_init(&c);
	c.spec_entries = 0;
	CHECK_OK(smart_bt_open(wd.w, 1, 3, &c, &x));
	key_of(k, 8);
	CHECK_OK(smart_bt_search(x, wd.w, k, strlen(k), v, sizeof(v), &n));
	for (i = 0; i < 14; i++) { /* the first leaf takes both in */
		key_of(k, i);
		CHECK_OK(smart_bt_delete(wd.t, wd.w, k, strlen(k)));
	}
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_EQ(st.merges, 2);
	fill(&wd, 0, 14);
	CHECK_OK(smart_epoch_drain(wd.w, 1, 5000)); /* both freed */
	smart_bt_config_init(&c);
	c.node_size = 512;
	c.key_max = 12;
	c.val_max = 12;
	c.locks = 4096;
	CHECK_OK(smart_bt_create(wd.w, 1, 4, &c, &b));
	CHECK_OK(smart_bt_insert(b, wd.w, "zzz", 3, "B", 1));
	CHECK_OK(smart_root_get(wd.w, 1, 4, &meta));
	CHECK_OK(smart_read_sync(wd.w, meta + 32, 8, &broot));
	CHECK_MSG(broot == r1 || broot == r2,
		  "B's root %#llx is neither "
		  "freed leaf",
		  (unsigned long long)broot);
	/* X, through its cached P, a key of A that P routes to broot */
	key_of(k, broot == r1 ? 8 : 15);
	rs = smart_bt_search(x, wd.w, k, strlen(k), v, sizeof(v), &n);
	ru = smart_bt_upsert(x, wd.w, k, strlen(k), "X", 1);
	rb = smart_bt_search(b, wd.w, k, strlen(k), v, sizeof(v), &n);
	CHECK_OK(smart_bt_stats(x, NULL, &st));
	printf("stale cache into another tree's node: search %s, upsert %s, "
	       "the key in the other tree afterwards: %s; %llu cache drops\n",
	       smart_status_name(rs), smart_status_name(ru),
	       smart_status_name(rb), (unsigned long long)st.cache_drops);
	CHECK_OK(rs);
	CHECK_OK(ru);
	CHECK_EQ(rb, SMART_ENOENT); /* B untouched */
	CHECK_OK(smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v), &n));
	CHECK(n == 1 && v[0] == 'X'); /* the upsert went into A */
	memset(present, 1, sizeof(present));
	scan_check(&wd, present, 100, 0, 100, 16); /* A whole */
	CHECK_OK(smart_bt_search(b, wd.w, "zzz", 3, v, sizeof(v), &n));
	CHECK(n == 1 && v[0] == 'B');
	CHECK_GE(st.cache_drops, 1); /* the path: P dropped */
	smart_bt_close(x, wd.w);
	CHECK_OK(smart_bt_drop(b, wd.w));
	smart_buf_free(wd.w, node);
	world_stop(&wd);
}

/* A node torn for good (a byte changed, its CRC not): never accepted;
 * the reader gives up with SMART_ERETRY after its tries. */
void test_torn_node(void)
{
	struct smart_bt_stats st;
	struct world wd;
	uint64_t root;
	uint8_t *node;
	char v[16];
	size_t n;

	node = one_leaf(&wd, &root);
	/* the first entry's value byte: "1" -> "2", the CRC left as it was */
	node[32 + 24 + 8 + 12] = '2';
	CHECK_OK(smart_write_sync(wd.w, root, node, 512));
	CHECK_EQ(smart_bt_search(wd.t, wd.w, "a", 1, v, sizeof(v), &n),
		 SMART_ERETRY);
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_GE(st.crc_retries, 100000);
	smart_buf_free(wd.w, node);
	world_stop(&wd);
}

/* A speculative lookup trusts a lone entry only when it checks: a slot
 * now holding another key is not taken for ours (the key check), and an
 * entry whose own crc fails, in a node whose crc was made to pass (a
 * buggy writer), is refused on both paths (SMART_EPROTO). */
void test_spec_verify(void)
{
	uint64_t hits, misses;
	struct world wd;
	smart_bt_t *r;
	uint64_t root;
	uint8_t *node;
	char v[16];
	size_t n;

	node = one_leaf(&wd, &root);
	CHECK_OK(smart_bt_open(wd.w, 1, 3, NULL, &r));
	hits = ctx_stat(wd.f.ctx, SMART_STAT_SPEC_HITS);
	misses = ctx_stat(wd.f.ctx, SMART_STAT_SPEC_MISSES);
	CHECK_OK(smart_bt_search(r, wd.w, "a", 1, v, sizeof(v), &n));
	CHECK_OK(smart_bt_search(r, wd.w, "a", 1, v, sizeof(v), &n));
	/* r remembers "a"'s slot */
	CHECK_EQ(ctx_stat(wd.f.ctx, SMART_STAT_SPEC_HITS) - hits, 1);
	/* another object moves "b" into that slot */
	CHECK_OK(smart_bt_delete(wd.t, wd.w, "a", 1));
	CHECK_OK(smart_bt_insert(wd.t, wd.w, "b", 1, "2", 1));
	CHECK_EQ(smart_bt_search(r, wd.w, "a", 1, v, sizeof(v), &n),
		 SMART_ENOENT);
	CHECK_OK(smart_bt_search(r, wd.w, "b", 1, v, sizeof(v), &n));
	CHECK(n == 1 && v[0] == '2');
	/* b's value byte changed and the node's crc made to match: the
	 * entry's own crc does not */
	CHECK_OK(smart_read_sync(wd.w, root, 512, node));
	CHECK_EQ(node[32 + 24 + 8], 'b');
	node[32 + 24 + 8 + 12] = '3';
	*(uint32_t *)node = forged_crc(&wd, node, 512);
	CHECK_OK(smart_write_sync(wd.w, root, node, 512));
	CHECK_EQ(smart_bt_search(r, wd.w, "b", 1, v, sizeof(v), &n),
		 SMART_EPROTO);
	CHECK_GE(ctx_stat(wd.f.ctx, SMART_STAT_SPEC_MISSES) - misses, 3);
	smart_bt_close(r, wd.w);
	smart_buf_free(wd.w, node);
	world_stop(&wd);
}

/* A redo record a peer forged (whole, CRC valid): its second patch's
 * stamp set to 0, which no writer makes.  A taker must not redo it (a
 * stamp of 0 would let it take a free lock word and write stale bytes):
 * the record is refused, and the node the dead writer tore stays torn. */
/* Every lock word of the tree set to one that names no client (id 0: a
 * peer's forgery or a stray write).  A writer refuses it (SMART_EPROTO)
 * rather than wait for ever for a holder that is nobody (before: the
 * lease question's error was taken for "alive", and the update spun);
 * the words cleared, the tree works on. */
void test_nobody_lock(void)
{
	struct world wd;
	uint64_t meta, lock_off, nobody = (uint64_t)1 << 16, i;
	uint32_t locks;
	uint64_t *buf;
	char k[16];

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 10);
	CHECK_OK(smart_root_get(wd.w, 1, 3, &meta));
	CHECK_OK(smart_read_sync(wd.w, meta + 24, 4, &locks));
	CHECK_OK(smart_read_sync(wd.w, meta + 72, 8, &lock_off));
	CHECK_OK(smart_buf_alloc(wd.w, (size_t)locks * 8, (void **)&buf));
	for (i = 0; i < locks; i++)
		buf[i] = nobody;
	CHECK_OK(smart_write_sync(wd.w, smart_gaddr(1, lock_off), buf,
				  (size_t)locks * 8));
	key_of(k, 5);
	alarm(10);
	CHECK_EQ(smart_bt_update(wd.t, wd.w, k, strlen(k), "x", 1),
		 SMART_EPROTO);
	alarm(0);
	memset(buf, 0, (size_t)locks * 8);
	CHECK_OK(smart_write_sync(wd.w, smart_gaddr(1, lock_off), buf,
				  (size_t)locks * 8));
	CHECK_OK(smart_bt_update(wd.t, wd.w, k, strlen(k), "x", 1));
	smart_buf_free(wd.w, buf);
	world_stop(&wd);
}

void test_forged_record(void)
{
	struct smart_bt_stats st;
	struct world wd;
	uint64_t meta, lock_off, dir_off, e, stamp = 0, area;
	uint8_t *buf;
	uint32_t locks, len, plen;
	unsigned i, rec_size;
	char v[16];
	size_t n, off;

	world_start(&wd, NULL, 512, 12, 12);
	for (i = 0; i < 10; i++) {
		char k[16];

		key_of(k, i);
		CHECK_OK(smart_bt_insert(wd.t, wd.w, k, strlen(k), "v", 1));
	}
	torn_run(&wd, "update", 1);
	/* the dead writer's stamp: the one word of the lock table held */
	CHECK_OK(smart_root_get(wd.w, 1, 3, &meta));
	CHECK_OK(smart_read_sync(wd.w, meta + 24, 4, &locks));
	CHECK_OK(smart_read_sync(wd.w, meta + 72, 8, &lock_off));
	CHECK_OK(smart_read_sync(wd.w, meta + 200, 8, &dir_off));
	CHECK_OK(smart_buf_alloc(wd.w, (size_t)locks * 8, (void **)&buf));
	CHECK_OK(smart_read_sync(wd.w, smart_gaddr(1, lock_off),
				 (size_t)locks * 8, buf));
	for (i = 0; i < locks; i++) {
		memcpy(&e, buf + 8 * i, 8);
		if (e) {
			CHECK_EQ(stamp, 0);
			stamp = e;
		}
	}
	CHECK(stamp && ((stamp >> 26) & 63) < 16);
	/* its directory slot names the area; its record index the record
	 * (32 + 3 x (32 + 512) bytes, 64-aligned: bt_redo.c) */
	CHECK_OK(smart_read_sync(
		wd.w, smart_gaddr(1, dir_off + 8 * ((stamp >> 16) & 1023)), 8,
		&e));
	area = e & SMART_GADDR_OFF_MASK;
	rec_size = (32 + 3 * (32 + 512) + 63) & ~63u;
	area += ((stamp >> 26) & 63) * rec_size;
	CHECK_OK(smart_read_sync(wd.w, smart_gaddr(1, area), rec_size, buf));
	memcpy(&len, buf + 4, 4);
	CHECK_EQ(*(uint32_t *)(buf + 8), 2); /* the entry, the first word */
	memcpy(&plen, buf + 32 + 28, 4);
	off = 32 + 32 + ((plen + 7) & ~7u); /* the second patch */
	CHECK_EQ(*(uint64_t *)(buf + off + 16), stamp);
	memset(buf + off + 16, 0, 8);
	*(uint32_t *)buf = smart_crc32c(0, buf + 4, len - 4);
	CHECK_OK(smart_write_sync(wd.w, smart_gaddr(1, area), buf, len));
	alarm(60);
	CHECK_EQ(smart_bt_search(wd.t, wd.w, "k00000005", 9, v, sizeof(v), &n),
		 SMART_ERETRY);
	alarm(0);
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_EQ(st.repairs, 0);
	CHECK_EQ(st.lock_takeovers, 1); /* taken over, nothing redone */
	smart_buf_free(wd.w, buf);
	world_stop(&wd);
}

static uint64_t held_stamp(struct world *wd);

/* A dead writer's record whose len a peer grew past its patches (64
 * bytes more, crc right): the taker redoes the write through a copy of
 * its own, whose length must be its patches' (a copy as long as the
 * peer's len would carry 64 bytes of the taker's scratch to the blade). */
void test_forged_len(void)
{
	struct world wd;
	uint64_t e, stamp, area, dir_off, meta;
	unsigned rec_size = (32 + 3 * (32 + 512) + 63) & ~63u;
	uint32_t len, mine;
	uint8_t *buf;

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 10);
	torn_run(&wd, "update", 1);
	stamp = held_stamp(&wd);
	CHECK_OK(smart_root_get(wd.w, 1, 3, &meta));
	CHECK_OK(smart_read_sync(wd.w, meta + 200, 8, &dir_off));
	CHECK_OK(smart_read_sync(
		wd.w, smart_gaddr(1, dir_off + 8 * ((stamp >> 16) & 1023)), 8,
		&e));
	area = (e & SMART_GADDR_OFF_MASK) + ((stamp >> 26) & 63) * rec_size;
	CHECK_OK(smart_buf_alloc(wd.w, rec_size, (void **)&buf));
	CHECK_OK(smart_read_sync(wd.w, smart_gaddr(1, area), rec_size, buf));
	memcpy(&len, buf + 4, 4);
	CHECK_LE(len + 64, rec_size);
	memset(buf + len, 0xa5, 64);
	len += 64;
	memcpy(buf + 4, &len, 4);
	*(uint32_t *)buf = smart_crc32c(0, buf + 4, len - 4);
	CHECK_OK(smart_write_sync(wd.w, smart_gaddr(1, area), buf, len));
	torn_k5(&wd, 1);
	/* our copy: record 0 of our area (the one free then) */
	CHECK_OK(smart_read_sync(wd.w, smart_gaddr(1, wd.t->area[0]), 8, buf));
	memcpy(&mine, buf + 4, 4);
	printf("forged_len: the peer's len %u, the taker's copy %u bytes\n",
	       len, mine);
	CHECK_EQ(mine, len - 64);
	smart_buf_free(wd.w, buf);
	world_stop(&wd);
}

/* The one lock word of tree (1, 3) held (a dead writer's stamp). */
static uint64_t held_stamp(struct world *wd)
{
	uint64_t meta, lock_off, e, stamp = 0;
	uint32_t locks, i;
	uint8_t *buf;

	CHECK_OK(smart_root_get(wd->w, 1, 3, &meta));
	CHECK_OK(smart_read_sync(wd->w, meta + 24, 4, &locks));
	CHECK_OK(smart_read_sync(wd->w, meta + 72, 8, &lock_off));
	CHECK_OK(smart_buf_alloc(wd->w, (size_t)locks * 8, (void **)&buf));
	CHECK_OK(smart_read_sync(wd->w, smart_gaddr(1, lock_off),
				 (size_t)locks * 8, buf));
	for (i = 0; i < locks; i++) {
		memcpy(&e, buf + 8 * i, 8);
		if (e) {
			CHECK_EQ(stamp, 0);
			stamp = e;
		}
	}
	smart_buf_free(wd->w, buf);
	CHECK(stamp);
	return stamp;
}

/* Tree (1, 3)'s redo directory: *used slots in use, *of those naming id. */
static void dir_count(struct world *wd, uint16_t id, unsigned *used,
		      unsigned *of)
{
	uint64_t meta, dir_off, *dir;
	unsigned s;

	CHECK_OK(smart_root_get(wd->w, 1, 3, &meta));
	CHECK_OK(smart_read_sync(wd->w, meta + 200, 8, &dir_off));
	CHECK_OK(smart_buf_alloc(wd->w, 8 * 1024, (void **)&dir));
	CHECK_OK(
		smart_read_sync(wd->w, smart_gaddr(1, dir_off), 8 * 1024, dir));
	*used = *of = 0;
	for (s = 0; s < 1024; s++) {
		*used += dir[s] != 0;
		*of += (uint16_t)(dir[s] >> 48) == id;
	}
	smart_buf_free(wd->w, dir);
}

/* The blade's superblock [0, 2112) but its allocation cursor (24..32). */
static void sb_read(struct world *wd, uint8_t *sb)
{
	CHECK_OK(smart_read_sync(wd->w, smart_gaddr(1, 0), 2112, sb));
	memset(sb + 24, 0, 8);
}

/* A dead writer's redo area adopted by a new object while one of its
 * records is still current (the writer was killed inside its WRITE): the
 * adopter has no area of its own yet, so it must not redo that record
 * then (a redo is itself logged, and its record would go to offset 0 of
 * the blade: the superblock).  It leaves that slot to the takers of the
 * dead writer's lock (they redo through their own areas) and adopts it
 * once no word is stamped from it. */
void test_adopt_torn(void)
{
	struct world wd;
	smart_bt_t *o[4];
	uint8_t *sb0, *sb1;
	unsigned used, dead, i, diff = 0;
	uint16_t id;

	/* the creator's directory slot, and BT_AREAS_SPARE (3) free ones */
	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 10);
	CHECK_OK(smart_buf_alloc(wd.w, 2 * 2112, (void **)&sb0));
	sb1 = sb0 + 2112;
	sb_read(&wd, sb0);
	torn_run(&wd, "update", 1); /* takes a spare, dies writing */
	id = (uint16_t)held_stamp(&wd);
	alarm(20);
	while (smart_lease_alive(wd.w, 1, id) != 0)
		; /* until our keeper saw it fenced */
	alarm(0);
	/* the other two spares; the third open finds no free slot */
	CHECK_OK(smart_bt_open(wd.w, 1, 3, NULL, &o[0]));
	CHECK_OK(smart_bt_open(wd.w, 1, 3, NULL, &o[1]));
	CHECK_OK(smart_bt_open(wd.w, 1, 3, NULL, &o[2]));
	sb_read(&wd, sb1);
	for (i = 0; i < 2112; i++)
		diff += sb0[i] != sb1[i];
	printf("superblock bytes changed by the open: %u\n", diff);
	CHECK_MSG(!diff,
		  "the superblock was overwritten (%u bytes, first "
		  "word %#llx)",
		  diff, (unsigned long long)*(uint64_t *)sb1);
	dir_count(&wd, id, &used, &dead);
	CHECK_EQ(dead, 1); /* not adopted: a record of it is current */
	CHECK_EQ(used, 5); /* a new area instead */
	/* a reader finds the torn leaf and redoes the dead update */
	torn_k5(&wd, 1);
	/* now nothing stamps from the dead slot: the next open adopts it */
	CHECK_OK(smart_bt_open(wd.w, 1, 3, NULL, &o[3]));
	dir_count(&wd, id, &used, &dead);
	CHECK_EQ(dead, 0);
	CHECK_EQ(used, 5);
	torn_expect(&wd, 0, 10);
	for (i = 0; i < 4; i++)
		smart_bt_close(o[i], wd.w);
	smart_buf_free(wd.w, sb0);
	world_stop(&wd);
}
