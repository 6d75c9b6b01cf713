/*
 * verbs transport: device, port and GID selection, fork safety, atomics,
 * memory registration and the region / QP blobs.
 *
 * Auto-detection (the original systems make users edit source for this):
 * the named device, else the first device with an ACTIVE port (the log says
 * which and why, and warns when several have one: the two ends of a
 * connection choosing alone could land on two fabrics); the first ACTIVE
 * port (or the given one); on an Ethernet link a RoCE v2 GID (or the
 * gid_type asked for), preferring an IPv4-mapped one; on InfiniBand no GRH
 * unless a GID index is given.  ibv_get_device_list() returns NULL with
 * ENOSYS on a kernel without RDMA support: that is "no device", not a
 * crash.
 *
 * Atomics: a device without them (atomic_cap NONE), or one that fails the
 * byte-order self-test (verbs_selftest.c), gets caps.atomics 0: QPs and
 * served regions are set up without remote atomic rights and post refuses
 * CAS/FAA with SMART_ENOTSUP.  READ and WRITE work as before.
 *
 * fork() (what a process using this transport may do; fork_setup):
 *  - A kernel that copies pinned pages at fork (Linux >= 5.13; libibverbs
 *    says IBV_FORK_UNNEEDED) needs nothing: the parent keeps its pages and
 *    its NIC keeps writing them; the child gets a private copy of
 *    registered memory as it was at fork().
 *  - On an older kernel (IBV_FORK_DISABLED) a child's touch of a page
 *    would make the parent's copy-on-write move the parent off the page
 *    the NIC still writes: silent corruption of the parent's registered
 *    memory.  So the first domain opened calls ibv_fork_init() (which
 *    must come before any memory registration in the process): registered
 *    memory and queues are then MADV_DONTFORK, absent in the child (a
 *    child touching them faults), and every registration costs an extra
 *    madvise.  Huge-page regions then need RDMAV_HUGEPAGES_SAFE=1 in the
 *    environment, or a registration whose length is not a multiple of
 *    2 MiB fails.
 *  - Either way a child never uses its parent's verbs objects (context,
 *    PD, MRs, QPs, CQs: they belong to the parent's device context); it
 *    opens its own domain.  fork() then exec() is always safe.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "transport/verbs/verbs.h"
#include "util/bytes.h"
#include "util/mutant.h"
#include "util/clock.h"
#include "util/sysmem.h"
#include "util/log.h"

static enum ibv_mtu mtu_from_bytes(int bytes)
{
	switch (bytes) {
	case 256:
		return IBV_MTU_256;
	case 512:
		return IBV_MTU_512;
	case 1024:
		return IBV_MTU_1024;
	case 2048:
		return IBV_MTU_2048;
	case 4096:
		return IBV_MTU_4096;
	default:
		return (enum ibv_mtu)0;
	}
}

static int port_active(struct ibv_context *ctx, uint8_t port,
		       struct ibv_port_attr *pa)
{
	return !ibv_query_port(ctx, port, pa) && pa->state == IBV_PORT_ACTIVE;
}

/* printf after what buf holds, never past len: the lists of the device
 * choice's log lines, which running out of room only shortens. */
static __attribute__((format(printf, 3, 4))) void appendf(char *buf, size_t len,
							  const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

static const char *port_state_name(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_DOWN:
		return "DOWN";
	case IBV_PORT_INIT:
		return "INIT";
	case IBV_PORT_ARMED:
		return "ARMED";
	case IBV_PORT_ACTIVE:
		return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER:
		return "ACTIVE_DEFER";
	default:
		return "NOP";
	}
}

/* The first ACTIVE port of an open device (only port `want` when it is not
 * 0), or 0; the ports passed over are noted in why. */
static int active_port(struct ibv_context *ctx, const char *name, int want,
		       char *why, size_t len)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	int p, last;

	if (ibv_query_device(ctx, &da)) {
		appendf(why, len, "%s%s cannot be queried", why[0] ? ", " : "",
			name);
		return 0;
	}
	if (want > da.phys_port_cnt) {
		appendf(why, len, "%s%s has no port %d", why[0] ? ", " : "",
			name, want);
		return 0;
	}
	last = want ? want : da.phys_port_cnt;
	for (p = want ? want : 1; p <= last; p++) {
		if (ibv_query_port(ctx, (uint8_t)p, &pa))
			appendf(why, len, "%s%s port %d cannot be queried",
				why[0] ? ", " : "", name, p);
		else if (pa.state == IBV_PORT_ACTIVE)
			return p;
		else
			appendf(why, len, "%s%s port %d %s", why[0] ? ", " : "",
				name, p, port_state_name(pa.state));
	}
	return 0;
}

/* The named device, or else the first with an ACTIVE port (the given
 * port, when there is one); the log says which and why.  Several devices
 * with an ACTIVE port and none named: a warning, since the two ends of a
 * connection, each choosing alone, could pick two fabrics that do not
 * reach each other. */
