/*
 * Smart-DTX remote layouts (docs/dtx.md §2).  Everything here lives in
 * blade memory and is shared by every client: sizes and offsets are fixed
 * by _Static_assert, fields are little-endian host words.
 *
 * Invariants:
 * - A table copy (primary or backup) is an array of buckets of
 *   SMART_DTX_BUCKET_SLOTS records of rec_size bytes (32 + the value size
 *   rounded up to 8); a key lives in one of its two buckets, in the same
 *   slot on every copy.
 * - A record's lock word is used on the primary only: 0 free, else a
 *   stamp DTX_LOCK(id, log slot, seq): the holder's lease id on that
 *   blade, the log slot of its transaction and the transaction's number.
 *   A recoverer rolling a dead transaction back takes the word over with
 *   its own id and the dead one's (slot, seq).
 * - crc (the low half of `meta`) is the CRC-32C, seeded with the database's
 *   salt, of key, version, the high half of meta and the value bytes; a
 *   record is written only under its lock, so a READ that finds the crc
 *   wrong while the word is free was torn by a write that just ended and
 *   is read again (contract rule 4: only 8-byte words are atomic).
 * - version 0: the slot was never written (its other words mean nothing).
 *   Every commit of a record adds 1 to its version, a delete too (valid
 *   cleared), so equal versions mean no commit in between.
 * - An unlocked record with a version always has a right crc: an insert's
 *   intent (the key word written under the lock so that a concurrent
 *   insert of the same key sees it) is undone before the lock goes.
 * - A log slot (log_size bytes, at log_off + slot * log_size on every
 *   blade) holds the undo log of its owner's current transaction on each
 *   blade that transaction writes, written whole before any record is;
 *   `decision` is written only by recoverers, with a CAS, on the blade of
 *   entry 0's primary: (seq << 32) | DTX_DEC_*.
 * - The owner table (log_slots words on the home blade): 0 free, else
 *   (lease id on the home blade << 48) | 1.
 */
#ifndef SMART_DS_DTX_LAYOUT_H
#define SMART_DS_DTX_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "smart/dtx.h"

#define DTX_MAGIC   UINT64_C(0x31585444545253) /* "SRTDTX1" */
#define DTX_VERSION 1u

/* A record's header; the value follows. */
struct dtx_rec {
	uint64_t lock;
	uint64_t key;
	uint64_t version;
	uint64_t meta; /* crc:32 | len:16 | valid:1 */
};
_Static_assert(offsetof(struct dtx_rec, lock) == 0, "lock first");
_Static_assert(offsetof(struct dtx_rec, key) == 8, "dtx_rec layout");
_Static_assert(offsetof(struct dtx_rec, version) == 16, "dtx_rec layout");
_Static_assert(offsetof(struct dtx_rec, meta) == 24, "dtx_rec layout");
_Static_assert(sizeof(struct dtx_rec) == 32, "dtx_rec layout");

#define DTX_META(crc, len, valid)                                              \
	((uint64_t)(uint32_t)(crc) | (uint64_t)(len) << 32 |                   \
	 (uint64_t)((valid) != 0) << 48)
#define DTX_META_CRC(m)	  ((uint32_t)(m))
#define DTX_META_LEN(m)	  ((unsigned)((m) >> 32 & 0xffff))
#define DTX_META_VALID(m) ((unsigned)((m) >> 48 & 1))

#define DTX_LOCK(id, slot, seq)                                                \
	((uint64_t)(id) << 48 | (uint64_t)(slot) << 32 | (uint32_t)(seq))
#define DTX_LOCK_ID(l)	 ((uint16_t)((l) >> 48))
#define DTX_LOCK_SLOT(l) ((unsigned)((l) >> 32 & 0xffff))
#define DTX_LOCK_SEQ(l)	 ((uint32_t)(l))
#define DTX_LOCK_TXN(l)	 ((l)&UINT64_C(0xffffffffffff)) /* slot, seq */

/* A log slot's header; entries follow. */
struct dtx_log_hdr {
	uint64_t decision; /* recoverers only */
	uint64_t head;	   /* DTX_HEAD(seq, nent) */
	uint32_t crc;	   /* of head and [32, bytes) */
	uint32_t bytes;	   /* header and entries */
	uint64_t reserved;
};
_Static_assert(offsetof(struct dtx_log_hdr, head) == 8, "log layout");
_Static_assert(offsetof(struct dtx_log_hdr, crc) == 16, "log layout");
_Static_assert(sizeof(struct dtx_log_hdr) == 32, "log layout");

#define DTX_HEAD(seq, n) ((uint64_t)(seq) << 32 | (uint64_t)(n) << 16 | 0xd7)
#define DTX_HEAD_SEQ(h)	 ((uint32_t)((h) >> 32))
#define DTX_HEAD_N(h)	 ((unsigned)((h) >> 16 & 0xffff))
#define DTX_HEAD_OK(h)	 (((h)&0xffff) == 0xd7)

#define DTX_DEC_BACK	1u
#define DTX_DEC_FORWARD 2u
#define DTX_DEC(seq, d) ((uint64_t)(seq) << 32 | (d))

/* One undo entry: the record's old bytes [8, rec_size) follow. */
struct dtx_log_ent {
	uint64_t rec;  /* the primary copy's address */
	uint64_t lock; /* the stamp the transaction held it with */
	uint32_t table;
	uint32_t slot; /* record index in the table */
	uint64_t reserved;
};
_Static_assert(sizeof(struct dtx_log_ent) == 32, "log entry layout");

/* One table in the descriptor. */
struct dtx_meta_table {
	uint32_t id, value_size, buckets, rec_size;
	uint16_t ncopies; /* 1 + backups */
	uint16_t blade[1 + SMART_DTX_REPLICAS_MAX];
	uint64_t off[1 + SMART_DTX_REPLICAS_MAX]; /* copy bases */
};
_Static_assert(sizeof(struct dtx_meta_table) == 48, "table layout");

/* The database descriptor on the home blade; its root entry points here. */
struct dtx_meta {
	uint64_t magic;
	uint32_t version, ntables;
	uint32_t nblades, log_slots;
	uint32_t log_size, max_writes;
	uint32_t salt, reserved;
	uint64_t owner_off; /* owner table, on the home blade */
	uint16_t blades[SMART_DTX_BLADES_MAX];
	uint64_t log_off[SMART_DTX_BLADES_MAX];
	struct dtx_meta_table t[SMART_DTX_TABLES_MAX];
	char name[48];
};
_Static_assert(offsetof(struct dtx_meta, owner_off) == 40, "meta layout");
_Static_assert(offsetof(struct dtx_meta, log_off) == 80, "meta layout");
_Static_assert(offsetof(struct dtx_meta, t) == 208, "meta layout");
_Static_assert(sizeof(struct dtx_meta) == 1024, "meta layout");

#endif
