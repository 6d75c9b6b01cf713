/*
 * The ctx: process-wide state (options, transport domain, buffer pool,
 * blade table) and smart_ctx_connect(), which joins a blade through the
 * bootstrap and attaches its region.  Everything here is slow path and
 * serialised by ctx->lock; workers read the blade table lock-free (entries
 * are published once with release and never change until destruction).
 *
 * The services (keeper, leases) are reached only through the hooks the ctx
 * was created with (ctx->svc, runtime/service.h), at the points their
 * comments name.  The fence (smart__ctx_fence) is here: it is the ctx's
 * state, set once for good, whoever finds the reason.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/bootstrap.h"
#include "runtime/core.h"
#include "util/config.h"
#include "util/mutant.h"
#include "wire/secret.h"
#include "wire/superblock.h"

/* A secret's bytes go before its memory does (explicit_bzero: a memset
 * before free may be dropped by the compiler as a dead store). */
static void secret_free(void *s, size_t len)
{
	if (!s)
		return;
	explicit_bzero(s, len);
	free(s);
}

static int ctx_load_secret(struct smart_ctx *ctx)
{
	const char *path = ctx->o.secret_file;

	if (!path[0])
		return 0;
	/* the loader says why and how to fix it, through the ctx's
	 * logger: one message, to the application's handler if it has one */
	return smart__secret_load(&ctx->log, path, &ctx->secret,
				  &ctx->secret_len);
}

/* Options that are each valid but do not fit together. */
static int ctx_check_opts(struct smart_ctx *ctx)
{
	const struct smart__optvals *o = &ctx->o;

	/* a chain is posted whole or not at all (transport.h): one longer
	 * than a send queue would wait for room for ever */
	if (o->chain_max > o->qp_depth) {
		smart__err(&ctx->log,
			   "chain_max %d > qp_depth %d: a chain "
			   "must fit one send queue",
			   o->chain_max, o->qp_depth);
		return SMART_EINVAL;
	}
	return 0;
}

static int ctx_open_transport(struct smart_ctx *ctx)
{
	const struct smart__optvals *o = &ctx->o;
	struct smart_tp_cfg cfg = {
		.device = o->device[0] ? o->device : NULL,
		.port = o->ib_port,
		.gid_index = o->gid_index,
		.mtu = o->mtu,
		.ib_timeout = o->ib_timeout,
		.ib_retry = o->ib_retry,
		.traffic_class = o->traffic_class,
		.service_level = o->service_level,
		.gid_type = o->gid_type,
		.nic_model = o->nic_model[0] ? o->nic_model : NULL,
		.shm_adversarial = o->shm_adversarial[0] ? o->shm_adversarial :
							   NULL,
		.log = &ctx->log,
	};
	int rc;

	ctx->tp = smart__tp_find(ctx->o.transport);
	if (!ctx->tp) {
		smart__err(&ctx->log, "transport %s is not built in",
			   ctx->o.transport);
		return SMART_ENOTSUP;
	}
	rc = ctx->tp->domain_open(&cfg, &ctx->dom);
	if (rc)
		return rc;
	ctx->tp->query_caps(ctx->dom, &ctx->caps);
	if (!ctx->caps.atomics)
		smart__warn(&ctx->log,
			    "%s: no working atomics on this device "
			    "(the transport's log says why): smart_cas and "
			    "smart_faa fail with SMART_ENOTSUP, and so does "
			    "whatever needs them",
			    ctx->tp->name);
	/* said once here, not as every QP's creation failing later */
	if ((uint32_t)o->qp_depth > ctx->caps.max_send_wr) {
		smart__err(&ctx->log,
			   "qp_depth %d: a send queue of %s takes "
			   "at most %u WRs here",
			   o->qp_depth, ctx->tp->name, ctx->caps.max_send_wr);
		return SMART_EINVAL;
	}
	return 0;
}

/* The mode in force.  auto follows the ThrdAwareAlloc switch;
 * per-thread-db needs a doorbell per thread, which only a transport with
 * thread domains gives (verbs on mlx5, the shm RNIC model). */
