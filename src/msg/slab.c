/*
 * The endpoint's registered memory (docs/rpc.md §4): MRs of RPC_SLAB_MR
 * bytes (X-RDMA's 4 MiB), or one slab where a slab is larger, carved into
 * slabs of slab_len bytes, one per connection (its receive and send
 * slots).  Slabs come back to a free list and are reused; MRs live as
 * long as the endpoint.
 *
 * Invariant: every slab struct belongs to the block of its MR entry
 * (rpc->mrs[i].slabs), so freeing needs no search.
 */
#include <stdlib.h>

#include "msg/msg_int.h"

static int slab_grow(struct smart_rpc *rpc)
{
	size_t per = RPC_SLAB_MR / rpc->slab_len, len;
	struct rpc_mr *mrs;
	struct rpc_slab *s;
	struct smart_tp_mr *mr;
	int rc;

	if (per == 0)
		per = 1;
	len = per * rpc->slab_len;
	s = calloc(per, sizeof(*s));
	mrs = realloc(rpc->mrs, (rpc->nmrs + 1) * sizeof(*mrs));
	if (mrs)
		rpc->mrs = mrs;
	if (!s || !mrs) {
		free(s);
		return SMART_ENOMEM;
	}
	rc = rpc->tp->mr_alloc(rpc->dom, len, -1, 0, &mr);
	if (rc) {
		free(s);
		return rc;
	}
	rpc->mrs[rpc->nmrs++] = (struct rpc_mr){ mr, s };
	for (size_t i = 0; i < per; i++) {
		s[i].mr = mr;
		s[i].base = (uint8_t *)mr->addr + i * rpc->slab_len;
		smart__rpc_slab_put(rpc, &s[i]);
	}
	return 0;
}

int smart__rpc_slab_get(struct smart_rpc *rpc, struct rpc_slab **out)
{
	int rc;

	if (!rpc->free_slabs && (rc = slab_grow(rpc)))
		return rc;
	*out = rpc->free_slabs;
	rpc->free_slabs = (*out)->next;
	return 0;
}

void smart__rpc_slab_put(struct smart_rpc *rpc, struct rpc_slab *s)
{
	s->next = rpc->free_slabs;
	rpc->free_slabs = s;
}

void smart__rpc_slabs_free(struct smart_rpc *rpc)
{
	for (uint32_t i = 0; i < rpc->nmrs; i++) {
		rpc->tp->mr_free(rpc->dom, rpc->mrs[i].mr);
		free(rpc->mrs[i].slabs);
	}
	free(rpc->mrs);
	rpc->mrs = NULL;
	rpc->nmrs = 0;
	rpc->free_slabs = NULL;
}
