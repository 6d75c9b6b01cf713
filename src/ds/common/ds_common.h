/*
 * What every data structure of src/ds needs the same way: a descriptor
 * read or written through registered scratch, a descriptor found from a
 * root entry's value, and the bounds check of an area a peer's descriptor
 * names.  Public API only, like the structures themselves.
 *
 * Invariants: nothing here keeps state; a descriptor is accepted only
 * when its structure's own validity check says so, after a READ of all
 * of it.
 */
#ifndef SMART_DS_COMMON_H
#define SMART_DS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "smart/smart.h"

/* len bytes at a to (write 0) or from (write 1) buf, through registered
 * scratch: ops on caller memory are limited to SMART_BOUNCE_MAX bytes. */
int smart__ds_copy(smart_worker_t *w, smart_gaddr_t a, void *buf, size_t len,
		   int write);

/* The descriptor of len bytes that root entry value maddr points to on
 * blade, if valid() accepts it: SMART_ENOENT for a value that cannot be a
 * descriptor there (0, a tombstone, misaligned, another blade's), one
 * out of the region, or one valid() refuses (another structure's). */
int smart__ds_desc_get(smart_worker_t *w, uint16_t blade, uint64_t maddr,
		       void *desc, size_t len, int (*valid)(const void *desc));

/* An area of len bytes at offset off, from a peer's descriptor: set,
 * aligned, a gaddr offset, and wholly on its side of SMART_GADDR_DM: in
 * device memory inside what smart_dm_alloc can hand out, in the region
 * below the bit (which every op then checks against the region's size),
 * so that no address inside it carries into the other or into the blade
 * field. */
int smart__ds_area_ok(uint64_t off, uint64_t len);

/* Take the caller's config struct src (leading uint32_t struct_size)
 * over dst, the library's struct of `known` bytes and alignment `align`
 * holding the defaults: the rule of src/util/config.h (docs/api.md,
 * "Extensible structs"), which this layer may not include.  0, or
 * SMART_EINVAL, dst untouched. */
int smart__ds_config_take(void *dst, size_t known, size_t align,
			  const void *src);

/* Give the caller's output of `size` bytes (the sizeof its header said)
 * the library's struct `full` of `known` bytes: the common prefix, then
 * zeros (src/util/config.h's rule).  0, or SMART_EINVAL, out untouched. */
int smart__ds_out_give(void *out, size_t size, const void *full, size_t known);

#endif
