/*
 * Remote layouts of the services every client shares on a blade (docs/design.md
 * §5, docs/layout.md, docs/leases.md): the lease table, the epoch table
 * of the reclamation scheme, and the blade-wide free lists.  They live in
 * the blade's own area (superblock.h) at fixed offsets; every word is a
 * little-endian 8-byte word changed by one-sided ops (and, for the lease
 * table, by the blade's control thread at handshake and disconnect).
 *
 * Invariants:
 *  - A lease word is 0 (free) or id:16 | FENCED:1 | counter:47.  Its owner
 *    only ever CASes counter -> counter + 1; anyone else only ever CASes a
 *    word to word | FENCED.  A fenced word never loses FENCED until the
 *    blade hands the slot to a new client (a new id).
 *  - An announcement word is 0 (free) or client:16 | ACTIVE:1 | epoch:47;
 *    only the worker that claimed it writes it, except that a word naming
 *    a dead (fenced or gone) client may be CASed back to 0 by anyone.
 *  - A free-list head is tag:20 | (offset >> 4):44, 0 = empty; every
 *    successful CAS of a head changes its tag, so a head value is never
 *    reused while a popper may hold it (ABA), up to 2^20 changes.
 */
#ifndef SMART_WIRE_SERVICES_H
#define SMART_WIRE_SERVICES_H

#include <stddef.h>
#include <stdint.h>

#include "wire/superblock.h"

/* ---- leases ------------------------------------------------------------ */

#define SMART_LEASE_SLOTS    1024
#define SMART_LEASE_FENCED   (UINT64_C(1) << 47)
#define SMART_LEASE_CTR_MASK (SMART_LEASE_FENCED - 1)

static inline uint16_t smart_lease_word_id(uint64_t w)
{
	return (uint16_t)(w >> 48);
}

static inline uint64_t smart_lease_word(uint16_t id, uint64_t ctr)
{
	return (uint64_t)id << 48 | (ctr & SMART_LEASE_CTR_MASK);
}

/* The slot of a client id: ids are 1..65535, slots repeat every 1024. */
static inline unsigned smart_lease_slot_of(uint16_t id)
{
	return id % SMART_LEASE_SLOTS;
}

struct smart_lease_slot {
	uint64_t word;	 /* id | FENCED | counter */
	uint64_t cached; /* bytes the client holds for reuse (allocator
				 * caches), reported by the client itself */
};

struct smart_lease_table {
	uint64_t slots_used; /* every slot at or past it is free (0):
				 * the blade raises it (never lowers) as it
				 * hands out slots, so readers of the table
				 * read only its used prefix; 0 from a blade
				 * that predates it: read all */
	uint64_t lease_ms;   /* a copy of the superblock's, for readers of
				 * the table alone (written; nobody reads it
				 * yet: clients learn it at the handshake) */
	uint64_t rsvd[6];
	struct smart_lease_slot slot[SMART_LEASE_SLOTS];
};

_Static_assert(sizeof(struct smart_lease_slot) == 16, "lease slot");
_Static_assert(offsetof(struct smart_lease_table, slot) == 64, "lease slots");
_Static_assert(SMART_LEASE_OFF + sizeof(struct smart_lease_table) <=
		       SMART_EPOCH_OFF,
	       "lease table fits");

#define SMART_LEASE_SLOT_OFF(i)                                                \
	(SMART_LEASE_OFF + offsetof(struct smart_lease_table, slot) + 16 * (i))

/* ---- epochs (reclamation) ------------------------------------------------ */

#define SMART_EPOCH_SLOTS  1024
#define SMART_EPOCH_ACTIVE (UINT64_C(1) << 47)
#define SMART_EPOCH_MASK   (SMART_EPOCH_ACTIVE - 1)

static inline uint64_t smart_epoch_word(uint16_t client, int active,
					uint64_t epoch)
{
	return (uint64_t)client << 48 | (active ? SMART_EPOCH_ACTIVE : 0) |
	       (epoch & SMART_EPOCH_MASK);
}

struct smart_epoch_table {
	uint64_t global; /* G, advanced by FAA */
	uint64_t rsvd[7];
	uint64_t ann[SMART_EPOCH_SLOTS];
};

