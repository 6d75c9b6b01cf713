/*
 * Rendezvous staging against hostile peers (docs/rpc.md §5 and §13,
 * H2 and H5), on shm, where a peer holds a descriptor of what we
 * stage and maps it itself:
 *  - third_peer: a peer A connected to the same server V as an honest
 *    client H looks, through its own mapping of V's staging, for H's
 *    4-MiB echoes, and while H READs one XORs into its last fragment a
 *    pattern that leaves CRC-32C unchanged (the CRC is affine).  It must
 *    see none of H's bytes and no forged call may come back SMART_OK.
 *  - read_only: what a peer can do with the staging descriptor it is
 *    given (a dup of the one passed to it: SCM_RIGHTS passes the same
 *    open file): map it writable, mprotect a read-only mapping to
 *    writable, write(2) it, reopen /proc/self/fd/N O_RDWR, punch holes,
 *    store through /proc/self/mem.  None may change a byte; and its
 *    mapping, kept after its connection ended, must show nothing that is
 *    staged for the next connection.
 *  - oversized: a peer whose staging blob claims 1 TiB for a rndv_max of
 *    128 KiB is refused before anything is mapped (the address space
 *    does not grow); one within its rndv_max is taken.
 *  - unserved: rendezvous messages for an op without a handler are
 *    answered without a READ.
 *  - req_quota: a peer leaving requests open takes its connection's
 *    quota of the endpoint's requests, no more.
 * The attackers are in-process (library internals, msg_int.h), so that
 * each step happens at a chosen point: no timing luck.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/blade_fixture.h"
#include "harness/rpc_fixture.h"
#include "harness/test.h"
#include "msg/msg_int.h"
#include "smart/rpc.h"
#include "smart/smart.h"
#include "transport/shm/shm.h"
#include "util/bytes.h"

#define SECRET	   "rndv-sec-secret-0815"
#define OP_ECHO	   1
#define OP_STATS   3   /* reply: the server's struct smart_rpc_stats */
#define OP_NOBODY  77  /* no handler */
#define OP_HOLD	   4   /* left open until OP_RELEASE */
#define OP_HELD	   5   /* reply: u32, the requests held */
#define OP_RELEASE 6   /* every held request answered */
#define HOLD_CALLS 100 /* calls a peer leaves open at once */
#define OP_EXIT	   9
#define BIG	   (4u << 20)
#define ROUNDS	   8

/* XORed anywhere into a payload (byte aligned), it leaves its CRC-32C as
 * it was: the CRC-32C polynomial, reflected, with its x^32 term. */
static const uint8_t crc_null[5] = { 0xf1, 0x76, 0xec, 0x05, 0x01 };

static char secret_path[64];

static smart_ctx_t *ctx_new(void)
{
	return fixture_ctx((const char *[]){ "secret_file", secret_path,
					     "buf_pool", "4M", "max_tasks",
					     "128", NULL });
}

static void h_echo(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	(void)a;
	smart_rpc_reply(q, 0, d, n);
}

static void h_stats(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	struct smart_rpc_stats st;

	(void)d;
	(void)n;
	CHECK_OK(smart_rpc_stats(a, &st));
	smart_rpc_reply(q, 0, &st, sizeof(st));
}

struct held {
	smart_rpc_req_t *q[RPC_REQS];
	uint32_t n;
};

static void h_hold(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	struct held *h = a;

	(void)d;
	(void)n;
	CHECK_LT(h->n, RPC_REQS);
	h->q[h->n++] = q;
}

static void h_held(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	(void)d;
	(void)n;
	smart_rpc_reply(q, 0, &((struct held *)a)->n, sizeof(uint32_t));
}

static void h_release(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	struct held *h = a;

	(void)d;
	(void)n;
	while (h->n)
		smart_rpc_reply(h->q[--h->n], 0, NULL, 0);
	smart_rpc_reply(q, 0, NULL, 0);
}

static void h_exit(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	(void)d;
	(void)n;
	smart_rpc_reply(q, 0, NULL, 0);
	*(int *)a = 1;
}

static void serve_task(smart_worker_t *w, void *arg)
{
	while (!*(int *)arg)
		smart_task_yield(w);
}

