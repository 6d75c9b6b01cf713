/** @file
 * Context and workers.
 *
 * A ctx is process wide: options, the transport domain, the registered local
 * buffer pool and the table of connected blades.  A worker belongs to one OS
 * thread: it owns a completion queue, its queue pairs (one per blade, or a
 * share of one in the shared and mux:K modes), its coroutine scheduler and
 * its statistics.  Nothing on a worker's fast path takes a lock shared with
 * other workers (the shared and mux:K modes exist to measure what that costs).
 *
 * Thread safety: smart_ctx_* functions are thread safe.  smart_worker_*
 * functions, and every function taking a smart_worker_t, must be called
 * only from the thread that created the worker.
 */
#ifndef SMART_CTX_H
#define SMART_CTX_H

#include <stdint.h>
#include <stddef.h>
#include "smart/options.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct smart_ctx smart_ctx_t;
typedef struct smart_worker smart_worker_t;

/** Create a ctx from opts (NULL = defaults + environment).  Opens the
 * transport domain and registers the local buffer pool.  SMART_EINVAL for
 * NULL out or options that do not go together (the log says which; a bad
 * environment variable included), SMART_ENOMEM, smart_secret_load's
 * errors for the secret_file option, and the transport's when its domain
 * cannot be opened.  Thread: any. */
int smart_ctx_create(const smart_opts_t *opts, smart_ctx_t **out);

/** Destroy.  Like every smart_*_destroy: NULL is a no-op returning 0, and
 * an object still in use is left alone with SMART_EBUSY (here: while
 * workers exist).  Thread: any. */
int smart_ctx_destroy(smart_ctx_t *ctx);

/** Join the blade listening at "host:port": authenticate with the shared
 * secret (option secret_file), learn its id and region, and make it usable
 * by every worker.  *blade_id receives the blade's id.  SMART_EEXIST if a
 * blade with that id is already connected, SMART_EACCES on a refused secret,
 * SMART_ETIMEDOUT / SMART_ECONN when it cannot be reached, SMART_EFENCED
 * when the ctx is fenced (or a fence has begun): nothing is added.  A
 * fence that begins while the connect runs may let it succeed; the new
 * blade is then failed as the fence fails every blade, and its ops answer
 * SMART_EFENCED.  Thread: any. */
int smart_ctx_connect(smart_ctx_t *ctx, const char *hostport,
		      uint16_t *blade_id);

/** Use these SMART_SECRET_MIN..MAX (16..4096) bytes as the shared secret of later smart_ctx_connect()
 * calls, instead of the option secret_file (an embedded blade and its own
 * ctx need no file).  The bytes are copied.  SMART_EINVAL for a bad length.
 * Thread: any. */
int smart_ctx_set_secret(smart_ctx_t *ctx, const void *secret, size_t len);

/** The geometry of a connected blade, as its superblock and handshake give
 * it.  Tools size their work from this rather than assume a chunk size. */
struct smart_blade_info {
	uint16_t id;
	uint64_t size;	     /**< region bytes */
	uint64_t chunk_size; /**< allocation unit of the blade */
	uint64_t reserved;   /**< bytes at offset 0 the blade keeps for the
				 * superblock and the shared services */
	uint64_t alloc_max;  /**< largest single smart_alloc() possible */
	uint32_t lease_ms;   /**< client lease duration (smart/lease.h) */
	uint16_t lease_id;   /**< this ctx's client id there */
	uint64_t dm_size;    /**< device memory smart_dm_alloc hands out
				 * (smart/alloc.h); 0: none */
};

/** Fill *out for a connected blade.  SMART_EINVAL for NULL arguments,
 * SMART_ENOENT for a blade this ctx has not joined.  The _sized form
 * takes the caller's sizeof (docs/api.md §4).  Thread: any. */
int smart_ctx_blade_info_sized(const smart_ctx_t *ctx, uint16_t blade,
			       struct smart_blade_info *out, size_t size);
static inline int smart_ctx_blade_info(const smart_ctx_t *ctx, uint16_t blade,
				       struct smart_blade_info *out)
{
	return smart_ctx_blade_info_sized(ctx, blade, out, sizeof(*out));
}

/** Name of the transport in use ("shm", "verbs") and the QP mode actually in
 * force (which may differ from the requested one, e.g. per-thread-db falls
 * back to per-thread where the device has no thread domains).  Thread: any. */
const char *smart_ctx_transport(const smart_ctx_t *ctx);
const char *smart_ctx_qp_mode(const smart_ctx_t *ctx);

/** What the ctx's transport can do: smart_ctx_query() fills a
 * smart_ctx_attr_t.  The struct grows only at its end, one field per new
 * SMART_CTX_ATTR_* bit, so a caller compiled against older headers (a
 * smaller struct) asks only for bits it knows and the library writes only
 * those fields: field_mask is how the library knows the caller's size. */
