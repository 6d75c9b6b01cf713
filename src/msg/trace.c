/*
 * Tracing of the messaging layer (include/smart/rpc.h): sampled per-call
 * records kept in a ring per endpoint, and the endpoint's conversions
 * between TSC cycles and nanoseconds.  The data path pays one counter increment per call and,
 * for a traced call, a few TSC reads and one record copied here.
 *
 * Invariant: rpc->ntraces counts every record ever added; the ring holds
 * the newest RPC_TRACES of them.
 */
#include "msg/msg_int.h"
#include "util/config.h"

uint64_t smart__rpc_ns(const struct smart_rpc *rpc, uint64_t cycles)
{
	return (uint64_t)((double)cycles / rpc->ctx->clock.cycles_per_ns);
}

uint64_t smart__rpc_cycles(const struct smart_rpc *rpc, double ns)
{
	return (uint64_t)(ns * rpc->ctx->clock.cycles_per_ns);
}

void smart__rpc_trace_add(struct smart_rpc *rpc,
			  const struct smart_rpc_trace *t)
{
	rpc->traces[rpc->ntraces++ % RPC_TRACES] = *t;
	rpc->past.traced++;
}

int smart_rpc_traces_sized(const smart_rpc_t *rpc,
			   struct smart_rpc_trace *out, int max, size_t size)
{
	uint32_t n, first;

	if (!rpc || !out || max < 0 || !size ||
	    size > SMART__CONFIG_SIZE_MAX)
		return SMART_EINVAL;
	n = rpc->ntraces < RPC_TRACES ? rpc->ntraces : RPC_TRACES;
	if ((uint32_t)max < n)
		n = (uint32_t)max;
	first = rpc->ntraces - n;
	for (uint32_t i = 0; i < n; i++)	/* the caller's stride */
		(void)smart__out_give((char *)out + i * size, size,
				      &rpc->traces[(first + i) % RPC_TRACES],
				      sizeof(*out));
	return (int)n;
}
