/*
 * test_dtx, the serializability checker itself (tests/harness/dsg.h) on
 * hand-made histories: acyclic ones pass, each anomaly is found, a long
 * serial history passes fast and one stale read hidden in it is found.
 */
#include "dtx_test.h"
#include "harness/sched.h"

/* ==== the checker on hand-made histories ================================= */

struct h_item {
	int txn;
	uint64_t slot, rv, wv;
};

/* A history from a list of items, grouped by txn number (0, 1, ...). */
static void h_build(struct dsg *h, const struct h_item *it, size_t n)
{
	int t, last = -1;
	size_t i;

	dsg_init(h);
	for (i = 0; i < n; i++)
		if (it[i].txn > last)
			last = it[i].txn;
	for (t = 0; t <= last; t++) {
		dsg_begin(h, (uint64_t)t);
		for (i = 0; i < n; i++)
			if (it[i].txn == t)
				dsg_item(h, it[i].slot, it[i].rv, it[i].wv);
	}
}

static int h_check(const struct h_item *it, size_t n, unsigned flags,
		   struct dsg_report *rep)
{
	struct dsg h;
	int v;

	h_build(&h, it, n);
	v = dsg_check(&h, flags, rep, stdout);
	dsg_free(&h);
	return v;
}

#define HIST(v, flags, ...)                                                    \
	do {                                                                   \
		const struct h_item h_[] = { __VA_ARGS__ };                    \
		CHECK_EQ(h_check(h_, sizeof(h_) / sizeof(h_[0]), flags, &rep), \
			 v);                                                   \
	} while (0)

enum { X = 1, Y = 2, Z = 3 }; /* slots */

static int in_cycle(const struct dsg_report *rep, size_t t)
{
	size_t i;

	for (i = 0; i < rep->cycle_len && i < DSG_CYCLE_SHOW; i++)
		if (rep->cycle[i] == t)
			return 1;
	return 0;
}

/* A serial history of n transactions over `slots` slots: each reads 1..4
 * slots at their current version, writes some of them (the version read +
 * 1) or inserts into a never-written slot.  Returns the versions in
 * cur[] (slots entries). */
static void serial_history(struct dsg *h, size_t n, unsigned slots,
			   uint64_t *cur, smart_rng_t *r)
{
	size_t t;
	unsigned k, m;

	dsg_init(h);
	for (t = 0; t < n; t++) {
		unsigned used[4];

		dsg_begin(h, t);
		m = 1 + (unsigned)smart_rng_below(r, 4);
		for (k = 0; k < m; k++) {
			unsigned s = (unsigned)smart_rng_below(r, slots), j;
			int dup = 0;

			for (j = 0; j < k; j++)
				dup |= used[j] == s;
			used[k] = s;
			if (dup)
				continue;
			if (!cur[s]) { /* an insert */
				dsg_item(h, s + 100, 0, ++cur[s]);
			} else if (smart_rng_below(r, 2)) {
				dsg_item(h, s + 100, cur[s], cur[s] + 1);
				cur[s]++;
			} else {
				dsg_item(h, s + 100, cur[s], 0);
			}
		}
	}
}