static int open_device(struct smart_tp_domain *d, const char *want, int port)
{
	char passed[256] = "", others[256] = "", all[256] = "", junk[8];
	struct ibv_device **list;
	int i, n = 0, named = want && want[0];

	errno = 0;
	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		smart__err(d->log, "no RDMA device found%s",
			   !list && errno == ENOSYS ?
				   " (the kernel has no RDMA support)" :
				   "");
		if (list)
			ibv_free_device_list(list);
		return SMART_ENOENT;
	}
	for (i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);
		struct ibv_context *ctx;

		appendf(all, sizeof(all), "%s%s", i ? ", " : "", name);
		if (named) {
			if (strcmp(name, want) || d->ctx)
				continue;
			d->ctx = ibv_open_device(list[i]);
			if (!d->ctx)
				appendf(passed, sizeof(passed), "%s",
					strerror(errno));
			snprintf(d->name, sizeof(d->name), "%s", name);
			continue;
		}
		ctx = ibv_open_device(list[i]);
		if (!ctx) {
			appendf(passed, sizeof(passed), "%s%s cannot be opened",
				passed[0] ? ", " : "", name);
			continue;
		}
		junk[0] = 0;
		if (!active_port(ctx, name, port, d->ctx ? junk : passed,
				 d->ctx ? sizeof(junk) : sizeof(passed))) {
			ibv_close_device(ctx);
		} else if (d->ctx) {
			appendf(others, sizeof(others), ", %s", name);
			ibv_close_device(ctx);
		} else {
			d->ctx = ctx;
			snprintf(d->name, sizeof(d->name), "%s", name);
		}
	}
	ibv_free_device_list(list);
	if (named && !d->ctx) {
		if (d->name[0])
			smart__err(d->log, "%s: cannot open the device: %s",
				   d->name, passed);
		else
			smart__err(d->log,
				   "no RDMA device named %s (there "
				   "are: %s)",
				   want, all);
		return SMART_ENOENT;
	}
	if (named) {
		smart__info(d->log,
			    "verbs: %s: named by the configuration "
			    "(option device, smartd --device)",
			    d->name);
		return 0;
	}
	if (!d->ctx) {
		smart__err(d->log, "no RDMA device with an ACTIVE port (%s)",
			   passed);
		return SMART_ENOENT;
	}
	smart__info(d->log, "verbs: %s: first device with an ACTIVE port%s%s%s",
		    d->name, passed[0] ? " (" : "", passed,
		    passed[0] ? ")" : "");
	if (others[0])
		smart__warn(d->log,
			    "verbs: several devices have an ACTIVE "
			    "port (%s%s); using %s: name one (option device, "
			    "smartd --device) so that both ends of a connection "
			    "are on the same fabric",
			    d->name, others, d->name);
	return 0;
}

static int choose_port(struct smart_tp_domain *d, int want,
		       struct ibv_port_attr *pa)
{
	int p;

	for (p = want ? want : 1; p <= d->dev.phys_port_cnt; p++) {
		if (port_active(d->ctx, (uint8_t)p, pa)) {
			d->port = (uint8_t)p;
			return 0;
		}
		if (want)
			break;
	}
	smart__err(d->log, "%s: no active port%s", d->name,
		   want ? " (as requested)" : "");
	return SMART_ENOENT;
}

static int gid_type_of(enum ibv_gid_type t)
{
	switch (t) {
	case IBV_GID_TYPE_IB:
		return VERBS_GID_IB;
	case IBV_GID_TYPE_ROCE_V1:
		return VERBS_GID_ROCE_V1;
	case IBV_GID_TYPE_ROCE_V2:
		return VERBS_GID_ROCE_V2;
	default:
		return -1;
	}
}

static const char *gid_type_name(int t)
{
	switch (t) {
	case VERBS_GID_NONE:
		return "no GRH";
	case VERBS_GID_IB:
		return "IB";
	case VERBS_GID_ROCE_V1:
		return "RoCE v1";
	case VERBS_GID_ROCE_V2:
		return "RoCE v2";
	default:
		return "unknown";
	}
}

/* The first GID of the given type (VERBS_GID_*), an IPv4-mapped one first
 * (it routes where the netdev's IPv4 address does); -1 when none. */
static int find_gid(struct smart_tp_domain *d, int tbl_len, int type)
{
	struct ibv_gid_entry e;
	int i, best = -1;

	for (i = 0; i < tbl_len; i++) {
		if (ibv_query_gid_ex(d->ctx, d->port, (uint32_t)i, &e, 0) ||
		    gid_type_of(e.gid_type) != type)
			continue;
		if (e.gid.raw[10] == 0xff && e.gid.raw[11] == 0xff)
			return i; /* ::ffff:a.b.c.d */
		if (best < 0)
			best = i;
	}
	return best;
}

