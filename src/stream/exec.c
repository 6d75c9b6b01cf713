/*
 * The executor (docs/stream.md §2-§3): reads its partition's records,
 * keeps partial state, ends an epoch every epoch_records records, and as
 * a leader merges what the sources ship and fires windows.
 *
 * Invariants: at an epoch end the watermark shipped is the one of the
 * records the shipped state holds (taken at the swap, before any record
 * of the next epoch); the partial state is empty after the swap (a record
 * is merged into its leader exactly once); a window fires only at the
 * minimum watermark of every source (this one included); a failed
 * executor (a peer broke the protocol, died, or the state is full)
 * answers every later call with the same error.  With recovery on
 * (ckpt.c), an epoch end writes its checkpoint after firing, and the
 * results it fired are committed by it.
 */
#include <stdlib.h>
#include <string.h>

#include "stream/stream_int.h"
#include "util/config.h"

void smart_stream_query_init(struct smart_stream_query *q)
{
	memset(q, 0, sizeof(*q));
	q->struct_size = sizeof(*q);
}

void smart_stream_config_init(struct smart_stream_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->struct_size = sizeof(*cfg);
	smart_stream_query_init(&cfg->query);
}

static int config_check(const struct smart_stream_config *c)
{
	if (c->struct_size < sizeof(*c) || c->engine > SMART_STREAM_UPPAR)
		return SMART_EINVAL;
	/* LOCAL opens no channel: a mode there would be silently ignored */
	if (c->chan_mode > SMART_CHAN_FOOTER ||
	    (c->chan_mode && c->engine == SMART_STREAM_LOCAL &&
	     !SMART_M_STREAM_CHAN_MODE_UNCHECKED))
		return SMART_EINVAL;
	if (!c->executors || c->executors > SMART_STREAM_MAX_EXECUTORS ||
	    c->index >= c->executors)
		return SMART_EINVAL;
	if (c->engine == SMART_STREAM_LOCAL)
		return c->hub && c->hub->executors == c->executors ?
			       0 :
			       SMART_EINVAL;
	if (c->executors > 1 && (!c->rpc || !c->peers))
		return SMART_EINVAL;
	return smart__stream_query_check(&c->query);
}

static struct smart_stream *stream_new(smart_worker_t *w,
				       const struct smart_stream_config *cfg)
{
	struct smart_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->cfg = *cfg;
	s->q = cfg->query;
	smart_hist_init(&s->lag);
	s->w = w;
	if (!s->cfg.epoch_records)
		s->cfg.epoch_records = 65536;
	if (!s->cfg.max_entries)
		s->cfg.max_entries = 1u << 20;
	if (smart__stream_table_init(&s->part, s->cfg.max_entries) ||
	    smart__stream_table_init(&s->lead, s->cfg.max_entries)) {
		smart__stream_table_free(&s->part);
		free(s);
		return NULL;
	}
	return s;
}

int smart_stream_create(smart_worker_t *w,
			const struct smart_stream_config *cfg,
			smart_stream_t **out)
{
	struct smart_stream_config c;
	struct smart_stream *s;
	int rc;

	if (!w || !cfg || !out)
		return SMART_EINVAL;
	smart_stream_config_init(&c);
	if (smart__config_take(&c, sizeof(c), _Alignof(c), cfg) ||
	    config_check(&c))
		return SMART_EINVAL;
	s = stream_new(w, &c);
	if (!s)
		return SMART_ENOMEM;
	if (c.engine != SMART_STREAM_LOCAL && c.executors > 1) {
		rc = smart__stream_link_open(s);
		if (rc) {
			smart_stream_close(s, w);
			return rc;
		}
	}
	*out = s;
	return 0;
}

static int fail(struct smart_stream *s, int rc)
{
	if (!s->failed)
		s->failed = rc;
	return s->failed;
}

/* Own keys go straight to the leader's table, the others' into their
 * peer's outgoing buffer; the partial state is then reset. */
