/*
 * The verbs transport's function table (see verbs.h for what verbs is).
 */
#include "transport/verbs/verbs.h"

const struct smart_tp_ops smart__tp_verbs_ops = {
	.name = "verbs",
	.domain_open = smart__verbs_domain_open,
	.domain_close = smart__verbs_domain_close,
	.query_caps = smart__verbs_query_caps,
	.mr_alloc = smart__verbs_mr_alloc,
	.mr_free = smart__verbs_mr_free,
	.cq_create = smart__verbs_cq_create,
	.cq_destroy = smart__verbs_cq_destroy,
	.cq_own_doorbell = smart__verbs_cq_own_doorbell,
	.poll = smart__verbs_poll,
	.cq_event_fd = smart__verbs_cq_event_fd,
	.cq_arm = smart__verbs_cq_arm,
	.dm_attach = smart__verbs_dm_attach,
	.region_blob = smart__verbs_region_blob,
	.accept = smart__verbs_accept,
	.responder_destroy = smart__verbs_responder_destroy,
	.remote_attach = smart__verbs_remote_attach,
	.remote_detach = smart__verbs_remote_detach,
	.remote_span = smart__verbs_remote_span,
	.remote_fail = smart__verbs_remote_fail,
	.remote_base = smart__verbs_remote_base,
	.remote_rkey = smart__verbs_remote_rkey,
	.remote_dm = smart__verbs_remote_dm,
	.qp_create = smart__verbs_qp_create,
	.qp_blob = smart__verbs_qp_blob,
	.qp_connect = smart__verbs_qp_connect,
	.qp_destroy = smart__verbs_qp_destroy,
	.post = smart__verbs_post,
	.qp_in_error = smart__verbs_qp_in_error,
	.qp_fds = smart__verbs_qp_fds,
	.qp_connect_peer = smart__verbs_qp_connect_peer,
	.post_recv = smart__verbs_post_recv,
};