_Static_assert(offsetof(struct smart_epoch_table, ann) == 64, "epoch ann");
_Static_assert(SMART_EPOCH_OFF + sizeof(struct smart_epoch_table) <=
		       SMART_FREE_OFF,
	       "epoch table fits");

#define SMART_EPOCH_GLOBAL_OFF SMART_EPOCH_OFF
#define SMART_EPOCH_ANN_OFF(i)                                                 \
	(SMART_EPOCH_OFF + offsetof(struct smart_epoch_table, ann) + 8 * (i))

/* ---- free lists ----------------------------------------------------------- */

#define SMART_FREE_CLASSES    64 /* by log2 of the block size */
#define SMART_FREE_RUNS	      64 /* by log2 of the run's chunk count */
#define SMART_FREE_BATCH      62 /* blocks per batch node */
#define SMART_FREE_NODE_SHIFT 9	 /* a batch node is a 512-byte block */
#define SMART_FREE_TAG_SHIFT  44
#define SMART_FREE_OFF_MASK   ((UINT64_C(1) << SMART_FREE_TAG_SHIFT) - 1)

struct smart_free_table {
	uint64_t pooled; /* bytes on the lists below (FAA) */
	uint64_t rsvd[7];
	uint64_t cls[SMART_FREE_CLASSES]; /* batch nodes of one class */
	uint64_t run[SMART_FREE_RUNS];	  /* runs of whole chunks */
};

_Static_assert(offsetof(struct smart_free_table, cls) == 64, "free cls");
_Static_assert(offsetof(struct smart_free_table, run) == 64 + 8 * 64,
	       "free run");
_Static_assert(SMART_FREE_OFF + sizeof(struct smart_free_table) <=
		       SMART_SYS_SIZE,
	       "free table fits");

#define SMART_FREE_POOLED_OFF SMART_FREE_OFF
#define SMART_FREE_CLS_OFF(c) (SMART_FREE_OFF + 64 + 8 * (c))
#define SMART_FREE_RUN_OFF(j) (SMART_FREE_OFF + 64 + 8 * 64 + 8 * (j))

/* A batch of freed blocks of one class, written into a free 512-byte-
 * aligned block (the node).  For classes of 512 bytes and more the node is
 * one of the freed blocks itself (node_class == the list's class) and is
 * not in off[]; for smaller classes it is a block of node_class >= 9 that
 * the popper takes along too. */
struct smart_free_node {
	uint64_t next;	    /* offset of the next node, 0 = last */
	uint32_t count;	    /* blocks in off[] */
	uint8_t node_class; /* log2 size of the node block itself */
	uint8_t rsvd[3];
	uint64_t off[SMART_FREE_BATCH];
};

_Static_assert(sizeof(struct smart_free_node) == (1u << SMART_FREE_NODE_SHIFT),
	       "free node is 512 bytes");

/* A run of free chunks carries its link in its first 16 bytes. */
struct smart_free_run {
	uint64_t next; /* offset of the next run, 0 = last */
	uint64_t nchunks;
};

static inline uint64_t smart_free_head(uint64_t off, uint64_t tag)
{
	return tag << SMART_FREE_TAG_SHIFT | (off >> 4);
}

static inline uint64_t smart_free_head_off(uint64_t head)
{
	return (head & SMART_FREE_OFF_MASK) << 4;
}

static inline uint64_t smart_free_head_tag(uint64_t head)
{
	return head >> SMART_FREE_TAG_SHIFT;
}

/* ---- usage ------------------------------------------------------------- */

/* What a blade's memory is doing (struct smart_alloc_usage, public in
 * include/smart/usage.h), from copies of its superblock, lease table and
 * free table's pooled word (pure; the counters move while clients run,
 * so any recent copy will do). */
struct smart_alloc_usage;
/* 0, or SMART_EPROTO for a superblock that makes no sense. */
int smart__wire_usage(const struct smart_superblock *sb,
		      const struct smart_lease_table *lt, uint64_t pooled,
		      struct smart_alloc_usage *out);

#endif
