/*
 * Smart-HT block reclamation: epoch-based, across processes, on one-sided
 * ops (docs/ht.md §6 has the argument).
 *
 * Each shard with reclamation has an epoch area on its blade: a global
 * epoch G and announcement words.  A worker claims one word per shard on
 * first use (CAS 0 -> CLAIMED; never released: an idle claimed word is
 * harmless).  While any op of the worker runs on the shard, its word is
 * CLAIMED | ACTIVE | a, a being a value G had before the announcement was
 * written; otherwise it is CLAIMED.  A block unlinked by an op is retired
 * with r = G read after the unlink; a worker frees its retired blocks with
 * r < every active announcement, after advancing G.
 *
 * Invariants: the announcement is written (synced) before the op reads
 * any bucket, and cleared only when no op of the worker is inside; a
 * worker's tasks change its state only between yields, and wait while an
 * announcement write is in flight.  Workers beyond HT_WORKERS_MAX, or
 * without a free word, set NORECLAIM in G: nobody frees from then on.
 */
#include <stdlib.h>
#include <string.h>

#include "ds/ht/ht_internal.h"

#define EP_BATCH	64		/* retired blocks before a reclaim */
#define EP_STALE	2		/* epochs before a busy worker drains */

int smart__ht_epochs_create(smart_worker_t *w, uint16_t blade,
			    smart_gaddr_t *out)
{
	struct ht_epochs *e;
	int rc;

	rc = smart_buf_alloc(w, sizeof(*e), (void **)&e);
	if (rc)
		return rc;
	memset(e, 0, sizeof(*e));
	e->global = 1;
	rc = smart_alloc(w, blade, sizeof(*e), out);
	if (!rc) {
		rc = smart_write_sync(w, *out, e, sizeof(*e));
		if (rc)
			smart_free(w, *out, sizeof(*e));
	}
	smart_buf_free(w, e);
	return rc;
}

static smart_gaddr_t ep_slot(const struct ht_shard *sh, int i)
{
	return smart_gaddr_add(sh->epochs, offsetof(struct ht_epochs, slot) +
				       8 * (uint64_t)i);
}

/* Nobody may free any more (a client could not announce). */
static void ep_noreclaim(smart_worker_t *w, struct ht_shard *sh)
{
	uint64_t g = 0, old;
	int i;

	for (i = 0; i < 64 && !(g & HT_EP_NORECLAIM); i++) {
		if (smart_cas_sync(w, sh->epochs, g, g | HT_EP_NORECLAIM,
				   &old))
			return;
		g = old == g ? g | HT_EP_NORECLAIM : old;
	}
}

static int ep_claim(smart_worker_t *w, struct ht_shard *sh,
		    struct ht_wshard *ws)
{
	uint64_t *e, old;
	int i, rc;

	rc = smart_buf_alloc(w, sizeof(struct ht_epochs), (void **)&e);
	if (rc)
		return rc;
	rc = smart_read_sync(w, sh->epochs, sizeof(struct ht_epochs), e);
	for (i = 0; i < HT_EPOCH_SLOTS && !rc; i++) {
		if (e[8 + i])
			continue;
		rc = smart_cas_sync(w, ep_slot(sh, i), 0, HT_EP_CLAIMED, &old);
		if (!rc && !old) {
			ws->slot = i;
			ws->gcache = HT_EP_EPOCH(e[0]);
			break;
		}
	}
	smart_buf_free(w, e);
	if (ws->slot < 0)
		ep_noreclaim(w, sh);	/* we cannot announce */
	return rc;
}

static struct ht_wshard *ep_state(smart_ht_t *t, smart_worker_t *w,
				  struct ht_shard *sh)
{
	int wi = smart_worker_index(w);
	struct ht_wshard *ws;
	unsigned i;

	if (wi < 0 || wi >= HT_WORKERS_MAX) {
		ep_noreclaim(w, sh);
		return NULL;
	}
	if (!t->ws[wi]) {
		ws = calloc(SMART_HT_SHARDS_MAX, sizeof(*ws));
		if (!ws) {
			ep_noreclaim(w, sh);
			return NULL;
		}
		for (i = 0; i < SMART_HT_SHARDS_MAX; i++)
			ws[i].slot = -1;
		t->ws[wi] = ws;
	}
	ws = &t->ws[wi][sh - t->shard];
	/* one claim per worker: its other tasks wait for it */
	while (ws->busy)
		smart_task_yield(w);
	if (ws->slot < 0) {
		ws->busy = 1;
		ep_claim(w, sh, ws);
		ws->busy = 0;
	}
	return ws->slot < 0 ? NULL : ws;
}

/* Write our announcement word (and read G back in the same batch). */
static void ep_announce(smart_worker_t *w, struct ht_shard *sh,
			struct ht_wshard *ws, uint64_t val)
{
	uint64_t v = val, g = 0;

