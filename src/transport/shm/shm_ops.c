/*
 * The shm transport's function table (see shm.h for what shm is).
 */
#include "transport/shm/shm.h"

const struct smart_tp_ops smart_tp_shm_ops = {
	.name = "shm",
	.domain_open = smart__shm_domain_open,
	.domain_close = smart__shm_domain_close,
	.query_caps = smart__shm_query_caps,
	.domain_stats = smart__shm_domain_stats,
	.mr_alloc = smart__shm_mr_alloc,
	.mr_free = smart__shm_mr_free,
	.cq_create = smart__shm_cq_create,
	.cq_destroy = smart__shm_cq_destroy,
	.cq_own_doorbell = smart__shm_cq_own_doorbell,
	.poll = smart__shm_poll,
	.cq_event_fd = smart__shm_cq_event_fd,
	.cq_arm = smart__shm_cq_arm,
	.dm_attach = smart__shm_dm_attach,
	.region_blob = smart__shm_region_blob,
	.accept = smart__shm_accept,
	.responder_destroy = smart__shm_responder_destroy,
	.remote_attach = smart__shm_remote_attach,
	.remote_detach = smart__shm_remote_detach,
	.remote_fail = smart__shm_remote_fail,
	.remote_base = smart__shm_remote_base,
	.remote_rkey = smart__shm_remote_rkey,
	.remote_dm = smart__shm_remote_dm,
	.qp_create = smart__shm_qp_create,
	.qp_blob = smart__shm_qp_blob,
	.qp_connect = smart__shm_qp_connect,
	.qp_destroy = smart__shm_qp_destroy,
	.post = smart__shm_post,
	.qp_in_error = smart__shm_qp_in_error,
	.qp_fds = smart__shm_qp_fds,
	.qp_connect_peer = smart__shm_qp_connect_peer,
	.post_recv = smart__shm_post_recv,
};