static int split_part(struct smart_stream *s)
{
	uint32_t me = s->cfg.index, E = s->cfg.executors;
	int rc = 0;

	for (uint32_t i = 0; i < s->part.cap && !rc; i++) {
		const struct stream_entry *e = &s->part.e[i];
		uint32_t o;

		if (e->wstart == UINT64_MAX)
			continue;
		o = smart_stream_key_owner(e->key, E);
		if (o == me)
			rc = smart__stream_table_merge(&s->lead, e->wstart,
						       e->key, &e->a);
		else
			rc = smart__stream_peer_add(&s->peer[o], e, sizeof(*e));
		s->st.delta_entries += o != me;
	}
	for (uint32_t i = 0; i < s->part.rows && !rc; i++) { /* JOIN */
		const struct stream_entry *e = &s->part.row[i];
		uint32_t o = smart_stream_key_owner(e->key, E);

		if (o == me)
			rc = smart__stream_table_row(&s->lead, e->wstart,
						     e->key, e->a.sum);
		else
			rc = smart__stream_peer_add(&s->peer[o], e, sizeof(*e));
		s->st.delta_entries += o != me;
	}
	if (!SMART_M_STREAM_NO_RESET)
		smart__stream_table_clear(&s->part);
	return rc;
}

/* With recovery on and E > 1, the checkpoint (ckpt.c) waits for every
 * source's epoch: the epochs are then aligned across the executors. */
static int epoch_end(struct smart_stream *s, int final)
{
	uint64_t wm = final ? UINT64_MAX : smart__stream_wm(s);
	struct stream_peer *self = &s->peer[s->cfg.index];
	uint64_t stamp = smart_now_ns();
	int rc;

	s->epoch++;
	s->st.epochs++;
	s->in_epoch = 0;
	if (s->cfg.engine == SMART_STREAM_LOCAL)
		return smart__stream_hub_epoch(s, wm, final, stamp);
	rc = s->cfg.engine == SMART_STREAM_SLASH ? split_part(s) : 0;
	if (rc)
		return rc;
	self->epoch = s->epoch;
	self->wm = wm;
	self->final = final;
	if (s->cfg.executors > 1) {
		rc = smart__stream_link_ship(s, wm, final, stamp);
		if (rc)
			return rc;
	}
	rc = smart__stream_fire(s, stamp);
	return rc || !s->ck ? rc : smart__stream_ckpt_epoch(s, final);
}

static int one_record(struct smart_stream *s, const uint8_t *rec)
{
	uint64_t key, ts, v;
	uint32_t o;

	if (!smart__stream_accept(s, rec, &key, &ts, &v))
		return 0;
	if (s->cfg.engine != SMART_STREAM_UPPAR)
		return smart__stream_assign(&s->q, &s->part, key, ts, v);
	o = smart_stream_key_owner(key, s->cfg.executors);
	if (o == s->cfg.index)
		return smart__stream_assign(&s->q, &s->lead, key, ts, v);
	s->st.delta_entries++;
	return smart__stream_peer_add(&s->peer[o],
				      &(struct stream_rec){ key, ts, v },
				      sizeof(struct stream_rec));
}

/* A long epoch still answers its peers: their keepalive probes (or they
 * give this executor up as silent) and their slots (their credits). */
static int keep_up(struct smart_stream *s)
{
	if (s->cfg.engine == SMART_STREAM_LOCAL || s->cfg.executors < 2)
		return 0;
	return smart__stream_link_drain(s);
}

int smart_stream_push(smart_stream_t *s, const void *records, size_t n)
{
	const uint8_t *p = records;
	int rc;

	if (!s || (!records && n))
		return SMART_EINVAL;
	if (s->failed)
		return s->failed;
	if (s->finished)
		return SMART_EINVAL;
	for (size_t i = 0; i < n; i++, p += s->q.record_bytes) {
		s->st.records++;
		rc = one_record(s, p);
		if (!rc && ++s->in_epoch >= s->cfg.epoch_records)
			rc = epoch_end(s, 0);
		if (!rc && !SMART_M_STREAM_NO_YIELD &&
		    !(s->st.records % STREAM_POLL_EVERY))
			rc = keep_up(s);
		if (rc)
			return fail(s, rc);
	}
	return 0;
}

int smart_stream_finish(smart_stream_t *s)
{
	int rc;

	if (!s)
		return SMART_EINVAL;
	if (s->failed)
		return s->failed;
	if (s->finished)
		return SMART_EINVAL;
	s->finished = 1;
	/* restored after its final epoch (ckpt.c): the leaders have it */
	if (smart__stream_ckpt_src_final(s))
		return 0;
	rc = epoch_end(s, 1);
	return rc ? fail(s, rc) : 0;
}

