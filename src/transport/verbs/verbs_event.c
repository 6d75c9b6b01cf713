/*
 * verbs transport: the device's asynchronous events (ibv_get_async_event).
 *
 * A NIC reports what no completion can: a CQ that overran (mlx5 puts it in
 * error and it delivers nothing more), a QP that failed outside a WR, a
 * port that went down, a device that died (after DEVICE_FATAL the CQs
 * simply stay empty).  Nobody reading these events is how a worker ends up
 * spinning for ever on a CQ that will never answer.
 *
 * No thread of its own (a thread per domain would be a second owner of
 * the verbs objects, against the one-owner rule): the async fd is made
 * non-blocking and pollers drain it now and then (verbs_qp.c: every 65536
 * polls of a CQ, and at once when a poll or a completion fails).  One
 * drainer at a time; the others go on polling.
 *
 * What an event does: a QP event marks the QP in error (post refuses it,
 * the core replaces it); CQ_ERR marks the CQ dead; DEVICE_FATAL marks the
 * domain dead (every CQ's poll then fails with SMART_ECONN); PORT_ERR and
 * PORT_ACTIVE are logged (the NIC's own timeouts fail the WRs
 * meanwhile).  Every event read is acknowledged at once: ibv_destroy_qp
 * and ibv_destroy_cq wait for their events' acknowledgements.
 */
#include <errno.h>
#include <fcntl.h>

#include "transport/verbs/verbs.h"
#include "util/log.h"

int smart__verbs_events_init(struct smart_tp_domain *d)
{
	int fl = fcntl(d->ctx->async_fd, F_GETFL);

	smart_spin_init(&d->ev_lock);
	if (fl < 0 || fcntl(d->ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		smart__err(d->log, "%s: async event fd: %m", d->name);
		return SMART_ESYS;
	}
	return 0;
}

static void event_handle(struct smart_tp_domain *d,
			 const struct ibv_async_event *e)
{
	const char *what = ibv_event_type_str(e->event_type);

	switch (e->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_PATH_MIG_ERR: {
		/* responder QPs (the blade's) carry no context */
		struct smart_tp_qp *q = e->element.qp->qp_context;

		if (q)
			atomic_store(&q->error, 1);
		smart__warn(d->log, "%s: qp 0x%x: %s", d->name,
			    e->element.qp->qp_num, what);
		break;
	}
	case IBV_EVENT_CQ_ERR:
		/* only ours carry a context (resp_cq and the probes' none) */
		if (e->element.cq->cq_context)
			smart__verbs_cq_fail(e->element.cq->cq_context, what);
		break;
	case IBV_EVENT_DEVICE_FATAL:
		atomic_store(&d->fatal, 1);
		smart__err(d->log, "%s: %s: every operation fails from now on",
			   d->name, what);
		break;
	case IBV_EVENT_PORT_ERR: /* the NIC's timeouts fail the WRs */
		smart__warn(d->log, "%s port %d: %s", d->name,
			    e->element.port_num, what);
		break;
	case IBV_EVENT_PORT_ACTIVE:
		smart__info(d->log, "%s port %d: %s", d->name,
			    e->element.port_num, what);
		break;
	default:
		smart__dbg(d->log, "%s: async event %s", d->name, what);
		break;
	}
}

void smart__verbs_events_drain(struct smart_tp_domain *d)
{
	struct ibv_async_event e;

	if (!smart_spin_trylock(&d->ev_lock))
		return;
	while (!ibv_get_async_event(d->ctx, &e)) {
		event_handle(d, &e);
		ibv_ack_async_event(&e);
	}
	smart_spin_unlock(&d->ev_lock);
}
