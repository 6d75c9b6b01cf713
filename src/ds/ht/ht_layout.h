/*
 * Smart-HT remote layouts (docs/ht.md §2).  Every structure here lives in
 * blade memory and is shared by all compute processes, so sizes and
 * offsets are fixed by _Static_assert and all fields are little-endian
 * host words.  Layout version 2.
 *
 * Invariants:
 * - A slot is 0 (empty) or fp:8 | len:8 | ptr:48, ptr being the offset of
 *   a 64-byte aligned KV block on the shard's blade; bit 0 of ptr is the
 *   TENTATIVE flag of an insert not yet committed (docs/ht.md §3), bit 1
 *   the FROZEN flag of a slot owned by a split in progress (§5).
 * - A KV block never changes once a slot points at it; its `owner` is the
 *   lease id (on the shard's blade) of the client that wrote it, so a
 *   tentative slot names its holder (§7).
 * - A directory entry names its lock holder (a lease id, 0 = unlocked),
 *   the subtable's local depth and its offset; a bucket's header (local
 *   depth, suffix) names the subtable it belongs to, and a client whose
 *   cached directory disagrees refreshes it.
 * - sib[s] is non-zero only while the canonical entry s is locked by a
 *   split: it records the sibling being built and the phase, so that
 *   whoever takes over a dead splitter's lock can finish or undo it.
 */
#ifndef SMART_DS_HT_LAYOUT_H
#define SMART_DS_HT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "smart/ht.h"

#define HT_MAGIC	UINT64_C(0x3154482d54524d53) /* "SMRT-HT1" */
#define HT_VERSION	2u
#define HT_DIR_ENTRIES	(1u << SMART_HT_DEPTH_MAX)
#define HT_SLOTS	7
#define HT_BUCKET	64u
#define HT_PAIR		(2 * HT_BUCKET)
#define HT_GROUP	(3 * HT_BUCKET) /* main, overflow, main */
#define HT_BUCKETS_MAX	(1u << 20)
#define HT_KV_UNIT	64u
#define HT_KV_UNITS_MAX 255u

/* Table descriptor on the home blade; its root entry points here. */
#define HT_NAME_MAX 47 /* bytes of a table name, NUL excluded */
struct ht_meta {
	uint64_t magic;
	uint32_t version;
	uint32_t nshards;
	uint32_t depth;			   /* initial global depth */
	uint32_t buckets;		   /* main buckets per subtable */
	uint64_t seed[2];		   /* random, drawn at create */
	uint64_t dir[SMART_HT_SHARDS_MAX]; /* gaddr of each directory */
	char name[HT_NAME_MAX + 1];	   /* NUL-padded; "" for a table made by
					 * root index */
	uint64_t rsvd[5];
};
_Static_assert(sizeof(struct ht_meta) == 256, "ht_meta size");
_Static_assert(offsetof(struct ht_meta, seed) == 24, "ht_meta seed");
_Static_assert(offsetof(struct ht_meta, dir) == 40, "ht_meta dir");
_Static_assert(offsetof(struct ht_meta, name) == 168, "ht_meta name");

/* Root entries: named tables probe [SMART_ROOT_NAMED_FIRST, 256); a
 * dropped table's entry there holds SMART_ROOT_TOMB (smart/alloc.h). */

/* Directory entry: holder:16 | local depth:6 | subtable offset / 64:42.
 * holder is the lease id of the client holding the split lock, 0 when
 * unlocked; subtables are 64-byte aligned. */
#define HT_ENT_OFF_MASK	   ((UINT64_C(1) << 42) - 1)
#define HT_ENT_OFF(e)	   (((e)&HT_ENT_OFF_MASK) << 6)
#define HT_ENT_DEPTH(e)	   ((unsigned)(((e) >> 42) & 0x3f))
#define HT_ENT_HOLDER(e)   ((uint16_t)((e) >> 48))
#define HT_ENT_LOCKED(e)   (HT_ENT_HOLDER(e) != 0)
#define HT_ENT(depth, off) (((uint64_t)(depth) << 42) | ((off) >> 6))
#define HT_ENT_LOCK(id)	   ((uint64_t)(id) << 48)
#define HT_ENT_UNLOCKED(e) ((e) & ((UINT64_C(1) << 48) - 1))

/* Split record sib[s]: phase:2 | from depth:6 | sibling offset / 64:42
 * (0: none).  BUILD: S is being frozen and N built, nothing published;
 * PUBLISH: N is complete and the directory is being (or was) switched. */
