/*
 * Smart-BT remote layouts (docs/bt.md §2).  Everything here lives in blade
 * memory and is shared by every compute process: sizes and offsets are
 * fixed by _Static_assert, fields are little-endian host words.  Layout
 * version 5 (1 had no entry crc, 2 no redo records, 4 unseeded node crcs).
 *
 * Invariants:
 * - A node covers the keys in [low fence, high fence) (BT_F_LOW_INF /
 *   BT_F_HIGH_INF: unbounded); its right sibling covers [its high fence,
 *   ...).  Fences and siblings change only when the node splits, under its
 *   lock; a split never moves a key left, so a reader that finds its key
 *   at or above a node's high fence moves right (B-link).
 * - crc is the CRC-32C of bytes [4, node_size): version, header, fences
 *   and entries, seeded with the tree's salt (a hash of the descriptor's
 *   address and its random nonce): a node of another tree, or of an
 *   earlier tree at the same address, does not check (a block a stale
 *   cache names may be reused by either).  A writer holds the node's lock and writes either the
 *   whole node, or one entry and the first word (crc and version); a
 *   reader accepts a node only when the crc matches what it read, so a
 *   READ torn by a concurrent writer (rule 4: only 8-byte words are
 *   atomic) is retried, and passes by chance with probability 2^-32.
 * - A leaf entry carries its own crc (CRC-32C of the entry without it,
 *   seeded with the tree's descriptor address), so that a speculative
 *   lookup can trust one entry read alone (docs/bt.md §6); entries are
 *   copied whole, crc and all, when a split moves them.
 * - Leaf entries are unsorted (klen 0 = free); internal entries are sorted
 *   and `count` of them are used; child i covers [key i, key i+1), and
 *   `leftmost` covers [low fence, key 0).
 * - A node's lock word lives in its blade's lock table, at the hash of the
 *   node's offset; 0 is free, else a stamp (BT_W_*): the holder's lease
 *   id on that blade, its redo directory slot there, and, while it writes
 *   under the lock, the redo record it logged the write in and that
 *   write's sequence number (docs/bt.md §4).
 * - A blade's lock table is in its device memory when the tree was made
 *   with it there (lock_off then has SMART_GADDR_DM; docs/bt.md §4), else
 *   in its region; either way the same words, used the same way.
 * - Each blade's redo directory (at dir_off), BT_DIR_SLOTS words: id <<
 *   48 | offset of a redo area (BT_RECS records), claimed by one tree
 *   object at a time; id 0 with an area: free for the next one.
 * - A redo record (struct bt_rec, then npatch struct bt_patch_rec each
 *   followed by its bytes) is written, whole, before any byte it
 *   describes, on the same QP; its crc covers bytes [4, len) with commit
 *   read as 0.  A patch is current while its lock word still holds the
 *   patch's stamp.  A record spanning blades is written to each of them,
 *   and, once all copies and stamps landed, its decision copy's commit
 *   gets the first patch's stamp; only then is any node written: such a
 *   record is redone only when committed, and then whole.
 * - A dead leaf (BT_F_DEAD: its left neighbour emptied and took its
 *   entries and range, docs/bt.md §5) holds no entries (entry 0's key
 *   bytes carry 64 random bits naming its merge) and `leftmost` names the
 *   node that took them; it is out of the leaf chain, and is retired
 *   through the home blade's epochs once its parent forgets it, by
 *   whoever CASes its first word from the merge's image to the next
 *   version's (one claim, one retire).
 */
#ifndef SMART_DS_BT_LAYOUT_H
#define SMART_DS_BT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "smart/bt.h"
#include "smart/gaddr.h"

#define BT_MAGIC UINT64_C(0x31544254524d53) /* "SMRTBT1" */
#define BT_VERSION                                                             \
	5u /* 4: dir_off, lock tables in device
					 * memory; 5: CRCs seeded by the tree */

/* Tree descriptor on the home blade; its root entry points here. */
struct bt_meta {
	uint64_t magic;
	uint32_t version;
	uint32_t node_size;
	uint16_t key_max, val_max;
	uint16_t nblades, rsvd0;
	uint32_t locks; /* lock words per blade */
	uint32_t rsvd1;
	uint64_t root; /* gaddr of the root node: CAS'd */
	uint16_t blades[SMART_BT_BLADES_MAX];
	/* each blade's lock table: a region offset, or SMART_GADDR_DM | an
	 * offset in its device memory */
	uint64_t lock_off[SMART_BT_BLADES_MAX];
	uint64_t dir_off[SMART_BT_BLADES_MAX]; /* each blade's redo directory */
	/* drawn at random at create, never 0: with the descriptor's
	 * address it seeds every CRC of the tree's nodes and entries, so
	 * that a node proves which tree (and which life of a tree at that
	 * address) it belongs to */
	uint64_t nonce;
	uint64_t rsvd[2];
	char name[48]; /* NUL-padded; "" for a tree made by index */
};
_Static_assert(sizeof(struct bt_meta) == 400, "bt_meta size");
_Static_assert(offsetof(struct bt_meta, name) == 352, "bt_meta name");
_Static_assert(offsetof(struct bt_meta, dir_off) == 200, "bt_meta dirs");
_Static_assert(offsetof(struct bt_meta, root) == 32, "bt_meta root");
_Static_assert(offsetof(struct bt_meta, blades) == 40, "bt_meta blades");
_Static_assert(offsetof(struct bt_meta, lock_off) == 72, "bt_meta locks");
_Static_assert(offsetof(struct bt_meta, nonce) == 328, "bt_meta nonce");

