/*
 * Bootstrap handshake against an in-process blade (shm, 127.0.0.1:0):
 * good and refused handshakes, malformed and idle clients, capacity
 * limits, the one-time fd token, QP setup, the address parser, and
 * smartd's start/stop, its flags and its no-secret refusal.  Peers without
 * the secret in numbers are test_unauth.c's; secrets are test_secret.c's.
 *
 * Waits on the blade's counters are liveness waits bounded by 5 s; nothing
 * asserts on timing.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "harness/raw_peer.h"
#include "harness/test.h"
#include "smart/blade.h"
#include "runtime/bootstrap.h"
#include "wire/proto.h"
#include "util/compiler.h"
#include "wire/services.h"
#include "util/sockio.h"

#define SECRET "s3cret-handshake"
#define MIB    (UINT64_C(1) << 20)

/* timeout_ms is both the auth deadline and the stall timeout: short, so
 * that the cases ending in a timeout stay fast. */
static smart_blade_t *blade_start(int max_clients, int timeout_ms)
{
	struct smart_blade_config cfg;
	smart_blade_t *b;

	smart_blade_config_init(&cfg);
	cfg.size = 8 * MIB;
	cfg.listen = "127.0.0.1:0";
	cfg.id = 7;
	cfg.hugepages = 0;
	cfg.secret = SECRET;
	cfg.secret_len = strlen(SECRET);
	cfg.max_clients = max_clients;
	cfg.handshake_timeout_ms = timeout_ms;
	cfg.auth_timeout_ms = timeout_ms;
	CHECK_OK(smart_blade_create(&cfg, &b));
	return b;
}

static int boot(smart_blade_t *b, const char *secret, size_t len,
		struct smart__boot **out, struct smart__boot_welcome *w)
{
	return smart__boot_open(smart_blade_address(b), "shm", secret, len,
				3000, NULL, out, w);
}

static void good_client(smart_blade_t *b)
{
	struct smart__boot *s;
	struct smart__boot_welcome w;

	CHECK_OK(boot(b, SECRET, strlen(SECRET), &s, &w));
	CHECK_EQ(w.blade_id, 7);
	CHECK_U64_EQ(w.size, 8 * MIB);
	smart__boot_close(s);
}

