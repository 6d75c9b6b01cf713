/** @file
 * Remote memory allocation and root entries, with no blade CPU involved.
 *
 * Each blade's region starts with a superblock (docs/layout.md): magic,
 * version, size, chunk size, an allocation cursor and 256 root entries.  A
 * worker claims whole chunks by CAS on the cursor and carves them into
 * power-of-two size classes (16 B .. chunk size / 2) kept per worker and per
 * blade.  smart_free() puts a block back on the freeing worker's list for
 * reuse.  Blocks of a chunk or more are whole chunk runs and are reused only
 * for the same chunk count.  Memory freed while other clients may still
 * read it must be protected by the caller (epochs or delayed reuse).
 * Chunks are never returned to the blade; the region is the upper bound.
 *
 * Root entries are 256 named 8-byte words, the naming service of the data
 * structures (e.g. where a hash table's directory lives).
 *
 * These functions may issue remote ops and sync: call them from a task or
 * the worker's main context, never with ops of your own queued but unsynced
 * (they would be synced too).  Thread safety: owner thread only.
 */
#ifndef SMART_ALLOC_H
#define SMART_ALLOC_H

#include <stdint.h>
#include <stddef.h>
#include "smart/ctx.h"
#include "smart/gaddr.h"
#include "smart/usage.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SMART_ROOT_ENTRIES 256

/** Allocate size bytes (aligned to min(size class, 4 KiB), at least 16) on
 * the blade.  SMART_ENOSPC when the blade is full, SMART_EINVAL for 0.
 * Thread: w's. */
int smart_alloc(smart_worker_t *w, uint16_t blade, size_t size,
		smart_gaddr_t *out);

/** Free a block from smart_alloc with the size it was allocated with.
 * SMART_EINVAL for NULL or an address/size that cannot be such a block.
 * Thread: w's. */
int smart_free(smart_worker_t *w, smart_gaddr_t addr, size_t size);

/**
 * Device memory: NIC on-chip memory a blade may offer next to its region
 * (smartd --dm-size; mlx5 NICs have 128-256 KiB, rxe none, shm emulates
 * it when asked), where a remote atomic costs no PCIe round trip to host
 * memory: Sherman keeps its lock table there (HOCL).  Addresses carry
 * SMART_GADDR_DM and every op works on them as on the region.  It is
 * handed out in SMART_DM_UNIT runs through one allocation word in the
 * blade's own area (a bit per unit, CAS), so at most SMART_DM_MAX of it is
 * ever used.  A run holds what its last user left: zero it.  What a killed
 * client allocated and never published stays allocated, as with
 * smart_alloc; so does a run whose allocating CAS executed but whose
 * completion failed (the call then returns the error).
 */
#define SMART_DM_UNIT 4096u
#define SMART_DM_MAX  (64u * SMART_DM_UNIT)

/** Allocate size bytes (rounded up to units) of the blade's device memory.
 * SMART_ENOTSUP when the blade has none (whatever the size), SMART_ENOSPC
 * when no run of that many free units is left, SMART_EINVAL for 0 or more
 * than SMART_DM_MAX.  Thread: w's. */
int smart_dm_alloc(smart_worker_t *w, uint16_t blade, size_t size,
		   smart_gaddr_t *out);

/** Give back a run from smart_dm_alloc with its size.  SMART_EINVAL for an
 * address or size no allocation can have, or a run not (all) allocated:
 * nothing is freed then.  As with smart_free, the size is trusted: the
 * word records which units are taken, not where runs start, so a size
 * larger than the run's frees a neighbour's units.  Thread: w's. */
int smart_dm_free(smart_worker_t *w, smart_gaddr_t addr, size_t size);

/** The blade's memory as it is now: one READ of its superblock, free table
 * and lease table (16 KiB).  SMART_EINVAL for NULL w or out, SMART_ENOENT
 * for a blade not joined, SMART_ENOMEM (scratch), the transport's errors.
 * The _sized form takes the caller's sizeof (docs/api.md §4).  Thread: w's. */
int smart_alloc_usage_sized(smart_worker_t *w, uint16_t blade,
			    struct smart_alloc_usage *out, size_t size);
static inline int smart_alloc_usage(smart_worker_t *w, uint16_t blade,
				    struct smart_alloc_usage *out)
{
	return smart_alloc_usage_sized(w, blade, out, sizeof(*out));
}

/** Root entries SMART_ROOT_NAMED_FIRST.. are the probe range of named
 * structures (a name hashes to an entry and probes onwards past used
 * ones): an entry there that was used holds SMART_ROOT_TOMB once released,
 * never 0 again, so that a probe going past it still finds what lies
 * beyond.  Below, entries are picked by number and go back to 0. */
#define SMART_ROOT_NAMED_FIRST 64u
#define SMART_ROOT_TOMB	       UINT64_C(1) /**< never a valid address */

/** Read, write or compare-and-swap root entry idx (0..255) of a blade
 * (cas: *old the value found, may be NULL).  SMART_EINVAL for NULL w, NULL
 * out (get) or idx >= SMART_ROOT_ENTRIES, SMART_ENOENT for a blade not
 * joined, the transport's errors.  Thread: w's. */
int smart_root_get(smart_worker_t *w, uint16_t blade, unsigned idx,
		   uint64_t *out);
int smart_root_set(smart_worker_t *w, uint16_t blade, unsigned idx,
		   uint64_t val);
int smart_root_cas(smart_worker_t *w, uint16_t blade, unsigned idx,
		   uint64_t expect, uint64_t desired, uint64_t *old);

/** Release root entry idx if it still holds `expect` (of several releasers
 * one succeeds): to 0, or to SMART_ROOT_TOMB in the named range.
 * SMART_ENOENT when it holds something else.  Thread: w's. */
int smart_root_release(smart_worker_t *w, uint16_t blade, unsigned idx,
		       uint64_t expect);

/** Structures by name (what smart_ht_*_named and smart_bt_*_named use):
 * names of 1..SMART_ROOT_NAME_MAX bytes, probed over entries
 * SMART_ROOT_NAMED_FIRST.. from the name's hash.  name_fn reads the name
 * of the structure whose descriptor root entry value `entry` points to,
 * into name (SMART_ROOT_NAME_MAX + 1 bytes, zeroed), or returns
 * SMART_ENOENT when that is not a structure of its kind. */
#define SMART_ROOT_NAME_MAX 47

typedef int (*smart_root_name_fn)(smart_worker_t *w, uint16_t blade,
				  uint64_t entry, char *name, void *arg);

/** Is name a valid name (1..SMART_ROOT_NAME_MAX bytes)?  Thread: any. */
int smart_root_name_ok(const char *name);

/** The entry holding the structure named `name`: its index and value.
 * SMART_ENOENT: none.  Thread: w's. */
int smart_root_find(smart_worker_t *w, uint16_t blade, const char *name,
		    smart_root_name_fn fn, void *arg, unsigned *idx,
		    uint64_t *entry);

/** Put `entry` (a descriptor holding `name`) into the first free entry of
 * the name's probe chain; its index in *idx.  SMART_EEXIST when the name
 * is there already (of concurrent publishers of one name exactly one
 * succeeds), SMART_ENOSPC when no entry is left.  Entries released in the
 * named range stay tombstones (smart_root_release), so a blade takes 192
 * named creates in its life, drops included.  Thread: w's. */
int smart_root_publish(smart_worker_t *w, uint16_t blade, const char *name,
		       smart_root_name_fn fn, void *arg, uint64_t entry,
		       unsigned *idx);

#ifdef __cplusplus
}
#endif
#endif
