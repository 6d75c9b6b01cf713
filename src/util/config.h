/*
 * Extensible config structs (docs/api.md, "Extensible structs"): every
 * public config struct opens with `uint32_t struct_size`, which its
 * smart_<obj>_config_init() sets to the sizeof the caller was compiled
 * with.  The library takes a caller's struct over its own defaults:
 *   - struct_size under 4 (never initialised) or over
 *     SMART__CONFIG_SIZE_MAX: SMART_EINVAL;
 *   - struct_size not a multiple of the struct's alignment: SMART_EINVAL.
 *     No header's sizeof is such a size (a newer struct's alignment is at
 *     least the older's, and divides its sizeof), and a size that is one
 *     may end inside a field, which would be taken half from the caller,
 *     half from the default (a pointer of two halves).  A multiple of the
 *     alignment A cuts no scalar field: each is at most A bytes, aligned to
 *     its size, which divides A; an array only between its elements;
 *   - smaller than the library's struct (a caller built against an
 *     older header): its fields are taken, the newer ones keep their
 *     defaults;
 *   - larger (a newer header): taken only when every byte past the
 *     library's struct is zero (fields this library does not know, left
 *     absent), else SMART_EINVAL: a setting would be silently ignored.
 * Invariant (what makes a smaller size safe): fields are only ever added
 * at the end, each starting at or past every older sizeof of the struct.
 *
 * Output structs (counters, usage, geometry) grow the same way, the other
 * way round: the public header's static inline passes the library the
 * sizeof its caller was built with (smart_bt_stats -> smart_bt_stats_sized
 * (..., sizeof(*out))), and the library writes that many bytes and no
 * more: the fields both know, and zero for a newer caller's fields it does
 * not know (smart__out_give).
 *
 * Static inlines, so that each layer that takes a config (blade, msg,
 * core) compiles them under its own mutant switches; src/ds, which sees
 * the public API only, has its copy in ds/common (smart__ds_config_take,
 * smart__ds_out_give).
 */
#ifndef SMART_UTIL_CONFIG_H
#define SMART_UTIL_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "smart/status.h"
#include "util/mutant.h"

#define SMART__CONFIG_SIZE_MAX 4096u

/* Take the caller's config src over dst (the library's struct of `known`
 * bytes and alignment `align`, holding the defaults and its own
 * struct_size).  0, or SMART_EINVAL with dst untouched. */
static inline int smart__config_take(void *dst, size_t known, size_t align,
				     const void *src)
{
	const unsigned char *s = src;
	uint32_t n;

	memcpy(&n, s, sizeof(n));
	if (n < sizeof(n) || n > SMART__CONFIG_SIZE_MAX)
		return SMART_EINVAL;
	if (n % align && !SMART_M_RPC_CONFIG_CUT)
		return SMART_EINVAL;
	for (size_t i = known; i < n && !SMART_M_RPC_CONFIG_TAIL; i++)
		if (s[i])
			return SMART_EINVAL;
	memcpy((unsigned char *)dst + sizeof(n), s + sizeof(n),
	       (n < known ? n : known) - sizeof(n));
	return 0;
}

/* Give the caller's output of `size` bytes the library's struct `full` of
 * `known` bytes: the common prefix, then zeros.  0, or SMART_EINVAL (out
 * untouched) for a size of 0 or over SMART__CONFIG_SIZE_MAX. */
static inline int smart__out_give(void *out, size_t size, const void *full,
				  size_t known)
{
	size_t n = size < known && !SMART_M_RPC_OUT_FULL ? size : known;

	if (!size || size > SMART__CONFIG_SIZE_MAX)
		return SMART_EINVAL;
	memcpy(out, full, n);
	if (n < size)
		memset((unsigned char *)out + n, 0, size - n);
	return 0;
}

#endif
