/*
 * Memory blade: configuration, creation (region, superblock, sockets,
 * control thread), destruction and getters.
 *
 * Invariants: a blade's secret, when it has one, is SMART_SECRET_MIN..MAX
 * bytes (a shorter one could be guessed); a blade returned by
 * smart_blade_create() has a formatted region, a bound TCP listener, an
 * fd-passing unix listener when the region has an fd, and a running
 * control thread; smart_blade_destroy() stops the thread before anything
 * it uses is freed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <unistd.h>

#include "blade/blade_int.h"
#include "util/thread.h"
#include "smart/alloc.h"
#include "smart/status.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/sockio.h"
#include "wire/limits.h"
#include "wire/services.h"

/* The public names of the limits a client checks too (wire/limits.h). */
_Static_assert(SMART_LEASE_MS_MIN == SMART_WIRE_LEASE_MS_MIN &&
		       SMART_LEASE_MS_MAX == SMART_WIRE_LEASE_MS_MAX &&
		       SMART_BLADE_ID_MAX == SMART_WIRE_BLADE_ID_MAX &&
		       SMART_GADDR_DM == SMART_WIRE_REGION_MAX,
	       "smart/blade.h and smart/gaddr.h re-export wire/limits.h");

#define BLADE_MAX_CLIENTS_LIMIT 65536
#define BLADE_TIMEOUT_LIMIT_MS	3600000

void smart_blade_config_init(struct smart_blade_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->struct_size = sizeof(*cfg);
	cfg->size = UINT64_C(1) << 30;
	cfg->listen = "127.0.0.1:7470";
	cfg->hugepages = -1;
	cfg->chunk_size = 1u << 20;
	cfg->max_clients = 256;
	cfg->max_unauth = 128;
	cfg->auth_timeout_ms = 1000;
	cfg->handshake_timeout_ms = 5000;
	cfg->gid_index = -1;
	cfg->lease_ms = SMART_LEASE_MS_DEFAULT;
	cfg->dm_size = -1;
}

static int config_check(const struct smart_blade_config *c,
			const struct smart__log *lg)
{
	const char *why = NULL;

	if (!smart_is_pow2(c->chunk_size) ||
	    c->chunk_size < (1u << SMART_CHUNK_SHIFT_MIN) ||
	    c->chunk_size > (1u << SMART_CHUNK_SHIFT_MAX))
		why = "chunk size must be a power of two from 4 KiB to 1 GiB";
	else if (c->size < SMART_WIRE_REGION_MIN ||
		 c->size > SMART_WIRE_REGION_MAX || c->size > SIZE_MAX ||
		 c->size / c->chunk_size <
			 smart_sb_first_chunk(
				 (uint32_t)__builtin_ctz(c->chunk_size)) +
				 1)
		why = "size must be 1 MiB..128 TiB and hold the blade's own "
		      "64 KiB plus a chunk";
	else if (c->dm_size < -1 || c->dm_size > (int64_t)SMART_DM_MAX ||
		 (c->dm_size > 0 && c->dm_size % SMART_DM_UNIT))
		why = "dm_size must be -1 (auto), 0, or a multiple of 4 KiB up "
		      "to 256 KiB";
	else if (c->lease_ms < SMART_LEASE_MS_MIN ||
		 c->lease_ms > SMART_LEASE_MS_MAX)
		why = "lease_ms must be 10..600000";
	else if (c->id > SMART_WIRE_BLADE_ID_MAX)
		why = "blade id must be 0..1023";
	else if (c->hugepages < -1 || c->hugepages > 1)
		why = "hugepages must be -1, 0 or 1";
	else if (c->secret && (c->secret_len < SMART_SECRET_MIN ||
			       c->secret_len > SMART_SECRET_MAX))
		why = "secret must be 16..4096 bytes";
	else if (c->max_clients < 1 || c->max_clients > BLADE_MAX_CLIENTS_LIMIT)
		why = "max_clients must be 1..65536";
	else if (c->max_unauth < 1 || c->max_unauth > BLADE_MAX_CLIENTS_LIMIT)
		why = "max_unauth must be 1..65536";
	else if (c->auth_timeout_ms < 1 ||
		 c->auth_timeout_ms > BLADE_TIMEOUT_LIMIT_MS)
		why = "auth timeout must be 1 ms..1 h";
	else if (c->handshake_timeout_ms < 1 ||
		 c->handshake_timeout_ms > BLADE_TIMEOUT_LIMIT_MS)
		why = "handshake timeout must be 1 ms..1 h";
	else if (!c->listen)
		why = "no listen address";
	else if (c->traffic_class < 0 || c->traffic_class > 255)
		why = "traffic_class must be 0..255";
	else if (c->service_level < 0 || c->service_level > 15)
		why = "service_level must be 0..15";
	else if (smart__tp_gid_type_parse(c->gid_type) < 0)
		why = "gid_type must be auto, roce-v2, roce-v1 or ib";
	if (why)
		smart__err(lg, "bad blade config: %s", why);
	return why ? SMART_EINVAL : 0;
}

