/*
 * The blade-wide free lists (docs/design.md §5.1, docs/layout.md): lock-free
 * stacks in the blade's free table, changed only by one-sided CAS, so any
 * client can take what any other gave back, without the blade's CPU.
 *
 * Two kinds of list, both Treiber stacks with a tagged head (tag:20 |
 * offset/16:44, src/wire/services.h):
 *  - per size class, of batch nodes: a 512-byte node written into a free
 *    block names up to 62 free blocks of the class.  Moving blocks 62 at a
 *    time keeps a push or a pop at 2-3 round trips per batch.
 *  - per log2 bucket of chunk counts, of runs of whole chunks, each
 *    carrying {next, nchunks} in its first 16 bytes.
 *
 * Push: write the node (its next = the head as last read), CAS the head to
 * it with the tag advanced, in one chain (executed in order: the node is
 * complete before it is reachable); a lost CAS rewrites next and retries.
 * Pop: read the head, read its node, CAS the head to the node's next.  The
 * node read may be torn or stale if a racer popped and reused it meanwhile;
 * then the head changed, its tag with it, and the CAS fails (an ABA would
 * need 2^20 head changes during one pop).  A node is never written while
 * it is on a list.
 *
 * The free table's `pooled` counts the bytes on the lists, by FAA after a
 * successful CAS (so it can lag, never drift).
 */
#include <string.h>

#include "services/alloc_int.h"
#include "util/mutant.h"

#define FL_RETRY_MAX 4096
#define FL_TAG_MASK  ((UINT64_C(1) << (64 - SMART_FREE_TAG_SHIFT)) - 1)

static uint64_t fl_head_to(uint64_t head, uint64_t off)
{
	return smart_free_head(off,
			       (smart_free_head_tag(head) + 1) & FL_TAG_MASK);
}

static smart_gaddr_t fl_ga(const struct smart__blade *b, uint64_t off)
{
	return smart_gaddr(b->id, off);
}

/* Link node (len bytes at buf, its first word the link) at node_off onto
 * the list whose head word is at head_off; count bytes as pooled. */
static int fl_push(struct smart_worker *w, struct smart__blade *b,
		   uint64_t head_off, uint64_t node_off, uint64_t *buf,
		   size_t len, uint64_t bytes)
{
	uint64_t head, old = 0;
	int rc, rc2, i;

	rc = smart_read_sync(w, fl_ga(b, head_off), 8, &head);
	for (i = 0; !rc && i < FL_RETRY_MAX; i++) {
		buf[0] = smart_free_head_off(head);
		rc = smart_write(w, fl_ga(b, node_off), buf, len);
		if (!rc)
			rc = smart_cas(w, fl_ga(b, head_off), head,
				       fl_head_to(head, node_off), &old);
		rc2 = smart_sync(w);
		rc = rc ? rc : rc2;
		if (rc)
			return rc;
		if (old == head)
			return smart_faa_sync(w,
					      fl_ga(b, SMART_FREE_POOLED_OFF),
					      bytes, NULL);
		head = old;
	}
	return rc ? rc : SMART_ERETRY;
}

/* Says whether the node read at off (buf) is one a client of ours could
 * have pushed, and how many bytes it stands for (*bytes). */
typedef int (*fl_node_ok)(const struct smart__blade *b, uint64_t off,
			  const uint64_t *node, int arg, uint64_t *bytes);

/* A link (a node's next, or a head) that can name a node: 0 or a 16-byte
 * aligned offset in the blade's chunks. */
static int fl_link_ok(const struct smart__blade *b, uint64_t off, size_t len)
{
	return !off ||
	       (!(off & 15) && off >= (b->first_chunk << b->chunk_shift) &&
		off < b->size && len <= b->size - off);
}

/* Unlink the top node of the list at head_off into buf (len bytes);
 * *node_off = 0 when the list is empty.  What another client wrote is
 * checked like a peer's message: a node that fails node_ok is unlinked
 * all the same (so that the list serves on) but not taken: SMART_EPROTO,
 * its blocks lost; a next link that names no node, or the node itself, is
 * not made the head (the list is cut there, what followed is lost).  The
 * checks count only once the CAS succeeded: the head had not moved, so the
 * node was not popped and reused while we read it (a node is never written
 * while on a list). */
static int fl_pop(struct smart_worker *w, struct smart__blade *b,
		  uint64_t head_off, uint64_t *buf, size_t len,
		  fl_node_ok node_ok, int arg, uint64_t *node_off)
{
	uint64_t head, old = 0, off, next, bytes = 0;
	int rc, i, ok;

	*node_off = 0;
	rc = smart_read_sync(w, fl_ga(b, head_off), 8, &head);
	for (i = 0; !rc && i < FL_RETRY_MAX; i++) {
		off = smart_free_head_off(head);
		if (!off)
			return 0;
		if (!fl_link_ok(b, off, len))
			return SMART_EPROTO; /* a corrupt head: stop */
		rc = smart_read_sync(w, fl_ga(b, off), len, buf);
		next = buf[0];
		/* the mutant trusts the node, yet counts its bytes as usual */
		ok = node_ok(b, off, buf, arg, &bytes) ||
		     SMART_M_FREELIST_NO_CHECK;
		/* a node linked to itself would stay the head: served again */
		if (!SMART_M_FREELIST_NO_CHECK &&
		    (next == off || !fl_link_ok(b, next, len)))
			next = 0;
		if (!rc)
			rc = smart_cas_sync(w, fl_ga(b, head_off), head,
					    fl_head_to(head, next), &old);
		if (rc)
			return rc;
		if (old != head) {
			head = old;
			continue;
		}
		if (!ok)
			return SMART_EPROTO;
		*node_off = off;
		return smart_faa_sync(w, fl_ga(b, SMART_FREE_POOLED_OFF),
				      -bytes, NULL);
	}
	return rc ? rc : SMART_ERETRY;
}

