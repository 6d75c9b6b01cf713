/*
 * The blade-wide free lists (DESIGN.md §4.1, docs/layout.md): lock-free
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

#include "core/alloc_int.h"
#include "util/mutant.h"

#define FL_RETRY_MAX 4096
#define FL_TAG_MASK ((UINT64_C(1) << (64 - SMART_FREE_TAG_SHIFT)) - 1)

static uint64_t fl_head_to(uint64_t head, uint64_t off)
{
	return smart_free_head(off, (smart_free_head_tag(head) + 1) &
				    FL_TAG_MASK);
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
			return smart_faa_sync(w, fl_ga(b, SMART_FREE_POOLED_OFF),
					      bytes, NULL);
		head = old;
	}
	return rc ? rc : SMART_ERETRY;
}

/* Unlink the top node of the list at head_off into buf (len bytes);
 * *node_off = 0 when the list is empty.  bytes_of() says how many bytes
 * the node stood for, once read. */
static int fl_pop(struct smart_worker *w, struct smart__blade *b,
		  uint64_t head_off, uint64_t *buf, size_t len,
		  uint64_t (*bytes_of)(const uint64_t *node, int arg), int arg,
		  uint64_t *node_off)
{
	uint64_t head, old = 0, off;
	int rc, i;

	*node_off = 0;
	rc = smart_read_sync(w, fl_ga(b, head_off), 8, &head);
	for (i = 0; !rc && i < FL_RETRY_MAX; i++) {
		off = smart_free_head_off(head);
		if (!off)
			return 0;
		if (off >= b->size || len > b->size - off)
			return SMART_EPROTO;	/* a corrupt head: stop */
		rc = smart_read_sync(w, fl_ga(b, off), len, buf);
		if (!rc)
			rc = smart_cas_sync(w, fl_ga(b, head_off), head,
					    fl_head_to(head, buf[0]), &old);
		if (rc)
			return rc;
		if (old == head) {
			*node_off = off;
			return smart_faa_sync(w, fl_ga(b, SMART_FREE_POOLED_OFF),
					      -bytes_of(buf, arg), NULL);
		}
		head = old;
	}
	return rc ? rc : SMART_ERETRY;
}

/* ---- batches of one class --------------------------------------------- */

static uint64_t batch_bytes(const uint64_t *node, int c)
{
	const struct smart_free_node *n = (const void *)node;
	uint32_t count = n->count < SMART_FREE_BATCH ? n->count :
			 SMART_FREE_BATCH;

	return ((uint64_t)count << c) + (UINT64_C(1) << n->node_class);
}

int smart__fl_push_batch(struct smart_worker *w, struct smart__blade *b,
			 int c, uint64_t node, int node_class,
			 const uint64_t *off, uint32_t count, void *buf)
{
	struct smart_free_node *n = buf;

	memset(n, 0, sizeof(*n));
	n->count = count;
	n->node_class = (uint8_t)node_class;
	memcpy(n->off, off, (size_t)count * sizeof(*off));
	return fl_push(w, b, SMART_FREE_CLS_OFF(c), node, buf, sizeof(*n),
		       batch_bytes(buf, c));
}

int smart__fl_pop_batch(struct smart_worker *w, struct smart__blade *b,
			int c, void *buf, uint64_t *node_off, int *empty)
{
	struct smart_free_node *n = buf;
	uint64_t bsize = UINT64_C(1) << c;
	uint32_t i;
	int rc;

	rc = fl_pop(w, b, SMART_FREE_CLS_OFF(c), buf, sizeof(*n), batch_bytes,
		    c, node_off);
	*empty = !rc && !*node_off;
	if (rc || !*node_off)
		return rc;
	/* what another client wrote is checked like a peer's message */
	if (SMART_M_FREELIST_NO_CHECK)
		return 0;
	if (n->count > SMART_FREE_BATCH || n->node_class < RA_NODE_SHIFT ||
	    n->node_class >= b->chunk_shift)
		return SMART_EPROTO;
	for (i = 0; i < n->count; i++)
		if ((n->off[i] & (bsize - 1)) || n->off[i] < b->first_chunk <<
		    b->chunk_shift || n->off[i] >= b->size)
			return SMART_EPROTO;
	return 0;
}

/* ---- runs of chunks ---------------------------------------------------- */

static uint64_t run_bytes(const uint64_t *node, int chunk_shift)
{
	return node[1] << chunk_shift;
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
			    sizeof(struct smart_free_run), run_bytes,
			    (int)b->chunk_shift, off);
		if (rc)
			return rc;
	}
	if (!*off)
		return 0;
	got = n[1];
	if (got < k || (*off & (chunk - 1)) ||
	    *off < b->first_chunk * chunk || got > b->nchunks ||
	    *off + got * chunk > b->size)
		return SMART_EPROTO;
	if (got > k)	/* the rest goes back, as a run of its own */
		rc = smart__fl_push_run(w, b, *off + k * chunk, got - k, buf);
	return rc;
}