/* The GID (and so the kind of packets) this end uses: the gid_type asked
 * for must suit the link layer, and a given gid_index must be of it. */
static int choose_gid(struct smart_tp_domain *d, const struct smart_tp_cfg *c,
		      const struct ibv_port_attr *pa)
{
	static const int want_type[] = {
		[SMART_TP_GID_AUTO] = VERBS_GID_NONE,
		[SMART_TP_GID_ROCE_V2] = VERBS_GID_ROCE_V2,
		[SMART_TP_GID_ROCE_V1] = VERBS_GID_ROCE_V1,
		[SMART_TP_GID_IB] = VERBS_GID_IB,
	};
	int want = c ? c->gid_index : -1;
	int asked = c ? c->gid_type : SMART_TP_GID_AUTO;
	int type = want_type[asked]; /* NONE: what the index has */
	struct ibv_gid_entry e;

	d->link_eth = pa->link_layer == IBV_LINK_LAYER_ETHERNET;
	/* RoCE has no LIDs: none goes on the wire, whatever the port says */
	d->lid = d->link_eth ? 0 : pa->lid;
	if (asked != SMART_TP_GID_AUTO &&
	    (asked == SMART_TP_GID_IB) == d->link_eth) {
		smart__err(d->log, "%s port %u is %s: gid_type %s needs %s",
			   d->name, d->port,
			   d->link_eth ? "Ethernet (RoCE)" : "InfiniBand",
			   smart__tp_gid_type_name(asked),
			   d->link_eth ? "an InfiniBand port" :
					 "an Ethernet (RoCE) port");
		return SMART_EINVAL;
	}
	if (want < 0 && d->link_eth) {
		if (type == VERBS_GID_NONE)
			type = VERBS_GID_ROCE_V2;
		want = find_gid(d, pa->gid_tbl_len, type);
		if (want < 0) {
			smart__err(d->log,
				   "%s port %u: no %s GID (is an IP "
				   "address configured on the netdev?)",
				   d->name, d->port, gid_type_name(type));
			return SMART_ENOENT;
		}
	}
	d->gid_index = want;
	d->gid_type = VERBS_GID_NONE;
	if (want < 0)
		return 0; /* InfiniBand, LID routed: no GRH */
	if (ibv_query_gid_ex(d->ctx, d->port, (uint32_t)want, &e, 0)) {
		smart__err(d->log, "%s port %u: cannot read GID %d: %m",
			   d->name, d->port, want);
		return SMART_EINVAL;
	}
	d->gid_type = gid_type_of(e.gid_type);
	if (d->gid_type < 0 ||
	    (type != VERBS_GID_NONE && d->gid_type != type)) {
		smart__err(d->log,
			   "%s port %u: GID %d is of type %s, not %s "
			   "(gid_type)",
			   d->name, d->port, want, gid_type_name(d->gid_type),
			   gid_type_name(type));
		return SMART_EINVAL;
	}
	memcpy(d->gid.raw, e.gid.raw, 16);
	return 0;
}

static int probe_thread_domain(struct smart_tp_domain *d)
{
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_td *td = ibv_alloc_td(d->ctx, &ta);

	if (!td)
		return 0;
	ibv_dealloc_td(td);
	return 1;
}

/* Device memory the NIC offers (mlx5: ConnectX-5 and later, 128 or 256
 * KiB; none on rxe, docs/transport.md). */
static uint64_t probe_dm(struct smart_tp_domain *d)
{
	struct ibv_device_attr_ex ax;

	memset(&ax, 0, sizeof(ax));
	if (ibv_query_device_ex(d->ctx, NULL, &ax))
		return 0;
	return ax.max_dm_size;
}

/* The fabric settings are checked here too: the transport trusts no
 * caller to have done it. */
static int fabric_cfg_check(struct smart_tp_domain *d,
			    const struct smart_tp_cfg *c)
{
	const char *why = NULL;

	if (!c)
		return 0;
	if (c->traffic_class < 0 || c->traffic_class > 255)
		why = "traffic_class must be 0..255";
	else if (c->service_level < 0 || c->service_level > 15)
		why = "service_level must be 0..15";
	else if (c->gid_type < SMART_TP_GID_AUTO ||
		 c->gid_type > SMART_TP_GID_IB)
		why = "gid_type must be auto, roce-v2, roce-v1 or ib";
	if (why)
		smart__err(d->log, "verbs: %s", why);
	return why ? SMART_EINVAL : 0;
}

/* Fork safety (see the rules at the top): libibverbs keeps it for the
 * whole process and says where it stands, so after the first domain's
 * ibv_fork_init() the others find IBV_FORK_ENABLED.  The one static: two
 * threads opening their first domains at once must not both call
 * ibv_fork_init(), which is not thread safe. */