static void test_good(void)
{
	smart_blade_t *b = blade_start(16, 300);
	struct smart__boot *s;
	struct smart__boot_welcome w;
	struct smart_superblock *sb;
	struct smart_blade_stats st;
	int fd = -1;

	CHECK_OK(boot(b, SECRET, strlen(SECRET), &s, &w));
	CHECK_EQ(w.blade_id, 7);
	CHECK_U64_EQ(w.size, 8 * MIB);
	CHECK_EQ(w.chunk_shift, 20);
	CHECK_EQ(w.need_fd, 1);
	CHECK_GT(w.blob_len, 0);
	CHECK_OK(smart__boot_fetch_fd(s, &fd));
	sb = mmap(NULL, 8 * MIB, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(sb != MAP_FAILED);
	CHECK_U64_EQ(sb->magic, SMART_SB_MAGIC);
	CHECK_EQ(sb->version, SMART_SB_VERSION);
	CHECK_EQ(sb->chunk_shift, 20);
	CHECK_U64_EQ(sb->size, 8 * MIB);
	CHECK_U64_EQ(sb->cursor, 1);
	CHECK_U64_EQ(sb->nchunks, 8);
	CHECK_EQ(sb->blade_id, 7);
	CHECK_U64_EQ(sb->first_chunk, 1);
	CHECK_EQ(sb->lease_ms, SMART_LEASE_MS_DEFAULT);
	/* the blade wrote our lease (counter 1) before it welcomed us */
	CHECK_NE(w.lease_id, 0);
	CHECK_EQ(w.lease_ms, SMART_LEASE_MS_DEFAULT);
	CHECK_U64_EQ(((struct smart_lease_table *)((uint8_t *)sb +
						   SMART_LEASE_OFF))
			     ->slot[smart_lease_slot_of(w.lease_id)]
			     .word,
		     smart_lease_word(w.lease_id, 1));
	munmap(sb, 8 * MIB);
	close(fd);
	/* The token is single use. */
	CHECK_EQ(smart__boot_fetch_fd(s, &fd), SMART_EACCES);
	smart_blade_stats(b, &st);
	CHECK_EQ(st.authenticated, 1);
	CHECK_EQ(st.active_sessions, 1);
	smart__boot_close(s);
	smart_blade_destroy(b);
}

static void test_refused(void)
{
	smart_blade_t *b = blade_start(16, 300);
	struct smart__boot *s = NULL;
	struct smart__boot_welcome w;
	struct smart_blade_stats st;
	static const char *bad[] = { "s3cret-handshakX", "s3cret-handshake!",
				     "s3cret", "x" };

	for (size_t i = 0; i < 4; i++)
		CHECK_EQ(boot(b, bad[i], strlen(bad[i]), &s, &w), SMART_EACCES);
	CHECK_EQ(boot(b, NULL, 0, &s, &w), SMART_EACCES);
	CHECK_EQ(smart__boot_open(smart_blade_address(b), "verbs", SECRET,
				  strlen(SECRET), 3000, NULL, &s, &w),
		 SMART_ENOTSUP);
	CHECK(s == NULL);
	smart_blade_stats(b, &st);
	CHECK_EQ(st.refused, 6);
	CHECK_EQ(st.authenticated, 0);
	good_client(b);
	smart_blade_destroy(b);
}

static void test_version(void)
{
	smart_blade_t *b = blade_start(16, 300);
	struct smart_proto_hello h = { .version = SMART_PROTO_VERSION + 1,
				       .transport = "shm" };
	uint8_t f[SMART_PROTO_FRAME_MAX];
	size_t n;
	int fd = raw_connect(b);

	CHECK_OK(smart__proto_enc_hello(&h, f, sizeof(f), &n));
	raw_send(fd, f, n);
	expect_error(fd, SMART_EVERSION);
	close(fd);
	good_client(b);
	smart_blade_destroy(b);
}

/* Send bytes, expect ERROR(EPROTO) and EOF. */
static void send_malformed(smart_blade_t *b, const void *p, size_t n)
{
	int fd = raw_connect(b);

	raw_send(fd, p, n);
	expect_error(fd, SMART_EPROTO);
	close(fd);
}

static void test_malformed(void)
{
	smart_blade_t *b = blade_start(16, 300);
	static const uint8_t oversized[12] = {
		'S', 'M', 'R', 'T', 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff
	};
	static const uint8_t flags[12] = { 'S', 'M', 'R', 'T', 1, 0, 1, 0 };
	static const uint8_t qpc_first[12 + 12] = {
		'S', 'M', 'R', 'T', 4, 0, 0, 0, 12,  0,	  0,   0,
		1,   0,	  0,   0,   4, 0, 0, 0, 'S', 'H', 'M', 'Q'
	};
	static const uint8_t truncated[30] = { 'S', 'M', 'R', 'T', 1, 0, 0,
					       0,   100, 0,   0,   0, 1, 0 };
	int fd;

	send_malformed(b, "GET / HTTP/1.0\r\n\r\n", 18);
	send_malformed(b, "SMRX", 4);
	send_malformed(b, oversized, sizeof(oversized));
	send_malformed(b, flags, sizeof(flags));
	send_malformed(b, qpc_first, sizeof(qpc_first));
	WAIT_STAT(b, malformed, 5);
	/* A truncated frame then EOF: the blade just forgets the client. */
	fd = raw_connect(b);
	raw_send(fd, truncated, sizeof(truncated));
	close(fd);
	WAIT_STAT(b, accepted, 6);
	good_client(b);
	smart_blade_destroy(b);
}

static void test_idle_timeout(void)
{
	smart_blade_t *b = blade_start(16, 300);
	int fd = raw_connect(b);

	/* Partial header: still plausible, so only the deadline ends it. */
	raw_send(fd, "SMR", 3);
	expect_error(fd, SMART_ETIMEDOUT);
	close(fd);
	fd = raw_connect(b);
	expect_error(fd, SMART_ETIMEDOUT);
	close(fd);
	WAIT_STAT(b, timeouts, 2);
	good_client(b);
	smart_blade_destroy(b);
}

static void open_idle(smart_blade_t *b, int *fds, int n)
{
	for (int i = 0; i < n; i++)
		fds[i] = raw_connect(b);
}

static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

static void test_many_idle(void)
{
	smart_blade_t *b = blade_start(256, 5000);
	int fds[200];

	open_idle(b, fds, 200);
	good_client(b);
	close_all(fds, 200);
	smart_blade_destroy(b);
}

/* max_clients caps authenticated sessions: past it, a HELLO with the right
 * secret is refused EBUSY (the blade stays up), and a slot freed is used. */
static void test_max_clients(void)
{
	smart_blade_t *b = blade_start(16, 5000);
	struct smart__boot *s[16], *extra = NULL;
	struct smart__boot_welcome w;
	struct smart_blade_stats st;
	int rc = -1;

	for (int i = 0; i < 16; i++)
		CHECK_OK(boot(b, SECRET, strlen(SECRET), &s[i], &w));
	CHECK_EQ(boot(b, SECRET, strlen(SECRET), &extra, &w), SMART_EBUSY);
	smart_blade_stats(b, &st);
	CHECK_EQ(st.active_sessions, 16);
	CHECK_EQ(st.refused, 1);
	smart__boot_close(s[0]);
	for (int i = 0; i < 500 && rc; i++) {
		sleep_ms(10);
		rc = boot(b, SECRET, strlen(SECRET), &s[0], &w);
	}
	CHECK_OK(rc);
	for (int i = 0; i < 16; i++)
		smart__boot_close(s[i]);
	smart_blade_destroy(b);
}

/* Raw handshake, returning the WELCOME (its tag checked) and, in
 * fetch, the fd request it allows: our proof over its token. */
static int raw_welcome(smart_blade_t *b, struct smart_proto_welcome *w,
		       uint8_t *fetch)
{
	struct smart__auth a;
	uint8_t f[SMART_PROTO_FRAME_MAX];
	size_t n;
	int fd = raw_connect(b);

	raw_authenticate(fd, SECRET, strlen(SECRET), &a);
	CHECK_EQ(raw_frame(fd, f, sizeof(f), &n), SMART_PROTO_WELCOME);
	CHECK(smart__auth_open(&a, SMART_AUTH_L_WELCOME, f, n));
	CHECK_OK(smart__proto_dec_welcome(f, n, w));
	CHECK(w->flags & SMART_PROTO_WF_FETCH_FD);
	smart__auth_tag(&a, SMART_AUTH_D_FETCH, w->token, sizeof(w->token),
			fetch);
	return fd;
}

/* Present an fd request of len bytes; returns the status byte, *fd the
 * descriptor or -1. */
static int present_n(const struct smart_proto_welcome *w, const uint8_t *tok,
		     size_t len, int *fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	uint8_t st = 0xee;
	struct iovec iov = { &st, 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int s = raw_unix_connect(w->sock, w->sock_len);

	raw_send(s, tok, len);
	CHECK_EQ(recvmsg(s, &mh, 0), 1);
	*fd = -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	close(s);
	return st;
}

static int present(const struct smart_proto_welcome *w, const uint8_t *tok,
		   int *fd)
{
	return present_n(w, tok, SMART_PROTO_FETCH_LEN, fd);
}

/* The fd request is the client's proof over the WELCOME's token: a wrong
 * one, and the token itself padded out (what a party relaying the TCP
 * session saw), are refused; the good one works once. */
static void test_fd_token(void)
{
	smart_blade_t *b = blade_start(16, 300);
	struct smart_proto_welcome w;
	uint8_t wrong[SMART_PROTO_FETCH_LEN],
		tok[SMART_PROTO_FETCH_LEN] = { 0 };
	uint8_t fetch[SMART_PROTO_FETCH_LEN];
	struct smart_blade_stats bs;
	struct stat st;
	int c = raw_welcome(b, &w, fetch), fd;

	memcpy(wrong, fetch, sizeof(wrong));
	wrong[15] ^= 1;
	CHECK_EQ(present(&w, wrong, &fd), -SMART_EACCES);
	CHECK_EQ(fd, -1);
	memcpy(tok, w.token, sizeof(w.token));
	CHECK_EQ(present(&w, tok, &fd), -SMART_EACCES);
	CHECK_EQ(fd, -1);
	CHECK_EQ(present(&w, fetch, &fd), 0);
	CHECK_GE(fd, 0);
	CHECK_EQ(fstat(fd, &st), 0);
	CHECK_GE(st.st_size, (off_t)(8 * MIB));
	close(fd);
	CHECK_EQ(present(&w, fetch, &fd), -SMART_EACCES);
	CHECK_EQ(fd, -1);
	/* A closed session's token dies with it. */
	close(c);
	c = raw_welcome(b, &w, fetch);
	close(c);
	for (int i = 0; i < 500; i++) {
		smart_blade_stats(b, &bs);
		if (bs.active_sessions == 0)
			break;
		sleep_ms(10);
	}
	CHECK_EQ(bs.active_sessions, 0);
	CHECK_EQ(present(&w, fetch, &fd), -SMART_EACCES);
	smart_blade_destroy(b);
}

/* The squatter: take one fd request on ls, answer "0" with a memfd of its
 * own (and 32 bytes where a proof would go), report what it got. */
static void squat_serve(int ls, int report)
{
	uint8_t got[SMART_PROTO_FETCH_LEN], reply[1 + 32] = { 0 };
	int c = accept(ls, NULL, NULL), mfd = memfd_create("squatter", 0);
	ssize_t n = 0, r;

	if (c < 0 || mfd < 0 || ftruncate(mfd, 8 * MIB))
		_exit(2);
	while (n < (ssize_t)sizeof(got) &&
	       (r = recv(c, got + n, sizeof(got) - (size_t)n, 0)) > 0)
		n += r;
	memset(reply + 1, 0xa5, 32);
	if (smart__sock_send_some(c, reply, sizeof(reply), &mfd, 1) < 0 ||
	    write(report, &n, sizeof(n)) != (ssize_t)sizeof(n))
		_exit(3);
	shutdown(c, SHUT_WR);
	(void)recv(c, got, 1, 0); /* until the client hangs up */
	_exit(0);
}

/* The blade goes between our WELCOME and our fd fetch, and a process
 * without the secret binds the fd socket's name (it read it in
 * /proc/net/unix) before we connect: the descriptor it sends must not be
 * taken for the region's, or we would map its memory as the blade's and
 * write our data there.  The fd reply is the blade's proof over the
 * descriptor it passes (docs/protocol.md, Region fd). */
static void test_fd_squat(void)
{
	smart_blade_t *b = blade_start(16, 300);
	struct smart__boot *s;
	struct smart__boot_welcome w;
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	char name[108], link[64], target[64] = "";
	int ls, fd = -1, rep[2], rc, st;
	size_t len = raw_blade_unix_name(name, sizeof(name));
	ssize_t got = 0;
	pid_t pid;

	CHECK_OK(boot(b, SECRET, strlen(SECRET), &s, &w));
	CHECK_EQ(w.need_fd, 1);
	smart_blade_destroy(b);
	memcpy(un.sun_path + 1, name, len);
	ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK_GE(ls, 0);
	CHECK_OK(bind(ls, (struct sockaddr *)&un,
		      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				  len)));
	CHECK_OK(listen(ls, 4));
	CHECK_OK(pipe(rep));
	pid = fork();
	CHECK_GE(pid, 0);
	if (pid == 0)
		squat_serve(ls, rep[1]);
	close(ls);
	close(rep[1]);
	rc = smart__boot_fetch_fd(s, &fd);
	if (fd >= 0) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		CHECK_GT(readlink(link, target, sizeof(target) - 1), 0);
	}
	CHECK_EQ(read(rep[0], &got, sizeof(got)), (ssize_t)sizeof(got));
	close(rep[0]);
	printf("  squatter on the fd socket: fetch %s, descriptor taken: "
	       "%s\n",
	       smart_status_name(rc), fd >= 0 ? target : "none");
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(got, SMART_PROTO_FETCH_LEN); /* it got our request */
	CHECK_EQ(rc, SMART_EACCES);
	CHECK_EQ(fd, -1);
	smart__boot_close(s);
}