static void ctx_effective_mode(struct smart_ctx *ctx)
{
	struct smart__optvals *o = &ctx->o;
	char *eff = ctx->qp_mode_effective;
	size_t len = sizeof(ctx->qp_mode_effective);

	int asked = o->qp_mode != SMART_QPM_AUTO;

	if (!asked)
		o->qp_mode = (o->techniques & SMART_TECH_THRD_AWARE_ALLOC) ?
				     SMART_QPM_PER_THREAD_DB :
				     SMART_QPM_PER_THREAD;
	if (o->qp_mode == SMART_QPM_PER_THREAD_DB &&
	    !ctx->caps.thread_domains) {
		/* one line, a warning when the user asked for it by name */
		smart__log_msg(&ctx->log,
			       asked ? SMART_LOG_WARN : SMART_LOG_INFO,
			       "%s has no per-thread doorbells (thread domains):"
			       " per-thread-db runs as per-thread",
			       ctx->tp->name);
		snprintf(eff, len, "per-thread");
	} else if (o->qp_mode == SMART_QPM_MUX) {
		snprintf(eff, len, "mux:%d", o->qp_mux);
	} else {
		snprintf(eff, len, "%s", smart__qp_mode_name(o->qp_mode));
	}
}

int smart__ctx_create(const smart_opts_t *opts, const struct smart__svc *svc,
		      smart_ctx_t **out)
{
	struct smart_ctx *ctx;
	int rc;

	if (!out)
		return SMART_EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return SMART_ENOMEM;
	ctx->svc = svc;
	if (opts) {
		ctx->o = opts->v;
	} else {
		smart_opts_t *o;

		rc = smart_opts_create(&o);
		if (rc) {
			free(ctx);
			return rc;
		}
		ctx->o = o->v;
		smart_opts_destroy(o);
	}
	ctx->log = (struct smart__log){ .level = ctx->o.log_level,
					.prefix = "smart",
					.fn = ctx->o.log_fn,
					.arg = ctx->o.log_arg };
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->pool_lock, NULL);
	pthread_mutex_init(&ctx->orphan_lock, NULL);
	rc = ctx_check_opts(ctx);
	if (!rc)
		rc = smart__clock_init(&ctx->clock);
	if (!rc)
		rc = ctx_load_secret(ctx);
	if (!rc)
		rc = ctx_open_transport(ctx);
	if (!rc)
		rc = smart__pool_create(ctx);
	if (!rc) {
		ctx->retired_hist = calloc(1, sizeof(*ctx->retired_hist));
		rc = ctx->retired_hist ? 0 : SMART_ENOMEM;
	}
	if (!rc) {
		smart_hist_init(ctx->retired_hist);
		ctx_effective_mode(ctx);
		smart__tech_format(ctx->o.techniques, ctx->tech_names,
				   sizeof(ctx->tech_names));
		smart__tuner_init(ctx);
		atomic_store(&ctx->lease_until, UINT64_MAX);
		rc = ctx->svc->ctx_start(ctx);
	}
	if (rc) {
		smart__pool_destroy(ctx);
		if (ctx->dom)
			ctx->tp->domain_close(ctx->dom);
		pthread_mutex_destroy(&ctx->lock);
		pthread_mutex_destroy(&ctx->pool_lock);
		pthread_mutex_destroy(&ctx->orphan_lock);
		secret_free(ctx->secret, ctx->secret_len);
		free(ctx->retired_hist);
		free(ctx);
		return rc;
	}
	*out = ctx;
	return 0;
}

static void blade_free(struct smart_ctx *ctx, struct smart__blade *b)
{
	/* a BYE gives our id back for a newcomer: not when something in
	 * blade memory still names it (smart_ctx_taint, smart_ctx_hold) */
	if (b->boot &&
	    (SMART_M_CTX_BYE_TAINTED ||
	     (!atomic_load(&ctx->tainted) && !atomic_load(&ctx->holds))))
		smart__boot_close(b->boot);
	else if (b->boot)
		smart__boot_drop(b->boot);
	if (b->remote)
		ctx->tp->remote_detach(b->remote);
	ctx->svc->blade_free(b);
	pthread_mutex_destroy(&b->boot_lock);
	free(b);
}

