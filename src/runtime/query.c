/*
 * smart_ctx_query(): what the ctx's transport can do, as the public
 * smart_ctx_attr_t (include/smart/ctx.h) tells it.
 *
 * Invariants: only the fields the caller asked for (field_mask) are
 * written, since a caller compiled against older headers has a struct
 * that ends before the later fields; the mask returned holds the bits
 * asked for that this library knows, so that a later caller sees what an
 * older library could not fill.  Everything read (the transport's caps,
 * the QP mode in force) is fixed at smart_ctx_create(), so no lock.
 */
#include "runtime/core.h"
#include "util/mutant.h"

/* The transport's caps as the public SMART_CTX_CAP_* bits. */
static uint64_t query_caps(const struct smart_tp_caps *c)
{
	uint64_t caps = 0;

	if (c->atomics)
		caps |= SMART_CTX_CAP_ATOMICS;
	if (c->max_recv_wr)
		caps |= SMART_CTX_CAP_TWO_SIDED;
	if (c->max_dm)
		caps |= SMART_CTX_CAP_DEVICE_MEMORY;
	if (c->max_dm && c->dm_emulated)
		caps |= SMART_CTX_CAP_DM_EMULATED;
	if (c->thread_domains)
		caps |= SMART_CTX_CAP_THREAD_DOMAINS;
	if (c->nic)
		caps |= SMART_CTX_CAP_NIC;
	if (c->max_recv_wr && c->peer_fd)
		caps |= SMART_CTX_CAP_SAME_HOST;
	return caps;
}

/* The fields to write: those asked for and known, and no other (the
 * caller's struct may end before a field it did not ask for). */
static uint64_t query_fields(uint64_t asked)
{
	if (!SMART_M_CTX_QUERY_ALL_FIELDS)
		return asked & SMART_CTX_ATTR_ALL;
	return SMART_CTX_ATTR_ALL;
}

int smart_ctx_query(const smart_ctx_t *ctx, smart_ctx_attr_t *attr)
{
	const struct smart_tp_caps *c;
	uint64_t f;

	if (!ctx || !attr)
		return SMART_EINVAL;
	c = &ctx->caps;
	f = query_fields(attr->field_mask);
	if (f & SMART_CTX_ATTR_TRANSPORT)
		attr->transport = ctx->tp->name;
	if (f & SMART_CTX_ATTR_QP_MODE)
		attr->qp_mode = ctx->qp_mode_effective;
	if (f & SMART_CTX_ATTR_CAPS)
		attr->caps = query_caps(c);
	if (f & SMART_CTX_ATTR_MAX_INLINE)
		attr->max_inline = c->max_inline;
	if (f & SMART_CTX_ATTR_MAX_SEND_WR)
		attr->max_send_wr = c->max_send_wr;
	if (f & SMART_CTX_ATTR_MAX_RECV_WR)
		attr->max_recv_wr = c->max_recv_wr;
	if (f & SMART_CTX_ATTR_MAX_MSG)
		attr->max_msg = c->max_recv_wr ? c->max_msg : 0;
	if (f & SMART_CTX_ATTR_MAX_DM)
		attr->max_dm = c->max_dm;
	attr->field_mask = f;
	return 0;
}
