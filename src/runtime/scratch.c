/*
 * Per-task registered scratch (include/smart/ops.h): a stack of registered
 * memory for each task and for the main context, so that data structures
 * get buffers for one operation without a lock or a heap allocation.
 *
 * A task's scratch is a few segments taken from the registered pool the
 * first time they are needed and kept for the task's life: a mark is the
 * (segment, offset) pair of the top; alloc bumps it, moving to the next
 * segment (bigger if need be) when the current one is full; release puts
 * the top back.  Nothing is freed before the task slot is.
 */
#include "runtime/core.h"

#define SCRATCH_SEG_MIN (32u << 10)

static size_t scratch_round(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

size_t smart_scratch_mark(smart_worker_t *w)
{
	struct smart__scratch *s;

	if (!w)
		return 0;
	s = &smart__cur_task(w)->scratch;
	return (size_t)s->cur << 32 | s->top;
}

void smart_scratch_release(smart_worker_t *w, size_t mark)
{
	struct smart__scratch *s;

	if (!w)
		return;
	s = &smart__cur_task(w)->scratch;
	if ((mark >> 32) >= SMART_SCRATCH_SEGS)
		return;
	s->cur = (int)(mark >> 32);
	s->top = (uint32_t)mark;
}

/* Make segment i hold at least `need` bytes. */
static int scratch_seg(struct smart_worker *w, struct smart__scratch *s, int i,
		       size_t need)
{
	size_t len = need < SCRATCH_SEG_MIN ? SCRATCH_SEG_MIN : need;
	void *p;
	int rc;

	if (s->seg[i] && s->len[i] >= need)
		return 0;
	rc = smart_buf_alloc(w, len, &p);
	if (rc)
		return rc;
	if (s->seg[i])
		smart_buf_free(w, s->seg[i]);
	s->seg[i] = p;
	s->len[i] = (uint32_t)len;
	return 0;
}

int smart_scratch_alloc(smart_worker_t *w, size_t size, void **out)
{
	struct smart__scratch *s;
	size_t n = scratch_round(size);
	int rc, i;

	if (!w || !out || !size || size > UINT32_MAX / 2)
		return SMART_EINVAL;
	s = &smart__cur_task(w)->scratch;
	if (s->seg[s->cur] && s->top + n <= s->len[s->cur]) {
		*out = (uint8_t *)s->seg[s->cur] + s->top;
		s->top += (uint32_t)n;
		return 0;
	}
	/* an empty current segment is replaced by a big enough one; a
	 * partly used one stays, and the next takes over (segments above
	 * the top hold nothing) */
	i = !s->seg[s->cur] || !s->top ? s->cur : s->cur + 1;
	if (i == SMART_SCRATCH_SEGS)
		return SMART_ENOMEM;
	rc = scratch_seg(w, s, i, n);
	if (rc)
		return rc;
	s->cur = i;
	s->top = (uint32_t)n;
	*out = s->seg[i];
	return 0;
}

void smart__scratch_fini(struct smart_worker *w, struct smart__task *t)
{
	int i;

	for (i = 0; i < SMART_SCRATCH_SEGS; i++)
		if (t->scratch.seg[i])
			smart_buf_free(w, t->scratch.seg[i]);
	t->scratch = (struct smart__scratch){ 0 };
}