#define BT_F_LOW_INF  1u
#define BT_F_HIGH_INF 2u
#define BT_F_DEAD     4u /* a leaf merged into its left neighbour */

struct bt_node_hdr {
	uint32_t crc;	  /* CRC-32C of bytes [4, node_size) */
	uint32_t version; /* +1 by every write */
	uint8_t level;	  /* 0: leaf */
	uint8_t flags;	  /* BT_F_* */
	uint16_t count;	  /* internal: entries in use */
	uint16_t low_len, high_len;
	uint64_t sibling;  /* gaddr of the right sibling, 0: none */
	uint64_t leftmost; /* internal: child below the first key */
	/* then the low and high fence keys, key_max bytes each, rounded up to
	 * 8 together; then the entries */
};
_Static_assert(sizeof(struct bt_node_hdr) == 32, "bt_node_hdr size");
_Static_assert(offsetof(struct bt_node_hdr, sibling) == 16, "hdr sibling");

/* Leaf entry: klen (0 = free) | vlen | crc | key[key_max] |
 * val[val_max], rounded up to 8 bytes.  Internal entry: child | klen |
 * key[key_max], rounded up to 8. */
struct bt_leaf_ent {
	uint16_t klen, vlen;
	uint32_t crc; /* of the entry's other bytes; 0 when free */
	uint8_t kv[];
};
struct bt_inner_ent {
	uint64_t child;
	uint16_t klen;
	uint8_t key[];
};
_Static_assert(offsetof(struct bt_inner_ent, key) == 10, "inner key");
_Static_assert(offsetof(struct bt_leaf_ent, crc) == 4, "leaf crc");
_Static_assert(offsetof(struct bt_leaf_ent, kv) == 8, "leaf kv");

/* Lock word stamps: id | dir slot << 16 | record << 26 | seq << 32. */
#define BT_W_ID(v)   ((uint16_t)(v))
#define BT_W_SLOT(v) ((unsigned)((v) >> 16) & 1023u)
#define BT_W_REC(v)  ((unsigned)((v) >> 26) & 63u)
#define BT_W_SEQ(v)  ((uint32_t)((v) >> 32))
#define BT_REC_NONE  63u /* held, nothing logged under it yet */
#define BT_W_MAKE(id, slot, rec, seq)                                          \
	((uint64_t)(uint16_t)(id) | (uint64_t)((slot)&1023u) << 16 |           \
	 (uint64_t)((rec)&63u) << 26 | (uint64_t)(uint32_t)(seq) << 32)
/* Redo directory entries: id << 48 | area offset (a gaddr's layout). */
#define BT_DIR_ID(e)   ((uint16_t)((e) >> SMART_GADDR_OFF_BITS))
#define BT_DIR_AREA(e) ((e)&SMART_GADDR_OFF_MASK)
#define BT_DIR_MAKE(id, area)                                                  \
	((uint64_t)(id) << SMART_GADDR_OFF_BITS | ((area)&SMART_GADDR_OFF_MASK))
#define BT_DIR_SLOTS   1024u
#define BT_RECS	       16u /* redo records per area */
#define BT_PATCHES_MAX 3u  /* a merge: the leaf, its neighbour, the parent */

struct bt_rec {
	uint32_t crc;	 /* CRC-32C of bytes [4, len), commit as 0 */
	uint32_t len;	 /* of the whole record */
	uint32_t npatch; /* 1..BT_PATCHES_MAX */
	uint32_t rsvd;
	/* a write spanning blades: its decision copy, this record on the
	 * first patch's blade (0: one blade, no commit needed) */
	uint64_t at;
	/* in the decision copy: the first patch's stamp once every copy and
	 * every stamp landed (the commit point); 0 before */
	uint64_t commit;
};
struct bt_patch_rec {
	uint64_t node;	   /* gaddr of the node written */
	uint64_t word;	   /* gaddr of its lock word */
	uint64_t stamp;	   /* the word's value while this is current */
	uint32_t off, len; /* bytes [off, off + len) of the node */
			   /* then len bytes, padded to 8 */
};
_Static_assert(sizeof(struct bt_rec) == 32, "bt_rec size");
_Static_assert(offsetof(struct bt_rec, commit) == 24, "bt_rec commit");
_Static_assert(sizeof(struct bt_patch_rec) == 32, "bt_patch_rec size");
_Static_assert(BT_RECS <= BT_REC_NONE, "record index fits a stamp");

#define BT_LOCKS_MAX	 (1u << 24) /* lock words per blade */
#define BT_LOCKS_DEFAULT 65536u	    /* in host memory: 512 KiB */
#define BT_DM_LOCKS_MIN	 4096u	    /* the least worth device memory */
#define BT_NODE_MIN	 512u
#define BT_NODE_MAX	 ((unsigned)SMART_BT_NODE_MAX)
#define BT_MIN_ENTRIES	 4u

#endif
