/*
 * A serializability checker for histories of committed transactions over
 * versioned slots (header only, for tests): the direct serialization graph
 * (DSG, Adya 1999) of the committed transactions, checked for cycles.
 *
 * Model: a slot (a record's place: any 64-bit id) holds a version that
 * every committed write raises by exactly 1; version 0 is "never written".
 * A committed transaction reports, per item, (slot, read version, written
 * version) (smart_dtx_item_versions): read 0 = not read or absent, written
 * 0 = not written.  A writer of (s, v+1) read (s, v) under its lock; an
 * insert (read 0, written v) writes a slot whose previous version it did
 * not read as a record.  Versions written by transactions not recorded
 * (the initial load, when the caller leaves it out) belong to a virtual
 * initial transaction that precedes every other: it takes part in no
 * cycle, so it is simply absent from the graph.
 *
 * Edges between committed transactions (no self-edges):
 *   ww  writer of (s, v)         -> writer of (s, v+1)
 *   wr  writer of (s, v)         -> every reader of (s, v)
 *   rw  reader of (s, v) that did not write (s, v+1) -> writer of (s, v+1)
 * The history is conflict-serializable iff the graph is acyclic.
 *
 * Violations found (the verdict is the first one found: the writes are
 * checked first, then the reads, then the cycles; each kind is counted):
 *   DSG_DUP_WRITE   two transactions wrote the same (s, v): a lost update
 *   DSG_BAD_WRITE   a write of (s, w) by a transaction that read (s, r),
 *                   r != 0 and r != w - 1 (it wrote over a version it did
 *                   not read)
 *   DSG_UNWRITTEN   (with DSG_COMPLETE: every writer is recorded, the load
 *                   included) a read of (s, v), or a write of (s, v+1), where
 *                   no recorded transaction wrote (s, v): a version from
 *                   nowhere (an uncommitted or torn one)
 *   DSG_CYCLE       a cycle in the graph (Kahn's topological sort; one
 *                   cycle is reported: its transactions and edges)
 *
 * Cost: O(items) hash-map lookups and O(edges) for the sort, so 100k
 * transactions check in well under a second.  Memory: about 60 bytes an
 * item plus 24 an edge.
 *
 *   struct dsg h;
 *   dsg_init(&h);
 *   dsg_begin(&h, tag);                  // a committed transaction...
 *   dsg_item(&h, slot, read_ver, write_ver);   // ...and its items
 *   ...
 *   dsg_append(&all, &h);                // histories of other threads
 *   if (dsg_check(&all, DSG_COMPLETE, &rep, stderr) != DSG_OK) fail;
 *   dsg_free(&h);
 *
 * A history object belongs to one thread; merge per-thread histories with
 * dsg_append() before the check.  Out of memory while recording sets
 * h->oom, and the check then answers DSG_NOMEM.
 */
#ifndef SMART_TEST_DSG_H
#define SMART_TEST_DSG_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DSG_CYCLE_SHOW 16 /* transactions of a cycle kept in a report */

enum dsg_verdict {
	DSG_OK = 0,
	DSG_DUP_WRITE,
	DSG_BAD_WRITE,
	DSG_UNWRITTEN,
	DSG_CYCLE,
	DSG_NOMEM,
};

enum dsg_edge_kind { DSG_WW, DSG_WR, DSG_RW };

/* dsg_check() flags */
#define DSG_COMPLETE 1u /* every writer of every version is recorded */

struct dsg_item {
	uint64_t slot, rv, wv;
};

struct dsg_txn {
	size_t first; /* its items: item[first .. first + n) */
	uint32_t n;
	uint64_t tag; /* the caller's, printed in reports */
};

struct dsg {
	struct dsg_txn *txn;
	size_t ntxn, txn_cap;
	struct dsg_item *item;
	size_t nitem, item_cap;
	int oom;
};