static void test_qp(void)
{
	const struct smart_tp_ops *ops = smart__tp_find("shm");
	smart_blade_t *b = blade_start(16, 300);
	struct smart_tp_cfg tc = { .gid_index = -1 };
	struct smart_tp_qp_attr qa = { .max_send_wr = 64 };
	struct smart_tp_domain *d;
	struct smart_tp_cq *cq;
	struct smart_tp_qp *qp;
	struct smart__boot *s;
	struct smart__boot_welcome w;
	uint8_t mine[SMART_TP_BLOB_MAX], peer[SMART_TP_BLOB_MAX];
	size_t ml = sizeof(mine), pl = sizeof(peer);
	uint32_t id1, id2;

	CHECK(ops);
	CHECK_OK(ops->domain_open(&tc, &d));
	CHECK_OK(ops->cq_create(d, 256, 0, &cq));
	CHECK_OK(ops->qp_create(d, cq, &qa, &qp));
	CHECK_OK(ops->qp_blob(qp, mine, &ml));
	CHECK_OK(boot(b, SECRET, strlen(SECRET), &s, &w));
	CHECK_OK(smart__boot_qp_connect(s, mine, ml, peer, &pl, &id1));
	CHECK_GT(pl, 0);
	/* A bad blob is the accept's failure, not the session's. */
	pl = sizeof(peer);
	CHECK_EQ(smart__boot_qp_connect(s, "garbage!", 8, peer, &pl, &id2),
		 SMART_EPROTO);
	pl = sizeof(peer);
	CHECK_OK(smart__boot_qp_connect(s, mine, ml, peer, &pl, &id2));
	CHECK_NE(id1, id2);
	CHECK_OK(smart__boot_qp_close(s, id1));
	CHECK_OK(smart__boot_qp_close(s, 999));
	pl = sizeof(peer);
	CHECK_OK(smart__boot_qp_connect(s, mine, ml, peer, &pl, &id1));
	smart__boot_close(s);
	ops->qp_destroy(qp);
	ops->cq_destroy(cq);
	ops->domain_close(d);
	good_client(b);
	smart_blade_destroy(b);
}