static void log_init(struct smart__log *lg)
{
	const char *env = getenv("SMART_LOG_LEVEL");
	int lv = env ? smart__log_parse_level(env) : SMART_LOG_WARN;

	lg->prefix = "smart-blade";
	lg->level = lv < 0 ? SMART_LOG_WARN : lv;
	if (lv < 0)
		smart__warn(lg, "ignoring bad SMART_LOG_LEVEL %s", env);
}

static void format_superblock(struct smart_blade *b)
{
	struct smart_superblock *sb = b->mr->addr;

	struct smart_lease_table *lt = (void *)((uint8_t *)sb +
						SMART_LEASE_OFF);
	struct smart_epoch_table *et = (void *)((uint8_t *)sb +
						SMART_EPOCH_OFF);

	/* the region is zeroed: tables start empty, only these are set */
	sb->magic = SMART_SB_MAGIC;
	sb->version = SMART_SB_VERSION;
	sb->chunk_shift = b->chunk_shift;
	sb->size = b->size;
	sb->first_chunk = smart_sb_first_chunk(b->chunk_shift);
	sb->cursor = sb->first_chunk;
	sb->nchunks = b->size >> b->chunk_shift;
	sb->blade_id = b->id;
	sb->lease_ms = b->lease_ms;
	lt->lease_ms = b->lease_ms;
	et->global = 1; /* epoch 0 means "never announced" */
}

/* Device memory for the region, as b->dm_size asks (-1: auto).  Auto
 * takes a NIC's, up to SMART_DM_MAX in whole units, and goes without when
 * the NIC has none or refuses; an explicit size must be had. */
static int dm_open(struct smart_blade *b)
{
	struct smart_tp_caps caps = { 0 };
	uint64_t len = (uint64_t)b->dm_size;
	int rc;

	b->ops->query_caps(b->dom, &caps);
	if (b->dm_size < 0)
		len = caps.dm_emulated ?
			      0 :
			      smart_min(caps.max_dm, (uint64_t)SMART_DM_MAX) /
				      SMART_DM_UNIT * SMART_DM_UNIT;
	if (!len)
		return 0;
	rc = b->ops->dm_attach(b->dom, b->mr, (size_t)len);
	if (rc && b->dm_size < 0) {
		smart__warn(&b->log,
			    "no device memory (%" PRIu64 " bytes: %s);"
			    " serving without",
			    len, smart_strerror(rc));
		return 0;
	}
	if (rc)
		smart__err(&b->log,
			   "cannot have %" PRIu64 " bytes of device "
			   "memory: %s",
			   len, smart_strerror(rc));
	else
		smart__info(&b->log, "device memory: %" PRIu64 " bytes%s", len,
			    caps.dm_emulated ? " (emulated)" : "");
	return rc;
}

static int region_open(struct smart_blade *b, int hugepages)
{
	struct smart_tp_cfg tcfg = {
		.device = b->device[0] ? b->device : NULL,
		.port = b->ib_port,
		.gid_index = b->gid_index,
		.ib_retry = 6,
		.traffic_class = b->traffic_class,
		.service_level = b->service_level,
		.gid_type = b->gid_type,
		.log = &b->log,
	};
	int rc;

	rc = b->ops->domain_open(&tcfg, &b->dom);
	if (rc) {
		smart__err(&b->log, "cannot open the %s transport: %s",
			   b->transport, smart_strerror(rc));
		return rc;
	}
	rc = b->ops->mr_alloc(b->dom, (size_t)b->size, hugepages, 1, &b->mr);
	if (rc) {
		smart__err(&b->log,
			   "cannot allocate a region of %" PRIu64 " bytes: %s",
			   b->size, smart_strerror(rc));
		return rc;
	}
	format_superblock(b);
	rc = dm_open(b);
	if (rc)
		return rc;
	b->blob_len = sizeof(b->blob);
	rc = b->ops->region_blob(b->dom, b->mr, b->blob, &b->blob_len);
	if (!rc && (b->blob_len == 0 || b->blob_len > SMART_TP_BLOB_MAX))
		rc = SMART_ESYS;
	if (rc)
		smart__err(&b->log, "cannot describe the region: %s",
			   smart_strerror(rc));
	return rc;
}

