/*
 * One-sided channels (include/smart/chan.h, docs/rpc.md §17) between
 * processes: every slot arrives once, in order and unchanged (seeded
 * content, lengths and user words) under a slow consumer that holds the
 * whole ring before releasing it (the producer stalls for credits every
 * round, counted), in IMM and FOOTER modes, on the adversarial shm mode
 * and on the RNIC model too; a FOOTER slot whose footer lands before its
 * payload is re-polled and taken once it settled; a killed producer ends
 * the consumer's next and a killed consumer the producer's reserve with
 * SMART_ECONN; a hostile producer (a forged slot index, WRITE length,
 * header length, footer CRC or footer seq, a write past its credits, a
 * data message) is cut off with SMART_EPROTO, counted, and the consumer
 * goes on; smart-stat shows a channel's counters on its connection.
 *
 * Producers and consumers that are not the test process are children
 * (test_spawn) on the transport of SMART_TEST_TRANSPORT (shm default; in
 * a VM guest, SMART_VM_IP is the address listened on).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/wait.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "msg/msg_int.h"
#include "smart/chan.h"
#include "smart/rpc.h"
#include "smart/smart.h"

#define SECRET	  "chan-test-secret-1618"
#define KA_MS	  200
#define KA_MISSES 10
#define SEED	  0x5eedc4a9ULL

static char secret_path[64];

/* CHAN_TEST_NIC_MODEL (set by test_model, inherited by the children):
 * the RNIC model's spec for both ends. */
static smart_ctx_t *ctx_new(void)
{
	const char *model = getenv("CHAN_TEST_NIC_MODEL");

	return fixture_ctx(
		(const char *[]){ "secret_file", secret_path, "buf_pool", "4M",
				  model ? "nic_model" : NULL, model, NULL });
}

