/*
 * shm transport: domains, memory registration, blobs and remote mappings.
 *
 * Shareable regions (blade memory) are memfds, with huge pages when asked
 * for and available; the fd travels to clients over the blade's unix socket
 * and each client maps it.  They are populated lazily: a page is allocated
 * (zeroed) when some process first touches it, so a blade of any size
 * starts at once and holds only the memory its clients use; the first
 * touch of a page costs a fault (about a microsecond), which benchmarks
 * take before they measure (smart-perf pre-faults its span).  They are
 * sealed against shrinking, and a process maps one it is given
 * only when it carries those seals: its owner could otherwise cut it short
 * under the mapping and kill the mapper with SIGBUS.  Regions
 * larger than the memory available are still refused: a client touching
 * a page the system cannot give would be killed (SIGBUS).  Private regions
 * (the local buffer pool) are anonymous mappings populated at creation, so
 * no fault lands on a registered buffer.
 *
 * Keys: an MR's lkey is (generation << 16 | slot + 1), so a freed and
 * reused slot never accepts a stale key; the rkey of a served region is the
 * same number; the key of its device memory (emulated: more of the same
 * memfd, after the region) is that number with SHM_DM_KEY_BIT.  Blobs are
 * fixed little-endian records with a magic and a version, validated field
 * by field: they come from another process.
 *
 * A domain opened with cfg->nic_model carries the RNIC model
 * (shm_model.c), one opened with cfg->shm_adversarial the adversarial mode
 * (shm_adv.c); a bad spec, or both at once, fails the open with
 * SMART_EINVAL.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/membarrier.h>
#include <sys/syscall.h>

#include "transport/shm/shm.h"
#include "util/bytes.h"
#include "util/sysmem.h"
#include "util/log.h"
#include "util/mutant.h"

#define SHM_HUGE_PAGE (2u << 20)

int smart__shm_domain_open(const struct smart_tp_cfg *cfg,
			   struct smart_tp_domain **out)
{
	/* aligned like its type: `failures` has a cache line of its own */
	struct smart_tp_domain *d = shm_zalloc_cl(sizeof(*d));
	int rc;

	_Static_assert(_Alignof(struct smart_tp_domain) <= SMART_CACHELINE,
		       "shm_zalloc_cl aligns to a cache line only");
	if (!d)
		return SMART_ENOMEM;
	d->log = cfg ? cfg->log : NULL;
	rc = smart__shm_model_open(d, cfg ? cfg->nic_model : NULL);
	if (!rc) {
		rc = smart__shm_adv_open(d, cfg ? cfg->shm_adversarial : NULL);
		if (rc)
			smart__shm_model_close(d);
	}
	if (rc) {
		free(d);
		return rc;
	}
	pthread_mutex_init(&d->lock, NULL);
	d->gen = 1;
	d->next_id = 1;
	/* once per process in effect (registering again is a no-op) */
	d->membarrier = syscall(__NR_membarrier,
				MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0,
				0) == 0;
	*out = d;
	return 0;
}

