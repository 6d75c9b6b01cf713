/*
 * Limits that more than one process must agree on: a blade checks its
 * config against them and a client checks the blade's WELCOME against the
 * same numbers (wire/proto.c), so they belong to the wire, the layer both
 * sides share, and not to a public header of a layer above it.
 *
 * The public headers re-export them under their public names
 * (SMART_LEASE_MS_MIN/MAX in smart/blade.h, SMART_BLADE_ID_MAX and
 * SMART_GADDR_DM in smart/gaddr.h): an installed header cannot include
 * src/, so it repeats the number, and src/blade/blade.c, which sees both,
 * asserts at compile time that each pair agrees.
 */
#ifndef SMART_WIRE_LIMITS_H
#define SMART_WIRE_LIMITS_H

#include <stdint.h>

/* A blade's lease duration, ms (docs/leases.md). */
#define SMART_WIRE_LEASE_MS_MIN 10
#define SMART_WIRE_LEASE_MS_MAX 600000
/* Blade ids are 10 bits of a global address (smart/gaddr.h). */
#define SMART_WIRE_BLADE_ID_MAX 1023
/* A region's size: at least 1 MiB, below the device-memory bit of a
 * global address's offset (SMART_GADDR_DM, bit 47). */
#define SMART_WIRE_REGION_MIN	(UINT64_C(1) << 20)
#define SMART_WIRE_REGION_MAX	(UINT64_C(1) << 47)

#endif
