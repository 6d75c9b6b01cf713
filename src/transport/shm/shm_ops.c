/*
 * The shm transport's function table (see shm.h for what shm is).
 */
#include "transport/shm/shm.h"

const struct smart_tp_ops smart__tp_shm_ops = {
	.name = "shm",
	.domain_open = smart__shm_domain_open,
	.poll = smart__shm_poll,
	.post = smart__shm_post,
	.post1 = smart__shm_post1,
	.post_recv = smart__shm_post_recv,
	SMART__SHM_OPS_SHARED
};