static void fork_setup(struct smart_tp_domain *d)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	enum ibv_fork_status st;
	int rc;

	pthread_mutex_lock(&lock);
	st = ibv_is_fork_initialized();
	if (st == IBV_FORK_UNNEEDED) {
		smart__dbg(d->log, "verbs: fork: this kernel copies pinned "
				   "pages at fork; nothing to do");
	} else if (st == IBV_FORK_DISABLED) {
		rc = ibv_fork_init();
		if (rc)
			smart__warn(d->log,
				    "verbs: this kernel does not copy "
				    "pinned pages at fork and ibv_fork_init() "
				    "failed (%s: memory was registered before "
				    "this domain opened?): a fork() in this "
				    "process may corrupt its registered "
				    "memory; set RDMAV_FORK_SAFE=1",
				    strerror(rc));
		else
			smart__info(d->log,
				    "verbs: ibv_fork_init() called: "
				    "this kernel does not copy pinned pages at "
				    "fork (< 5.13), so registered memory is "
				    "not inherited by children");
	}
	pthread_mutex_unlock(&lock);
}

/* Atomics: what the device says, then what it does (the self-test); note
 * says which, for the domain's log line. */
static void atomics_setup(struct smart_tp_domain *d, char *note, size_t len)
{
	char why[192] = "";
	uint64_t t0, ns;
	int rc;

	d->atomics = 0;
	if (d->dev.atomic_cap == IBV_ATOMIC_NONE) {
		snprintf(note, len, "no (atomic_cap NONE)");
		return;
	}
	d->atomics = 1; /* the self-test's QPs need the rights */
	t0 = smart__mono_ns();
	rc = smart__verbs_atomics_selftest(d, why, sizeof(why));
	ns = smart__mono_ns() - t0;
	if (rc) {
		d->atomics = 0;
		smart__warn(d->log,
			    "verbs: %s: atomics off: the byte-order "
			    "self-test failed (%s); CAS and FAA fail with "
			    "SMART_ENOTSUP",
			    d->name, why);
		snprintf(note, len, "off (self-test failed)");
		return;
	}
	snprintf(note, len, "yes (%s, self-test %.2f ms)",
		 d->dev.atomic_cap == IBV_ATOMIC_GLOB ? "GLOB" : "HCA",
		 (double)ns / 1e6);
}

static int domain_setup(struct smart_tp_domain *d, const struct smart_tp_cfg *c)
{
	struct ibv_port_attr pa;
	char atomics[64];
	int rc = fabric_cfg_check(d, c);

	fork_setup(d);
	if (!rc)
		rc = open_device(d, c ? c->device : NULL, c ? c->port : 0);
	if (!rc && ibv_query_device(d->ctx, &d->dev))
		rc = SMART_ESYS;
	if (!rc)
		rc = choose_port(d, c ? c->port : 0, &pa);
	if (!rc)
		rc = choose_gid(d, c, &pa);
	if (rc)
		return rc;
	d->mtu = c && c->mtu ? mtu_from_bytes(c->mtu) : pa.active_mtu;
	if (!d->mtu || d->mtu > pa.active_mtu)
		d->mtu = pa.active_mtu;
	d->ib_timeout = c && c->ib_timeout ? c->ib_timeout : 14;
	d->ib_retry = c && c->ib_retry ? c->ib_retry :
					 6; /* rxe retries 7 for ever */
	d->tclass = (uint8_t)(c ? c->traffic_class : 0);
	d->sl = (uint8_t)(c ? c->service_level : 0);
	if (d->tclass && d->gid_index < 0)
		smart__info(d->log,
			    "verbs: %s: traffic_class %u unused: "
			    "LID-routed InfiniBand has no GRH (give a "
			    "gid_index)",
			    d->name, d->tclass);
	d->resp_depth = (uint8_t)smart_max(0, smart_min(d->dev.max_qp_rd_atom,
							VERBS_MAX_RD_ATOM));
	d->init_depth = (uint8_t)smart_max(0,
					   smart_min(d->dev.max_qp_init_rd_atom,
						     VERBS_MAX_RD_ATOM));
	d->pd = ibv_alloc_pd(d->ctx);
	d->resp_cq = d->pd ? ibv_create_cq(d->ctx, 16, NULL, NULL, 0) : NULL;
	if (!d->pd || !d->resp_cq)
		return SMART_ENOMEM;
	d->thread_domains = probe_thread_domain(d);
	d->max_dm = probe_dm(d);
	rc = smart__verbs_probe_queues(d);
	if (!rc)
		rc = smart__verbs_events_init(d);
	if (rc)
		return rc;
	atomics_setup(d, atomics, sizeof(atomics));
	smart__info(d->log,
		    "verbs: %s port %u (%s), gid index %d (%s), mtu "
		    "%d, traffic class %u, service level %u, read/atomic depth "
		    "%u in / %u out, inline %u, thread domains %s, atomics %s",
		    d->name, d->port, d->link_eth ? "Ethernet" : "InfiniBand",
		    d->gid_index, gid_type_name(d->gid_type), 128 << d->mtu,
		    d->tclass, d->sl, d->resp_depth, d->init_depth,
		    d->max_inline, d->thread_domains ? "yes" : "no", atomics);
	return 0;
}