int smart_ctx_destroy(smart_ctx_t *ctx)
{
	int i;

	if (!ctx)
		return 0;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->live_workers) {
		pthread_mutex_unlock(&ctx->lock);
		return SMART_EBUSY;
	}
	pthread_mutex_unlock(&ctx->lock);
	/* the keeper uses the blades: it goes first (its BYEs follow) */
	ctx->svc->ctx_stop(ctx);
	for (i = 0; i <= SMART_BLADE_ID_MAX; i++)
		if (ctx->blades[i])
			blade_free(ctx, ctx->blades[i]);
	smart__pool_destroy(ctx);
	ctx->tp->domain_close(ctx->dom);
	secret_free(ctx->secret, ctx->secret_len);
	free(ctx->retired_hist);
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&ctx->pool_lock);
	pthread_mutex_destroy(&ctx->orphan_lock);
	if (ctx->norphans)
		smart__warn(&ctx->log,
			    "%zu retired blocks were never freed "
			    "(readers stayed inside to the end)",
			    ctx->norphans);
	free(ctx->orphans);
	free(ctx);
	return 0;
}

/* Handshake, fetch the region fd if the transport needs one, attach. */
static int blade_join(struct smart_ctx *ctx, const char *hostport,
		      struct smart__blade *b)
{
	struct smart__boot_welcome wel;
	char *secret = NULL;
	size_t slen = 0;
	int fd = -1, rc;

	/* A copy: smart_ctx_set_secret() may replace it meanwhile. */
	pthread_mutex_lock(&ctx->lock);
	if (ctx->secret && (secret = malloc(ctx->secret_len)))
		memcpy(secret, ctx->secret, slen = ctx->secret_len);
	rc = ctx->secret && !secret ? SMART_ENOMEM : 0;
	pthread_mutex_unlock(&ctx->lock);
	if (rc)
		return rc;
	/* the lease is ours from the handshake on: count from before it */
	b->joined = smart__lease_now(&ctx->clock);
	rc = smart__boot_open(hostport, ctx->tp->name, secret, slen,
			      (int)(ctx->o.connect_timeout_ns / 1000000),
			      &ctx->log, &b->boot, &wel);
	if (secret) {
		explicit_bzero(secret, slen);
		free(secret);
	}
	if (rc)
		return rc;
	if (wel.need_fd) {
		rc = smart__boot_fetch_fd(b->boot, &fd);
		if (rc)
			return rc;
	}
	rc = ctx->tp->remote_attach(ctx->dom, wel.blob, wel.blob_len, fd,
				    &b->remote);
	if (rc)
		return rc;
	b->id = wel.blade_id;
	b->size = wel.size;
	b->chunk_shift = wel.chunk_shift;
	b->nchunks = wel.size >> wel.chunk_shift;
	b->first_chunk = smart_sb_first_chunk(wel.chunk_shift);
	b->base = ctx->tp->remote_base(b->remote);
	b->rkey = ctx->tp->remote_rkey(b->remote);
	/* whole units, at most what smart_dm_alloc can hand out */
	b->dm_len = smart_min(ctx->tp->remote_dm(b->remote, &b->dm_rkey),
			      (uint64_t)SMART_DM_MAX) /
		    SMART_DM_UNIT * SMART_DM_UNIT;
	b->lease_id = wel.lease_id;
	b->lease_ms = wel.lease_ms;
	return ctx->svc->blade_join(ctx, b);
}

/* A blade published while a fence ran, which the fence's reading of the
 * blades may have missed: failed as the fence fails every blade (the
 * fence stores ctx->fencing before it reads the list, this reads the flag
 * after the blade is in it: one of the two sees the other). */
static void blade_fence_late(struct smart_ctx *ctx, struct smart__blade *b)
{
	int ok = 0;

	if (SMART_M_CTX_CONNECT_FENCE_RACE || !atomic_load(&ctx->fencing))
		return;
	atomic_compare_exchange_strong(&b->fail, &ok, SMART_EFENCED);
	ctx->tp->remote_fail(b->remote);
}

/* A test's stop at a point of a connect or a fence (hook.h; they have no
 * worker: w is NULL): "ctx.connect.publishing" under the ctx's lock,
 * right before the blade is published, "ctx.fence.read" when the fence
 * has read the blades. */
