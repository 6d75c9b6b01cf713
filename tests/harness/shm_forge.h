/*
 * What a peer's sender writes into a shm receive segment, forged by hand
 * (layout version 3, src/transport/shm/shm.h): tests that play the hostile
 * or stopped peer of a connection use it instead of spelling the cell
 * layout each.  Single-threaded use only, the real sender stopped or
 * silent meanwhile.
 */
#ifndef SMART_TEST_SHM_FORGE_H
#define SMART_TEST_SHM_FORGE_H

#include <stdatomic.h>
#include <string.h>

#include "transport/shm/shm.h"

/* Has the sender released the cell of message n? */
static inline int forge_released(struct shm_rseg *seg, size_t cell_len,
				 uint32_t nslots, uint32_t n)
{
	uint32_t seq = atomic_load(
		&shm_cell_at(seg, cell_len, n & (nslots - 1))->seq);

	return (seq & SHM_RS_SEQ_MASK) == ((n + 1) & SHM_RS_SEQ_MASK);
}

/* The number of the next message our own queue's sender would fill: the
 * first cell from the oldest one not taken that is not released. */
static inline uint32_t forge_rq_next(struct shm_rq *rq)
{
	uint32_t n = rq->taken;

	while (n != rq->posted &&
	       forge_released(rq->seg, rq->cell_len, rq->nslots, n))
		n++;
	return n;
}

/* Fill cell of message n (len bytes of data, or none with data NULL)
 * and release it with flags (SHM_RS_*). */
static inline void forge_cell(struct shm_rseg *seg, size_t cell_len,
			      uint32_t nslots, uint32_t n, uint32_t len,
			      uint32_t imm, uint32_t flags, const void *data)
{
	struct shm_cell *c = shm_cell_at(seg, cell_len, n & (nslots - 1));

	c->len = len;
	c->imm = imm;
	if (data)
		memcpy(c + 1, data, len);
	atomic_store(&c->seq,
		     ((n + 1) & SHM_RS_SEQ_MASK) | flags << SHM_RS_FLAG_SHIFT);
}

#endif