	ws->busy = 1;
	if (!smart_write(w, ep_slot(sh, ws->slot), &v, sizeof(v)) &&
	    !smart_read(w, sh->epochs, sizeof(g), &g) && !smart_sync(w))
		ws->gcache = HT_EP_EPOCH(g);
	else
		(void)smart_sync(w);
	ws->busy = 0;
}

struct ht_wshard *smart__ht_enter(smart_ht_t *t, smart_worker_t *w,
				  struct ht_shard *sh)
{
	struct ht_wshard *ws;

	if (sh->epochs == SMART_GADDR_NULL)
		return NULL;
	ws = ep_state(t, w, sh);
	if (!ws)
		return NULL;
	/* wait out a write in flight, and let a long-busy worker drain so
	 * that its announcement can move forward */
	while (ws->busy ||
	       (ws->active && ws->announced + EP_STALE <= ws->gcache))
		smart_task_yield(w);
	if (ws->active++ == 0) {
		ws->announced = ws->gcache;
		ep_announce(w, sh, ws, HT_EP_CLAIMED | HT_EP_ACTIVE |
					       ws->announced);
	}
	return ws;
}

static int ep_push(struct ht_wshard *ws, const struct ht_retired *r)
{
	struct ht_retired *p;

	if (ws->nret == ws->cap) {
		size_t cap = ws->cap ? 2 * ws->cap : 128;

		p = realloc(ws->ret, cap * sizeof(*p));
		if (!p)
			return SMART_ENOMEM;
		ws->ret = p;
		ws->cap = cap;
	}
	ws->ret[ws->nret++] = *r;
	return 0;
}

/* Advance G, read the announcements, free what nobody can hold. */
static void ep_reclaim(smart_ht_t *t, smart_worker_t *w,
		       struct ht_shard *sh, struct ht_wshard *ws)
{
	uint64_t *e, g, min = UINT64_MAX;
	struct ht_retired *list = ws->ret, *mid;
	size_t i, n = ws->nret, k = 0, nmid;
	int rc, rc2;

	if (smart_buf_alloc(w, sizeof(struct ht_epochs), (void **)&e))
		return;
	/* take the list: other tasks may retire while we yield below */
	ws->ret = NULL;
	ws->nret = ws->cap = 0;
	rc = smart_faa(w, sh->epochs, 1, &g);
	if (!rc)
		rc = smart_read(w, sh->epochs, sizeof(struct ht_epochs), e);
	rc2 = smart_sync(w);
	rc = rc ? rc : rc2;
	if (!rc && !(e[0] & HT_EP_NORECLAIM)) {
		ws->gcache = HT_EP_EPOCH(e[0]);
		for (i = 0; i < HT_EPOCH_SLOTS; i++)
			if ((e[8 + i] & HT_EP_ACTIVE) &&
			    HT_EP_EPOCH(e[8 + i]) < min)
				min = HT_EP_EPOCH(e[8 + i]);
	} else {
		min = 0;		/* free nothing */
	}
	smart_buf_free(w, e);

	for (i = 0; i < n; i++) {
		if (list[i].epoch < min &&
		    !smart_free(w, list[i].addr, list[i].size)) {
			atomic_fetch_add_explicit(&t->freed, 1,
						  memory_order_relaxed);
			continue;
		}
		list[k++] = list[i];
	}
	/* survivors back, then what was retired meanwhile */
	mid = ws->ret;
	nmid = ws->nret;
	ws->ret = list;
	ws->nret = k;
	ws->cap = n;
	for (i = 0; i < nmid; i++)
		ep_push(ws, &mid[i]);
	free(mid);
}

void smart__ht_leave(smart_ht_t *t, smart_worker_t *w, struct ht_shard *sh,
		     struct ht_wshard *ws)
{
	if (!ws)
		return;
	if (--ws->active == 0) {
		ep_announce(w, sh, ws, HT_EP_CLAIMED);
		if (ws->nret >= EP_BATCH && !ws->active)
			ep_reclaim(t, w, sh, ws);
	}
}

void smart__ht_retire(smart_ht_t *t, struct ht_wshard *ws,
		      smart_gaddr_t addr, uint64_t size, uint64_t epoch)
{
	struct ht_retired r = { addr, size, epoch };

	/* without reclamation (or memory) the block is leaked */
	if (ws && !ep_push(ws, &r))
		atomic_fetch_add_explicit(&t->retired, 1, memory_order_relaxed);
}

void smart__ht_epochs_free(smart_ht_t *t)
{
	unsigned i, k;

	for (i = 0; i < HT_WORKERS_MAX; i++) {
		if (!t->ws[i])
			continue;
		for (k = 0; k < SMART_HT_SHARDS_MAX; k++)
			free(t->ws[i][k].ret);
		free(t->ws[i]);
	}
}