/* ---- batches of one class --------------------------------------------- */

static uint64_t batch_bytes(const struct smart_free_node *n, int c)
{
	return ((uint64_t)n->count << c) + (UINT64_C(1) << n->node_class);
}

/* A batch node of class c: its count, its own class and place, and every
 * block it names (never the node's own block: it would be handed out
 * twice, as a block and as the node). */
static int batch_ok(const struct smart__blade *b, uint64_t off,
		    const uint64_t *node, int c, uint64_t *bytes)
{
	const struct smart_free_node *n = (const void *)node;
	uint64_t bsize = UINT64_C(1) << c,
		 low = b->first_chunk << b->chunk_shift;
	uint32_t i;

	if (n->count > SMART_FREE_BATCH || n->node_class < RA_NODE_SHIFT ||
	    n->node_class >= b->chunk_shift ||
	    (c >= RA_NODE_SHIFT && n->node_class != c) ||
	    (off & ((UINT64_C(1) << n->node_class) - 1)))
		return 0;
	for (i = 0; i < n->count; i++)
		if ((n->off[i] & (bsize - 1)) || n->off[i] < low ||
		    n->off[i] >= b->size || n->off[i] == off)
			return 0;
	*bytes = batch_bytes(n, c);
	return 1;
}

int smart__fl_push_batch(struct smart_worker *w, struct smart__blade *b, int c,
			 uint64_t node, int node_class, const uint64_t *off,
			 uint32_t count, void *buf)
{
	struct smart_free_node *n = buf;

	memset(n, 0, sizeof(*n));
	n->count = count;
	n->node_class = (uint8_t)node_class;
	memcpy(n->off, off, (size_t)count * sizeof(*off));
	return fl_push(w, b, SMART_FREE_CLS_OFF(c), node, buf, sizeof(*n),
		       batch_bytes(n, c));
}

int smart__fl_pop_batch(struct smart_worker *w, struct smart__blade *b, int c,
			void *buf, uint64_t *node_off, int *empty)
{
	int rc = fl_pop(w, b, SMART_FREE_CLS_OFF(c), buf,
			sizeof(struct smart_free_node), batch_ok, c, node_off);

	*empty = !rc && !*node_off;
	return rc;
}

/* ---- runs of chunks ---------------------------------------------------- */

/* A run of chunks: whole chunks inside the region. */
static int run_ok(const struct smart__blade *b, uint64_t off,
		  const uint64_t *node, int arg, uint64_t *bytes)
{
	uint64_t chunk = UINT64_C(1) << b->chunk_shift;

	(void)arg;
	if (!node[1] || node[1] > b->nchunks || (off & (chunk - 1)) ||
	    node[1] > (b->size - off) / chunk)
		return 0;
	*bytes = node[1] << b->chunk_shift;
	return 1;
}

int smart__fl_push_run(struct smart_worker *w, struct smart__blade *b,
		       uint64_t off, uint64_t k, void *buf)
{
	uint64_t *n = buf;
	int j = ra_log2_floor(k);

	n[0] = 0;
	n[1] = k;
	return fl_push(w, b, SMART_FREE_RUN_OFF(j), off, n,
		       sizeof(struct smart_free_run), k << b->chunk_shift);
}

int smart__fl_pop_run(struct smart_worker *w, struct smart__blade *b,
		      uint64_t k, void *buf, uint64_t *off)
{
	uint64_t *heads = buf, *n = buf, got, bucket_heads[SMART_FREE_RUNS];
	uint64_t chunk = UINT64_C(1) << b->chunk_shift;
	int j, rc;

	*off = 0;
	/* one read shows which buckets hold anything; a bucket of runs of
	 * at least 2^j >= k chunks serves without a second look */
	rc = smart_read_sync(w, fl_ga(b, SMART_FREE_RUN_OFF(0)),
			     sizeof(bucket_heads), heads);
	if (rc)
		return rc;
	memcpy(bucket_heads, heads, sizeof(bucket_heads));
	for (j = ra_log2_ceil(k); j < SMART_FREE_RUNS && !*off; j++) {
		if (!smart_free_head_off(bucket_heads[j]))
			continue;
		rc = fl_pop(w, b, SMART_FREE_RUN_OFF(j), n,
			    sizeof(struct smart_free_run), run_ok, 0, off);
		if (rc)
			return rc;
	}
	if (!*off)
		return 0;
	got = n[1]; /* a whole run inside the region (run_ok) */
	if (got < k)
		return SMART_EPROTO; /* in a bucket too small for it */
	if (got > k) /* the rest goes back, as a run of its own */
		rc = smart__fl_push_run(w, b, *off + k * chunk, got - k, buf);
	return rc;
}
