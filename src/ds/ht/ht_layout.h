/*
 * Smart-HT remote layouts (docs/ht.md).  Every structure here lives in
 * blade memory and is shared by all compute processes, so sizes and
 * offsets are fixed by _Static_assert and all fields are little-endian
 * host words.
 *
 * Invariants:
 * - A slot is 0 (empty) or fp:8 | len:8 | ptr:48, ptr being the offset of
 *   a 64-byte aligned KV block on the shard's blade; bit 0 of ptr is the
 *   TENTATIVE flag of an insert not yet committed (docs/ht.md §3), bit 1
 *   the FROZEN flag of a slot owned by a split in progress (§5).
 * - A KV block never changes once a slot points at it.
 * - A bucket's header (local depth, suffix) names the subtable it belongs
 *   to; a client whose cached directory disagrees refreshes it.
 */
#ifndef SMART_DS_HT_LAYOUT_H
#define SMART_DS_HT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "smart/ht.h"

#define HT_MAGIC		UINT64_C(0x3154482d54524d53)	/* "SMRT-HT1" */
#define HT_VERSION		1u
#define HT_DIR_ENTRIES		(1u << SMART_HT_DEPTH_MAX)
#define HT_SLOTS		7
#define HT_BUCKET		64u
#define HT_PAIR			(2 * HT_BUCKET)
#define HT_GROUP		(3 * HT_BUCKET)	/* main, overflow, main */
#define HT_BUCKETS_MAX		(1u << 20)
#define HT_KV_UNIT		64u
#define HT_KV_UNITS_MAX		255u

/* Table descriptor on the home blade; its root entry points here. */
struct ht_meta {
	uint64_t magic;
	uint32_t version;
	uint32_t nshards;
	uint32_t depth;		/* initial global depth */
	uint32_t buckets;	/* main buckets per subtable */
	uint64_t seed[2];
	uint64_t dir[SMART_HT_SHARDS_MAX];	/* gaddr of each directory */
	uint64_t rsvd[11];
};
_Static_assert(sizeof(struct ht_meta) == 256, "ht_meta size");
_Static_assert(offsetof(struct ht_meta, seed) == 24, "ht_meta seed");
_Static_assert(offsetof(struct ht_meta, dir) == 40, "ht_meta dir");

/* Directory entry: lock:8 | local depth:8 | subtable offset:48. */
#define HT_ENT_OFF(e)		((e) & UINT64_C(0xffffffffffff))
#define HT_ENT_DEPTH(e)		((unsigned)(((e) >> 48) & 0xff))
#define HT_ENT_LOCKED(e)	(((e) >> 56) != 0)
#define HT_ENT(depth, off)	(((uint64_t)(depth) << 48) | (off))
#define HT_ENT_LOCK		(UINT64_C(1) << 56)
#define HT_ENT_UNLOCKED(e)	((e) & ~(UINT64_C(0xff) << 56))
#define HT_DIR_LOCK		(UINT64_C(1) << 63)

/* One directory per shard. */
struct ht_dir {
	uint64_t global_depth;	/* bit 63: directory lock */
	uint64_t reclaim;	/* 1: replaced blocks are freed through the
				 * core's epochs (the shard's blade is the
				 * domain); 0: leaked, as in Smart-HT */
	uint64_t rsvd[6];
	uint64_t ent[HT_DIR_ENTRIES];
};
_Static_assert(sizeof(struct ht_dir) == 64 + 8 * 256, "ht_dir size");
_Static_assert(offsetof(struct ht_dir, ent) == 64, "ht_dir ent");

struct ht_bucket {
	uint32_t local_depth;
	uint32_t suffix;
	uint64_t slot[HT_SLOTS];
};
_Static_assert(sizeof(struct ht_bucket) == HT_BUCKET, "bucket size");
_Static_assert(offsetof(struct ht_bucket, slot) == 8, "bucket slots");


/* Slot word.  FROZEN (bit 1 of ptr) marks a slot that a split owns:
 * nobody else may change it until the split clears the bit. */
#define HT_SLOT_TENT		UINT64_C(1)
#define HT_SLOT_FROZEN		UINT64_C(2)
#define HT_SLOT_PTR_MASK	UINT64_C(0xffffffffffc0)
#define HT_SLOT_FP(s)		((uint8_t)((s) >> 56))
#define HT_SLOT_UNITS(s)	((unsigned)(((s) >> 48) & 0xff))
#define HT_SLOT_PTR(s)		((s) & HT_SLOT_PTR_MASK)
#define HT_SLOT(fp, units, ptr) \
	(((uint64_t)(fp) << 56) | ((uint64_t)(units) << 48) | (ptr))

/* KV block header; key bytes, then value bytes follow; the block is
 * rounded up to 64 bytes.  crc = CRC-32C of the block from key_len to the
 * end of the value. */
struct ht_kv {
	uint32_t crc;
	uint16_t key_len;
	uint16_t rsvd;
	uint32_t val_len;
	uint32_t rsvd2;
};
_Static_assert(sizeof(struct ht_kv) == 16, "kv header size");
_Static_assert(offsetof(struct ht_kv, key_len) == 4, "kv key_len");
_Static_assert(offsetof(struct ht_kv, val_len) == 8, "kv val_len");
_Static_assert(sizeof(struct ht_kv) + SMART_HT_KEY_MAX + SMART_HT_VALUE_MAX
	       <= HT_KV_UNIT * HT_KV_UNITS_MAX, "largest KV fits a slot len");

#endif