static void test_config(void)
{
	struct smart_blade_config cfg;
	smart_blade_t *b;
	static const char *bad_addr[] = { "127.0.0.1",	  "127.0.0.1:65536",
					  "127.0.0.1:-1", "127.0.0.1: 80",
					  "127.1:80",	  "host:80",
					  "[::1]80",	  ":80",
					  "127.0.0.1:",	  "127.0.0.1:123456" };

	for (size_t i = 0; i < SMART_ARRAY_SIZE(bad_addr); i++) {
		smart_blade_config_init(&cfg);
		cfg.size = 2 * MIB;
		cfg.listen = bad_addr[i];
		CHECK_EQ(smart_blade_create(&cfg, &b), SMART_EINVAL);
	}
	smart_blade_config_init(&cfg);
	cfg.size = MIB / 2;
	CHECK_EQ(smart_blade_create(&cfg, &b), SMART_EINVAL);
	cfg.size = 2 * MIB;
	cfg.chunk_size = 3 * 4096;
	CHECK_EQ(smart_blade_create(&cfg, &b), SMART_EINVAL);
	cfg.chunk_size = 2 * MIB;
	CHECK_EQ(smart_blade_create(&cfg, &b), SMART_EINVAL);
	cfg.chunk_size = MIB;
	cfg.id = 1024;
	CHECK_EQ(smart_blade_create(&cfg, &b), SMART_EINVAL);
	cfg.id = 0;
	cfg.transport = "carrier-pigeon";
	CHECK_EQ(smart_blade_create(&cfg, &b), SMART_EINVAL);
	cfg.transport = NULL;
	cfg.listen = "localhost:0";
	CHECK_OK(smart_blade_create(&cfg, &b));
	CHECK(!strncmp(smart_blade_address(b), "127.0.0.1:", 10));
	smart_blade_destroy(b);
}

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CHECK_GE(fd, 0);
	CHECK_EQ(write(fd, p, n), (ssize_t)n);
	close(fd);
}