static int tcp_listen(struct smart_blade *b, const char *listen_addr)
{
	struct sockaddr_storage ss;
	uint32_t len;

	if (smart__proto_parse_addr(listen_addr, &ss, sizeof(ss), &len)) {
		smart__err(&b->log, "bad listen address %s (want host:port)",
			   listen_addr);
		return SMART_EINVAL;
	}
	if (smart__sock_listen(&ss, len, 128, &b->lfd, &ss)) {
		smart__err(&b->log, "cannot listen on %s: %s", listen_addr,
			   strerror(errno));
		return SMART_ESYS;
	}
	smart__sock_addr_text(&ss, b->addr, sizeof(b->addr));
	return 0;
}

/* Abstract socket "smart-blade-<pid>-<random>": no file to clean up. */
static int unix_listen(struct smart_blade *b)
{
	struct sockaddr_un un;
	uint64_t rnd;
	uint32_t len;

	if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		smart__err(&b->log, "getrandom: %s", strerror(errno));
		return SMART_ESYS;
	}
	snprintf(b->uname, sizeof(b->uname), "smart-blade-%ld-%016" PRIx64,
		 (long)getpid(), rnd);
	b->uname_len = strlen(b->uname);
	len = smart__sock_abstract(b->uname, &un);
	if (smart__sock_listen(&un, len, 64, &b->ufd, NULL)) {
		smart__err(&b->log, "cannot listen on the fd socket: %s",
			   strerror(errno));
		return SMART_ESYS;
	}
	return 0;
}

static int copy_config(struct smart_blade *b,
		       const struct smart_blade_config *cfg)
{
	const char *tp = cfg->transport ? cfg->transport : "shm";

	b->id = cfg->id;
	b->size = cfg->size;
	b->chunk_shift = (uint8_t)__builtin_ctz(cfg->chunk_size);
	b->max_clients = cfg->max_clients;
	b->max_unauth = cfg->max_unauth;
	b->auth_timeout_ms = cfg->auth_timeout_ms;
	b->hs_timeout_ms = cfg->handshake_timeout_ms;
	b->lease_ms = cfg->lease_ms;
	b->dm_size = cfg->dm_size;
	b->lfd = b->ufd = b->wakefd = -1;
	b->ops = smart__tp_find(tp);
	if (!b->ops || strlen(tp) > SMART_PROTO_TRANSPORT_MAX) {
		smart__err(&b->log, "unknown transport %s", tp);
		return SMART_EINVAL;
	}
	strcpy(b->transport, tp);
	if (cfg->device && strlen(cfg->device) >= sizeof(b->device)) {
		smart__err(&b->log, "device name too long");
		return SMART_EINVAL;
	}
	snprintf(b->device, sizeof(b->device), "%s",
		 cfg->device ? cfg->device : "");
	b->ib_port = cfg->ib_port;
	b->gid_index = cfg->gid_index;
	b->traffic_class = cfg->traffic_class;
	b->service_level = cfg->service_level;
	b->gid_type = smart__tp_gid_type_parse(cfg->gid_type); /* checked */
	if (cfg->secret) {
		b->secret = malloc(cfg->secret_len);
		if (!b->secret)
			return SMART_ENOMEM;
		memcpy(b->secret, cfg->secret, cfg->secret_len);
		b->secret_len = cfg->secret_len;
	}
	b->sess = calloc((size_t)b->max_clients + (size_t)b->max_unauth +
				 BLADE_ACCEPT_BATCH,
			 sizeof(*b->sess));
	b->pfd = calloc(3 + (size_t)b->max_clients + (size_t)b->max_unauth +
				BLADE_MAX_FDREQ,
			sizeof(*b->pfd));
	return b->sess && b->pfd ? 0 : SMART_ENOMEM;
}

/*
 * The blade holds at most this many descriptors: both session tables, the
 * pending fd requests, one being accepted, the listeners, the eventfd and
 * the region (BLADE_FD_SPARE covers the last ones and a transport's own).
 * Past the process's limit accept() fails and the listener pauses, so say
 * so at once rather than under attack.
 */
#define BLADE_FD_SPARE 8

static void fd_budget_check(const struct smart_blade *b)
{
	uint64_t need = (uint64_t)b->max_clients + (uint64_t)b->max_unauth +
			BLADE_MAX_FDREQ + BLADE_FD_SPARE;
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < need)
		smart__warn(&b->log,
			    "the fd limit (%llu) is below what the "
			    "blade may hold (%llu: max_clients + max_unauth + "
			    "%d fd requests + %d); raise it (ulimit -n)",
			    (unsigned long long)rl.rlim_cur,
			    (unsigned long long)need, BLADE_MAX_FDREQ,
			    BLADE_FD_SPARE);
}