enum smart_ctx_attr_field {
	SMART_CTX_ATTR_TRANSPORT = 1u << 0,   /**< transport */
	SMART_CTX_ATTR_QP_MODE = 1u << 1,     /**< qp_mode */
	SMART_CTX_ATTR_CAPS = 1u << 2,	      /**< caps */
	SMART_CTX_ATTR_MAX_INLINE = 1u << 3,  /**< max_inline */
	SMART_CTX_ATTR_MAX_SEND_WR = 1u << 4, /**< max_send_wr */
	SMART_CTX_ATTR_MAX_RECV_WR = 1u << 5, /**< max_recv_wr */
	SMART_CTX_ATTR_MAX_MSG = 1u << 6,     /**< max_msg */
	SMART_CTX_ATTR_MAX_DM = 1u << 7,      /**< max_dm */
	SMART_CTX_ATTR_ALL = (1u << 8) - 1,   /**< of these headers */
};

/** Capability bits of smart_ctx_attr_t.caps. */
enum smart_ctx_cap {
	/* smart_cas/smart_faa work (else SMART_ENOTSUP: a device without
	 * atomics, or one that failed the byte-order self-test) */
	SMART_CTX_CAP_ATOMICS = 1u << 0,
	/* two-sided operations, SEND and WRITE with immediate, which
	 * smart/rpc.h's endpoints need */
	SMART_CTX_CAP_TWO_SIDED = 1u << 1,
	/* device memory (smart_dm_alloc, smart/alloc.h) can be attached */
	SMART_CTX_CAP_DEVICE_MEMORY = 1u << 2,
	/* ... but it is host memory standing in for it (shm, for tests) */
	SMART_CTX_CAP_DM_EMULATED = 1u << 3,
	/* a QP may own its doorbell (thread domains): qp_mode per-thread-db
	 * runs as asked instead of as per-thread */
	SMART_CTX_CAP_THREAD_DOMAINS = 1u << 4,
	/* work requests go through a NIC (or its model), whose queues the
	 * WorkReqThrot technique protects */
	SMART_CTX_CAP_NIC = 1u << 5,
	/* a two-sided peer must be on this host (shm passes descriptors
	 * over a unix socket) */
	SMART_CTX_CAP_SAME_HOST = 1u << 6,
};

typedef struct smart_ctx_attr {
	/* In: the SMART_CTX_ATTR_* fields wanted.  Out: those filled, the
	 * wanted ones this library knows (a bit of a later release comes
	 * back cleared, its field untouched). */
	uint64_t field_mask;
	const char *transport; /**< "shm", "verbs"; as smart_ctx_transport() */
	const char *qp_mode;   /**< in force; as smart_ctx_qp_mode() */
	uint64_t caps;	       /**< SMART_CTX_CAP_* */
	uint64_t max_inline;   /**< bytes a WRITE carries inline */
	uint64_t max_send_wr;  /**< work requests a send queue holds */
	uint64_t max_recv_wr;  /**< receives a queue holds; 0: no two-sided */
	uint64_t max_msg;      /**< longest two-sided message, bytes */
	uint64_t max_dm;       /**< device memory a blade may attach, bytes;
				 * 0: none */
} smart_ctx_attr_t;

/** Fill the fields of *attr that attr->field_mask asks for, and set
 * field_mask to those filled; every other byte of *attr is left as it
 * was.  The strings live as long as the ctx.  SMART_EINVAL for a NULL
 * argument (nothing written).  Thread: any (what it reads is fixed when
 * the ctx is created). */
int smart_ctx_query(const smart_ctx_t *ctx, smart_ctx_attr_t *attr);

/** Create a worker for the calling thread.  SMART_ENOMEM when out of memory.
 * Thread: the thread that will own the worker. */
int smart_worker_create(smart_ctx_t *ctx, smart_worker_t **out);

/** Destroy a worker; SMART_EBUSY if it still has live tasks (or is called
 * from inside one of them) or a messaging endpoint (smart_rpc_destroy
 * first).  Thread: the worker's. */
int smart_worker_destroy(smart_worker_t *w);

/** Thread: any. */
smart_ctx_t *smart_worker_ctx(const smart_worker_t *w);

/** Index of the worker in its ctx (0, 1, ... in creation order, never
 * reused while the ctx lives; -1 for the ctx's internal workers).
 * Thread: any. */
int smart_worker_index(const smart_worker_t *w);

/** 1 when the worker of this index was created in ctx and has since been
 * destroyed: smart_worker_destroy drained it, so nothing it posted is in
 * flight or will land any more.  0 while it lives, and for an index never
 * given out (-1 included).  Lets a layer tell a lost op of a dead worker
 * from one still in flight (docs/dtx.md §3).  Thread: any. */
int smart_ctx_worker_gone(smart_ctx_t *ctx, int index);

#ifdef __cplusplus
}
#endif
#endif