static int on_shm(void)
{
	const char *t = getenv("SMART_TEST_TRANSPORT");

	return !t || !strcmp(t, "shm");
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* Slot i's length (every third one full) and bytes. */
static uint32_t len_of(uint64_t i, uint32_t cap)
{
	return i % 3 == 0 ? cap : 1 + (uint32_t)(mix(SEED ^ i) % cap);
}

static void fill(uint8_t *p, uint32_t len, uint64_t i)
{
	uint64_t x = mix(SEED + i);

	for (uint32_t k = 0; k < len; k++) {
		if (!(k & 7))
			x = mix(x + k);
		p[k] = (uint8_t)(x >> (8 * (k & 7)));
	}
}

static int same(const uint8_t *p, uint32_t len, uint64_t i)
{
	uint64_t x = mix(SEED + i);

	for (uint32_t k = 0; k < len; k++) {
		if (!(k & 7))
			x = mix(x + k);
		if (p[k] != (uint8_t)(x >> (8 * (k & 7))))
			return 0;
	}
	return 1;
}

static struct smart_rpc_config rpc_cfg(void)
{
	return (struct smart_rpc_config){ SMART_RPC_CONFIG_INIT,
					  .keepalive_ms = KA_MS,
					  .keepalive_misses = KA_MISSES,
					  .timeout_ms = 60000 };
}

struct end {
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	smart_chan_t *ch; /* consumer: the one accepted */
	char addr[64];
};

static void on_accept(smart_chan_t *ch, uint32_t tag, void *arg)
{
	struct end *e = arg;

	CHECK_EQ(tag, 77);
	e->ch = ch;
}

static void end_open(struct end *e, int listen)
{
	struct smart_rpc_config cfg = rpc_cfg();

	memset(e, 0, sizeof(*e));
	e->ctx = ctx_new();
	CHECK_OK(smart_worker_create(e->ctx, &e->w));
	CHECK_OK(smart_rpc_create(e->w, &cfg, &e->rpc));
	if (!listen)
		return;
	CHECK_OK(smart_chan_listen(e->rpc, on_accept, e));
	/* in a VM guest (tests/vm), its own address: rdma_cm resolves no
	 * route to 127.0.0.1 */
	snprintf(e->addr, sizeof(e->addr), "%s:0",
		 getenv("SMART_VM_IP") ? getenv("SMART_VM_IP") : "127.0.0.1");
	CHECK_OK(smart_rpc_listen(e->rpc, e->addr));
	CHECK_OK(smart_rpc_listen_addr(e->rpc, e->addr, sizeof(e->addr)));
}

static void end_close(struct end *e)
{
	CHECK_OK(smart_chan_close(e->ch));
	CHECK_OK(smart_rpc_destroy(e->rpc));
	CHECK_OK(smart_worker_destroy(e->w));
	CHECK_OK(smart_ctx_destroy(e->ctx));
}

static struct smart_chan_config chan_cfg(int mode, uint32_t slots,
					 uint32_t bytes)
{
	return (struct smart_chan_config){ SMART_CHAN_CONFIG_INIT,
					   .slots = slots, .slot_bytes = bytes,
					   .mode = (uint32_t)mode, .tag = 77 };
}

/* ---- the producer child ------------------------------------------------ */

/* A slot committed by hand: what a hostile producer can do with its own
 * process (the WR it posts is all the consumer sees). */
static void forged(smart_chan_t *ch, const char *how)
{
	struct smart_rpc_conn *c = ch->conn;
	uint32_t slot = (uint32_t)(ch->seq & (ch->slots - 1));
	uint8_t *p = (uint8_t *)ch->mr->addr + (size_t)slot * ch->bytes;
	struct smart_tp_wr wr = { .local = p, .lkey = ch->mr->lkey };
	uint32_t hdr[4] = { 64, 0, 0, 0 };

	wr.remote = c->rpc->tp->remote_base(c->remote) +
		    (uint64_t)slot * ch->bytes;
	wr.rkey = c->rpc->tp->remote_rkey(c->remote);
	wr.opcode = ch->mode == SMART_CHAN_IMM ? SMART_TP_WRITE_IMM :
						 SMART_TP_WRITE;
	wr.len = ch->mode == SMART_CHAN_IMM ? 16 + 64 : ch->bytes;
	if (!strcmp(how, "slot")) {
		slot = (slot + 1) & (ch->slots - 1);
		wr.remote += ch->bytes;
		wr.local = p;
	} else if (!strcmp(how, "len")) {
		wr.len = ch->bytes + 16; /* in the ring, past the slot */
	} else if (!strcmp(how, "hdr")) {
		hdr[0] = ch->bytes * 4; /* more than the slot holds */
	}
	memcpy(p, hdr, sizeof(hdr));
	if (!strcmp(how, "crc") || !strcmp(how, "seq")) {
		/* crc: a CRC that never matches; seq: a right CRC over a
		 * seq naming a slot 5 rounds ahead */
		uint64_t f[3] = { 0, 64, ch->seq + 1 };
		uint32_t crc;

		if (!strcmp(how, "seq"))
			f[2] += 5 * ch->slots;
		crc = smart_crc32c(smart_crc32c(0, p, 64), f, 12);
		crc = smart_crc32c(crc, &f[2], 8);
		if (!strcmp(how, "crc"))
			crc = ~crc;
		f[1] |= (uint64_t)crc << 32;
		memcpy(p + ch->bytes - 24, f, sizeof(f));
	}
	if (!strcmp(how, "data")) {
		CHECK_OK(smart_rpc_send(c, 5, "x", 1));
		return;
	}
	if (!strcmp(how, "overrun")) {
		/* slots + 1 slots, all valid, without waiting for credits */
		for (uint32_t i = 0; i <= ch->slots; i++) {
			ch->reserved = 1;
			CHECK_OK(smart_chan_commit(ch, 8, ch->seq));
		}
		return;
	}
	smart__rpc_chan_post(c, &wr, slot);
}

/* FOOTER slot `seq`, torn on purpose: its footer (right seq and CRC)
 * WRITten first, its payload only once the consumer says (a byte on go)
 * that it polled the slot and found it torn. */
static void torn_slot(struct end *e, int go)
{
	smart_chan_t *ch = e->ch;
	struct smart_rpc_conn *c = ch->conn;
	uint32_t slot = (uint32_t)(ch->seq & (ch->slots - 1)), len = 64;
	uint8_t *p = (uint8_t *)ch->mr->addr + (size_t)slot * ch->bytes;
	uint64_t f[3] = { ch->seq, len, ch->seq + 1 };
	uint64_t base = c->rpc->tp->remote_base(c->remote) +
			(uint64_t)slot * ch->bytes;
	struct smart_tp_wr wr = { .opcode = SMART_TP_WRITE,
				  .lkey = ch->mr->lkey,
				  .rkey = c->rpc->tp->remote_rkey(c->remote) };
	struct pollfd pf = { .fd = go, .events = POLLIN };
	uint32_t crc;

	fill(p, len, ch->seq);
	crc = smart_crc32c(smart_crc32c(0, p, len), f, 12);
	f[1] |= (uint64_t)smart_crc32c(crc, &f[2], 8) << 32;
	memcpy(p + ch->bytes - 24, f, sizeof(f));
	wr.local = p + ch->bytes - 24;
	wr.remote = base + ch->bytes - 24;
	wr.len = 24;
	smart__rpc_chan_post(c, &wr, slot);
	while (poll(&pf, 1, 0) == 0)
		smart_rpc_progress(e->rpc);
	wr.local = p;
	wr.remote = base;
	wr.len = len;
	smart__rpc_chan_post(c, &wr, slot);
	ch->seq++;
}

/* args: addr, mode, slots, bytes, count, behaviour ("good", "hang",
 * "torn" or a forgery of forged()), pipe fd for "credit_stalls\n",
 * ("torn") pipe fd of the consumer's go */
static void child_producer(char **args)
{
	struct smart_chan_config cc = chan_cfg(atoi(args[1]),
					       (uint32_t)atoi(args[2]),
					       (uint32_t)atoi(args[3]));
	uint64_t count = strtoull(args[4], NULL, 10);
	struct smart_chan_stats st;
	struct end e;
	char line[64];
	int fd = atoi(args[6]), n;

	end_open(&e, 0);
	CHECK_OK(smart_chan_open(e.rpc, args[0], &cc, &e.ch));
	for (uint64_t i = 0; i < count; i++) {
		void *buf;
		uint32_t cap, len;

		CHECK_OK(smart_chan_reserve(e.ch, &buf, &cap));
		len = len_of(i, cap);
		fill(buf, len, i);
		CHECK_OK(smart_chan_commit(e.ch, len, i));
	}
	if (!strcmp(args[5], "torn")) {
		torn_slot(&e, atoi(args[7]));
	} else if (strcmp(args[5], "good") && strcmp(args[5], "hang")) {
		/* the good slots taken and released first (acked) */
		while (e.ch->conn->tx_acked < count)
			smart_rpc_progress(e.rpc);
		forged(e.ch, args[5]);
	}
	CHECK_OK(smart_chan_stats(e.ch, &st));
	if (!strcmp(args[5], "good")) {
		/* the endpoint's counters (smart-stat's) agree */
		struct smart_rpc_stats rs;

		CHECK_OK(smart_rpc_stats(e.rpc, &rs));
		CHECK_U64_EQ(rs.chan_slots_sent, count);
		CHECK_GE(rs.window_stalls, st.credit_stalls);
	}
	n = snprintf(line, sizeof(line), "%" PRIu64 "\n", st.credit_stalls);
	CHECK_EQ(write(fd, line, (size_t)n), n);
	close(fd);
	/* until the consumer closes (or we are killed) */
	while (e.ch->conn && e.ch->conn->state == RPC_C_LIVE)
		smart_rpc_progress(e.rpc);
	end_close(&e);
}

/* args: pipe fd for the address, and "plain" for an endpoint that does
 * not listen for channels.  Accepts a channel, takes nothing. */
static void child_consumer(char **args)
{
	struct end e;
	int fd = atoi(args[0]);

	end_open(&e, 1);
	if (args[1] && !strcmp(args[1], "plain"))
		CHECK_OK(smart_chan_listen(e.rpc, NULL, NULL));
	CHECK_EQ(write(fd, e.addr, strlen(e.addr) + 1),
		 (ssize_t)strlen(e.addr) + 1);
	close(fd);
	for (;;)
		smart_rpc_progress(e.rpc);
}

/* Start a producer against e (progressed meanwhile); *rfd reads its
 * credit stalls. */
static pid_t producer_start_go(struct end *e, int mode, uint32_t slots,
			       uint32_t bytes, uint64_t count, const char *how,
			       int *rfd, int go)
{
	char m[8], s[16], b[16], n[24], fdtxt[16], gotxt[16];
	int p[2];
	pid_t pid;

	CHECK_OK(pipe(p));
	snprintf(m, sizeof(m), "%d", mode);
	snprintf(s, sizeof(s), "%u", slots);
	snprintf(b, sizeof(b), "%u", bytes);
	snprintf(n, sizeof(n), "%" PRIu64, count);
	snprintf(fdtxt, sizeof(fdtxt), "%d", p[1]);
	snprintf(gotxt, sizeof(gotxt), "%d", go);
	pid = test_spawn("producer", (const char *[]){ e->addr, m, s, b, n, how,
						       fdtxt, gotxt, NULL });
	close(p[1]);
	while (!e->ch)
		smart_rpc_progress(e->rpc);
	*rfd = p[0];
	return pid;
}

static pid_t producer_start(struct end *e, int mode, uint32_t slots,
			    uint32_t bytes, uint64_t count, const char *how,
			    int *rfd)
{
	return producer_start_go(e, mode, slots, bytes, count, how, rfd, -1);
}

static uint64_t read_u64(int fd)
{
	char line[64] = { 0 };
	ssize_t n = read(fd, line, sizeof(line) - 1);

	CHECK_MSG(n > 0, "the producer said nothing");
	close(fd);
	return strtoull(line, NULL, 10);
}

/* The next slot, progressing while there is none; its status. */
static int take(struct end *e, const void **buf, uint32_t *len, uint64_t *user)
{
	int rc;

	while ((rc = smart_chan_next(e->ch, buf, len, user)) == SMART_EAGAIN)
		smart_rpc_progress(e->rpc);
	return rc;
}

static void reap(pid_t pid)
{
	int st;

	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
}

static uint64_t ms_since(uint64_t t0)
{
	return (smart_now_ns() - t0) / 1000000;
}

/* smart-stat --pid (this process) --json, progressing e meanwhile (it
 * answers from its poll); its output in out. */
static void stat_self(struct end *e, char *out, size_t cap)
{
	char pid[16];
	const char *argv[] = { SMART_BIN_DIR "/smart-stat", "--pid", pid,
			       "--json", NULL };
	posix_spawn_file_actions_t fa;
	size_t len = 0;
	pid_t child;
	int p[2], st;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	CHECK_OK(pipe2(p, O_CLOEXEC));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	CHECK_OK(posix_spawn(&child, argv[0], &fa, NULL, (char **)argv,
			     environ));
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	for (;;) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		ssize_t r;

		smart_rpc_progress(e->rpc);
		if (poll(&pf, 1, 0) <= 0)
			continue;
		r = read(p[0], out + len, cap - 1 - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	out[len] = 0;
	close(p[0]);
	CHECK_EQ(waitpid(child, &st, 0), child);
	CHECK_MSG(WIFEXITED(st) && !WEXITSTATUS(st), "smart-stat: %s", out);
}

/* The number after "key": in a smart-stat --json answer. */
static uint64_t json_u64(const char *from, const char *key)
{
	char pat[64];
	const char *s;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	s = strstr(from, pat);
	CHECK_MSG(s, "no %s in %s", key, from);
	return strtoull(s + strlen(pat), NULL, 10);
}

/* smart-stat shows the channel's counters on its connection (the only
 * one of e's endpoint). */
static void stat_check(struct end *e, const struct smart_chan_stats *st)
{
	static char out[1 << 16];
	const char *c;

	stat_self(e, out, sizeof(out));
	c = strstr(out, "\"conns\":[{");
	CHECK_MSG(c, "no connection in %s", out);
	CHECK_U64_EQ(json_u64(c, "chan_slots_recv"), st->slots);
	CHECK_U64_EQ(json_u64(c, "bytes_recv"), st->bytes);
	CHECK_U64_EQ(json_u64(c, "chan_torn"), st->torn_repolls);
	CHECK_U64_EQ(json_u64(c, "proto_errors"), 0);
	printf("   smart-stat: chan_slots_recv %" PRIu64 ", bytes_recv %" PRIu64
	       ", chan_torn %" PRIu64 "\n",
	       json_u64(c, "chan_slots_recv"), json_u64(c, "bytes_recv"),
	       json_u64(c, "chan_torn"));
}

/* ---- every slot once, in order, unchanged ------------------------------ */

#define HELD_MAX 64

/* count slots through a ring of slots x bytes; the consumer takes the
 * whole ring (the producer is out of credits then), progresses, checks
 * every held slot again (none was overwritten), releases them all; with
 * stat, smart-stat shows the counters at the end. */
static void stream_stat(int mode, uint32_t slots, uint32_t bytes,
			uint64_t count, int stat)
{
	struct {
		const uint8_t *p;
		uint32_t len;
	} held[HELD_MAX];
	struct smart_chan_stats st;
	struct smart_rpc_stats rs;
	struct end e;
	uint64_t stalls, got = 0;
	uint32_t nheld = 0;
	int rfd;
	pid_t pid;

	end_open(&e, 1);
	pid = producer_start(&e, mode, slots, bytes, count, "good", &rfd);
	while (got < count) {
		const void *buf;
		uint32_t len;
		uint64_t user;

		CHECK_OK(take(&e, &buf, &len, &user));
		CHECK_U64_EQ(user, got);
		CHECK_EQ(len, len_of(got, bytes - (mode ? 24 : 16)));
		CHECK_MSG(same(buf, len, got), "slot %" PRIu64 " changed", got);
		held[nheld].p = buf;
		held[nheld++].len = len;
		got++;
		if (nheld < slots && got < count)
			continue;
		for (int k = 0; k < 200; k++)
			smart_rpc_progress(e.rpc); /* a producer past its
							 * credits would land */
		for (uint32_t k = 0; k < nheld; k++) {
			CHECK_MSG(same(held[k].p, held[k].len, got - nheld + k),
				  "held slot %" PRIu64 " overwritten",
				  got - nheld + k);
			CHECK_OK(smart_chan_release(e.ch));
		}
		nheld = 0;
	}
	stalls = read_u64(rfd);
	CHECK_OK(smart_chan_stats(e.ch, &st));
	CHECK_OK(smart_rpc_stats(e.rpc, &rs));
	CHECK_U64_EQ(st.slots, count);
	CHECK_U64_EQ(st.footer_slots, mode == SMART_CHAN_FOOTER ? count : 0);
	CHECK_U64_EQ(st.proto_errors, 0);
	CHECK_U64_EQ(rs.chan_slots_recv, count);
	CHECK_U64_EQ(rs.rnr, 0);
	CHECK_GT(stalls, 0);
	printf("   %s %u x %u: %" PRIu64 " slots, %" PRIu64 " bytes, "
	       "producer credit stalls %" PRIu64 ", torn re-polls %" PRIu64
	       "\n",
	       mode ? "FOOTER" : "IMM", slots, bytes, st.slots, st.bytes,
	       stalls, st.torn_repolls);
	if (stat)
		stat_check(&e, &st);
	end_close(&e); /* the producer sees our CLOSE and exits */
	reap(pid);
}

static void stream(int mode, uint32_t slots, uint32_t bytes, uint64_t count)
{
	stream_stat(mode, slots, bytes, count, 0);
}

/* The counters in smart-stat (docs/rpc.md §8): a FOOTER channel's on the
 * adversarial shm mode (torn re-polls likely), an IMM one's. */
static void test_stat(void)
{
	if (on_shm())
		setenv("SMART_SHM_ADVERSARIAL", "seed=11,pause_pct=50", 1);
	stream_stat(SMART_CHAN_FOOTER, 4, 8192, 200, 1);
	unsetenv("SMART_SHM_ADVERSARIAL");
	stream_stat(SMART_CHAN_IMM, 4, 4096, 200, 1);
}

static void test_imm(void)
{
	stream(SMART_CHAN_IMM, 8, 32u << 10, 3000);
	stream(SMART_CHAN_IMM, 2, 4096, 1000);
}

static void test_footer(void)
{
	stream(SMART_CHAN_FOOTER, 8, 32u << 10, 3000);
	stream(SMART_CHAN_FOOTER, 4, 4096, 1000);
}

/* The adversarial shm mode (docs/transport.md): WRITEs in scrambled word
 * order with pauses, completions held: FOOTER must re-poll torn slots. */
static void test_adversarial(void)
{
	if (!on_shm()) {
		printf("   (shm only)\n");
		return;
	}
	setenv("SMART_SHM_ADVERSARIAL", "seed=11,pause_pct=50", 1);
	stream(SMART_CHAN_IMM, 4, 8192, 300);
	stream(SMART_CHAN_FOOTER, 4, 8192, 300);
	unsetenv("SMART_SHM_ADVERSARIAL");
}

/* The RNIC model (docs/transport.md): every WR timed like a NIC's, the
 * WRITE's bytes landing only when the model says; every slot still
 * arrives once, in order, unchanged. */
static void test_model(void)
{
	if (!on_shm()) {
		printf("   (shm only)\n");
		return;
	}
	setenv("CHAN_TEST_NIC_MODEL", "default", 1);
	stream(SMART_CHAN_IMM, 8, 32u << 10, 300);
	stream(SMART_CHAN_FOOTER, 4, 8192, 300);
	unsetenv("CHAN_TEST_NIC_MODEL");
}

/* A FOOTER slot whose footer landed before its payload (what rule 4
 * allows and the adversarial mode does at random, made certain here):
 * the consumer finds it torn, re-polls, and takes it once it settled,
 * unchanged. */
static void test_torn(void)
{
	struct smart_chan_stats st;
	const void *buf;
	uint32_t len;
	uint64_t user;
	struct end e;
	int rfd, go[2], rc;
	pid_t pid;

	CHECK_OK(pipe(go));
	end_open(&e, 1);
	pid = producer_start_go(&e, SMART_CHAN_FOOTER, 4, 4096, 2, "torn", &rfd,
				go[0]);
	close(go[0]);
	for (uint64_t i = 0; i < 2; i++) {
		CHECK_OK(take(&e, &buf, &len, &user));
		CHECK_OK(smart_chan_release(e.ch));
	}
	do {
		smart_rpc_progress(e.rpc);
		rc = smart_chan_next(e.ch, &buf, &len, &user);
		CHECK_OK(smart_chan_stats(e.ch, &st));
	} while (rc == SMART_EAGAIN && !st.torn_repolls);
	CHECK_EQ(rc, SMART_EAGAIN); /* torn: not taken */
	CHECK_EQ(write(go[1], "g", 1), 1);
	CHECK_OK(take(&e, &buf, &len, &user));
	CHECK_U64_EQ(user, 2);
	CHECK_EQ(len, 64);
	CHECK_MSG(same(buf, len, 2), "the torn slot changed");
	CHECK_OK(smart_chan_stats(e.ch, &st));
	CHECK_GT(st.torn_repolls, 0);
	CHECK_U64_EQ(st.proto_errors, 0);
	printf("   torn slot: %" PRIu64 " torn re-polls, then taken "
	       "unchanged\n",
	       st.torn_repolls);
	read_u64(rfd);
	close(go[1]);
	end_close(&e);
	reap(pid);
}

/* Event mode: an endpoint consuming a FOOTER channel never arms (its
 * slots would wake nothing), for 300 ms of tries; once the channel is
 * closed it arms. */
static void test_event(void)
{
	const void *buf;
	uint32_t len;
	uint64_t user, t0;
	struct end e;
	int rfd, efd, rc = SMART_EAGAIN, refused = 0;
	pid_t pid;

	end_open(&e, 1);
	if (smart_rpc_event_fd(e.rpc, &efd) == SMART_ENOTSUP) {
		printf("   (no events on this transport)\n");
		end_close(&e);
		return;
	}
	pid = producer_start(&e, SMART_CHAN_FOOTER, 4, 4096, 2, "good", &rfd);
	for (int i = 0; i < 2; i++) {
		CHECK_OK(take(&e, &buf, &len, &user));
		CHECK_OK(smart_chan_release(e.ch));
	}
	read_u64(rfd);
	for (t0 = smart_now_ns(); ms_since(t0) < 300; refused++) {
		smart_rpc_progress(e.rpc);
		CHECK_EQ(smart_rpc_event_arm(e.rpc), SMART_EAGAIN);
	}
	CHECK_OK(smart_chan_close(e.ch));
	e.ch = NULL;
	reap(pid);
	for (t0 = smart_now_ns(); rc && ms_since(t0) < 10000;) {
		smart_rpc_progress(e.rpc);
		rc = smart_rpc_event_arm(e.rpc);
	}
	CHECK_OK(rc);
	printf("   event mode: %d arms refused while a FOOTER channel was "
	       "open, then armed\n",
	       refused);
	end_close(&e);
}

/* ---- peers that die ---------------------------------------------------- */

/* The producer sends 5 slots, then is killed: they are taken, then next
 * ends with SMART_ECONN once the keepalive gives it up. */
static void test_producer_killed(void)
{
	const void *buf;
	uint32_t len;
	uint64_t user, t0;
	struct end e;
	int rfd, st;
	pid_t pid;

	end_open(&e, 1);
	pid = producer_start(&e, SMART_CHAN_IMM, 8, 4096, 5, "hang", &rfd);
	for (uint64_t i = 0; i < 5; i++) {
		CHECK_OK(take(&e, &buf, &len, &user));
		CHECK_U64_EQ(user, i);
		CHECK_OK(smart_chan_release(e.ch));
	}
	read_u64(rfd);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	t0 = smart_now_ns();
	CHECK_EQ(take(&e, &buf, &len, &user), SMART_ECONN);
	printf("   killed producer: next gave SMART_ECONN after %" PRIu64
	       " ms (keepalive bound %d ms)\n",
	       ms_since(t0), KA_MS * KA_MISSES);
	end_close(&e);
}

/* The consumer takes nothing and is killed: the producer, out of
 * credits, gets SMART_ECONN from reserve once the keepalive gives the
 * consumer up. */
static void test_consumer_killed(void)
{
	struct smart_chan_config cc = chan_cfg(SMART_CHAN_IMM, 4, 4096);
	struct end e;
	char fdtxt[16];
	void *buf;
	uint32_t cap;
	uint64_t t0;
	int p[2], st;
	pid_t pid;

	CHECK_OK(pipe(p));
	snprintf(fdtxt, sizeof(fdtxt), "%d", p[1]);
	pid = test_spawn("consumer", (const char *[]){ fdtxt, NULL });
	close(p[1]);
	end_open(&e, 0);
	CHECK_MSG(read(p[0], e.addr, sizeof(e.addr) - 1) > 0, "no consumer");
	close(p[0]);
	CHECK_OK(smart_chan_open(e.rpc, e.addr, &cc, &e.ch));
	for (int i = 0; i < 4; i++) {
		CHECK_OK(smart_chan_reserve(e.ch, &buf, &cap));
		CHECK_OK(smart_chan_commit(e.ch, 8, (uint64_t)i));
	}
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	t0 = smart_now_ns();
	CHECK_EQ(smart_chan_reserve(e.ch, &buf, &cap), SMART_ECONN);
	printf("   killed consumer: reserve gave SMART_ECONN after %" PRIu64
	       " ms (keepalive bound %d ms)\n",
	       ms_since(t0), KA_MS * KA_MISSES);
	end_close(&e);
}

/* ---- hostile producers ------------------------------------------------- */

/* Two good slots, then a forgery: the two arrive; the forgery cuts the
 * producer off (at arrival where it can be seen there: the connection
 * goes without a next), next says SMART_EPROTO, counted; we go on. */
static void hostile(int mode, const char *how, int at_arrival)
{
	struct smart_rpc_stats rs;
	const void *buf;
	uint32_t len;
	uint64_t user, t0;
	struct end e;
	int rfd, rc;
	pid_t pid;

	end_open(&e, 1);
	pid = producer_start(&e, mode, 4, 4096, 2, how, &rfd);
	for (uint64_t i = 0; i < 2; i++) {
		CHECK_OK(take(&e, &buf, &len, &user));
		CHECK_U64_EQ(user, i);
		CHECK_OK(smart_chan_release(e.ch));
	}
	close(rfd); /* it forges once our release came back */
	t0 = smart_now_ns();
	if (at_arrival) {
		while (e.ch->conn && e.ch->conn->state == RPC_C_LIVE &&
		       ms_since(t0) < 10000)
			smart_rpc_progress(e.rpc);
		CHECK_MSG(!e.ch->conn || e.ch->conn->state != RPC_C_LIVE,
			  "%s: not cut at arrival", how);
	}
	rc = take(&e, &buf, &len, &user);
	CHECK_MSG(rc == SMART_EPROTO, "%s: next gave %d", how, rc);
	CHECK_OK(smart_rpc_stats(e.rpc, &rs));
	CHECK_GE(rs.proto_errors, 1);
	printf("   forged %-7s (%s): cut after %" PRIu64 " ms, proto_errors "
	       "%" PRIu64 "\n",
	       how, mode ? "FOOTER" : "IMM", ms_since(t0), rs.proto_errors);
	end_close(&e);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	waitpid(pid, &rc, 0);
}

static void test_hostile(void)
{
	hostile(SMART_CHAN_IMM, "slot", 1);
	hostile(SMART_CHAN_IMM, "len", 1);
	hostile(SMART_CHAN_IMM, "overrun", 1);
	hostile(SMART_CHAN_IMM, "data", 1);
	hostile(SMART_CHAN_IMM, "hdr", 0);
	hostile(SMART_CHAN_FOOTER, "seq", 0);
	hostile(SMART_CHAN_FOOTER, "crc", 0);
}

/* A FOOTER slot whose CRC never matches, its producer killed once the
 * consumer found it torn: the connection is gone (the keepalive) before
 * the re-poll bound cuts the producer off; that cut is still counted in
 * the endpoint's proto_errors (smart-stat's), not only the channel's. */
static void test_hostile_gone(void)
{
	struct smart_chan_stats st;
	struct smart_rpc_stats rs;
	const void *buf;
	uint32_t len;
	uint64_t user;
	struct end e;
	int rfd, rc, status;
	pid_t pid;

	end_open(&e, 1);
	pid = producer_start(&e, SMART_CHAN_FOOTER, 4, 4096, 2, "crc", &rfd);
	for (uint64_t i = 0; i < 2; i++) {
		CHECK_OK(take(&e, &buf, &len, &user));
		CHECK_OK(smart_chan_release(e.ch));
	}
	close(rfd);
	do {
		smart_rpc_progress(e.rpc);
		rc = smart_chan_next(e.ch, &buf, &len, &user);
		CHECK_OK(smart_chan_stats(e.ch, &st));
	} while (rc == SMART_EAGAIN && !st.torn_repolls);
	CHECK_EQ(rc, SMART_EAGAIN); /* torn, not yet cut */
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	while (e.ch->conn && e.ch->conn->state == RPC_C_LIVE)
		smart_rpc_progress(e.rpc); /* the keepalive ends it */
	CHECK_EQ(take(&e, &buf, &len, &user), SMART_EPROTO);
	CHECK_OK(smart_chan_stats(e.ch, &st));
	CHECK_OK(smart_rpc_stats(e.rpc, &rs));
	printf("   torn slot of a killed producer: channel proto_errors %" PRIu64
	       ", endpoint proto_errors %" PRIu64 ", chan_torn %" PRIu64
	       " (channel %" PRIu64 "), chan_slots_recv %" PRIu64 "\n",
	       st.proto_errors, rs.proto_errors, rs.chan_torn, st.torn_repolls,
	       rs.chan_slots_recv);
	CHECK_U64_EQ(st.proto_errors, 1);
	CHECK_U64_EQ(rs.proto_errors, 1);
	CHECK_U64_EQ(rs.chan_torn, st.torn_repolls);
	CHECK_U64_EQ(rs.chan_slots_recv, 2);
	end_close(&e);
}

static void test_args(void)
{
	struct smart_chan_config bad = chan_cfg(SMART_CHAN_IMM, 3, 4096);
	struct smart_chan_config big = chan_cfg(SMART_CHAN_IMM, 128, 4096);
	struct end e;
	smart_chan_t *ch;
	const void *b;
	uint32_t len;
	uint64_t user;

	end_open(&e, 1);
	CHECK_EQ(smart_chan_open(e.rpc, e.addr, &bad, &ch), SMART_EINVAL);
	CHECK_EQ(smart_chan_open(e.rpc, e.addr, &big, &ch), SMART_EINVAL);
	CHECK_EQ(smart_chan_next(NULL, &b, &len, &user), SMART_EINVAL);
	CHECK_EQ(smart_chan_release(NULL), SMART_EINVAL);
	CHECK_OK(smart_chan_close(NULL));
	CHECK_EQ(smart_chan_listen(NULL, NULL, NULL), SMART_EINVAL);
	end_close(&e);
	/* an endpoint that does not listen for channels refuses one */
	{
		struct smart_chan_config ok = chan_cfg(SMART_CHAN_IMM, 4, 4096);
		char fdtxt[16];
		int p[2], st;
		pid_t pid;

		CHECK_OK(pipe(p));
		snprintf(fdtxt, sizeof(fdtxt), "%d", p[1]);
		pid = test_spawn("consumer",
				 (const char *[]){ fdtxt, "plain", NULL });
		close(p[1]);
		end_open(&e, 0);
		CHECK_MSG(read(p[0], e.addr, sizeof(e.addr) - 1) > 0,
			  "no consumer");
		close(p[0]);
		CHECK_EQ(smart_chan_open(e.rpc, e.addr, &ok, &ch),
			 SMART_EACCES);
		CHECK_EQ(smart_rpc_conns(e.rpc), 0);
		end_close(&e);
		CHECK_EQ(kill(pid, SIGKILL), 0);
		CHECK_EQ(waitpid(pid, &st, 0), pid);
	}
}

int main(int argc, char **argv)
{
	static const struct test_child children[] = {
		{ "producer", child_producer },
		{ "consumer", child_consumer },
		{ NULL, NULL }
	};
	int rc;

	/* the children find the secret file where the parent made it */
	if (getenv("CHAN_TEST_SECRET"))
		snprintf(secret_path, sizeof(secret_path), "%s",
			 getenv("CHAN_TEST_SECRET"));
	test_children(argc, argv, children);
	test_secret_file(secret_path, sizeof(secret_path),
			 "/tmp/smart-chan-XXXXXX", SECRET);
	setenv("CHAN_TEST_SECRET", secret_path, 1);
	rc = test_main(argc, argv,
		       (struct test_case[]){
			       { "imm", test_imm },
			       { "footer", test_footer },
			       { "adversarial", test_adversarial },
			       { "model", test_model },
			       { "stat", test_stat },
			       { "torn", test_torn },
			       { "event", test_event },
			       { "producer_killed", test_producer_killed },
			       { "consumer_killed", test_consumer_killed },
			       { "hostile", test_hostile },
			       { "hostile_gone", test_hostile_gone },
			       { "args", test_args },
			       { NULL, NULL } });
	unlink(secret_path);
	return rc;
}
