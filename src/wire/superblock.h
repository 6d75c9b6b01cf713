/*
 * The start of every blade region: the superblock and the map of the
 * blade's own area (docs/layout.md).
 *
 * The blade formats the first SMART_SYS_SIZE bytes once at creation; after
 * that only clients touch them, with one-sided ops: the allocation cursor
 * and free lists by CAS, root entries by READ/WRITE/CAS, lease words and
 * epoch announcements as src/wire/services.h says.  Allocation chunks
 * start at first_chunk, the first chunk boundary at or above SMART_SYS_SIZE.
 * All fields are little-endian 8-byte-aligned words.
 *
 * Region map (offsets are fixed by this layout version):
 *   0          superblock (magic .. root[256])           2112 bytes
 *   4 KiB      lease table (services.h)                  16448 bytes
 *   24 KiB     epoch table (services.h)                  8256 bytes
 *   36 KiB     free-list table (services.h)              1088 bytes
 *   40 KiB     device memory allocation word (a bit per
 *              SMART_DM_UNIT in use, smart/alloc.h)      8 bytes
 *   64 KiB     end of the blade's own area
 */
#ifndef SMART_WIRE_SUPERBLOCK_H
#define SMART_WIRE_SUPERBLOCK_H

#include <stddef.h>
#include <stdint.h>

#define SMART_SB_MAGIC	 UINT64_C(0x31424c4254524d53) /* "SMRTBLB1" */
#define SMART_SB_VERSION 2
#define SMART_SB_ROOTS	 256

struct smart_superblock {
	uint64_t magic;
	uint32_t version;
	uint32_t chunk_shift; /* chunk size = 1 << chunk_shift */
	uint64_t size;	      /* region bytes */
	uint64_t cursor;      /* next free chunk index, advanced by CAS */
	uint64_t nchunks;     /* size >> chunk_shift */
	uint16_t blade_id;
	uint16_t _pad16[3];
	uint64_t first_chunk; /* chunks below it hold the blade's own area */
	uint32_t lease_ms;    /* client lease duration on this blade */
	uint32_t _pad32;
	uint64_t root[SMART_SB_ROOTS];
};

_Static_assert(offsetof(struct smart_superblock, magic) == 0, "sb magic");
_Static_assert(offsetof(struct smart_superblock, chunk_shift) == 12,
	       "sb shift");
_Static_assert(offsetof(struct smart_superblock, size) == 16, "sb size");
_Static_assert(offsetof(struct smart_superblock, cursor) == 24, "sb cursor");
_Static_assert(offsetof(struct smart_superblock, nchunks) == 32, "sb nchunks");
_Static_assert(offsetof(struct smart_superblock, first_chunk) == 48,
	       "sb first_chunk");
_Static_assert(offsetof(struct smart_superblock, lease_ms) == 56,
	       "sb lease_ms");
_Static_assert(offsetof(struct smart_superblock, root) == 64, "sb root");
_Static_assert(sizeof(struct smart_superblock) == 64 + 8 * SMART_SB_ROOTS,
	       "sb size");

#define SMART_SB_OFF_CURSOR  offsetof(struct smart_superblock, cursor)
#define SMART_SB_OFF_ROOT(i) (offsetof(struct smart_superblock, root) + 8 * (i))

/* The blade's own area and where its tables live in it. */
#define SMART_SYS_SIZE	 (UINT64_C(64) << 10)
#define SMART_LEASE_OFF	 (UINT64_C(4) << 10)
#define SMART_EPOCH_OFF	 (UINT64_C(24) << 10)
#define SMART_FREE_OFF	 (UINT64_C(36) << 10)
#define SMART_DM_MAP_OFF (UINT64_C(40) << 10)

/* Smallest and largest chunk sizes a blade accepts. */
#define SMART_CHUNK_SHIFT_MIN 12
#define SMART_CHUNK_SHIFT_MAX 30

/* The first chunk a client may claim: the blade's own area rounded up. */
static inline uint64_t smart_sb_first_chunk(uint32_t chunk_shift)
{
	uint64_t chunk = UINT64_C(1) << chunk_shift;

	return (SMART_SYS_SIZE + chunk - 1) >> chunk_shift;
}

#endif
