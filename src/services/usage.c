/*
 * smart_alloc_usage(): a client's look at a blade's memory (docs/design.md
 * §5.1).  One batch of READs (superblock, the free table's pooled word,
 * the lease table with every client's reported cache) and the pure sum of
 * src/wire/services.c.
 */
#include "runtime/core.h"
#include "smart/usage.h"
#include "util/config.h"
#include "wire/services.h"

static int usage_read(smart_worker_t *w, uint16_t blade,
		      struct smart_alloc_usage *out)
{
	struct smart_superblock *sb;
	struct smart_lease_table *lt;
	uint64_t *pooled;
	size_t mark;
	int rc, rc2;

	if (!w || !out)
		return SMART_EINVAL;
	if (!smart__blade_get(w->ctx, blade))
		return SMART_ENOENT;
	mark = smart_scratch_mark(w);
	rc = smart_scratch_alloc(w, sizeof(*sb), (void **)&sb);
	if (!rc)
		rc = smart_scratch_alloc(w, sizeof(*lt), (void **)&lt);
	if (!rc)
		rc = smart_scratch_alloc(w, 8, (void **)&pooled);
	if (!rc)
		rc = smart_read(w, smart_gaddr(blade, 0), sizeof(*sb), sb);
	if (!rc)
		rc = smart_read(w, smart_gaddr(blade, SMART_LEASE_OFF),
				sizeof(*lt), lt);
	if (!rc)
		rc = smart_read(w, smart_gaddr(blade, SMART_FREE_POOLED_OFF), 8,
				pooled);
	rc2 = smart_sync(w);
	rc = rc ? rc : rc2;
	if (!rc)
		rc = smart__wire_usage(sb, lt, *pooled, out);
	smart_scratch_release(w, mark);
	return rc;
}

int smart_alloc_usage_sized(smart_worker_t *w, uint16_t blade,
			    struct smart_alloc_usage *out, size_t size)
{
	struct smart_alloc_usage full;
	int rc = out ? usage_read(w, blade, &full) : SMART_EINVAL;

	return rc ? rc : smart__out_give(out, size, &full, sizeof(full));
}