/* The control thread takes no signals: they belong to the application. */
static int start_thread(struct smart_blade *b)
{
	int rc;

	b->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->wakefd < 0) {
		smart__err(&b->log, "eventfd: %s", strerror(errno));
		return SMART_ESYS;
	}
	rc = smart__thread_start(&b->thread, smart__blade_ctl_main, b);
	if (rc) {
		smart__err(&b->log, "pthread_create: %s", strerror(rc));
		return SMART_ESYS;
	}
	b->thread_started = 1;
	return 0;
}

static int blade_create(const struct smart_blade_config *cfg,
			smart_blade_t **out)
{
	struct smart_blade *b;
	int rc;

	b = calloc(1, sizeof(*b));
	if (!b)
		return SMART_ENOMEM;
	log_init(&b->log);
	rc = config_check(cfg, &b->log);
	if (!rc)
		rc = copy_config(b, cfg);
	if (!rc)
		rc = region_open(b, cfg->hugepages);
	if (!rc)
		rc = tcp_listen(b, cfg->listen);
	if (!rc && b->mr->fd >= 0)
		rc = unix_listen(b);
	if (!rc) {
		fd_budget_check(b);
		rc = start_thread(b);
	}
	if (rc) {
		smart_blade_destroy(b);
		return rc;
	}
	smart__info(&b->log, "blade %u serving %" PRIu64 " bytes on %s", b->id,
		    b->size, b->addr);
	*out = b;
	return 0;
}

int smart_blade_create(const struct smart_blade_config *cfg,
		       smart_blade_t **out)
{
	struct smart_blade_config c;

	smart_blade_config_init(&c);
	if (!cfg || !out ||
	    smart__config_take(&c, sizeof(c),
			       _Alignof(struct smart_blade_config), cfg))
		return SMART_EINVAL;
	return blade_create(&c, out);
}

int smart_blade_destroy(smart_blade_t *b)
{
	uint64_t one = 1;

	if (!b)
		return 0;
	if (b->thread_started) {
		if (write(b->wakefd, &one, sizeof(one)) != sizeof(one))
			smart__err(&b->log, "cannot wake the control thread");
		pthread_join(b->thread, NULL);
	}
	for (int i = 0; i < b->nsess; i++)
		smart__blade_sess_free(b, b->sess[i]);
	for (int i = 0; i < b->nfdreq; i++)
		smart__sock_fd_drop(b->fdreq[i].fd);
	if (b->lfd >= 0)
		close(b->lfd);
	if (b->ufd >= 0)
		close(b->ufd);
	if (b->wakefd >= 0)
		close(b->wakefd);
	if (b->mr)
		b->ops->mr_free(b->dom, b->mr);
	if (b->dom)
		b->ops->domain_close(b->dom);
	if (b->secret)
		explicit_bzero(b->secret, b->secret_len);
	free(b->secret);
	free(b->sess);
	free(b->pfd);
	free(b);
	return 0;
}

const char *smart_blade_address(const smart_blade_t *b)
{
	return b ? b->addr : "";
}

int smart_blade_region(const smart_blade_t *b, void **base, uint64_t *size)
{
	if (!b || !base || !size)
		return SMART_EINVAL;
	*base = b->mr->addr;
	*size = b->size;
	return 0;
}

uint16_t smart_blade_id(const smart_blade_t *b)
{
	return b ? b->id : 0;
}

int smart_blade_usage_sized(const smart_blade_t *b,
			    struct smart_alloc_usage *out, size_t size)
{
	struct smart_alloc_usage full;
	const uint8_t *r;
	int rc;

	if (!b || !out)
		return SMART_EINVAL;
	r = b->mr->addr;
	rc = smart__wire_usage(
		(const void *)r, (const void *)(r + SMART_LEASE_OFF),
		__atomic_load_n((const uint64_t *)(r + SMART_FREE_POOLED_OFF),
				__ATOMIC_RELAXED),
		&full);
	return rc ? rc : smart__out_give(out, size, &full, sizeof(full));
}

static void blade_stats_fill(const smart_blade_t *b,
			     struct smart_blade_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->accepted = atomic_load(&b->n_accepted);
	out->authenticated = atomic_load(&b->n_authenticated);
	out->refused = atomic_load(&b->n_refused);
	out->malformed = atomic_load(&b->n_malformed);
	out->timeouts = atomic_load(&b->n_timeouts);
	out->evicted = atomic_load(&b->n_evicted);
	out->active_sessions = atomic_load(&b->n_active);
	out->pending_sessions = atomic_load(&b->n_pending);
	out->pending_fd_requests = atomic_load(&b->n_pending_fd);
}

int smart_blade_stats_sized(const smart_blade_t *b,
			    struct smart_blade_stats *out, size_t size)
{
	struct smart_blade_stats full;

	if (!b || !out)
		return SMART_EINVAL;
	blade_stats_fill(b, &full);
	return smart__out_give(out, size, &full, sizeof(full));
}
