/*
 * The services' hooks into the runtime (runtime/service.h) and the public
 * smart_ctx_create, which is here and not in the runtime because it names
 * the services: a ctx is the runtime's, created with this table, so the
 * runtime calls the keeper, the leases, the epochs and the allocator only
 * through it.  Each hook is a forwarder that keeps its service's own
 * signature free of the table's.
 */
#include "services/lease.h"
#include "services/svc.h"

static int svc_blade_join(struct smart_ctx *ctx, struct smart__blade *b)
{
	return smart__lease_new(ctx, b, b->lease_ms);
}

/* the keeper renews the new lease at once */
static void svc_blade_joined(struct smart_ctx *ctx, struct smart__blade *b)
{
	smart__keeper_kick(ctx);
}

/* remote ops first (epochs, then the allocator's caches), while the
 * worker's QPs work */
static void svc_worker_destroy(struct smart_worker *w)
{
	smart__ebr_destroy(w);
	smart__ralloc_destroy(w);
}

static const struct smart__svc smart__services = {
	.ctx_start = smart__keeper_start,
	.ctx_stop = smart__keeper_stop,
	.blade_join = svc_blade_join,
	.blade_joined = svc_blade_joined,
	.blade_free = smart__lease_free,
	.fenced = smart__keeper_kick,
	.worker_destroy = svc_worker_destroy,
	.qp_new = smart__ebr_qp_new,
	.chain_prelude = smart__ebr_prepend,
	.task_left_epoch = smart_epoch_exit,
	.stats = smart__keeper_stats,
};

int smart_ctx_create(const smart_opts_t *opts, smart_ctx_t **out)
{
	return smart__ctx_create(opts, &smart__services, out);
}