struct dsg_report {
	int verdict; /* enum dsg_verdict */
	size_t txns, items, reads, writes;
	size_t edges[3]; /* by enum dsg_edge_kind, self-edges not counted */
	size_t dup_writes, bad_writes, unwritten;
	/* the first violation: its slot and version, and its transactions
	 * (indices into the history; t2 SIZE_MAX when only one) */
	uint64_t slot, ver;
	size_t t1, t2;
	/* a cycle: its transactions in edge order (cycle[i] -> cycle[i+1],
	 * the last back to the first), the first DSG_CYCLE_SHOW of them */
	size_t cycle_len;
	size_t cycle[DSG_CYCLE_SHOW];
	double ms; /* time the check took */
};

static inline const char *dsg_verdict_name(int v)
{
	static const char *const n[] = { "ok",
					 "duplicate write",
					 "write over an unread version",
					 "version no recorded transaction wrote",
					 "cycle",
					 "out of memory" };

	return v >= 0 && v <= DSG_NOMEM ? n[v] : "?";
}

static inline const char *dsg_edge_name(unsigned k)
{
	static const char *const n[] = { "ww", "wr", "rw" };

	return k < 3 ? n[k] : "?";
}

static inline void dsg_init(struct dsg *h)
{
	memset(h, 0, sizeof(*h));
}

static inline void dsg_free(struct dsg *h)
{
	free(h->txn);
	free(h->item);
	dsg_init(h);
}

static inline int dsg__grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 256;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * size);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

/* A committed transaction begins; its items follow with dsg_item(). */
static inline void dsg_begin(struct dsg *h, uint64_t tag)
{
	if (h->oom || dsg__grow((void **)&h->txn, &h->txn_cap, h->ntxn + 1,
				sizeof(*h->txn))) {
		h->oom = 1;
		return;
	}
	h->txn[h->ntxn++] = (struct dsg_txn){ h->nitem, 0, tag };
}

/* An item of the last transaction begun: slot, the version it read (0:
 * none) and the version it wrote (0: none).  Items with neither are
 * dropped. */
static inline void dsg_item(struct dsg *h, uint64_t slot, uint64_t rv,
			    uint64_t wv)
{
	if (h->oom || !h->ntxn || (!rv && !wv))
		return;
	if (dsg__grow((void **)&h->item, &h->item_cap, h->nitem + 1,
		      sizeof(*h->item))) {
		h->oom = 1;
		return;
	}
	h->item[h->nitem++] = (struct dsg_item){ slot, rv, wv };
	h->txn[h->ntxn - 1].n++;
}

/* Append the transactions of src to dst. */
static inline void dsg_append(struct dsg *dst, const struct dsg *src)
{
	size_t i, base = dst->nitem;

	if (src->oom)
		dst->oom = 1;
	if (dst->oom ||
	    dsg__grow((void **)&dst->txn, &dst->txn_cap, dst->ntxn + src->ntxn,
		      sizeof(*dst->txn)) ||
	    dsg__grow((void **)&dst->item, &dst->item_cap,
		      dst->nitem + src->nitem, sizeof(*dst->item))) {
		dst->oom = 1;
		return;
	}
	if (src->nitem)
		memcpy(dst->item + base, src->item,
		       src->nitem * sizeof(*src->item));
	dst->nitem += src->nitem;
	for (i = 0; i < src->ntxn; i++) {
		dst->txn[dst->ntxn] = src->txn[i];
		dst->txn[dst->ntxn++].first += base;
	}
}

/* ---- the writers' map: (slot, version) -> transaction ------------------- */

struct dsg__w {
	uint64_t slot, ver;
	uint32_t t; /* transaction + 1; 0: free */
};

struct dsg__map {
	struct dsg__w *e;
	size_t mask;
};

