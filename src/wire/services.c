/*
 * Pure helpers over the shared-service tables of a blade (services.h):
 * what a client or the blade itself reports as the blade's memory usage.
 * No I/O: callers pass copies of the words they read.
 */
#include "smart/status.h"
#include "smart/usage.h"
#include "wire/services.h"

int smart__wire_usage(const struct smart_superblock *sb,
		      const struct smart_lease_table *lt, uint64_t pooled,
		      struct smart_alloc_usage *out)
{
	uint64_t chunk, claimed;
	unsigned i;

	/* read from another process's memory: checked before used */
	if (sb->magic != SMART_SB_MAGIC ||
	    sb->chunk_shift < SMART_CHUNK_SHIFT_MIN ||
	    sb->chunk_shift > SMART_CHUNK_SHIFT_MAX ||
	    sb->nchunks != sb->size >> sb->chunk_shift ||
	    sb->first_chunk > sb->nchunks)
		return SMART_EPROTO;
	chunk = UINT64_C(1) << sb->chunk_shift;
	*out = (struct smart_alloc_usage){ .size = sb->size };
	out->reserved = sb->first_chunk * chunk;
	if (out->reserved > sb->size)
		out->reserved = sb->size;
	/* the cursor may run past the end by a failed claim's arithmetic:
	 * nothing beyond nchunks is ever handed out */
	claimed = sb->cursor < sb->nchunks ? sb->cursor : sb->nchunks;
	if (claimed < sb->first_chunk)
		claimed = sb->first_chunk;
	out->unclaimed = (sb->nchunks - claimed) * chunk;
	out->pooled = pooled;
	for (i = 0; i < SMART_LEASE_SLOTS; i++) {
		uint64_t w = lt->slot[i].word;

		if (!w)
			continue;
		if (w & SMART_LEASE_FENCED) {
			out->fenced++;
			continue;
		}
		out->clients++;
		out->cached += lt->slot[i].cached;
	}
	/* counters read at different moments can disagree a little: clamp
	 * rather than report a wrapped "used" */
	claimed = (claimed - sb->first_chunk) * chunk;
	if (out->pooled > claimed)
		out->pooled = claimed;
	if (out->cached > claimed - out->pooled)
		out->cached = claimed - out->pooled;
	out->used = claimed - out->pooled - out->cached;
	out->free = out->unclaimed + out->pooled;
	return 0;
}