/* args: the secret file, a pipe fd.  Serves echoes until OP_EXIT. */
static void child_server(char **args)
{
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.keepalive_ms = 2000,
					.keepalive_misses = 10 };
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	char addr[64];
	int fd = atoi(args[1]), stop = 0;
	struct held *held = calloc(1, sizeof(*held));

	snprintf(secret_path, sizeof(secret_path), "%s", args[0]);
	ctx = ctx_new();

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_rpc_create(w, &cfg, &rpc));
	CHECK_OK(smart_rpc_register(rpc, OP_ECHO, h_echo, NULL));
	CHECK_OK(smart_rpc_register(rpc, OP_EXIT, h_exit, &stop));
	CHECK_OK(smart_rpc_register(rpc, OP_STATS, h_stats, rpc));
	CHECK_OK(smart_rpc_register(rpc, OP_HOLD, h_hold, held));
	CHECK_OK(smart_rpc_register(rpc, OP_HELD, h_held, held));
	CHECK_OK(smart_rpc_register(rpc, OP_RELEASE, h_release, held));
	CHECK_OK(smart_rpc_listen(rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(rpc, addr, sizeof(addr)));
	CHECK_EQ(write(fd, addr, strlen(addr) + 1), (ssize_t)strlen(addr) + 1);
	close(fd);
	CHECK_OK(smart_task_spawn(w, serve_task, &stop));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_rpc_destroy(rpc));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
	free(held);
}

static pid_t server_start(char *addr)
{
	char fdtxt[16];
	int p[2];
	pid_t pid;
	ssize_t n;

	CHECK_OK(pipe(p));
	snprintf(fdtxt, sizeof(fdtxt), "%d", p[1]);
	pid = test_spawn("server",
			 (const char *[]){ secret_path, fdtxt, NULL });
	close(p[1]);
	n = read(p[0], addr, 63);
	close(p[0]);
	CHECK_MSG(n > 0, "the server did not start");
	addr[n] = 0;
	return pid;
}

static void client_open(struct rpc_ep *c, uint32_t qp_cache)
{
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.keepalive_ms = 2000,
					.keepalive_misses = 10,
					.timeout_ms = 20000,
					.qp_cache = qp_cache };

	rpc_ep_open(c, ctx_new(), &cfg);
}

static void fill_random(uint8_t *p, size_t n, uint64_t *rng)
{
	for (size_t j = 0; j < n; j += 8) {
		*rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
		memcpy(p + j, rng, n - j < 8 ? n - j : 8);
	}
}

/* A store of n bytes at addr the way a debugger would (FOLL_FORCE): it
 * gets through a writable mapping, never through a read-only shared one.
 * 1 when it landed. */
static int force_write(const void *addr, const void *p, size_t n)
{
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ssize_t r;

	CHECK(fd >= 0);
	r = pwrite(fd, p, n, (off_t)(uintptr_t)addr);
	close(fd);
	return r == (ssize_t)n;
}

/* The bytes of want[0..n) found at the same place in view (whole 8-byte
 * words that match: random data matches a zero page by chance in single
 * bytes, never in words). */
static uint64_t bytes_seen(const uint8_t *view, const uint8_t *want, size_t n)
{
	uint64_t seen = 0;

	for (size_t i = 0; i + 8 <= n; i += 8)
		seen += memcmp(view + i, want + i, 8) ? 0 : 8;
	return seen;
}

/* ---- third_peer ---------------------------------------------------------- */

struct attack {
	smart_rpc_conn_t *h; /* the honest client's connection */
	const uint8_t *out;
	uint8_t *back;
	const uint8_t *view; /* A's mapping of the staging it is
					 * given by V */
	uint64_t view_len;
	int rc, done, tried;
	uint32_t n;
	uint64_t off; /* where V staged H's echo */
	uint64_t windows, forge_writes;
};

static void honest_call(smart_worker_t *w, void *arg)
{
	struct attack *a = arg;

	(void)w;
	a->rc = smart_rpc_call(a->h, OP_ECHO, a->out, BIG, a->back, BIG, &a->n);
	a->done = 1;
}

/* Runs between the polls of H's worker: once H READs its echo, and before
 * the last fragment is READ, A flips bits of it through its own view
 * (CRC-neutral), where V staged it. */