/* The minimum watermark over every source: a window ending at or before
 * it can receive nothing more (each source's later records and deltas lie
 * at or above its watermark). */
static uint64_t global_wm(const struct smart_stream *s)
{
	uint64_t m = UINT64_MAX;

	if (SMART_M_STREAM_TRIGGER_OWN_WM)
		return s->peer[s->cfg.index].wm;
	for (uint32_t i = 0; i < s->cfg.executors; i++)
		if (s->peer[i].wm < m)
			m = s->peer[i].wm;
	return m;
}

void smart__stream_lag(struct smart_stream *s, uint64_t stamp, uint64_t fired)
{
	uint64_t now = smart_now_ns(), lag = now > stamp ? now - stamp : 0;

	for (uint64_t i = 0; i < fired; i++)
		smart_hist_add(&s->lag, lag);
}

int smart__stream_fire(struct smart_stream *s, uint64_t stamp)
{
	uint64_t wm = global_wm(s), fired = 0;
	size_t before = s->out_n;
	int rc;

	rc = smart__stream_table_fire(&s->lead, wm, &s->q, &s->out, &s->out_n,
				      &s->out_cap, &fired);
	if (!rc && s->ck) /* logged and committed by the epoch's checkpoint */
		rc = smart__stream_ckpt_note(s, s->out + before,
					     s->out_n - before);
	s->st.results += fired;
	if (wm != UINT64_MAX)
		s->st.early_results += fired;
	smart__stream_lag(s, stamp, fired);
	return rc;
}

static int all_final(const struct smart_stream *s)
{
	for (uint32_t i = 0; i < s->cfg.executors; i++)
		if (!s->peer[i].final)
			return 0;
	return 1;
}

int smart_stream_poll(smart_stream_t *s, struct smart_stream_result *out,
		      size_t max, size_t *n)
{
	size_t k;
	int rc;

	if (!s || !n || (!out && max))
		return SMART_EINVAL;
	*n = 0;
	if (s->failed)
		return s->failed;
	if (s->cfg.engine == SMART_STREAM_LOCAL)
		return smart__stream_hub_poll(s, out, max, n);
	if (s->cfg.executors > 1) {
		rc = smart__stream_link_drain(s);
		if (!rc)
			rc = smart__stream_ckpt_poll(s);
		if (rc)
			return fail(s, rc);
	}
	k = s->out_n - s->out_head < max ? s->out_n - s->out_head : max;
	if (k) /* out may be NULL when max is 0, s->out when empty */
		memcpy(out, s->out + s->out_head, k * sizeof(*out));
	s->out_head += k;
	if (s->out_head == s->out_n)
		s->out_head = s->out_n = 0;
	*n = k;
	if (k || !all_final(s) || s->lead.n)
		return 0;
	rc = smart__stream_ckpt_done(s);
	return rc < 0 ? fail(s, rc) : rc ? SMART_ENOENT : 0;
}

int smart_stream_close(smart_stream_t *s, smart_worker_t *w)
{
	(void)w;
	if (!s)
		return 0;
	smart__stream_ckpt_close(s);
	smart__stream_link_close(s);
	smart__stream_table_free(&s->part);
	smart__stream_table_free(&s->lead);
	for (uint32_t i = 0; i < SMART_STREAM_MAX_EXECUTORS; i++)
		free(s->peer[i].buf);
	free(s->out);
	free(s);
	return 0;
}

int smart_stream_stats_sized(const smart_stream_t *s, smart_worker_t *w,
			     struct smart_stream_stats *out, size_t size)
{
	struct smart_stream_stats st;

	(void)w;
	if (!s || !out)
		return SMART_EINVAL;
	st = s->st;
	st.chan_footer_slots = smart__stream_link_footer_slots(s);
	st.lag_p50_ns = (uint64_t)smart_hist_quantile(&s->lag, 0.5);
	st.lag_p99_ns = (uint64_t)smart_hist_quantile(&s->lag, 0.99);
	return smart__out_give(out, size, &st, sizeof(st));
}
