/*
 * Shared pieces of the data structures (ds_common.h).
 */
#include <string.h>

#include "ds/common/ds_common.h"

int smart__ds_copy(smart_worker_t *w, smart_gaddr_t a, void *buf, size_t len,
		   int write)
{
	size_t mark = smart_scratch_mark(w);
	void *p;
	int rc = smart_scratch_alloc(w, len, &p);

	if (!rc && write) {
		memcpy(p, buf, len);
		rc = smart_write_sync(w, a, p, len);
	} else if (!rc) {
		rc = smart_read_sync(w, a, len, p);
		if (!rc)
			memcpy(buf, p, len);
	}
	smart_scratch_release(w, mark);
	return rc;
}

int smart__ds_desc_get(smart_worker_t *w, uint16_t blade, uint64_t maddr,
		       void *desc, size_t len, int (*valid)(const void *desc))
{
	int rc;

	if (!maddr || maddr == SMART_ROOT_TOMB || maddr == SMART_GADDR_NULL ||
	    (maddr & 7) || smart_gaddr_blade(maddr) != blade)
		return SMART_ENOENT;
	rc = smart__ds_copy(w, maddr, desc, len, 0);
	if (rc == SMART_EREMOTE || (!rc && !valid(desc)))
		return SMART_ENOENT; /* not one of this kind */
	return rc;
}

int smart__ds_area_ok(uint64_t off, uint64_t len)
{
	uint64_t dm = off & ~SMART_GADDR_DM;

	if (!off || (off & 7) || (off & ~SMART_GADDR_OFF_MASK))
		return 0;
	if (off & SMART_GADDR_DM)
		return dm < SMART_DM_MAX && len <= SMART_DM_MAX - dm;
	return len <= SMART_GADDR_DM - off;
}

/* HT_CONFIG_TAIL (any ds prefix builds this layer): a config's unknown
 * tail ignored instead of refused */
#ifdef SMART_MUTANT_HT_CONFIG_TAIL
#define SMART_M_HT_CONFIG_TAIL 1
#else
#define SMART_M_HT_CONFIG_TAIL 0
#endif

/* HT_CONFIG_CUT: a config struct_size that ends inside a field taken (the
 * field half the caller's, half the default) */
#ifdef SMART_MUTANT_HT_CONFIG_CUT
#define SMART_M_HT_CONFIG_CUT 1
#else
#define SMART_M_HT_CONFIG_CUT 0
#endif

int smart__ds_config_take(void *dst, size_t known, size_t align,
			  const void *src)
{
	const unsigned char *s = src;
	uint32_t n;

	memcpy(&n, s, sizeof(n));
	if (n < sizeof(n) || n > 4096u)
		return SMART_EINVAL;
	if (n % align && !SMART_M_HT_CONFIG_CUT) /* util/config.h */
		return SMART_EINVAL;
	for (size_t i = known; i < n && !SMART_M_HT_CONFIG_TAIL; i++)
		if (s[i])
			return SMART_EINVAL;
	memcpy((unsigned char *)dst + sizeof(n), s + sizeof(n),
	       (n < known ? n : known) - sizeof(n));
	return 0;
}

/* HT_OUT_FULL: an output struct written whole, whatever the caller's size
 * (an older caller's memory overrun) */
#ifdef SMART_MUTANT_HT_OUT_FULL
#define SMART_M_HT_OUT_FULL 1
#else
#define SMART_M_HT_OUT_FULL 0
#endif

int smart__ds_out_give(void *out, size_t size, const void *full, size_t known)
{
	size_t n = size < known && !SMART_M_HT_OUT_FULL ? size : known;

	if (!size || size > 4096u)
		return SMART_EINVAL;
	memcpy(out, full, n);
	if (n < size)
		memset((unsigned char *)out + n, 0, size - n);
	return 0;
}
