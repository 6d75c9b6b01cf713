/** @file
 * Global addresses: where a byte lives in the disaggregated memory.
 *
 * A smart_gaddr_t is 64 bits: the blade id in the top 16 bits and the byte
 * offset inside that blade's region in the low 48 bits.  The blade id is the
 * one the blade announces in its handshake (smartd --id), so a gaddr stored
 * in remote memory means the same thing to every compute process.
 * SMART_GADDR_NULL (all ones) is never a valid address.  Offsets with
 * SMART_GADDR_DM set address the blade's device memory instead of its
 * region (smart_dm_alloc, smart/alloc.h): a region is at most 2^47 bytes,
 * so the two never overlap.
 */
#ifndef SMART_GADDR_H
#define SMART_GADDR_H

#include <stdint.h>

typedef uint64_t smart_gaddr_t;

#define SMART_GADDR_NULL     UINT64_MAX
#define SMART_GADDR_OFF_BITS 48
#define SMART_GADDR_OFF_MASK ((UINT64_C(1) << SMART_GADDR_OFF_BITS) - 1)
#define SMART_GADDR_DM	     (UINT64_C(1) << 47)
/** Blade ids are limited so that per-worker tables stay small. */
#define SMART_BLADE_ID_MAX   1023

static inline smart_gaddr_t smart_gaddr(uint16_t blade, uint64_t off)
{
	return ((uint64_t)blade << SMART_GADDR_OFF_BITS) |
	       (off & SMART_GADDR_OFF_MASK);
}

static inline uint16_t smart_gaddr_blade(smart_gaddr_t a)
{
	return (uint16_t)(a >> SMART_GADDR_OFF_BITS);
}

static inline uint64_t smart_gaddr_off(smart_gaddr_t a)
{
	return a & SMART_GADDR_OFF_MASK;
}

/** 1 when a addresses device memory. */
static inline int smart_gaddr_is_dm(smart_gaddr_t a)
{
	return a != SMART_GADDR_NULL && (a & SMART_GADDR_DM);
}

static inline smart_gaddr_t smart_gaddr_add(smart_gaddr_t a, uint64_t delta)
{
	return smart_gaddr(smart_gaddr_blade(a), smart_gaddr_off(a) + delta);
}

#endif
