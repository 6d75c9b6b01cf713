/*
 * verbs transport: device, port and GID selection, memory registration and
 * the region / QP blobs.
 *
 * Auto-detection (the original systems make users edit source for this):
 * the first device with an ACTIVE port (or the named one), the first ACTIVE
 * port (or the given one), and on an Ethernet link a RoCE v2 GID, preferring
 * an IPv4-mapped one; on InfiniBand no GRH unless a GID index is given.
 * ibv_get_device_list() returns NULL with ENOSYS on a kernel without RDMA
 * support: that is "no device", not a crash.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "transport/verbs/verbs.h"
#include "util/bytes.h"
#include "util/sysmem.h"
#include "util/log.h"

static enum ibv_mtu mtu_from_bytes(int bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	default: return (enum ibv_mtu)0;
	}
}

static int port_active(struct ibv_context *ctx, uint8_t port,
		       struct ibv_port_attr *pa)
{
	return !ibv_query_port(ctx, port, pa) && pa->state == IBV_PORT_ACTIVE;
}

/* Open the named device, or the first with an active port. */
static int open_device(struct smart_tp_domain *d, const char *want)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	int i, n = 0;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		if (list)
			ibv_free_device_list(list);
		smart__err(d->log, "no RDMA device found");
		return SMART_ENOENT;
	}
	for (i = 0; i < n && !d->ctx; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if (want && want[0] && strcmp(name, want))
			continue;
		d->ctx = ibv_open_device(list[i]);
		if (d->ctx && !(want && want[0]) && !port_active(d->ctx, 1, &pa)
		    && !port_active(d->ctx, 2, &pa)) {
			ibv_close_device(d->ctx);
			d->ctx = NULL;
			continue;
		}
		if (d->ctx)
			snprintf(d->name, sizeof(d->name), "%s", name);
	}
	ibv_free_device_list(list);
	if (!d->ctx) {
		smart__err(d->log, "no usable RDMA device%s%s", want ? " " : "",
			   want ? want : "");
		return SMART_ENOENT;
	}
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

/* A RoCE v2 GID, IPv4-mapped first; -1 when there is none. */
static int find_roce_v2_gid(struct smart_tp_domain *d, int tbl_len)
{
	struct ibv_gid_entry e;
	int i, best = -1;

	for (i = 0; i < tbl_len; i++) {
		if (ibv_query_gid_ex(d->ctx, d->port, (uint32_t)i, &e, 0))
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (e.gid.raw[10] == 0xff && e.gid.raw[11] == 0xff)
			return i;	/* ::ffff:a.b.c.d */
		if (best < 0)
			best = i;
	}
	return best;
}

static int choose_gid(struct smart_tp_domain *d, int want,
		      const struct ibv_port_attr *pa)
{
	d->link_eth = pa->link_layer == IBV_LINK_LAYER_ETHERNET;
	d->lid = pa->lid;
	if (want < 0 && d->link_eth)
		want = find_roce_v2_gid(d, pa->gid_tbl_len);
	if (want < 0 && d->link_eth) {
		smart__err(d->log, "%s port %u: no RoCE v2 GID (is an IP "
			   "address configured on the netdev?)", d->name,
			   d->port);
		return SMART_ENOENT;
	}
	d->gid_index = want;
	if (want >= 0 && ibv_query_gid(d->ctx, d->port, want, &d->gid)) {
		smart__err(d->log, "%s: cannot read GID %d", d->name, want);
		return SMART_EINVAL;
	}
	return 0;
}

/* Inline data is not in ibv_device_attr: ask for it on a throwaway QP. */
static uint32_t probe_inline(struct smart_tp_domain *d)
{
	static const uint32_t tries[] = { 64, 32, 16, 0 };
	struct ibv_cq *cq = ibv_create_cq(d->ctx, 4, NULL, NULL, 0);
	uint32_t got = 0;
	size_t i;

	for (i = 0; cq && i < SMART_ARRAY_SIZE(tries); i++) {
		struct ibv_qp_init_attr a = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1,
				 .max_inline_data = tries[i] },
		};
		struct ibv_qp *qp = ibv_create_qp(d->pd, &a);

		if (qp) {
			got = a.cap.max_inline_data;	/* what it gave */
			ibv_destroy_qp(qp);
			break;
		}
	}
	if (cq)
		ibv_destroy_cq(cq);
	return got;
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

