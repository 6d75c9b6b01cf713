/*
 * Little-endian field access for everything that crosses a process or a
 * host (transport blobs, bootstrap and messaging frames, records): the one
 * byte-order policy of the library.  Each field is assembled byte by byte
 * with shifts, so the bytes in memory are little-endian whatever the host's
 * order and alignment; compilers turn these into a single load or store on
 * a little-endian host (gcc 12 -O2 on x86-64: one mov each way).  Header
 * only.  docs/protocol.md gives the formats.
 */
#ifndef SMART_UTIL_BYTES_H
#define SMART_UTIL_BYTES_H

#include <stdint.h>

static inline void smart__put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void smart__put32(uint8_t *p, uint32_t v)
{
	smart__put16(p, (uint16_t)v);
	smart__put16(p + 2, (uint16_t)(v >> 16));
}

static inline void smart__put64(uint8_t *p, uint64_t v)
{
	smart__put32(p, (uint32_t)v);
	smart__put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t smart__get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t smart__get32(const uint8_t *p)
{
	return smart__get16(p) | (uint32_t)smart__get16(p + 2) << 16;
}

static inline uint64_t smart__get64(const uint8_t *p)
{
	return smart__get32(p) | (uint64_t)smart__get32(p + 4) << 32;
}

#endif