static void attacker(smart_worker_t *w, void *arg)
{
	struct attack *a = arg;

	while (!a->done) {
		const struct rpc_rin *r = &a->h->rin;

		if (!a->tried && r->state == RPC_RIN_READING &&
		    r->posted < r->nfrag) {
			uint64_t at = r->d.off +
				      (uint64_t)(r->nfrag - 1) * RPC_FRAG;
			uint8_t x[sizeof(crc_null)];

			a->tried = 1;
			a->windows++;
			a->off = r->d.off;
			if (at + sizeof(x) <= a->view_len) {
				memcpy(x, a->view + at, sizeof(x));
				for (size_t i = 0; i < sizeof(x); i++)
					x[i] ^= crc_null[i];
				a->forge_writes += force_write(a->view + at, x,
							       sizeof(x));
			}
		}
		smart_task_yield(w);
	}
}

static void test_third_peer(void)
{
	uint8_t *out = malloc(BIG), *back = malloc(BIG);
	struct rpc_ep hc, ac;
	smart_rpc_conn_t *h, *k;
	struct smart_tp_remote *view;
	uint64_t rng = 0x7e57, disclosed = 0, anywhere = 0, forged = 0,
		 windows = 0, writes = 0, x;
	char addr[64];
	pid_t pid = server_start(addr);
	int st;

	CHECK(out && back);
	/* the pattern keeps the CRC: the forgery is one the CRC misses */
	fill_random(out, 1u << 16, &rng);
	x = smart_crc32c(0, out, 1u << 16);
	for (size_t i = 0; i < sizeof(crc_null); i++)
		out[4321 + i] ^= crc_null[i];
	CHECK_EQ(smart_crc32c(0, out, 1u << 16), x);

	client_open(&hc, 0);
	client_open(&ac, 0);
	CHECK_OK(smart_rpc_connect(hc.rpc, addr, &h));
	CHECK_OK(smart_rpc_connect(ac.rpc, addr, &k));
	view = k->remote;
	CHECK(view && view->map_len >= BIG);
	for (int round = 0; round < ROUNDS; round++) {
		struct attack a = { .h = h,
				    .out = out,
				    .back = back,
				    .view = view->map,
				    .view_len = view->map_len };

		fill_random(out, BIG, &rng);
		CHECK_OK(smart_task_spawn(hc.w, honest_call, &a));
		CHECK_OK(smart_task_spawn(hc.w, attacker, &a));
		CHECK_OK(smart_worker_run(hc.w));
		windows += a.windows;
		writes += a.forge_writes;
		if (a.rc == 0 && a.n == BIG && memcmp(out, back, BIG))
			forged++;
		/* what A sees where V staged the echo, and anywhere */
		if (a.off + BIG <= view->map_len)
			disclosed += bytes_seen(view->map + a.off, out, BIG);
		anywhere += memmem(view->map, view->map_len, out + BIG / 2,
				   256) != NULL;
		smart_rpc_progress(ac.rpc); /* A answers V's pings */
	}
	printf("   %d honest 4-MiB echoes: the third peer saw %" PRIu64
	       " of their bytes (%" PRIu64 " found anywhere in its view), "
	       "landed %" PRIu64 " forging stores in %" PRIu64 " READ "
	       "windows, %" PRIu64 " forged echoes came back SMART_OK\n",
	       ROUNDS, disclosed, anywhere, writes, windows, forged);
	/* the path ran: every round had A acting while H READ */
	CHECK_U64_EQ(windows, ROUNDS);
	CHECK_U64_EQ(disclosed, 0);
	CHECK_U64_EQ(anywhere, 0);
	CHECK_U64_EQ(writes, 0);
	CHECK_U64_EQ(forged, 0);
	CHECK_OK(smart_rpc_call(h, OP_EXIT, NULL, 0, NULL, 0, NULL));
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server: %d", st);
	smart_rpc_close(h);
	smart_rpc_close(k);
	rpc_ep_close(&hc);
	rpc_ep_close(&ac);
	free(out);
	free(back);
}

/* ---- read_only ----------------------------------------------------------- */

/* Each way a holder of the descriptor could write the file: 1 when it
 * did (the marker is then in the file, which pread tells). */