int smart__verbs_domain_open(const struct smart_tp_cfg *cfg,
			     struct smart_tp_domain **out)
{
	struct smart_tp_domain *d;
	int rc;

	/* The RNIC model and the adversary are the shm transport's; a real
	 * NIC needs neither. */
	if (cfg && cfg->nic_model && cfg->nic_model[0]) {
		smart__err(cfg->log, "nic_model applies to the shm transport "
				     "only, not verbs");
		return SMART_EINVAL;
	}
	if (cfg && cfg->shm_adversarial && cfg->shm_adversarial[0] &&
	    strcmp(cfg->shm_adversarial, "off")) {
		smart__err(cfg->log, "shm_adversarial applies to the shm "
				     "transport only, not verbs");
		return SMART_EINVAL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return SMART_ENOMEM;
	d->log = cfg ? cfg->log : NULL;
	rc = domain_setup(d, cfg);
	if (rc) {
		smart__verbs_domain_close(d);
		return rc;
	}
	*out = d;
	return 0;
}

void smart__verbs_domain_close(struct smart_tp_domain *d)
{
	if (!d)
		return;
	if (d->resp_cq)
		ibv_destroy_cq(d->resp_cq);
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	if (d->ctx)
		ibv_close_device(d->ctx);
	free(d);
}

void smart__verbs_query_caps(struct smart_tp_domain *d,
			     struct smart_tp_caps *out)
{
	out->max_inline = d->max_inline;
	out->max_send_wr = d->max_send_wr; /* probed: what QPs get */
	out->max_cqe = (uint32_t)d->dev.max_cqe;
	out->max_chain = VERBS_MAX_CHAIN;
	out->thread_domains = d->thread_domains;
	out->nic = 1;
	out->max_dm = d->max_dm;
	out->dm_emulated = 0;
	out->atomics = d->atomics;
	out->max_recv_wr = (uint32_t)smart_min(d->dev.max_qp_wr,
					       VERBS_MAX_RECV_WR);
	out->max_msg = VERBS_MAX_MSG;
	out->peer_fd = 0; /* the blob names the QP on the fabric */
}

/* 4 KiB pages, 2 MiB-aligned when the region is that big, with
 * transparent huge pages asked for: without reserved huge pages a NIC
 * still gets fewer translations to cache where the kernel has THP.  Not
 * populated here: ibv_reg_mr pins (and so faults in) every page. */
static void *map_small(size_t sl)
{
	size_t align = sl >= (2u << 20) ? (2u << 20) : 0, head;
	uint8_t *p = mmap(NULL, sl + align, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return p;
	head = align ? (size_t)(-(uintptr_t)p & (align - 1)) : 0;
	if (head)
		munmap(p, head);
	if (align - head)
		munmap(p + head + sl, align - head);
	(void)madvise(p + head, sl, MADV_HUGEPAGE); /* a hint: may fail */
	return p + head;
}

static void *map_region(size_t len, int huge, size_t *map_len)
{
	size_t hl = (len + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
	size_t sl = (len + 4095) & ~(size_t)4095;
	void *p = MAP_FAILED;

	if (huge) {
		p = mmap(NULL, hl, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
				 MAP_POPULATE,
			 -1, 0);
		*map_len = hl;
	}
	if (p == MAP_FAILED && huge <= 0) {
		p = map_small(sl);
		*map_len = sl;
	}
	return p;
}

/* The remote rights of a region: none (private), READ only (served to
 * one peer: a rendezvous staging region, SMART_TP_MR_PEER_READ), or
 * READ, WRITE and atomics (served: blade memory).  SHM_STAGE_WRITABLE
 * gives a staging region the rights of a served one. */
static int verbs_remote_access(const struct smart_tp_domain *d, int shareable)
{
	if (!shareable)
		return 0;
	if (shareable == SMART_TP_MR_PEER_READ && !SMART_M_SHM_STAGE_WRITABLE)
		return IBV_ACCESS_REMOTE_READ;
	return IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
	       (d->atomics ? IBV_ACCESS_REMOTE_ATOMIC : 0);
}

int smart__verbs_mr_alloc(struct smart_tp_domain *d, size_t len, int hugepages,
			  int shareable, struct smart_tp_mr **out)
{
	struct verbs_mr *m;
	void *p;

	if (!len || len > (UINT64_C(1) << 47))
		return SMART_EINVAL;
	if (len > smart__mem_available()) {
		smart__err(d->log, "%zu bytes requested, only %llu available",
			   len, (unsigned long long)smart__mem_available());
		return SMART_ENOMEM;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return SMART_ENOMEM;
	p = map_region(len, hugepages, &m->map_len);
	if (p == MAP_FAILED) {
		smart__err(d->log, "cannot map %zu bytes%s: %m", len,
			   hugepages > 0 ? " of huge pages" : "");
		free(m);
		return SMART_ENOMEM;
	}
	/* least rights: a client's pool is only written by its own NIC
	 * (READ responses, atomics' old values); no remote atomics where
	 * the device has none that work */
	m->mr = ibv_reg_mr(d->pd, p, len,
			   IBV_ACCESS_LOCAL_WRITE |
				   verbs_remote_access(d, shareable));
	if (!m->mr) {
		smart__err(d->log,
			   "ibv_reg_mr of %zu bytes: %m (is the "
			   "locked-memory limit high enough? ulimit -l)",
			   len);
		munmap(p, m->map_len);
		free(m);
		return SMART_ENOMEM;
	}
	m->pub = (struct smart_tp_mr){
		.addr = p,
		.len = len,
		.lkey = m->mr->lkey,
		.rkey = m->mr->rkey,
		.fd = -1,
		.hugepages = m->map_len != ((len + 4095) & ~(size_t)4095)
	};
	*out = &m->pub;
	return 0;
}

void smart__verbs_mr_free(struct smart_tp_domain *d, struct smart_tp_mr *pub)
{
	struct verbs_mr *m = smart_container_of(pub, struct verbs_mr, pub);

	if (!pub)
		return;
	if (m->dm_mr)
		ibv_dereg_mr(m->dm_mr);
	if (m->dm)
		ibv_free_dm(m->dm);
	ibv_dereg_mr(m->mr);
	munmap(pub->addr, m->map_len);
	free(m);
}

/* Device memory: allocated on the NIC, zeroed (it comes with whatever the
 * last user left), registered zero-based, as Sherman's lock table is. */
int smart__verbs_dm_attach(struct smart_tp_domain *d, struct smart_tp_mr *pub,
			   size_t len)
{
	struct verbs_mr *m = smart_container_of(pub, struct verbs_mr, pub);
	struct ibv_alloc_dm_attr da = { .length = len };
	static const uint8_t zero[4096];
	const char *what = "zero";
	size_t off;
	int err;

	if (!pub || pub->dm_len || !len)
		return SMART_EINVAL;
	if (!d->max_dm)
		return SMART_ENOTSUP;
	if (len > d->max_dm)
		return SMART_ENOMEM;
	m->dm = ibv_alloc_dm(d->ctx, &da);
	if (!m->dm) {
		smart__err(d->log, "ibv_alloc_dm of %zu bytes: %m", len);
		return SMART_ENOMEM;
	}
	for (off = 0, err = 0; !err && off < len; off += sizeof(zero))
		err = ibv_memcpy_to_dm(m->dm, off, zero,
				       smart_min(len - off, sizeof(zero)));
	if (!err) {
		what = "register";
		m->dm_mr = ibv_reg_dm_mr(
			d->pd, m->dm, 0, len,
			IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_WRITE |
				(d->atomics ? IBV_ACCESS_REMOTE_ATOMIC : 0));
		err = m->dm_mr ? 0 : errno;
	}
	if (err) {
		smart__err(d->log,
			   "device memory of %zu bytes: cannot %s it: "
			   "%s",
			   len, what, strerror(err));
		ibv_free_dm(m->dm);
		m->dm = NULL;
		return SMART_ENOMEM;
	}
	pub->dm_len = len;
	pub->dm_rkey = m->dm_mr->rkey;
	return 0;
}

/* Region blob (VERBS_REGION_BLOB_LEN, 40 bytes): magic, version, base,
 * size, rkey, device memory length and key. */

int smart__verbs_region_blob(struct smart_tp_domain *d, struct smart_tp_mr *mr,
			     void *blob, size_t *len)
{
	uint8_t *b = blob;

	if (!mr || *len < VERBS_REGION_BLOB_LEN)
		return SMART_EINVAL;
	smart__put32(b, VERBS_REGION_MAGIC);
	smart__put32(b + 4, VERBS_REGION_BLOB_VERSION);
	smart__put64(b + 8, (uint64_t)(uintptr_t)mr->addr);
	smart__put64(b + 16, mr->len);
	smart__put32(b + 24, mr->rkey);
	smart__put64(b + 28, mr->dm_len);
	smart__put32(b + 36, mr->dm_rkey);
	*len = VERBS_REGION_BLOB_LEN;
	return 0;
}

/* The blob's fields, each checked (it comes from another process). */
static int verbs_blob_check(const uint8_t *b, size_t len)
{
	if (!b || len != VERBS_REGION_BLOB_LEN ||
	    smart__get32(b) != VERBS_REGION_MAGIC ||
	    smart__get32(b + 4) != VERBS_REGION_BLOB_VERSION ||
	    !smart__get64(b + 16) ||
	    smart__get64(b + 8) + smart__get64(b + 16) < smart__get64(b + 8) ||
	    smart__get64(b + 28) > (UINT64_C(1) << 47) ||
	    (!smart__get64(b + 28) && smart__get32(b + 36)))
		return SMART_EPROTO;
	return 0;
}

/* Nothing is mapped on verbs: the span is what the peer's NIC would
 * serve, the region and its device memory. */
int smart__verbs_remote_span(const void *blob, size_t len, uint64_t *span)
{
	const uint8_t *b = blob;
	int rc = verbs_blob_check(b, len);

	if (!rc)
		*span = smart__get64(b + 16) + smart__get64(b + 28);
	return rc;
}

int smart__verbs_remote_attach(struct smart_tp_domain *d, const void *blob,
			       size_t len, int fd, struct smart_tp_remote **out)
{
	const uint8_t *b = blob;
	struct smart_tp_remote *r;

	if (fd >= 0)
		close(fd);
	if (verbs_blob_check(b, len))
		return SMART_EPROTO;
	r = calloc(1, sizeof(*r));
	if (!r)
		return SMART_ENOMEM;
	r->base = smart__get64(b + 8);
	r->size = smart__get64(b + 16);
	r->rkey = smart__get32(b + 24);
	r->dm_len = smart__get64(b + 28);
	r->dm_rkey = smart__get32(b + 36);
	*out = r;
	return 0;
}

void smart__verbs_remote_detach(struct smart_tp_remote *r)
{
	free(r);
}

/* The NIC executes posted WRs on its own and times out on a dead peer
 * (ib_timeout x ib_retry); nothing is held here that could be stopped. */
void smart__verbs_remote_fail(struct smart_tp_remote *r)
{
	(void)r;
}

uint64_t smart__verbs_remote_base(const struct smart_tp_remote *r)
{
	return r->base;
}

uint32_t smart__verbs_remote_rkey(const struct smart_tp_remote *r)
{
	return r->rkey;
}

uint64_t smart__verbs_remote_dm(const struct smart_tp_remote *r, uint32_t *rkey)
{
	*rkey = r->dm_rkey;
	return r->dm_len;
}

/*
 * QP blob, version 4 (VERBS_QP_BLOB_LEN, 44 bytes; little-endian like the
 * other blobs, docs/protocol.md, but for the LID):
 *
 *    0  magic            4  version          8  QP number (24 bits)
 *   12  PSN (24 bits)   16  LID, network byte order (0 on Ethernet)
 *   18  path MTU (enum ibv_mtu)   19  has_gid (0/1)   20  GID (16 bytes)
 *   36  link layer (VERBS_LINK_*)  37  GID type (VERBS_GID_*)
 *   38  responder depth  39  initiator depth (1..VERBS_MAX_RD_ATOM)
 *   40  flags (VERBS_QPF_*)
 *   41..43  the receive queue's longest message, 24 bits (0: none; at most
 *           VERBS_MAX_MSG)
 *
 * What can be checked alone is checked here: a field out of its range, a
 * GID type that does not fit the link (RoCE always has a RoCE GID; IB has
 * an IB GID exactly when it routes by GRH), a LID that is not a unicast
 * LID on InfiniBand or not 0 on Ethernet.  Whether the peer suits this end
 * is peer_check's.
 */
size_t smart__verbs_info_pack(const struct verbs_qp_info *in, void *blob)
{
	uint8_t *b = blob;

	memset(b, 0, VERBS_QP_BLOB_LEN);
	smart__put32(b, VERBS_QP_MAGIC);
	smart__put32(b + 4, VERBS_QP_BLOB_VERSION);
	smart__put32(b + 8, in->qpn);
	smart__put32(b + 12, in->psn);
	b[16] = (uint8_t)(in->lid >> 8);
	b[17] = (uint8_t)in->lid;
	b[18] = in->mtu;
	b[19] = in->has_gid;
	if (in->has_gid)
		memcpy(b + 20, in->gid, 16);
	b[36] = in->link;
	b[37] = in->gid_type;
	b[38] = in->resp_depth;
	b[39] = in->init_depth;
	b[40] = in->flags;
	b[41] = (uint8_t)in->max_msg;
	b[42] = (uint8_t)(in->max_msg >> 8);
	b[43] = (uint8_t)(in->max_msg >> 16);
	return VERBS_QP_BLOB_LEN;
}

static int all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

/* NULL when the blob is a well-formed QP blob of this version. */
static const char *info_check(const uint8_t *b, size_t len)
{
	uint16_t lid;

	if (!b || len < VERBS_QP_BLOB_LEN)
		return "truncated";
	if (len > VERBS_QP_BLOB_LEN)
		return "longer than a QP blob";
	if (smart__get32(b) != VERBS_QP_MAGIC)
		return "not a QP blob (bad magic)";
	if (smart__get32(b + 4) != VERBS_QP_BLOB_VERSION)
		return "another version of the QP blob (both ends must run "
		       "the same release)";
	if ((smart__get32(b + 8) >> 24) || (smart__get32(b + 12) >> 24))
		return "QP number or PSN beyond 24 bits";
	if (b[18] < IBV_MTU_256 || b[18] > IBV_MTU_4096)
		return "bad path MTU";
	if (b[19] > 1 || (!b[19] && !all_zero(b + 20, 16)))
		return "bad GID flag";
	lid = (uint16_t)(b[16] << 8 | b[17]);
	switch (b[36]) {
	case VERBS_LINK_IB:
		if (b[37] != (b[19] ? VERBS_GID_IB : VERBS_GID_NONE))
			return "a GID type that InfiniBand does not have";
		if (!lid || lid >= 0xc000)
			return "no unicast LID on an InfiniBand link";
		break;
	case VERBS_LINK_ETH:
		if (!b[19] ||
		    (b[37] != VERBS_GID_ROCE_V1 && b[37] != VERBS_GID_ROCE_V2))
			return "Ethernet without a RoCE GID";
		if (lid)
			return "a LID on an Ethernet link";
		break;
	default:
		return "unknown link layer";
	}
	if (b[38] > VERBS_MAX_RD_ATOM || b[39] > VERBS_MAX_RD_ATOM)
		return "read/atomic depth beyond VERBS_MAX_RD_ATOM";
	/* 0 would give our QP a READ depth of 0: every READ would wait */
	if (!b[38] || !b[39])
		return "a read/atomic depth of 0";
	if (b[40] & ~VERBS_QPF_ATOMICS)
		return "unknown flags";
	if ((uint32_t)(b[41] | b[42] << 8 | b[43] << 16) > VERBS_MAX_MSG)
		return "a longest message beyond VERBS_MAX_MSG";
	return NULL;
}

int smart__verbs_info_unpack(const void *blob, size_t len,
			     struct verbs_qp_info *out, const char **why)
{
	const uint8_t *b = blob;
	const char *bad = info_check(b, len);

	if (bad) {
		if (why)
			*why = bad;
		return SMART_EPROTO;
	}
	memset(out, 0, sizeof(*out));
	out->qpn = smart__get32(b + 8);
	out->psn = smart__get32(b + 12);
	out->lid = (uint16_t)(b[16] << 8 | b[17]);
	out->mtu = b[18];
	out->has_gid = b[19];
	memcpy(out->gid, b + 20, 16);
	out->link = b[36];
	out->gid_type = b[37];
	out->resp_depth = b[38];
	out->init_depth = b[39];
	out->flags = b[40];
	out->max_msg = (uint32_t)(b[41] | b[42] << 8 | b[43] << 16);
	return 0;
}

/* Packets of the two ends must be understood by both: the same link
 * layer, and on Ethernet the same RoCE version (v2 is UDP-encapsulated,
 * v1 is not; a device of one end may take only one of them, as rxe does).
 * On InfiniBand a GRH on one side only is fine: it is used only when both
 * have a GID (qp_to_rtr). */
int smart__verbs_peer_check(const struct smart_tp_domain *d,
			    const struct verbs_qp_info *peer, const char **why)
{
	int link = d->link_eth ? VERBS_LINK_ETH : VERBS_LINK_IB;

	if (peer->link != link) {
		*why = d->link_eth ? "the peer is on InfiniBand, this end on "
				     "Ethernet (RoCE): no path between them" :
				     "the peer is on Ethernet (RoCE), this end "
				     "on InfiniBand: no path between them";
		return SMART_EPROTO;
	}
	if (d->link_eth && peer->gid_type != d->gid_type) {
		*why = d->gid_type == VERBS_GID_ROCE_V2 ?
			       "the peer speaks RoCE v1, this end RoCE v2 (set "
			       "gid_type alike on both ends)" :
			       "the peer speaks RoCE v2, this end RoCE v1 (set "
			       "gid_type alike on both ends)";
		return SMART_EPROTO;
	}
	return 0;
}

/* The initiator may have no more READs/atomics outstanding than the peer
 * takes as a responder, and the responder need take no more than the
 * peer can send. */
void smart__verbs_rd_depths(const struct smart_tp_domain *d,
			    const struct verbs_qp_info *peer, uint8_t *init,
			    uint8_t *dest)
{
	*init = (uint8_t)smart_min(d->init_depth, peer->resp_depth);
	*dest = (uint8_t)smart_min(d->resp_depth, peer->init_depth);
}