static int domain_setup(struct smart_tp_domain *d, const struct smart_tp_cfg *c)
{
	struct ibv_port_attr pa;
	int rc = open_device(d, c ? c->device : NULL);

	if (!rc && ibv_query_device(d->ctx, &d->dev))
		rc = SMART_ESYS;
	if (!rc)
		rc = choose_port(d, c ? c->port : 0, &pa);
	if (!rc)
		rc = choose_gid(d, c ? c->gid_index : -1, &pa);
	if (rc)
		return rc;
	d->mtu = c && c->mtu ? mtu_from_bytes(c->mtu) : pa.active_mtu;
	if (!d->mtu || d->mtu > pa.active_mtu)
		d->mtu = pa.active_mtu;
	d->ib_timeout = c && c->ib_timeout ? c->ib_timeout : 14;
	d->ib_retry = c && c->ib_retry ? c->ib_retry : 7;
	d->pd = ibv_alloc_pd(d->ctx);
	d->resp_cq = d->pd ? ibv_create_cq(d->ctx, 16, NULL, NULL, 0) : NULL;
	if (!d->pd || !d->resp_cq)
		return SMART_ENOMEM;
	d->max_inline = probe_inline(d);
	d->thread_domains = probe_thread_domain(d);
	d->max_dm = probe_dm(d);
	smart__info(d->log, "verbs: %s port %u, gid index %d, mtu %d, inline "
		    "%u, thread domains %s", d->name, d->port, d->gid_index,
		    128 << d->mtu, d->max_inline, d->thread_domains ? "yes" :
		    "no");
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
	out->max_send_wr = (uint32_t)smart_min(d->dev.max_qp_wr,
					       VERBS_MAX_SEND_WR);
	out->max_cqe = (uint32_t)d->dev.max_cqe;
	out->max_chain = VERBS_MAX_CHAIN;
	out->thread_domains = d->thread_domains;
	out->nic = 1;
	out->max_dm = d->max_dm;
	out->dm_emulated = 0;
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
	(void)madvise(p + head, sl, MADV_HUGEPAGE);	/* a hint: may fail */
	return p + head;
}

