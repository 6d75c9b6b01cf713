/*
 * The superblock: the first bytes of every blade region (docs/layout.md).
 *
 * The blade formats it once at creation; afterwards only clients touch it,
 * with one-sided ops: the allocation cursor by CAS (claiming chunks) and the
 * root entries by READ/WRITE/CAS.  Chunk 0 holds the superblock, so the
 * cursor starts at 1.  All fields are little-endian 8-byte-aligned words.
 */
#ifndef SMART_WIRE_SUPERBLOCK_H
#define SMART_WIRE_SUPERBLOCK_H

#include <stddef.h>
#include <stdint.h>

#define SMART_SB_MAGIC   UINT64_C(0x31424c4254524d53) /* "SMRTBLB1" */
#define SMART_SB_VERSION 1
#define SMART_SB_ROOTS   256

struct smart_superblock {
	uint64_t magic;
	uint32_t version;
	uint32_t chunk_shift;	/* chunk size = 1 << chunk_shift */
	uint64_t size;		/* region bytes */
	uint64_t cursor;	/* next free chunk index, advanced by CAS */
	uint64_t nchunks;	/* size >> chunk_shift */
	uint16_t blade_id;
	uint16_t _pad16[3];
	uint64_t reserved[2];
	uint64_t root[SMART_SB_ROOTS];
};

_Static_assert(offsetof(struct smart_superblock, magic) == 0, "sb magic");
_Static_assert(offsetof(struct smart_superblock, chunk_shift) == 12, "sb shift");
_Static_assert(offsetof(struct smart_superblock, size) == 16, "sb size");
_Static_assert(offsetof(struct smart_superblock, cursor) == 24, "sb cursor");
_Static_assert(offsetof(struct smart_superblock, nchunks) == 32, "sb nchunks");
_Static_assert(offsetof(struct smart_superblock, root) == 64, "sb root");
_Static_assert(sizeof(struct smart_superblock) == 64 + 8 * SMART_SB_ROOTS,
	       "sb size");

#define SMART_SB_OFF_CURSOR offsetof(struct smart_superblock, cursor)
#define SMART_SB_OFF_ROOT(i) (offsetof(struct smart_superblock, root) + 8 * (i))

/* Smallest and largest chunk sizes a blade accepts. */
#define SMART_CHUNK_SHIFT_MIN 12
#define SMART_CHUNK_SHIFT_MAX 30

#endif