static int try_writes(int fd, size_t len, uint64_t *paths)
{
	static const char mark[8] = "FORGED!";
	char path[64];
	int landed = 0, fd2;
	void *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED) {
		memcpy(p, mark, 8);
		munmap(p, len);
		(*paths)++;
	}
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED);
	if (!mprotect(p, len, PROT_READ | PROT_WRITE)) {
		memcpy((char *)p + 8, mark, 8);
		(*paths)++;
	}
	*paths += force_write((char *)p + 16, mark, 8);
	munmap(p, len);
	*paths += pwrite(fd, mark, 8, 24) == 8;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	fd2 = open(path, O_RDWR | O_CLOEXEC);
	if (fd2 >= 0) {
		*paths += pwrite(fd2, mark, 8, 32) == 8;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
		if (p != MAP_FAILED) {
			memcpy((char *)p + 40, mark, 8);
			munmap(p, len);
			(*paths)++;
		}
		close(fd2);
	}
	*paths += !fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			     RPC_FRAG, RPC_FRAG);
	for (off_t at = 0; at < 48; at += 8) {
		char b[8];

		CHECK_EQ(pread(fd, b, 8, at), 8);
		landed += !memcmp(b, mark, 8);
	}
	return landed;
}

static void test_read_only(void)
{
	static uint8_t secret[2 * RPC_FRAG];
	struct smart_rpc_conn *c1, *c2;
	struct smart_msg_rndv d;
	struct rpc_ep v;
	uint64_t rng = 0x5eed, paths = 0, seen;
	int fds[SMART_SOCK_FDS], fd, landed;
	size_t len;
	uint8_t *old;

	client_open(&v, UINT32_MAX); /* no QP cache: c2 is made after c1 */
	CHECK_OK(smart__rpc_conn_new(v.rpc, 1, &c1));
	smart__rpc_conn_fds(c1, fds);
	fd = dup(fds[0]); /* what c1's peer receives */
	CHECK(fd >= 0);
	len = v.rpc->cfg.rndv_max;
	landed = try_writes(fd, len, &paths);
	printf("   the peer's staging descriptor: %" PRIu64 " of 7 ways to "
	       "write it worked, %d forged words in the file\n",
	       paths, landed);
	CHECK_U64_EQ(paths, 0);
	CHECK_EQ(landed, 0);

	/* the peer keeps a mapping after its connection ends: the next
	 * connection's staging is another file */
	old = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(old != MAP_FAILED);
	close(fd);
	smart__rpc_conn_free(c1);
	CHECK_OK(smart__rpc_conn_new(v.rpc, 1, &c2));
	fill_random(secret, sizeof(secret), &rng);
	CHECK_OK(smart__rndv_stage(c2, secret, sizeof(secret), &d));
	CHECK_LE(d.off + sizeof(secret), len);
	seen = bytes_seen(old + d.off, secret, sizeof(secret));
	printf("   a mapping kept past its connection: %" PRIu64 " bytes of "
	       "the next connection's staged message seen\n",
	       seen);
	CHECK_U64_EQ(seen, 0);
	munmap(old, len);
	smart__rpc_conn_free(c2);
	rpc_ep_close(&v);
}

/* ---- oversized ----------------------------------------------------------- */

static uint64_t vm_size(void)
{
	char line[256];
	uint64_t kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %" SCNu64, &kb) == 1)
			break;
	fclose(f);
	return kb << 10;
}

/* A staging blob of size bytes and a sealed memfd of that size. */
static int fake_staging(uint64_t size, uint8_t *blob, size_t *blob_len)
{
	int fd = memfd_create("fake-stage", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	CHECK(fd >= 0);
	CHECK_OK(ftruncate(fd, (off_t)size));
	CHECK_OK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL));
	memset(blob, 0, 48);
	smart__put32(blob, SHM_REGION_MAGIC);
	smart__put32(blob + 4, SHM_BLOB_VERSION);
	smart__put64(blob + 8, UINT64_C(1) << 44);
	smart__put64(blob + 16, size);
	smart__put32(blob + 24, 77);
	*blob_len = 48;
	return fd;
}

/* Victim v's new accepted connection against a peer (a connection of
 * endpoint a) whose staging blob says size bytes, its rndv_max rmax;
 * *grew: how much v's address space grew while it took the peer. */
static int peer_up(struct rpc_ep *v, struct rpc_ep *a, uint64_t size,
		   uint32_t rmax, struct smart_rpc_conn **vc,
		   struct smart_rpc_conn **ac, uint64_t *grew)
{
	struct smart_proto_peer m = { 0 };
	int fds[SMART_SOCK_FDS], afds[SMART_SOCK_FDS], rc;
	uint64_t before;