void smart__shm_domain_close(struct smart_tp_domain *d)
{
	int i;

	if (!d)
		return;
	for (i = 0; i < SHM_MAX_MR; i++) {
		struct shm_mr *mr = atomic_load(&d->mrs[i]);

		if (mr)
			smart__shm_mr_free(d, &mr->pub);
	}
	smart__shm_adv_close(d);
	smart__shm_model_close(d);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

void smart__shm_query_caps(struct smart_tp_domain *d, struct smart_tp_caps *out)
{
	out->max_inline = SHM_MAX_INLINE;
	out->max_send_wr = SHM_MAX_SEND_WR;
	out->max_cqe = SHM_MAX_CQE;
	out->max_chain = SHM_MAX_SEND_WR;
	/* The model's doorbells can be had per QP, as mlx5 thread domains
	 * give them; without the model a doorbell costs nothing anyway. */
	out->thread_domains = d->model != NULL;
	out->nic = d->model != NULL;
	out->max_dm = SHM_DM_MAX;
	out->dm_emulated = 1;
	out->atomics = 1; /* CPU atomics on the shared mapping */
	out->max_recv_wr = SHM_MAX_RECV_WR;
	out->max_msg = SHM_MAX_MSG;
	out->peer_fd = 1; /* the receive segment is a memfd */
}

/* A shared region cannot shrink (F_SEAL_SEAL keeps it so): a process
 * that maps one it was given must be sure its owner cannot cut it short
 * under the mapping (an access past the end is SIGBUS), and checks for
 * the seal before mapping (shm_remote_check).  It may grow: device memory
 * is emulated as more of the same memfd (dm_attach). */
#define SHM_REGION_SEALS F_SEAL_SHRINK

/* A region served to one peer that may only READ it (a rendezvous
 * staging region, SMART_TP_MR_PEER_READ) is sealed, after our own
 * writable mapping was made, with F_SEAL_FUTURE_WRITE (Linux 5.1): the
 * seal belongs to the file, not to a descriptor, so whatever the peer
 * does with the descriptor we pass (an O_RDWR one: write(2), a shared
 * writable mmap, mprotect of a read-only one to PROT_WRITE, a reopen of
 * /proc/self/fd/N, fallocate's hole punching) fails; only mappings made
 * before the seal, ours, can write.  An O_RDONLY descriptor alone would
 * not do: its receiver reopens /proc/self/fd/N O_RDWR.  F_SEAL_GROW as
 * well (nothing may change its size) and F_SEAL_SEAL. */
#define SHM_RO_SEALS (SHM_REGION_SEALS | F_SEAL_GROW | F_SEAL_FUTURE_WRITE)

/* The seals of a fresh memfd of len bytes, added before its mapping
 * (shareable 1) or after (SMART_TP_MR_PEER_READ).  SHM_STAGE_WRITABLE
 * drops the write seal (a peer could write our staging again). */
static int shm_seal(int fd, int shareable)
{
	int seals = SHM_REGION_SEALS;

	if (shareable == SMART_TP_MR_PEER_READ)
		seals = SMART_M_SHM_STAGE_WRITABLE ? SHM_REGION_SEALS :
						     SHM_RO_SEALS;
	return fcntl(fd, F_ADD_SEALS, seals | F_SEAL_SEAL);
}

/* Map len bytes: a sealed memfd when shareable, anonymous otherwise; huge
 * pages first when hugepages != 0.  Returns the mapping or MAP_FAILED. */
static void *shm_map(size_t len, int huge, int shareable, int *fd_out)
{
	int fd = -1, mflags = MAP_SHARED,
	    ro = shareable == SMART_TP_MR_PEER_READ;
	void *p;

	if (shareable) {
		fd = memfd_create(ro ? "smart-stage" : "smart-region",
				  MFD_CLOEXEC | MFD_ALLOW_SEALING |
					  (huge ? MFD_HUGETLB : 0));
		if (fd < 0)
			return MAP_FAILED;
		if (ftruncate(fd, (off_t)len) < 0 ||
		    (!ro && shm_seal(fd, shareable))) {
			close(fd);
			return MAP_FAILED;
		}
	} else {
		mflags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE |
			 (huge ? MAP_HUGETLB : 0);
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, mflags, fd, 0);
	if (p != MAP_FAILED && ro && shm_seal(fd, shareable)) {
		munmap(p, len);
		p = MAP_FAILED;
	}
	if (p == MAP_FAILED) {
		if (fd >= 0)
			close(fd);
		return MAP_FAILED;
	}
	*fd_out = fd;
	return p;
}

static int shm_mr_install(struct smart_tp_domain *d, struct shm_mr *mr)
{
	int i, rc = SMART_ENOMEM;

	pthread_mutex_lock(&d->lock);
	for (i = 0; i < SHM_MAX_MR; i++) {
		if (atomic_load(&d->mrs[i]))
			continue;
		d->gen = (d->gen + 1) & 0x7fff;
		if (!d->gen)
			d->gen = 1;
		mr->slot = i;
		mr->pub.lkey = (d->gen << 16) | (uint32_t)(i + 1);
		mr->pub.rkey = mr->pub.lkey;
		atomic_store_explicit(&d->mrs[i], mr, memory_order_release);
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int smart__shm_mr_alloc(struct smart_tp_domain *d, size_t len, int hugepages,
			int shareable, struct smart_tp_mr **out)
{
	struct shm_mr *mr;
	size_t huge_len = (len + SHM_HUGE_PAGE - 1) &
			  ~(size_t)(SHM_HUGE_PAGE - 1);
	size_t small_len = (len + 4095) & ~(size_t)4095;
	void *p = MAP_FAILED;
	int fd = -1, huge = 0;

	if (!len || len > (UINT64_C(1) << 47) ||
	    (shareable == SMART_TP_MR_PEER_READ && hugepages > 0))
		return SMART_EINVAL;
	if (shareable == SMART_TP_MR_PEER_READ)
		hugepages = 0; /* a hugetlb mapping reserves it all */
	if (!smart__mem_enough(len)) {
		smart__err(d->log,
			   "%zu bytes requested, only %llu available: "
			   "not allocating (touching them all would invoke the "
			   "OOM killer)",
			   len, (unsigned long long)smart__mem_available());
		return SMART_ENOMEM;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return SMART_ENOMEM;
	if (hugepages != 0) {
		p = shm_map(huge_len, 1, shareable, &fd);
		huge = p != MAP_FAILED;
		if (!huge && hugepages > 0) {
			smart__err(d->log, "no huge pages for %zu bytes: %m",
				   len);
			free(mr);
			return SMART_ENOMEM;
		}
		if (!huge)
			smart__info(d->log, "huge pages unavailable (%m), "
					    "using 4 KiB pages");
	}
	if (!huge)
		p = shm_map(small_len, 0, shareable, &fd);
	if (p == MAP_FAILED) {
		smart__err(d->log, "cannot map %zu bytes: %m", len);
		free(mr);
		return SMART_ENOMEM;
	}
	mr->pub = (struct smart_tp_mr){
		.addr = p, .len = len, .fd = fd, .hugepages = huge
	};
	mr->map_len = huge ? huge_len : small_len;
	mr->page = huge ? SHM_HUGE_PAGE : 4096;
	if (shm_mr_install(d, mr)) {
		munmap(p, mr->map_len);
		if (fd >= 0)
			close(fd);
		free(mr);
		return SMART_ENOMEM;
	}
	*out = &mr->pub;
	return 0;
}

void smart__shm_mr_free(struct smart_tp_domain *d, struct smart_tp_mr *pub)
{
	struct shm_mr *mr = smart_container_of(pub, struct shm_mr, pub);

	if (!pub)
		return;
	atomic_store_explicit(&d->mrs[mr->slot], NULL, memory_order_release);
	/* no QP keeps it as its last local MR (shm_local_ok_qp): a WR
	 * naming it is looked up, and refused */
	pthread_mutex_lock(&d->lock);
	for (struct smart_tp_qp *qp = d->qps; qp && !SMART_M_SHM_MR_CACHE_KEPT;
	     qp = qp->d_next)
		atomic_store_explicit(&qp->mrc_len, 0, memory_order_relaxed);
	pthread_mutex_unlock(&d->lock);
	munmap(pub->addr, mr->map_len);
	if (pub->fd >= 0)
		close(pub->fd);
	free(mr);
}

/* Device memory, emulated: the memfd grows by len (in the region's
 * pages) after the region's mapping; the new bytes read as zeros.  The
 * blade never touches them itself. */
int smart__shm_dm_attach(struct smart_tp_domain *d, struct smart_tp_mr *pub,
			 size_t len)
{
	struct shm_mr *mr = smart_container_of(pub, struct shm_mr, pub);
	size_t dm_map;

	(void)d;
	if (!pub || pub->fd < 0 || pub->dm_len || !len ||
	    shm_sealed(pub->fd, F_SEAL_GROW))
		return SMART_EINVAL;
	if (len > SHM_DM_MAX)
		return SMART_ENOMEM;
	dm_map = (len + mr->page - 1) & ~(mr->page - 1);
	if (ftruncate(pub->fd, (off_t)(mr->map_len + dm_map)) < 0)
		return SMART_ENOMEM;
	pub->dm_len = len;
	pub->dm_rkey = pub->rkey | SHM_DM_KEY_BIT;
	return 0;
}

/* Region blob: magic, version, base, size, rkey, hugepages, device memory
 * length and key, a zero word (48 bytes). */
#define SHM_REGION_BLOB_LEN 48

int smart__shm_region_blob(struct smart_tp_domain *d, struct smart_tp_mr *mr,
			   void *blob, size_t *len)
{
	uint8_t *b = blob;

	if (!mr || mr->fd < 0 || *len < SHM_REGION_BLOB_LEN)
		return SMART_EINVAL;
	smart__put32(b, SHM_REGION_MAGIC);
	smart__put32(b + 4, SHM_BLOB_VERSION);
	smart__put64(b + 8, (uint64_t)(uintptr_t)mr->addr);
	smart__put64(b + 16, mr->len);
	smart__put32(b + 24, mr->rkey);
	smart__put32(b + 28, (uint32_t)mr->hugepages);
	smart__put64(b + 32, mr->dm_len);
	smart__put32(b + 40, mr->dm_rkey);
	smart__put32(b + 44, 0);
	*len = SHM_REGION_BLOB_LEN;
	return 0;
}

int smart__shm_accept(struct smart_tp_domain *d, struct smart_tp_mr *region,
		      const void *client_blob, size_t client_len,
		      void *blob_out, size_t *blob_len,
		      struct smart_tp_responder **out)
{
	struct smart_tp_responder *r;
	uint8_t *b = blob_out;

	/* Nothing to set up: the client's CPU does the work.  The record only
	 * mirrors what a verbs responder QP is, for a uniform control plane. */
	if (!client_blob || client_len != 8 ||
	    smart__get32(client_blob) != SHM_QP_MAGIC || *blob_len < 8)
		return SMART_EPROTO;
	r = calloc(1, sizeof(*r));
	if (!r)
		return SMART_ENOMEM;
	pthread_mutex_lock(&d->lock);
	r->id = d->next_id++;
	pthread_mutex_unlock(&d->lock);
	smart__put32(b, SHM_ACC_MAGIC);
	smart__put32(b + 4, r->id);
	*blob_len = 8;
	*out = r;
	return 0;
}

void smart__shm_responder_destroy(struct smart_tp_responder *r)
{
	free(r);
}

/* The blob's page size, region mapping and device memory mapping (bytes
 * after the region's) from a checked blob. */
static void shm_remote_lens(const uint8_t *b, uint64_t *map_len,
			    uint64_t *dm_map)
{
	uint64_t page = smart__get32(b + 28) ? SHM_HUGE_PAGE : 4096;

	*map_len = (smart__get64(b + 16) + page - 1) & ~(page - 1);
	*dm_map = (smart__get64(b + 32) + page - 1) & ~(page - 1);
}

/* The blob's fields, each checked (it comes from another process). */
static int shm_blob_check(const uint8_t *b, size_t len)
{
	uint64_t size, dm;

	if (!b || len != SHM_REGION_BLOB_LEN ||
	    smart__get32(b) != SHM_REGION_MAGIC ||
	    smart__get32(b + 4) != SHM_BLOB_VERSION)
		return SMART_EPROTO;
	size = smart__get64(b + 16);
	dm = smart__get64(b + 32);
	/* [base, base + size) must not wrap: the WR's check of its remote
	 * range (shm_remote_ptr) takes an address below base for one past
	 * the end by its wrapped offset */
	if (smart__get64(b + 8) > UINT64_MAX - size &&
	    !SMART_M_SHM_REGION_WRAPS)
		return SMART_EPROTO;
	if (!size || size > (UINT64_C(1) << 47) || smart__get32(b + 28) > 1 ||
	    dm > SHM_DM_MAX || smart__get32(b + 44) ||
	    (dm ? smart__get32(b + 40) == smart__get32(b + 24) :
		  smart__get32(b + 40) != 0))
		return SMART_EPROTO;
	return 0;
}

int smart__shm_remote_span(const void *blob, size_t len, uint64_t *span)
{
	uint64_t map_len, dm_map;
	int rc = shm_blob_check(blob, len);

	if (rc)
		return rc;
	shm_remote_lens(blob, &map_len, &dm_map);
	*span = map_len + dm_map;
	return 0;
}

/* The blob, and fd's size and seals (*seals: read once, for the
 * caller too; seals are only ever added, none removed). */
static int shm_remote_check(const uint8_t *b, size_t len, int fd, int *seals)
{
	struct stat st;
	uint64_t map_len, dm_map;
	int rc = shm_blob_check(b, len);

	if (rc)
		return rc;
	shm_remote_lens(b, &map_len, &dm_map);
	if (fd < 0 || fstat(fd, &st) < 0 ||
	    (uint64_t)st.st_size < map_len + dm_map)
		return SMART_EINVAL;
	*seals = fcntl(fd, F_GET_SEALS);
	if (!SMART_M_SHM_REGION_NO_SEAL_CHECK &&
	    (*seals < 0 || (*seals & SHM_REGION_SEALS) != SHM_REGION_SEALS))
		return SMART_EINVAL;
	return 0;
}

int smart__shm_remote_attach(struct smart_tp_domain *d, const void *blob,
			     size_t len, int fd, struct smart_tp_remote **out)
{
	const uint8_t *b = blob;
	struct smart_tp_remote *r;
	uint64_t dm_map;
	int seals = -1, rc = shm_remote_check(b, len, fd, &seals);

	if (rc)
		goto out_close;
	rc = SMART_ENOMEM;
	r = calloc(1, sizeof(*r));
	if (!r)
		goto out_close;
	r->d = d;
	r->base = smart__get64(b + 8);
	r->size = smart__get64(b + 16);
	r->rkey = smart__get32(b + 24);
	r->hugepages = (int)smart__get32(b + 28);
	r->dm_len = smart__get64(b + 32);
	r->dm_rkey = smart__get32(b + 40);
	shm_remote_lens(b, &r->map_len, &dm_map);
	/* sealed against writes by its owner: a writable shared mapping
	 * would be refused (EPERM), and only READs are for it */
	r->read_only = seals >= 0 &&
		       (seals & (F_SEAL_FUTURE_WRITE | F_SEAL_WRITE));
	/* not populated: pages come as they are touched (a populating
	 * mapping of a sparse memfd would allocate the whole region) */
	r->map = mmap(NULL, r->map_len + dm_map,
		      PROT_READ | (r->read_only ? 0 : PROT_WRITE), MAP_SHARED,
		      fd, 0);
	if (r->map == MAP_FAILED) {
		smart__err(d->log, "cannot map blade region: %m");
		free(r);
		goto out_close;
	}
	r->dm = r->map + r->map_len;
	r->map_len += dm_map; /* what detach unmaps */
	*out = r;
	rc = 0;
out_close:
	shm_peer_fd_drop(fd);
	return rc;
}

void smart__shm_remote_detach(struct smart_tp_remote *r)
{
	if (!r)
		return;
	/* nothing posts to it any more: polls stop looking */
	if (atomic_load(&r->failed))
		atomic_fetch_sub_explicit(&r->d->failures, 1,
					  memory_order_release);
	munmap(r->map, r->map_len);
	free(r);
}

void smart__shm_remote_fail(struct smart_tp_remote *r)
{
	if (!r || atomic_exchange(&r->failed, 1))
		return;
	atomic_fetch_add_explicit(&r->d->failures, 1, memory_order_release);
}

uint64_t smart__shm_remote_base(const struct smart_tp_remote *r)
{
	return r->base;
}

uint32_t smart__shm_remote_rkey(const struct smart_tp_remote *r)
{
	return r->rkey;
}

uint64_t smart__shm_remote_dm(const struct smart_tp_remote *r, uint32_t *rkey)
{
	*rkey = r->dm_rkey;
	return r->dm_len;
}