void test_dsg(void)
{
	struct dsg_report rep;
	struct dsg h, big;
	smart_rng_t r;
	uint64_t *cur;
	size_t t, victim;
	uint64_t w0;
	double late;

	/* empty and acyclic histories pass: a load, an update, a reader,
	 * another update after the reader (rw), an insert */
	dsg_init(&h);
	CHECK_EQ(dsg_check(&h, DSG_COMPLETE, &rep, stdout), DSG_OK);
	dsg_free(&h);
	HIST(DSG_OK, DSG_COMPLETE, { 0, X, 0, 1 },
	     { 0, Y, 0, 1 },		      /* T0 loads */
	     { 1, X, 1, 2 },		      /* T1: x 1 -> 2 */
	     { 2, X, 2, 0 }, { 2, Y, 1, 0 },  /* T2 reads */
	     { 3, Y, 1, 2 },		      /* T3: y 1 -> 2 */
	     { 4, Z, 0, 1 }, { 4, X, 2, 0 }); /* T4 inserts z */
	CHECK_EQ(rep.txns, 5);
	CHECK_EQ(rep.edges[DSG_WW], 2); /* T0->T1, T0->T3 */
	CHECK_EQ(rep.edges[DSG_WR], 5); /* T0->T1, T1->T2, T0->T2,
						 * T0->T3, T1->T4 */
	CHECK_EQ(rep.edges[DSG_RW], 1); /* T2->T3 */
	/* the initial load unrecorded: a virtual transaction, unless the
	 * history says it is complete */
	HIST(DSG_OK, 0, { 0, X, 1, 2 }, { 1, X, 2, 0 }, { 1, Y, 7, 0 });
	HIST(DSG_UNWRITTEN, DSG_COMPLETE, { 0, X, 0, 1 }, { 1, X, 1, 2 },
	     { 2, X, 3, 0 });
	CHECK_EQ(rep.t1, 2);
	CHECK_EQ(rep.ver, 3);
	HIST(DSG_UNWRITTEN, DSG_COMPLETE, { 0, X, 0, 1 }, { 1, X, 0, 3 });
	/* write skew: each reads what the other writes */
	HIST(DSG_CYCLE, DSG_COMPLETE, { 0, X, 0, 1 }, { 0, Y, 0, 1 },
	     { 1, X, 1, 0 }, { 1, Y, 1, 2 }, { 2, Y, 1, 0 }, { 2, X, 1, 2 });
	CHECK_EQ(rep.cycle_len, 2);
	CHECK(in_cycle(&rep, 1) && in_cycle(&rep, 2));
	/* the read-only anomaly (Fekete et al.): T1 reads x old and writes
	 * y, T2 writes x, T3 reads x new and y old: T1->T2->T3->T1 */
	HIST(DSG_CYCLE, DSG_COMPLETE, { 0, X, 0, 1 }, { 0, Y, 0, 1 },
	     { 1, X, 1, 0 }, { 1, Y, 1, 2 }, { 2, X, 1, 2 }, { 3, X, 2, 0 },
	     { 3, Y, 1, 0 });
	CHECK_EQ(rep.cycle_len, 3);
	CHECK(in_cycle(&rep, 1) && in_cycle(&rep, 2) && in_cycle(&rep, 3));
	/* without T3 it is serializable: T1, T2 */
	HIST(DSG_OK, DSG_COMPLETE, { 0, X, 0, 1 }, { 0, Y, 0, 1 },
	     { 1, X, 1, 0 }, { 1, Y, 1, 2 }, { 2, X, 1, 2 });
	/* a torn snapshot: T2 reads x before T1 and y after it */
	HIST(DSG_CYCLE, 0, { 1, X, 1, 2 }, { 1, Y, 1, 2 }, { 2, X, 1, 0 },
	     { 2, Y, 2, 0 });
	/* a lost update: two writers of one version */
	HIST(DSG_DUP_WRITE, DSG_COMPLETE, { 0, X, 0, 1 }, { 1, X, 1, 2 },
	     { 2, X, 1, 2 });
	CHECK_EQ(rep.t1, 1);
	CHECK_EQ(rep.t2, 2);
	CHECK_EQ(rep.slot, X);
	CHECK_EQ(rep.ver, 2);
	/* two inserts of one slot version (no read): a lost update too */
	HIST(DSG_DUP_WRITE, 0, { 0, X, 0, 1 }, { 1, X, 0, 1 });
	/* a write over a version it did not read */
	HIST(DSG_BAD_WRITE, DSG_COMPLETE, { 0, X, 0, 1 }, { 1, X, 1, 2 },
	     { 2, X, 1, 3 });
	CHECK_EQ(rep.t1, 2);
	/* a cycle through ww edges: T1 read z as T3 wrote it, and T3
	 * overwrote what T2 overwrote of T1's */
	HIST(DSG_CYCLE, 0, { 1, Z, 2, 0 }, { 1, X, 1, 2 }, { 2, X, 2, 3 },
	     { 2, Y, 1, 2 }, { 3, Y, 2, 3 }, { 3, Z, 1, 2 });
	CHECK_EQ(rep.cycle_len, 3);

	/* 100k serial transactions over 5000 slots pass... */
	smart_rng_seed(&r, 0xd56);
	cur = calloc(5000, sizeof(*cur));
	CHECK(cur);
	serial_history(&big, 100000, 5000, cur, &r);
	w0 = sched_wait_all_ns(getpid());
	CHECK_EQ(dsg_check(&big, DSG_COMPLETE, &rep, stdout), DSG_OK);
	late = sched_waited_ms(w0);
	printf("dsg: %zu serial transactions, %zu items, %zu+%zu+%zu edges: "
	       "%.1f ms (%.1f waited for a CPU)\n",
	       rep.txns, rep.items, rep.edges[DSG_WW], rep.edges[DSG_WR],
	       rep.edges[DSG_RW], rep.ms, late);
	/* the checker's cost, not the machine's load */
	CHECK_LT(rep.ms, 3000 + late);
	/* ...and one more that read a slot before a transaction that had
	 * read what it wrote: a cycle of two in 100k */
	for (victim = 50000; victim < big.ntxn; victim++) {
		const struct dsg_txn *x = &big.txn[victim];

		if (x->n >= 2 && big.item[x->first].wv > 1 &&
		    big.item[x->first].rv &&
		    big.item[x->first + 1].slot != big.item[x->first].slot &&
		    big.item[x->first + 1].wv)
			break;
	}
	CHECK(victim < big.ntxn);
	t = big.ntxn;
	dsg_begin(&big, 0xbad);
	/* it read the victim's second write (wr victim -> it) and the
	 * version the victim's first item overwrote (rw it -> victim) */
	dsg_item(&big, big.item[big.txn[victim].first + 1].slot,
		 big.item[big.txn[victim].first + 1].wv, 0);
	dsg_item(&big, big.item[big.txn[victim].first].slot,
		 big.item[big.txn[victim].first].wv - 1, 0);
	CHECK_EQ(dsg_check(&big, DSG_COMPLETE, &rep, stdout), DSG_CYCLE);
	CHECK(in_cycle(&rep, t) && in_cycle(&rep, victim));
	CHECK_EQ(rep.cycle_len, 2);
	dsg_free(&big);
	/* merged histories: one thread's lost update against another's */
	dsg_init(&h);
	dsg_init(&big);
	dsg_begin(&h, 1);
	dsg_item(&h, X, 0, 1);
	dsg_begin(&h, 2);
	dsg_item(&h, X, 1, 2);
	dsg_begin(&big, 3);
	dsg_item(&big, X, 1, 2);
	dsg_append(&big, &h);
	CHECK_EQ(big.ntxn, 3);
	CHECK_EQ(dsg_check(&big, DSG_COMPLETE, &rep, stdout), DSG_DUP_WRITE);
	dsg_free(&h);
	dsg_free(&big);
	free(cur);
}