	CHECK_OK(smart__rpc_conn_new(v->rpc, 1, vc));
	CHECK_OK(smart__rpc_conn_new(a->rpc, 0, ac));
	m.window = (*ac)->window;
	m.max_msg = (*ac)->msg_len;
	m.rndv_max = rmax;
	m.blob_len = sizeof(m.blob);
	CHECK_OK(smart__rpc_conn_blob(*ac, m.blob, &m.blob_len));
	fds[0] = fake_staging(size, m.rblob, &m.rblob_len);
	smart__rpc_conn_fds(*ac, afds);
	fds[1] = dup(afds[1]);
	fds[2] = dup(afds[2]);
	before = vm_size();
	rc = smart__rpc_conn_up(*vc, &m, fds);
	*grew = vm_size() - before;
	return rc;
}

static void test_oversized(void)
{
	struct rpc_ep v, a;
	struct smart_rpc_conn *vc, *ac;
	struct smart_rpc_stats st;
	uint64_t grew;
	int rc;

	client_open(&v, UINT32_MAX);
	client_open(&a, UINT32_MAX);
	/* 1 TiB for a rndv_max of 128 KiB */
	rc = peer_up(&v, &a, UINT64_C(1) << 40, 128u << 10, &vc, &ac, &grew);
	CHECK_OK(smart_rpc_conn_stats(vc, &st));
	printf("   a 1-TiB staging blob for a rndv_max of 128 KiB: %s, the "
	       "address space grew by %" PRIu64 " MiB\n",
	       rc ? smart_strerror(rc) : "taken", grew >> 20);
	CHECK_EQ(rc, SMART_EPROTO);
	CHECK_U64_EQ(st.proto_errors, 1); /* the size check refused it */
	CHECK_LT(grew, UINT64_C(1) << 20);
	smart__rpc_conn_free(vc);
	smart__rpc_conn_free(ac);
	/* one within its rndv_max (100 000 rounded up to 128 KiB) */
	rc = peer_up(&v, &a, 128u << 10, 100000, &vc, &ac, &grew);
	CHECK_OK(rc);
	CHECK_LE(grew, UINT64_C(1) << 20); /* 128 KiB mapped, and the
						 * QP's receive segment */
	smart__rpc_conn_free(vc);
	smart__rpc_conn_free(ac);
	/* one byte over */
	rc = peer_up(&v, &a, (128u << 10) + 4096, 100000, &vc, &ac, &grew);
	CHECK_EQ(rc, SMART_EPROTO);
	smart__rpc_conn_free(vc);
	smart__rpc_conn_free(ac);
	rpc_ep_close(&v);
	rpc_ep_close(&a);
}

/* ---- unserved ------------------------------------------------------------ */

static struct smart_rpc_stats server_stats(smart_rpc_conn_t *k)
{
	struct smart_rpc_stats st;
	uint32_t n = 0;

	CHECK_OK(smart_rpc_call(k, OP_STATS, NULL, 0, &st, sizeof(st), &n));
	CHECK_EQ(n, sizeof(st));
	return st;
}

/* Long messages for an op nobody serves: answered (a call: SMART_ENOENT)
 * and their staging given back, nothing READ. */
static void test_unserved(void)
{
	uint8_t *big = calloc(1, 1u << 20);
	struct smart_rpc_stats before, after, mine;
	struct rpc_ep c;
	smart_rpc_conn_t *k;
	char addr[64];
	pid_t pid = server_start(addr);
	uint32_t n = 0;
	int st;

	CHECK(big != NULL);
	client_open(&c, 0);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	before = server_stats(k);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(smart_rpc_call(k, OP_NOBODY, big, 1u << 20, NULL, 0,
					&n),
			 SMART_ENOENT);
		CHECK_OK(smart_rpc_send(k, OP_NOBODY, big, 1u << 20));
	}
	after = server_stats(k);
	CHECK_OK(smart_rpc_conn_stats(k, &mine));
	printf("   8 rendezvous messages of 1 MiB for an op nobody serves: "
	       "the server READ %" PRIu64 " of them\n",
	       after.rndv_recv - before.rndv_recv);
	CHECK_U64_EQ(mine.rndv_sent, 8); /* they went by rendezvous */
	CHECK_U64_EQ(after.rndv_recv - before.rndv_recv, 0);
	CHECK_U64_EQ(after.proto_errors, 0);
	/* and the staging came back (DONE): more go */
	for (int i = 0; i < 100; i++)
		CHECK_EQ(smart_rpc_call(k, OP_NOBODY, big, 1u << 20, NULL, 0,
					&n),
			 SMART_ENOENT);
	CHECK_OK(smart_rpc_call(k, OP_EXIT, NULL, 0, NULL, 0, NULL));
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server: %d", st);
	smart_rpc_close(k);
	rpc_ep_close(&c);
	free(big);
}

