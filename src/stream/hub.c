/*
 * LOCAL (docs/stream.md §2): the executors are threads of one process;
 * at each epoch end one merges its partial state into the hub's table
 * under the hub's lock (late merging, LightSaber-style) and fires what
 * the minimum of every thread's watermark allows.
 *
 * Invariants: the hub's table and output change only under its lock; a
 * thread's watermark in the hub is the one of the state it merged with
 * it (both under one lock hold), so a window fires only when no thread
 * can still merge a record of it; results are taken once each, by
 * whichever executor polls.
 */
#include <stdlib.h>
#include <string.h>

#include "stream/stream_int.h"

int smart_stream_hub_create(uint32_t executors, uint32_t max_entries,
			    smart_stream_hub_t **out)
{
	struct smart_stream_hub *h;

	if (!out || !executors || executors > SMART_STREAM_MAX_EXECUTORS)
		return SMART_EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return SMART_ENOMEM;
	h->executors = executors;
	if (smart__stream_table_init(&h->t,
				     max_entries ? max_entries : 1u << 20)) {
		free(h);
		return SMART_ENOMEM;
	}
	pthread_mutex_init(&h->mu, NULL);
	*out = h;
	return 0;
}

int smart_stream_hub_destroy(smart_stream_hub_t *h)
{
	if (!h)
		return 0;
	pthread_mutex_destroy(&h->mu);
	smart__stream_table_free(&h->t);
	free(h->out);
	free(h);
	return 0;
}

static uint64_t hub_wm(const struct smart_stream *s)
{
	const struct smart_stream_hub *h = s->cfg.hub;
	uint64_t m = UINT64_MAX;

	if (SMART_M_STREAM_TRIGGER_OWN_WM)
		return h->wm[s->cfg.index];
	for (uint32_t i = 0; i < h->executors; i++)
		if (h->wm[i] < m)
			m = h->wm[i];
	return m;
}

int smart__stream_hub_epoch(struct smart_stream *s, uint64_t wm, int final,
			    uint64_t stamp)
{
	struct smart_stream_hub *h = s->cfg.hub;
	uint64_t fired = 0, gwm;
	int rc;

	pthread_mutex_lock(&h->mu);
	rc = smart__stream_table_merge_all(&h->t, &s->part);
	if (!rc) {
		h->wm[s->cfg.index] = wm;
		h->finished += final;
		gwm = hub_wm(s);
		rc = smart__stream_table_fire(&h->t, gwm, &s->q, &h->out,
					      &h->out_n, &h->out_cap, &fired);
		s->st.results += fired;
		s->st.early_results += gwm != UINT64_MAX ? fired : 0;
	}
	pthread_mutex_unlock(&h->mu);
	smart__stream_lag(s, stamp, fired);
	if (!SMART_M_STREAM_NO_RESET)
		smart__stream_table_clear(&s->part);
	return rc;
}

int smart__stream_hub_poll(struct smart_stream *s,
			   struct smart_stream_result *out, size_t max,
			   size_t *n)
{
	struct smart_stream_hub *h = s->cfg.hub;
	size_t k;
	int done;

	pthread_mutex_lock(&h->mu);
	k = h->out_n - h->out_head < max ? h->out_n - h->out_head : max;
	if (k) /* out may be NULL when max is 0, h->out when empty */
		memcpy(out, h->out + h->out_head, k * sizeof(*out));
	h->out_head += k;
	if (h->out_head == h->out_n)
		h->out_head = h->out_n = 0;
	done = !k && h->finished == h->executors && !h->t.n;
	pthread_mutex_unlock(&h->mu);
	*n = k;
	return done ? SMART_ENOENT : 0;
}
