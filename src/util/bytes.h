/*
 * Little-endian field access for wire blobs and records that cross
 * processes (transport blobs, bootstrap messages): unaligned-safe loads and
 * stores through memcpy.  Header only.  The project targets little-endian
 * hosts (x86-64, AArch64); the blobs say so in docs/protocol.md.
 */
#ifndef SMART_UTIL_BYTES_H
#define SMART_UTIL_BYTES_H

#include <stdint.h>
#include <string.h>

static inline void smart__put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static inline uint16_t smart__get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static inline void smart__put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static inline void smart__put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static inline uint32_t smart__get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t smart__get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

#endif
