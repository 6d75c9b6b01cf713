/*
 * Shared secrets: the rules smart_secret_load() applies to a secret file
 * (length, regular file, private mode, symlinks followed), the same length
 * rule for secrets given in memory (smart_blade_create,
 * smart_ctx_set_secret), and smartd refusing a bad secret file.
 *
 * Every load runs in a child process with its stderr captured and an
 * alarm armed: a loader that blocks (on a FIFO without a writer) kills the
 * child and fails the case instead of hanging the test, and the refusal
 * message can be checked for the file's name and the fix.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/test.h"
#include "smart/smart.h"

#define LOAD_ALARM_S 3

struct dir {
	char path[64];
};

static void dir_make(struct dir *d)
{
	strcpy(d->path, "/tmp/smart-secret-test-XXXXXX");
	CHECK(mkdtemp(d->path) != NULL);
}

/* d/name into buf. */
static const char *in_dir(const struct dir *d, const char *name, char *buf,
			  size_t cap)
{
	CHECK_LT(snprintf(buf, cap, "%s/%s", d->path, name), (int)cap);
	return buf;
}

static void dir_remove(const struct dir *d, const char *const *names)
{
	char p[128];

	for (; *names; names++)
		unlink(in_dir(d, *names, p, sizeof(p)));
	CHECK_EQ(rmdir(d->path), 0);
}

/* Write n bytes of p into path, created with mode. */
static void put_file(const char *path, const void *p, size_t n, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK_GE(fd, 0);
	CHECK_EQ(write(fd, p, n), (ssize_t)n);
	CHECK_EQ(fchmod(fd, mode), 0);
	close(fd);
}

/* Read all of fd into buf (NUL-terminated). */
static void read_all(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		CHECK_GT(r, 0);
		n += (size_t)r;
	}
	buf[n] = '\0';
}

/* Run fn(arg), which must not return, in a child whose stderr goes into
 * msg, with an alarm armed; returns its wait status. */
static int in_child(void (*fn)(const char *), const char *arg, char *msg,
		    size_t cap)
{
	int p[2], st;
	pid_t pid;

	CHECK_EQ(pipe(p), 0);
	/* a plain fork (not test_spawn): the loads come before any case
	 * starts a thread (in_memory), and smartd's child execs at once */
	fflush(NULL);
	pid = fork();
	CHECK_GE(pid, 0);
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		alarm(LOAD_ALARM_S);
		fn(arg);
	}
	close(p[1]);
	read_all(p[0], msg, cap);
	close(p[0]);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	return st;
}

static void load_child(const char *path)
{
	char *s = NULL;
	size_t n = 0;
	int rc = smart_secret_load(path, &s, &n);

	if (!rc)
		dprintf(2, "loaded %zu bytes\n", n);
	_exit(rc ? 100 - rc : 0);
}

/* smart_secret_load(path) in a child; its status, *len and its stderr. */
static int load(const char *path, size_t *len, char *msg, size_t cap)
{
	int st = in_child(load_child, path, msg, cap);

	CHECK_MSG(WIFEXITED(st),
		  "loading %s: child killed by signal %d "
		  "(blocked for %d s?)",
		  path, WTERMSIG(st), LOAD_ALARM_S);
	if (WEXITSTATUS(st) == 0) {
		CHECK(strstr(msg, "loaded ") &&
		      sscanf(strstr(msg, "loaded "), "loaded %zu", len) == 1);
		return 0;
	}
	return 100 - WEXITSTATUS(st);
}

static void expect_refused(const char *path, const char *why)
{
	char msg[1024];
	size_t n;

	CHECK_EQ(load(path, &n, msg, sizeof(msg)), SMART_EINVAL);
	CHECK_MSG(strstr(msg, path) && strstr(msg, why),
		  "expected a message naming %s and saying '%s', got: %s", path,
		  why, msg);
}

static void expect_loaded(const char *path, size_t want)
{
	char msg[1024];
	size_t n = 0;

	CHECK_MSG(load(path, &n, msg, sizeof(msg)) == 0, "%s refused: %s", path,
		  msg);
	CHECK_EQ(n, want);
}

static void test_length(void)
{
	static const char *names[] = { "s", NULL };
	static char big[SMART_SECRET_MAX + 2];
	struct dir d;
	char path[128], msg[256];
	size_t n;

	dir_make(&d);
	in_dir(&d, "s", path, sizeof(path));
	put_file(path, "0123456789abcdef\n", 17, 0600);
	expect_loaded(path, 16);
	put_file(path, "0123456789abcde\n", 16, 0600);
	expect_refused(path, "must hold 16..4096 bytes");
	put_file(path, "\n", 1, 0600);
	expect_refused(path, "must hold 16..4096 bytes");
	memset(big, 'k', sizeof(big));
	big[SMART_SECRET_MAX] = '\n';
	put_file(path, big, SMART_SECRET_MAX + 1, 0600);
	expect_loaded(path, SMART_SECRET_MAX);
	put_file(path, big, SMART_SECRET_MAX + 2, 0600);
	expect_refused(path, "must hold 16..4096 bytes");
	dir_remove(&d, names);
	CHECK_EQ(load(path, &n, msg, sizeof(msg)), SMART_ENOENT);
}

/* A FIFO, a device, a directory: refused at once, never read from. */
static void test_not_regular(void)
{
	static const char *names[] = { "fifo", "dir", NULL };
	struct dir d;
	char path[128];
	double t0 = test_now_ms();

	dir_make(&d);
	CHECK_EQ(mkfifo(in_dir(&d, "fifo", path, sizeof(path)), 0600), 0);
	expect_refused(path, "is a FIFO");
	CHECK_EQ(mkdir(in_dir(&d, "dir", path, sizeof(path)), 0700), 0);
	expect_refused(path, "is a directory");
	rmdir(path);
	expect_refused("/dev/null", "is a device");
	dir_remove(&d, names);
	printf("FIFO, directory and device refused in %.1f ms\n",
	       test_now_ms() - t0);
}