static void ctx_hook(struct smart_ctx *ctx, const char *point)
{
	void *arg = NULL;
	smart_hook_fn fn = smart_ctx_hook(ctx, &arg);

	if (fn)
		(void)fn(NULL, point, arg);
}

int smart_ctx_connect(smart_ctx_t *ctx, const char *hostport,
		      uint16_t *blade_id)
{
	struct smart__blade *b;
	int rc;

	if (!ctx || !hostport || !blade_id)
		return SMART_EINVAL;
	/* a fenced client does nothing more (its lease is gone) */
	if (!SMART_M_CTX_CONNECT_FENCED_OK && atomic_load(&ctx->fencing))
		return SMART_EFENCED;
	b = calloc(1, sizeof(*b));
	if (!b)
		return SMART_ENOMEM;
	pthread_mutex_init(&b->boot_lock, NULL);
	rc = blade_join(ctx, hostport, b);
	if (!rc && b->id > SMART_BLADE_ID_MAX)
		rc = SMART_ERANGE;
	if (rc) {
		smart__err(&ctx->log, "connect %s: %s", hostport,
			   smart_strerror(rc));
		blade_free(ctx, b);
		return rc;
	}
	if (SMART_M_CTX_CONNECT_CHECK_EARLY)
		blade_fence_late(ctx, b);
	pthread_mutex_lock(&ctx->lock);
	if (ctx->blades[b->id]) {
		pthread_mutex_unlock(&ctx->lock);
		smart__err(&ctx->log,
			   "connect %s: blade id %u already "
			   "connected",
			   hostport, b->id);
		blade_free(ctx, b);
		return SMART_EEXIST;
	}
	ctx_hook(ctx, "ctx.connect.publishing");
	atomic_store_explicit(&ctx->blades[b->id], b, memory_order_release);
	ctx->blade_list[atomic_load(&ctx->nblade_list)] = b->id;
	atomic_fetch_add(&ctx->nblade_list, 1); /* seq_cst: blade_fence_late */
	pthread_mutex_unlock(&ctx->lock);
	if (!SMART_M_CTX_CONNECT_CHECK_EARLY)
		blade_fence_late(ctx, b);
	ctx->svc->blade_joined(ctx, b);
	smart__info(&ctx->log, "connected blade %u at %s (%llu bytes)", b->id,
		    hostport, (unsigned long long)b->size);
	*blade_id = b->id;
	return 0;
}

int smart_ctx_set_secret(smart_ctx_t *ctx, const void *secret, size_t len)
{
	char *copy, *old;
	size_t old_len;

	if (!ctx || !secret || len < SMART_SECRET_MIN || len > SMART_SECRET_MAX)
		return SMART_EINVAL;
	copy = malloc(len + 1);
	if (!copy)
		return SMART_ENOMEM;
	memcpy(copy, secret, len);
	copy[len] = '\0';
	pthread_mutex_lock(&ctx->lock);
	old = ctx->secret;
	old_len = ctx->secret_len;
	ctx->secret = copy;
	ctx->secret_len = len;
	pthread_mutex_unlock(&ctx->lock);
	secret_free(old, old_len);
	return 0;
}

static int blade_info_fill(const smart_ctx_t *ctx, uint16_t blade,
			   struct smart_blade_info *out)
{
	struct smart__blade *b;
	uint64_t chunk, first;

	if (!ctx || !out)
		return SMART_EINVAL;
	b = smart__blade_get((struct smart_ctx *)ctx, blade);
	if (!b)
		return SMART_ENOENT;
	chunk = UINT64_C(1) << b->chunk_shift;
	first = b->first_chunk;
	*out = (struct smart_blade_info){
		.id = b->id,
		.size = b->size,
		.chunk_size = chunk,
		.reserved = first * chunk,
		.alloc_max = (b->nchunks - first) * chunk,
		.lease_ms = b->lease_ms,
		.lease_id = b->lease_id,
		.dm_size = b->dm_len,
	};
	return 0;
}

