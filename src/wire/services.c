/*
 * Pure helpers over the shared-service tables of a blade (services.h):
 * what a client or the blade itself reports as the blade's memory usage.
 * No I/O: callers pass copies of the words they read.
 */
#include "wire/services.h"

void smart_wire_usage(const struct smart_superblock *sb,
		      const struct smart_lease_table *lt,
		      const struct smart_free_table *ft,
		      struct smart_wire_usage *out)
{
	uint64_t chunk = UINT64_C(1) << sb->chunk_shift, claimed;
	unsigned i;

	*out = (struct smart_wire_usage){ .size = sb->size };
	out->reserved = sb->first_chunk * chunk;
	if (out->reserved > sb->size)
		out->reserved = sb->size;
	/* the cursor may run past the end by a failed claim's arithmetic:
	 * nothing beyond nchunks is ever handed out */
	claimed = sb->cursor < sb->nchunks ? sb->cursor : sb->nchunks;
	if (claimed < sb->first_chunk)
		claimed = sb->first_chunk;
	out->unclaimed = (sb->nchunks - claimed) * chunk;
	out->pooled = ft->pooled;
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
}