static void *map_region(size_t len, int huge, size_t *map_len)
{
	size_t hl = (len + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
	size_t sl = (len + 4095) & ~(size_t)4095;
	void *p = MAP_FAILED;

	if (huge) {
		p = mmap(NULL, hl, PROT_READ | PROT_WRITE, MAP_PRIVATE |
			 MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
		*map_len = hl;
	}
	if (p == MAP_FAILED && huge <= 0) {
		p = map_small(sl);
		*map_len = sl;
	}
	return p;
}

int smart__verbs_mr_alloc(struct smart_tp_domain *d, size_t len,
			  int hugepages, int shareable,
			  struct smart_tp_mr **out)
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
	 * (READ responses, atomics' old values) */
	m->mr = ibv_reg_mr(d->pd, p, len, IBV_ACCESS_LOCAL_WRITE |
			   (shareable ? IBV_ACCESS_REMOTE_READ |
					IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_ATOMIC : 0));
	if (!m->mr) {
		smart__err(d->log, "ibv_reg_mr of %zu bytes: %m (is the "
			   "locked-memory limit high enough? ulimit -l)", len);
		munmap(p, m->map_len);
		free(m);
		return SMART_ENOMEM;
	}
	m->pub = (struct smart_tp_mr){ .addr = p, .len = len,
				       .lkey = m->mr->lkey,
				       .rkey = m->mr->rkey, .fd = -1,
				       .hugepages = m->map_len != ((len + 4095) &
						    ~(size_t)4095) };
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
		m->dm_mr = ibv_reg_dm_mr(d->pd, m->dm, 0, len,
					 IBV_ACCESS_ZERO_BASED |
					 IBV_ACCESS_LOCAL_WRITE |
					 IBV_ACCESS_REMOTE_READ |
					 IBV_ACCESS_REMOTE_WRITE |
					 IBV_ACCESS_REMOTE_ATOMIC);
		err = m->dm_mr ? 0 : errno;
	}
	if (err) {
		smart__err(d->log, "device memory of %zu bytes: cannot %s it: "
			   "%s", len, what, strerror(err));
		ibv_free_dm(m->dm);
		m->dm = NULL;
		return SMART_ENOMEM;
	}
	pub->dm_len = len;
	pub->dm_rkey = m->dm_mr->rkey;
	return 0;
}


/* Region blob: magic, version, base, size, rkey, device memory length and
 * key (40 bytes). */
#define VERBS_REGION_BLOB_LEN 40

int smart__verbs_region_blob(struct smart_tp_domain *d,
			     struct smart_tp_mr *mr, void *blob, size_t *len)
{
	uint8_t *b = blob;

	if (!mr || *len < VERBS_REGION_BLOB_LEN)
		return SMART_EINVAL;
	smart__put32(b, VERBS_REGION_MAGIC);
	smart__put32(b + 4, VERBS_BLOB_VERSION);
	smart__put64(b + 8, (uint64_t)(uintptr_t)mr->addr);
	smart__put64(b + 16, mr->len);
	smart__put32(b + 24, mr->rkey);
	smart__put64(b + 28, mr->dm_len);
	smart__put32(b + 36, mr->dm_rkey);
	*len = VERBS_REGION_BLOB_LEN;
	return 0;
}

int smart__verbs_remote_attach(struct smart_tp_domain *d, const void *blob,
			       size_t len, int fd,
			       struct smart_tp_remote **out)
{
	const uint8_t *b = blob;
	struct smart_tp_remote *r;

	if (fd >= 0)
		close(fd);
	if (!b || len != VERBS_REGION_BLOB_LEN ||
	    smart__get32(b) != VERBS_REGION_MAGIC ||
	    smart__get32(b + 4) != VERBS_BLOB_VERSION || !smart__get64(b + 16) ||
	    smart__get64(b + 8) + smart__get64(b + 16) < smart__get64(b + 8) ||
	    smart__get64(b + 28) > (UINT64_C(1) << 47) ||
	    (!smart__get64(b + 28) && smart__get32(b + 36)))
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

uint64_t smart__verbs_remote_dm(const struct smart_tp_remote *r,
				uint32_t *rkey)
{
	*rkey = r->dm_rkey;
	return r->dm_len;
}

/* QP blob: magic, version, qpn, psn, lid, mtu, has_gid, gid (36 bytes). */
#define VERBS_QP_BLOB_LEN 36

size_t smart__verbs_info_pack(const struct verbs_qp_info *in, void *blob)
{
	uint8_t *b = blob;

	smart__put32(b, VERBS_QP_MAGIC);
	smart__put32(b + 4, VERBS_BLOB_VERSION);
	smart__put32(b + 8, in->qpn);
	smart__put32(b + 12, in->psn);
	memcpy(b + 16, &in->lid, 2);
	b[18] = in->mtu;
	b[19] = in->has_gid;
	memcpy(b + 20, in->gid, 16);
	return VERBS_QP_BLOB_LEN;
}

int smart__verbs_info_unpack(const void *blob, size_t len,
			     struct verbs_qp_info *out)
{
	const uint8_t *b = blob;

	if (!b || len != VERBS_QP_BLOB_LEN || smart__get32(b) != VERBS_QP_MAGIC ||
	    smart__get32(b + 4) != VERBS_BLOB_VERSION || b[19] > 1 ||
	    b[18] < IBV_MTU_256 || b[18] > IBV_MTU_4096 ||
	    (smart__get32(b + 8) >> 24) || (smart__get32(b + 12) >> 24))
		return SMART_EPROTO;
	out->qpn = smart__get32(b + 8);
	out->psn = smart__get32(b + 12);
	memcpy(&out->lid, b + 16, 2);
	out->mtu = b[18];
	out->has_gid = b[19];
	memcpy(out->gid, b + 20, 16);
	return 0;
}