static inline uint64_t dsg__mix(uint64_t slot, uint64_t ver)
{
	uint64_t x = slot * 0x9e3779b97f4a7c15ull ^
		     (ver + 0x632be59bd9b4e019ull);

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline struct dsg__w *dsg__find(const struct dsg__map *m, uint64_t slot,
				       uint64_t ver)
{
	size_t i = (size_t)dsg__mix(slot, ver) & m->mask;

	for (;; i = (i + 1) & m->mask) {
		struct dsg__w *e = &m->e[i];

		if (!e->t || (e->slot == slot && e->ver == ver))
			return e;
	}
}

/* The writer of (slot, ver): a transaction index, or SIZE_MAX (none
 * recorded). */
static inline size_t dsg__writer(const struct dsg__map *m, uint64_t slot,
				 uint64_t ver)
{
	const struct dsg__w *e = dsg__find(m, slot, ver);

	return e->t ? (size_t)e->t - 1 : SIZE_MAX;
}

/* ---- the graph ----------------------------------------------------------- */

struct dsg__edge {
	uint32_t from, to;
	uint32_t kind;
	uint64_t slot, ver; /* the version the edge is about */
};

struct dsg__graph {
	struct dsg__edge *e;
	size_t n, cap;
};

static inline int dsg__edge(struct dsg__graph *g, struct dsg_report *rep,
			    size_t from, size_t to, unsigned kind,
			    uint64_t slot, uint64_t ver)
{
	if (from == to || from == SIZE_MAX || to == SIZE_MAX)
		return 0;
	if (dsg__grow((void **)&g->e, &g->cap, g->n + 1, sizeof(*g->e)))
		return -1;
	g->e[g->n++] = (struct dsg__edge){ (uint32_t)from, (uint32_t)to, kind,
					   slot, ver };
	rep->edges[kind]++;
	return 0;
}

static inline void dsg__first(struct dsg_report *rep, int v, uint64_t slot,
			      uint64_t ver, size_t t1, size_t t2)
{
	if (rep->verdict != DSG_OK)
		return;
	rep->verdict = v;
	rep->slot = slot;
	rep->ver = ver;
	rep->t1 = t1;
	rep->t2 = t2;
}

/* Print transaction t of h: its tag and items. */
static inline void dsg_dump_txn(FILE *f, const struct dsg *h, size_t t)
{
	const struct dsg_txn *x = &h->txn[t];
	uint32_t i;

	fprintf(f, "  T%zu tag %#" PRIx64 ":", t, x->tag);
	for (i = 0; i < x->n; i++) {
		const struct dsg_item *it = &h->item[x->first + i];

		fprintf(f, " [slot %#" PRIx64 " r%" PRIu64 " w%" PRIu64 "]",
			it->slot, it->rv, it->wv);
	}
	fprintf(f, "\n");
}

/* Find one cycle among the transactions Kahn's sort left (done[t] == 0):
 * each has a predecessor among them, so walking predecessors must come
 * back to a transaction already on the walk. */
static inline int dsg__cycle(const struct dsg *h, const struct dsg__graph *g,
			     const unsigned char *done, struct dsg_report *rep,
			     FILE *dump)
{
	size_t n = h->ntxn, i, t, start = SIZE_MAX, len, k;
	uint32_t *pred = malloc(n * sizeof(*pred)); /* an edge into t */
	uint32_t *step = calloc(n, sizeof(*step));  /* walk order + 1 */
	size_t *walk;

	if (!pred || !step) {
		free(pred);
		free(step);
		return -1;
	}
	for (i = 0; i < g->n; i++)
		if (!done[g->e[i].from] && !done[g->e[i].to])
			pred[g->e[i].to] = (uint32_t)i;
	for (t = 0; t < n && done[t]; t++)
		;
	walk = malloc((n + 1) * sizeof(*walk));
	if (!walk) {
		free(pred);
		free(step);
		return -1;
	}
	for (len = 0; !step[t]; len++) {
		step[t] = (uint32_t)len + 1;
		walk[len] = t;
		t = g->e[pred[t]].from;
	}
	start = step[t] - 1; /* walk[start..len) is a cycle, backwards */
	rep->cycle_len = len - start;
	for (k = 0; k < rep->cycle_len && k < DSG_CYCLE_SHOW; k++)
		rep->cycle[k] = walk[len - 1 - k]; /* forwards */
	dsg__first(rep, DSG_CYCLE, 0, 0, rep->cycle[0],
		   rep->cycle_len > 1 ? rep->cycle[1] : SIZE_MAX);
	if (dump) {
		fprintf(dump, "dsg: a cycle of %zu transactions:\n",
			rep->cycle_len);
		for (k = 0; k < rep->cycle_len && k < 2 * DSG_CYCLE_SHOW; k++) {
			size_t to = walk[len - 1 - k];
			const struct dsg__edge *e = &g->e[pred[to]];

			dsg_dump_txn(dump, h, e->from);
			fprintf(dump,
				"    --%s (slot %#" PRIx64 " v%" PRIu64
				")--> T%zu\n",
				dsg_edge_name(e->kind), e->slot, e->ver, to);
		}
	}
	free(walk);
	free(pred);
	free(step);
	return 0;
}

/* Kahn's topological sort of the graph; a cycle is reported when some
 * transactions are left. */
static inline int dsg__sort(const struct dsg *h, const struct dsg__graph *g,
			    struct dsg_report *rep, FILE *dump)
{
	size_t n = h->ntxn, i, head = 0, tail = 0, sorted = 0;
	size_t *off = calloc(n + 1, sizeof(*off));
	uint32_t *adj = malloc((g->n ? g->n : 1) * sizeof(*adj));
	uint32_t *indeg = calloc(n ? n : 1, sizeof(*indeg));
	uint32_t *queue = malloc((n ? n : 1) * sizeof(*queue));
	unsigned char *done = calloc(n ? n : 1, 1);
	int rc = -1;

	if (!off || !adj || !indeg || !queue || !done)
		goto out;
	for (i = 0; i < g->n; i++) {
		off[g->e[i].from + 1]++;
		indeg[g->e[i].to]++;
	}
	for (i = 0; i < n; i++)
		off[i + 1] += off[i];
	{
		size_t *fill = malloc((n ? n : 1) * sizeof(*fill));

		if (!fill)
			goto out;
		memcpy(fill, off, n * sizeof(*fill));
		for (i = 0; i < g->n; i++)
			adj[fill[g->e[i].from]++] = g->e[i].to;
		free(fill);
	}
	for (i = 0; i < n; i++)
		if (!indeg[i])
			queue[tail++] = (uint32_t)i;
	while (head < tail) {
		uint32_t t = queue[head++];
		size_t j;

		done[t] = 1;
		sorted++;
		for (j = off[t]; j < off[t + 1]; j++)
			if (!--indeg[adj[j]])
				queue[tail++] = adj[j];
	}
	rc = sorted == n ? 0 : dsg__cycle(h, g, done, rep, dump);
out:
	free(off);
	free(adj);
	free(indeg);
	free(queue);
	free(done);
	return rc;
}

/* Check history h (not modified) with the flags (DSG_COMPLETE); fills rep
 * and returns its verdict.  The first violation found, and a cycle, are
 * printed to dump (if any). */
static inline int dsg_check(const struct dsg *h, unsigned flags,
			    struct dsg_report *rep, FILE *dump)
{
	struct dsg__map m = { NULL, 0 };
	struct dsg__graph g = { NULL, 0, 0 };
	struct timespec t0, t1;
	size_t t, cap = 16, writes = 0;
	uint32_t i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(rep, 0, sizeof(*rep));
	rep->t1 = rep->t2 = SIZE_MAX;
	rep->txns = h->ntxn;
	rep->items = h->nitem;
	if (h->oom || h->ntxn >= UINT32_MAX)
		goto nomem;
	for (t = 0; t < h->nitem; t++) {
		writes += h->item[t].wv != 0;
		rep->reads += h->item[t].rv != 0;
	}
	rep->writes = writes;
	while (cap < 2 * writes)
		cap *= 2;
	m.e = calloc(cap, sizeof(*m.e));
	if (!m.e)
		goto nomem;
	m.mask = cap - 1;
	/* the writers; two of one version is a lost update */
	for (t = 0; t < h->ntxn; t++) {
		const struct dsg_txn *x = &h->txn[t];

		for (i = 0; i < x->n; i++) {
			const struct dsg_item *it = &h->item[x->first + i];
			struct dsg__w *e;

			if (!it->wv)
				continue;
			if (it->rv && it->rv + 1 != it->wv) {
				rep->bad_writes++;
				if (dump && rep->verdict == DSG_OK) {
					fprintf(dump,
						"dsg: T%zu wrote slot %#" PRIx64
						" v%" PRIu64 " having "
						"read v%" PRIu64 ":\n",
						t, it->slot, it->wv, it->rv);
					dsg_dump_txn(dump, h, t);
				}
				dsg__first(rep, DSG_BAD_WRITE, it->slot, it->wv,
					   t, SIZE_MAX);
			}
			e = dsg__find(&m, it->slot, it->wv);
			if (!e->t) {
				*e = (struct dsg__w){ it->slot, it->wv,
						      (uint32_t)t + 1 };
			} else if (e->t != t + 1) {
				rep->dup_writes++;
				if (dump && rep->verdict == DSG_OK) {
					fprintf(dump,
						"dsg: two transactions "
						"wrote slot %#" PRIx64
						" v%" PRIu64 ":\n",
						it->slot, it->wv);
					dsg_dump_txn(dump, h, e->t - 1);
					dsg_dump_txn(dump, h, t);
				}
				dsg__first(rep, DSG_DUP_WRITE, it->slot, it->wv,
					   e->t - 1, t);
			}
		}
	}
	/* the edges */
	for (t = 0; t < h->ntxn; t++) {
		const struct dsg_txn *x = &h->txn[t];

		for (i = 0; i < x->n; i++) {
			const struct dsg_item *it = &h->item[x->first + i];
			size_t w;

			if (it->rv) {
				w = dsg__writer(&m, it->slot, it->rv);
				if (w == SIZE_MAX && (flags & DSG_COMPLETE)) {
					rep->unwritten++;
					if (dump && rep->verdict == DSG_OK) {
						fprintf(dump,
							"dsg: T%zu read "
							"slot %#" PRIx64
							" v%" PRIu64
							", which no "
							"transaction wrote:\n",
							t, it->slot, it->rv);
						dsg_dump_txn(dump, h, t);
					}
					dsg__first(rep, DSG_UNWRITTEN, it->slot,
						   it->rv, t, SIZE_MAX);
				}
				if (dsg__edge(&g, rep, w, t, DSG_WR, it->slot,
					      it->rv))
					goto nomem;
				if (it->wv != it->rv + 1 &&
				    dsg__edge(&g, rep, t,
					      dsg__writer(&m, it->slot,
							  it->rv + 1),
					      DSG_RW, it->slot, it->rv + 1))
					goto nomem;
			}
			if (it->wv > 1) {
				w = dsg__writer(&m, it->slot, it->wv - 1);
				/* a write's own read already failed above */
				if (w == SIZE_MAX && !it->rv &&
				    (flags & DSG_COMPLETE)) {
					rep->unwritten++;
					if (dump && rep->verdict == DSG_OK) {
						fprintf(dump,
							"dsg: T%zu wrote "
							"slot %#" PRIx64
							" v%" PRIu64 ", but no "
							"transaction wrote v%" PRIu64
							":\n",
							t, it->slot, it->wv,
							it->wv - 1);
						dsg_dump_txn(dump, h, t);
					}
					dsg__first(rep, DSG_UNWRITTEN, it->slot,
						   it->wv - 1, t, SIZE_MAX);
				}
				if (dsg__edge(&g, rep, w, t, DSG_WW, it->slot,
					      it->wv))
					goto nomem;
			}
		}
	}
	if (dsg__sort(h, &g, rep, dump))
		goto nomem;
	goto out;
nomem:
	rep->verdict = DSG_NOMEM;
out:
	free(m.e);
	free(g.e);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	rep->ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
		  (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	return rep->verdict;
}

#endif
