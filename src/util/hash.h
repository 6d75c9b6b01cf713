/*
 * Internal view of the hashing module (hash.c): the portable CRC-32C path,
 * exported so tests can check it against the SSE4.2 path that
 * smart_crc32c() picks on CPUs that have it.
 */
#ifndef SMART_UTIL_HASH_H
#define SMART_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Table-driven CRC-32C with the same contract as smart_crc32c(). */
uint32_t smart__crc32c_sw(uint32_t crc, const void *data, size_t len);

/* 1 when smart_crc32c() uses the SSE4.2 crc32 instruction, else 0. */
int smart__crc32c_hw_available(void);

#endif