/* Run smartd with args; returns its pid, *out reads its stdout+stderr. */
static pid_t spawn_smartd(const char *const *args, FILE **out)
{
	int p[2];
	pid_t pid;

	CHECK_EQ(pipe(p), 0);
	pid = fork();
	CHECK_GE(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		execv(SMART_BIN_DIR "/smartd", (char *const *)args);
		_exit(127);
	}
	close(p[1]);
	*out = fdopen(p[0], "r");
	CHECK(*out != NULL);
	return pid;
}

static int wait_exit(pid_t pid)
{
	int st;

	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_smartd(void)
{
	char path[] = "/tmp/smart-secret-XXXXXX", line[512];
	const char *ok[] = {
		"smartd",      "--size",	 "4M",	 "--listen",
		"127.0.0.1:0", "--id",		 "3",	 "--secret-file",
		path,	       "--auth-timeout", "1500", "--max-unauth",
		"32",	       "--max-clients",	 "8",	 NULL
	};
	const char *badauth[] = { "smartd",	"--size",	  "4M",
				  "--insecure", "--auth-timeout", "0",
				  NULL };
	const char *nosecret[] = { "smartd",   "--size",      "4M",
				   "--listen", "127.0.0.1:0", NULL };
	const char *wide[] = { "smartd",    "--size",	  "4M", "--listen",
			       "0.0.0.0:0", "--insecure", NULL };
	const char *badsize[] = { "smartd", "--size", "12X", NULL };
	const char *help[] = { "smartd", "--help", NULL };
	char text[4096];
	size_t n;
	int fd = mkstemp(path);
	FILE *f;
	pid_t pid;

	if (access(SMART_BIN_DIR "/smartd", X_OK))
		test_skip("smartd is not built");
	CHECK_GE(fd, 0);
	close(fd);
	write_file(path, "daemon-secret-0123456789\n", 25);
	pid = spawn_smartd(ok, &f);
	CHECK(fgets(line, sizeof(line), f) != NULL);
	CHECK_MSG(strstr(line, "smartd: blade 3 serving 4194304 bytes on "
			       "127.0.0.1:") &&
			  strstr(line, "(transport shm, "
				       "hugepages no)"),
		  "start line: %s", line);
	CHECK_EQ(kill(pid, SIGTERM), 0);
	CHECK_EQ(wait_exit(pid), 0);
	fclose(f);
	unlink(path);
	pid = spawn_smartd(nosecret, &f);
	CHECK_EQ(wait_exit(pid), 2);
	CHECK(fgets(line, sizeof(line), f) && strstr(line, "no shared secret"));
	fclose(f);
	pid = spawn_smartd(wide, &f);
	CHECK_EQ(wait_exit(pid), 2);
	CHECK(fgets(line, sizeof(line), f) && strstr(line, "loopback"));
	fclose(f);
	pid = spawn_smartd(badsize, &f);
	CHECK_EQ(wait_exit(pid), 2);
	fclose(f);
	pid = spawn_smartd(badauth, &f);
	CHECK_EQ(wait_exit(pid), 2);
	CHECK(fgets(line, sizeof(line), f) && strstr(line, "--auth-timeout"));
	fclose(f);
	pid = spawn_smartd(help, &f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	CHECK_EQ(wait_exit(pid), 0);
	fclose(f);
	CHECK_MSG(strstr(text, "--auth-timeout MS") &&
			  strstr(text, "--max-unauth N") &&
			  strstr(text, "--max-clients N"),
		  "smartd --help: %s", text);
}

int main(int argc, char **argv)
{
	unsetenv("SMART_SECRET_FILE");
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "good", test_good },
				 { "refused", test_refused },
				 { "version", test_version },
				 { "malformed", test_malformed },
				 { "idle_timeout", test_idle_timeout },
				 { "many_idle", test_many_idle },
				 { "max_clients", test_max_clients },
				 { "fd_token", test_fd_token },
				 { "fd_squat", test_fd_squat },
				 { "qp", test_qp },
				 { "config", test_config },
				 { "smartd", test_smartd },
				 { NULL, NULL } });
}
