/*
 * Tracing of the messaging layer (include/smart/rpc.h): sampled per-call
 * records kept in a ring per endpoint, the endpoint's conversions
 * between TSC cycles and nanoseconds, and its counters (a connection's,
 * the endpoint's sum, the live connections).  The data path pays one
 * counter increment per call and, for a traced call, a few TSC reads and
 * one record copied here.
 *
 * Invariant: rpc->ntraces counts every record ever added; the ring holds
 * the newest RPC_TRACES of them.
 */
#include "msg/msg_int.h"
#include "util/config.h"

uint64_t smart__rpc_ns(const struct smart_rpc *rpc, uint64_t cycles)
{
	double per_ns = smart__ctx_clock(rpc->ctx)->cycles_per_ns;

	return (uint64_t)((double)cycles / per_ns);
}

uint64_t smart__rpc_cycles(const struct smart_rpc *rpc, double ns)
{
	return (uint64_t)(ns * smart__ctx_clock(rpc->ctx)->cycles_per_ns);
}

void smart__rpc_trace_add(struct smart_rpc *rpc,
			  const struct smart_rpc_trace *t)
{
	rpc->traces[rpc->ntraces++ % RPC_TRACES] = *t;
	rpc->past.traced++;
}

int smart_rpc_traces_sized(const smart_rpc_t *rpc, struct smart_rpc_trace *out,
			   int max, size_t size)
{
	uint32_t n, first;

	if (!rpc || !out || max < 0 || !size || size > SMART__CONFIG_SIZE_MAX)
		return SMART_EINVAL;
	n = rpc->ntraces < RPC_TRACES ? rpc->ntraces : RPC_TRACES;
	if ((uint32_t)max < n)
		n = (uint32_t)max;
	first = rpc->ntraces - n;
	for (uint32_t i = 0; i < n; i++) /* the caller's stride */
		(void)smart__out_give((char *)out + i * size, size,
				      &rpc->traces[(first + i) % RPC_TRACES],
				      sizeof(*out));
	return (int)n;
}

/* the counters are summed as an array of words */
_Static_assert(sizeof(struct smart_rpc_stats) % sizeof(uint64_t) == 0,
	       "smart_rpc_stats holds only uint64_t counters");

void smart__rpc_stats_add(struct smart_rpc_stats *to,
			  const struct smart_rpc_stats *s)
{
	const uint64_t *a = (const uint64_t *)s;
	uint64_t *b = (uint64_t *)to;

	for (size_t i = 0; i < sizeof(*s) / sizeof(uint64_t); i++)
		b[i] += a[i];
}

int smart_rpc_conn_stats_sized(const smart_rpc_conn_t *c,
			       struct smart_rpc_stats *out, size_t size)
{
	if (!c || !out)
		return SMART_EINVAL;
	return smart__out_give(out, size, &c->st, sizeof(c->st));
}

static void rpc_stats_fill(const smart_rpc_t *rpc, struct smart_rpc_stats *out)
{
	*out = rpc->past;
	for (uint32_t i = 0; i < rpc->cfg.max_conns; i++)
		if (rpc->conns[i])
			smart__rpc_stats_add(out, &rpc->conns[i]->st);
	if (rpc->tp->domain_stats) {
		struct smart_tp_stats ts = { 0 };

		rpc->tp->domain_stats(rpc->dom, &ts);
		out->rnr_waits = ts.rnr_waits;
	}
}

int smart_rpc_stats_sized(const smart_rpc_t *rpc, struct smart_rpc_stats *out,
			  size_t size)
{
	struct smart_rpc_stats full;

	if (!rpc || !out)
		return SMART_EINVAL;
	rpc_stats_fill(rpc, &full);
	return smart__out_give(out, size, &full, sizeof(full));
}

int smart_rpc_conns(const smart_rpc_t *rpc)
{
	int n = 0;

	if (!rpc)
		return SMART_EINVAL;
	for (uint32_t i = 0; i < rpc->cfg.max_conns; i++)
		n += rpc->conns[i] && rpc->conns[i]->state == RPC_C_LIVE;
	return n;
}