/* ---- req_quota ----------------------------------------------------------- */

struct hog {
	smart_rpc_conn_t *k1, *k2;
	uint32_t busy, ok, held, done;
	int released;
};

static void hog_call(smart_worker_t *w, void *arg)
{
	struct hog *g = arg;
	int rc = smart_rpc_call(g->k1, OP_HOLD, NULL, 0, NULL, 0, NULL);

	(void)w;
	g->busy += rc == SMART_EBUSY;
	g->ok += rc == 0;
	g->done++;
}

/* On the same endpoint's second connection: waits until every call of
 * k1 is held or refused, then lets the server answer them. */
static void hog_watch(smart_worker_t *w, void *arg)
{
	struct hog *g = arg;
	int64_t until = smart__now_ms() + 10000;
	uint32_t n = 0;

	do {
		smart_task_yield(w);
		CHECK_OK(smart_rpc_call(g->k2, OP_HELD, NULL, 0, &g->held,
					sizeof(g->held), &n));
		CHECK_MSG(smart__now_ms() < until, "held %u, refused %u",
			  g->held, g->busy);
	} while (g->held + g->busy < HOLD_CALLS);
	CHECK_OK(smart_rpc_call(g->k2, OP_RELEASE, NULL, 0, NULL, 0, NULL));
	g->released = 1;
}

/* A peer that leaves HOLD_CALLS requests open on one connection: the
 * server holds its quota (max(window 64, 4096 / 64 connections) = 64)
 * and refuses the rest with SMART_EBUSY; its other connection is served
 * meanwhile. */
static void test_req_quota(void)
{
	struct hog g = { 0 };
	struct rpc_ep c;
	char addr[64];
	pid_t pid = server_start(addr);
	int st;

	client_open(&c, 0);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &g.k1));
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &g.k2));
	for (int i = 0; i < HOLD_CALLS; i++)
		CHECK_OK(smart_task_spawn(c.w, hog_call, &g));
	CHECK_OK(smart_task_spawn(c.w, hog_watch, &g));
	CHECK_OK(smart_worker_run(c.w));
	printf("   %d requests left open on one connection: the server held "
	       "%u, refused %u (SMART_EBUSY); its other connection served\n",
	       HOLD_CALLS, g.held, g.busy);
	CHECK_EQ(g.done, HOLD_CALLS);
	CHECK(g.released);
	CHECK_EQ(g.held, 64);
	CHECK_EQ(g.busy, HOLD_CALLS - 64); /* the path ran */
	CHECK_EQ(g.ok, 64);
	CHECK_OK(smart_rpc_call(g.k1, OP_EXIT, NULL, 0, NULL, 0, NULL));
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server: %d", st);
	smart_rpc_close(g.k1);
	smart_rpc_close(g.k2);
	rpc_ep_close(&c);
}

int main(int argc, char **argv)
{
	static const struct test_child children[] = {
		{ "server", child_server }, { NULL, NULL }
	};
	const char *t = getenv("SMART_TEST_TRANSPORT");
	int rc;

	test_children(argc, argv, children);
	if (t && strcmp(t, "shm"))
		test_skip("the staging attacks map shm descriptors");
	rpc_secret_file(secret_path, sizeof(secret_path),
			"/tmp/smart-rndv-XXXXXX", SECRET);
	rc = test_main(argc, argv,
		       (struct test_case[]){ { "third_peer", test_third_peer },
					     { "read_only", test_read_only },
					     { "oversized", test_oversized },
					     { "unserved", test_unserved },
					     { "req_quota", test_req_quota },
					     { NULL, NULL } });
	unlink(secret_path);
	return rc;
}