int smart_ctx_blade_info_sized(const smart_ctx_t *ctx, uint16_t blade,
			       struct smart_blade_info *out, size_t size)
{
	struct smart_blade_info full;
	int rc = out ? blade_info_fill(ctx, blade, &full) : SMART_EINVAL;

	return rc ? rc : smart__out_give(out, size, &full, sizeof(full));
}

const char *smart_ctx_transport(const smart_ctx_t *ctx)
{
	return ctx ? ctx->tp->name : "";
}

const char *smart_ctx_qp_mode(const smart_ctx_t *ctx)
{
	return ctx ? ctx->qp_mode_effective : "";
}

int smart_ctx_set_hook(smart_ctx_t *ctx, smart_hook_fn fn, void *arg)
{
	if (!ctx)
		return SMART_EINVAL;
	atomic_store_explicit(&ctx->hook_arg, arg, memory_order_relaxed);
	atomic_store_explicit(&ctx->hook_fn, fn, memory_order_release);
	return 0;
}

smart_hook_fn smart_ctx_hook(const smart_ctx_t *ctx, void **arg)
{
	smart_hook_fn fn;

	if (!ctx)
		return NULL;
	fn = atomic_load_explicit(&((smart_ctx_t *)ctx)->hook_fn,
				  memory_order_acquire);
	if (fn && arg)
		*arg = atomic_load_explicit(&((smart_ctx_t *)ctx)->hook_arg,
					    memory_order_relaxed);
	return fn;
}

/* Every caller does the stopping itself, before anything else: a second
 * thread that finds the flag already set must not go on executing WRs
 * while the first is still on its way (it may be logging). */
void smart__ctx_fence(struct smart_ctx *ctx, const char *why)
{
	int i, zero = 0, n;

	/* before the blades are read: a connect that publishes its blade
	 * after this read sees the flag (both sequentially consistent,
	 * blade_fence_late) */
	if (!SMART_M_CTX_FENCE_NOT_FIRST)
		atomic_store(&ctx->fencing, 1);
	n = atomic_load(&ctx->nblade_list);
	ctx_hook(ctx, "ctx.fence.read");
	atomic_store(&ctx->lease_until, 0);
	for (i = 0; i < n; i++) {
		struct smart__blade *b = smart__blade_get(ctx,
							  ctx->blade_list[i]);
		int ok = 0;

		if (!b)
			continue;
		atomic_compare_exchange_strong(&b->fail, &ok, SMART_EFENCED);
		ctx->tp->remote_fail(b->remote);
	}
	if (SMART_M_CTX_FENCE_NOT_FIRST)
		atomic_store(&ctx->fencing, 1);
	if (!atomic_compare_exchange_strong(&ctx->fenced, &zero, 1))
		return;
	smart__err(&ctx->log,
		   "this client is fenced (%s): every op fails "
		   "with SMART_EFENCED; destroy the ctx and start anew",
		   why);
	ctx->svc->fenced(ctx);
}

int smart_ctx_technique(const smart_ctx_t *ctx, enum smart_technique t)
{
	return ctx && (ctx->o.techniques & (int)t) ? 1 : 0;
}

const char *smart_ctx_techniques(const smart_ctx_t *ctx)
{
	return ctx ? ctx->tech_names : "";
}

/* The accessors of runtime/service.h. */
struct smart__log *smart__ctx_log(struct smart_ctx *ctx)
{
	return &ctx->log;
}

const struct smart__clock *smart__ctx_clock(const struct smart_ctx *ctx)
{
	return &ctx->clock;
}

const struct smart_tp_ops *smart__ctx_tp(const struct smart_ctx *ctx)
{
	return ctx->tp;
}

struct smart_tp_domain *smart__ctx_domain(const struct smart_ctx *ctx)
{
	return ctx->dom;
}

const struct smart_tp_caps *smart__ctx_caps(const struct smart_ctx *ctx)
{
	return &ctx->caps;
}

void smart__ctx_lock(struct smart_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
}

void smart__ctx_unlock(struct smart_ctx *ctx)
{
	pthread_mutex_unlock(&ctx->lock);
}

const char *smart__ctx_secret(const struct smart_ctx *ctx, size_t *len)
{
	*len = ctx->secret_len;
	return ctx->secret;
}