#define HT_SIB_BUILD   UINT64_C(1)
#define HT_SIB_PUBLISH UINT64_C(2)
#define HT_SIB(phase, ld, off)                                                 \
	(((phase) << 62) | ((uint64_t)(ld) << 42) | ((off) >> 6))
#define HT_SIB_PHASE(r) ((r) >> 62)
#define HT_SIB_DEPTH(r) ((unsigned)(((r) >> 42) & 0x3f))
#define HT_SIB_OFF(r)	(((r)&HT_ENT_OFF_MASK) << 6)

/* What another client wrote is checked before it is used (shifts by a
 * depth, indexes from it, a sibling to free): an entry's depth is at most
 * the maximum; a record of canonical index s, whose entry is ent, names a
 * phase, a depth below the maximum with s below 2^depth, a sibling that
 * is not S, and the entry at that depth (or one more, once published). */
static inline int smart__ht_ent_ok(uint64_t e)
{
	return HT_ENT_DEPTH(e) <= SMART_HT_DEPTH_MAX;
}

static inline int smart__ht_sib_ok(uint64_t r, unsigned s, uint64_t ent)
{
	unsigned ld = HT_SIB_DEPTH(r), ed = HT_ENT_DEPTH(ent);

	if (ld >= SMART_HT_DEPTH_MAX || s >= (1u << ld) || !HT_SIB_OFF(r) ||
	    HT_SIB_OFF(r) == HT_ENT_OFF(ent))
		return 0;
	if (HT_SIB_PHASE(r) == HT_SIB_BUILD)
		return ed == ld;
	return HT_SIB_PHASE(r) == HT_SIB_PUBLISH && (ed == ld || ed == ld + 1);
}

/* One directory per shard: the header and the entries (what a client
 * caches, read in one go), then the split records (read by recovery). */
struct ht_dir {
	uint64_t global_depth; /* the deepest local depth */
	uint64_t reclaim;      /* 1: replaced blocks are freed through the
				 * core's epochs (the shard's blade is the
				 * domain); 0: leaked, as in Smart-HT */
	uint64_t rsvd[6];
	uint64_t ent[HT_DIR_ENTRIES];
	uint64_t sib[HT_DIR_ENTRIES];
};
#define HT_DIR_CACHED (64 + 8 * HT_DIR_ENTRIES) /* hdr + ent */
_Static_assert(sizeof(struct ht_dir) == 64 + 16 * 256, "ht_dir size");
_Static_assert(offsetof(struct ht_dir, ent) == 64, "ht_dir ent");
_Static_assert(offsetof(struct ht_dir, sib) == HT_DIR_CACHED, "ht_dir sib");

struct ht_bucket {
	uint32_t local_depth;
	uint32_t suffix;
	uint64_t slot[HT_SLOTS];
};
_Static_assert(sizeof(struct ht_bucket) == HT_BUCKET, "bucket size");
_Static_assert(offsetof(struct ht_bucket, slot) == 8, "bucket slots");

/* Slot word.  FROZEN (bit 1 of ptr) marks a slot that a split owns:
 * nobody else may change it until the split clears the bit. */
#define HT_SLOT_TENT	 UINT64_C(1)
#define HT_SLOT_FROZEN	 UINT64_C(2)
#define HT_SLOT_PTR_MASK UINT64_C(0xffffffffffc0)
#define HT_SLOT_FP(s)	 ((uint8_t)((s) >> 56))
#define HT_SLOT_UNITS(s) ((unsigned)(((s) >> 48) & 0xff))
#define HT_SLOT_PTR(s)	 ((s)&HT_SLOT_PTR_MASK)
#define HT_SLOT(fp, units, ptr)                                                \
	(((uint64_t)(fp) << 56) | ((uint64_t)(units) << 48) | (ptr))

/* KV block header; key bytes, then value bytes follow; the block is
 * rounded up to 64 bytes.  crc = CRC-32C of the block from key_len to the
 * end of the value (owner included). */
struct ht_kv {
	uint32_t crc;
	uint16_t key_len;
	uint16_t owner; /* writer's lease id on the shard's blade */
	uint32_t val_len;
	uint32_t rsvd2;
};
_Static_assert(sizeof(struct ht_kv) == 16, "kv header size");
_Static_assert(offsetof(struct ht_kv, key_len) == 4, "kv key_len");
_Static_assert(offsetof(struct ht_kv, owner) == 6, "kv owner");
_Static_assert(offsetof(struct ht_kv, val_len) == 8, "kv val_len");
_Static_assert(sizeof(struct ht_kv) + SMART_HT_KEY_MAX + SMART_HT_VALUE_MAX <=
		       HT_KV_UNIT * HT_KV_UNITS_MAX,
	       "largest KV fits a slot len");

#endif