/* Group or others may access it: refused, with the chmod that fixes it. */
static void test_mode(void)
{
	static const char *names[] = { "s", NULL };
	static const mode_t open_modes[] = { 0644, 0640, 0604, 0620, 0601 };
	struct dir d;
	char path[128], want[256];

	dir_make(&d);
	in_dir(&d, "s", path, sizeof(path));
	for (size_t i = 0; i < sizeof(open_modes) / sizeof(open_modes[0]);
	     i++) {
		put_file(path, "0123456789abcdefXYZ", 19, open_modes[i]);
		snprintf(want, sizeof(want),
			 "accessible by group or others "
			 "(mode 0%03o): run chmod 600 %s",
			 (unsigned)open_modes[i], path);
		expect_refused(path, want);
	}
	put_file(path, "0123456789abcdefXYZ", 19, 0600);
	expect_loaded(path, 19);
	put_file(path, "0123456789abcdefXYZ", 19, 0400);
	expect_loaded(path, 19);
	dir_remove(&d, names);
}

/* A symlink is followed: what counts is the file it names. */
static void test_symlink(void)
{
	static const char *names[] = { "s", "link", "fifo", "flink", NULL };
	struct dir d;
	char path[128], link[128];

	dir_make(&d);
	in_dir(&d, "s", path, sizeof(path));
	put_file(path, "0123456789abcdef", 16, 0600);
	CHECK_EQ(symlink(path, in_dir(&d, "link", link, sizeof(link))), 0);
	expect_loaded(link, 16);
	CHECK_EQ(chmod(path, 0644), 0);
	expect_refused(link, "chmod 600");
	CHECK_EQ(mkfifo(in_dir(&d, "fifo", path, sizeof(path)), 0600), 0);
	CHECK_EQ(symlink(path, in_dir(&d, "flink", link, sizeof(link))), 0);
	expect_refused(link, "is a FIFO");
	dir_remove(&d, names);
}

/* Secrets in memory obey the same length rule. */
static void test_in_memory(void)
{
	static const char sec[] = "0123456789abcdef";
	struct smart_blade_config cfg;
	smart_blade_t *b = NULL;
	smart_opts_t *o;
	smart_ctx_t *ctx;

	smart_blade_config_init(&cfg);
	cfg.size = 4 << 20;
	cfg.listen = "127.0.0.1:0";
	cfg.secret = sec;
	cfg.secret_len = SMART_SECRET_MIN - 1;
	CHECK_EQ(smart_blade_create(&cfg, &b), SMART_EINVAL);
	CHECK(b == NULL);
	cfg.secret_len = SMART_SECRET_MIN;
	CHECK_OK(smart_blade_create(&cfg, &b));
	smart_blade_destroy(b);

	CHECK_OK(smart_opts_create_defaults(&o));
	CHECK_OK(smart_opts_set(o, "buf_pool", "4M"));
	CHECK_OK(smart_ctx_create(o, &ctx));
	smart_opts_destroy(o);
	CHECK_EQ(smart_ctx_set_secret(ctx, sec, 1), SMART_EINVAL);
	CHECK_EQ(smart_ctx_set_secret(ctx, sec, SMART_SECRET_MIN - 1),
		 SMART_EINVAL);
	CHECK_OK(smart_ctx_set_secret(ctx, sec, SMART_SECRET_MIN));
	CHECK_OK(smart_ctx_destroy(ctx));
}

static void smartd_child(const char *path)
{
	const char *argv[] = { "smartd",      "--size",	       "4M", "--listen",
			       "127.0.0.1:0", "--secret-file", path, NULL };

	execv(SMART_BIN_DIR "/smartd", (char *const *)argv);
	_exit(127);
}

/* smartd with secret file path: exit code; its stderr into msg. */
static int smartd_with(const char *path, char *msg, size_t cap)
{
	int st = in_child(smartd_child, path, msg, cap);

	CHECK_MSG(WIFEXITED(st), "smartd killed by signal %d: %s", WTERMSIG(st),
		  msg);
	return WEXITSTATUS(st);
}

static void test_smartd(void)
{
	static const char *names[] = { "s", "fifo", NULL };
	struct dir d;
	char path[128], msg[2048];

	if (access(SMART_BIN_DIR "/smartd", X_OK))
		test_skip("smartd is not built");
	dir_make(&d);
	in_dir(&d, "s", path, sizeof(path));
	put_file(path, "smartd-secret-0123456789\n", 25, 0644);
	CHECK_EQ(smartd_with(path, msg, sizeof(msg)), 2);
	CHECK_MSG(strstr(msg, "run chmod 600") && strstr(msg, path),
		  "smartd on a 0644 secret: %s", msg);
	put_file(path, "short\n", 6, 0600);
	CHECK_EQ(smartd_with(path, msg, sizeof(msg)), 2);
	CHECK_MSG(strstr(msg, "16..4096"), "smartd on a short secret: %s", msg);
	CHECK_EQ(mkfifo(in_dir(&d, "fifo", path, sizeof(path)), 0600), 0);
	CHECK_EQ(smartd_with(path, msg, sizeof(msg)), 2);
	CHECK_MSG(strstr(msg, "is a FIFO"), "smartd on a FIFO: %s", msg);
	dir_remove(&d, names);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "length", test_length },
				 { "not_regular", test_not_regular },
				 { "mode", test_mode },
				 { "symlink", test_symlink },
				 { "in_memory", test_in_memory },
				 { "smartd", test_smartd },
				 { NULL, NULL } });
}
