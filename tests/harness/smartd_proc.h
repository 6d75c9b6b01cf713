/*
 * Test helper: run build/bin/smartd as a child process.  smartd_spawn()
 * starts it, waits (bounded) for its start line and parses the address it
 * really listens on; smartd_stop() sends SIGTERM and requires a clean exit
 * 0 with its "clean shutdown" line, within 5 s.  The child dies with the
 * test (PR_SET_PDEATHSIG), so a failing check never leaves it behind.
 * Header only; needs SMART_BIN_DIR (CMake defines it for tests).
 */
#ifndef SMART_TEST_SMARTD_PROC_H
#define SMART_TEST_SMARTD_PROC_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/test.h"

struct smartd_proc {
	pid_t pid;
	int out;       /* its stdout; open until it exited */
	char addr[64]; /* "127.0.0.1:PORT" from its start line */
};

/* Read one line from fd within timeout_ms; 0, or -1 on EOF/timeout. */
static inline int smartd_read_line(int fd, char *buf, size_t cap,
				   int timeout_ms)
{
	size_t n = 0;
	int waited = 0;

	while (n + 1 < cap && waited < timeout_ms) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, 50) == 0) {
			waited += 50;
			continue;
		}
		r = read(fd, buf + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (buf[n++] == '\n') {
			buf[n] = '\0';
			return 0;
		}
	}
	buf[n] = '\0';
	return -1;
}

/* Wait at most timeout_ms for pid; its wait status, or -1 if still alive. */
static inline int smartd_wait_bounded(pid_t pid, int timeout_ms)
{
	int st;

	for (int t = 0; t <= timeout_ms; t += 10) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return st;
		CHECK_MSG(r == 0, "waitpid(%d): %s", (int)pid, strerror(errno));
		sleep_ms(10);
	}
	return -1;
}

/* Start smartd with argv (argv[0] is ignored; listen on 127.0.0.1:0), plus
 * --device SMART_TEST_BLADE_DEVICE when that is set (verbs: the blade on
 * the other end of a link, tests/verbs/lossy.sh), and require its start
 * line to begin with expect. */
static inline void smartd_spawn(struct smartd_proc *d, const char *const *argv,
				const char *expect)
{
	const char *dev = getenv("SMART_TEST_BLADE_DEVICE"), *av[32];
	pid_t parent = getpid();
	char line[512], *on, *end;
	int p[2], n = 0;

	while (argv[n])
		n++;
	CHECK_MSG(n + 3 <= 32, "smartd_spawn: %d arguments are too many", n);
	memcpy(av, argv, sizeof(*av) * (size_t)n);
	if (dev && *dev) {
		av[n++] = "--device";
		av[n++] = dev;
	}
	av[n] = NULL;

	if (access(SMART_BIN_DIR "/smartd", X_OK))
		test_skip("smartd is not built (" SMART_BIN_DIR "/smartd)");
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	d->pid = fork();
	CHECK_GE(d->pid, 0);
	if (d->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		dup2(p[1], 1);
		execv(SMART_BIN_DIR "/smartd", (char *const *)av);
		_exit(127);
	}
	close(p[1]);
	d->out = p[0];
	CHECK_MSG(!smartd_read_line(d->out, line, sizeof(line), 10000),
		  "expected smartd's start line within 10 s, got \"%s\"", line);
	CHECK_MSG(strstr(line, expect), "unexpected start line \"%s\"", line);
	on = strstr(line, " on ") + 4;
	end = strchr(on, ' ');
	CHECK_MSG(end && (size_t)(end - on) < sizeof(d->addr) &&
			  !strncmp(on, "127.0.0.1:", 10) &&
			  strncmp(on + 10, "0 ", 2),
		  "expected 127.0.0.1:<port != 0> in \"%s\"", line);
	memcpy(d->addr, on, (size_t)(end - on));
	d->addr[end - on] = '\0';
}

/*
 * The guard: processes a failing or hanging test must not leave behind
 * (smartd stopped with SIGSTOP, client processes) and its secret file.
 * Signal and atexit handlers take no argument, so this is the one piece of
 * mutable static state of a test using it; owner keeps forked children
 * (which inherit atexit handlers) from killing the daemon when they exit.
 */
#define GUARD_PIDS 8
static struct {
	volatile sig_atomic_t pids[GUARD_PIDS];
	volatile sig_atomic_t owner;
	char secret[64];
} guard;

/* Guard pid p (a child to kill if the test fails), or stop guarding it
 * once it is reaped: a stale entry could name a stranger by then. */
static inline void guard_add(pid_t p)
{
	for (int i = 0; i < GUARD_PIDS; i++)
		if (!guard.pids[i]) {
			guard.pids[i] = p;
			return;
		}
}

static inline void guard_del(pid_t p)
{
	for (int i = 0; i < GUARD_PIDS; i++)
		if (guard.pids[i] == p)
			guard.pids[i] = 0;
}

static inline void guard_kill_all(void)
{
	for (int i = 0; i < GUARD_PIDS; i++) {
		pid_t p = (pid_t)guard.pids[i];

		if (p > 0) {
			kill(p, SIGCONT);
			kill(p, SIGKILL);
		}
	}
}

static inline void guard_atexit(void)
{
	if (getpid() != (pid_t)guard.owner)
		return;
	guard_kill_all();
	for (int i = 0; i < GUARD_PIDS; i++) {
		pid_t r;

		/* any child: a thread this test traces (ptrace) must be
		 * collected before its process can be */
		if (guard.pids[i] > 0)
			do
				r = waitpid(-1, NULL, __WALL);
			while (r > 0 && r != (pid_t)guard.pids[i]);
		guard.pids[i] = 0;
	}
	if (guard.secret[0])
		unlink(guard.secret);
}

static inline void guard_alarm(int sig)
{
	static const char msg[] = "FAIL: test timed out (alarm): its "
				  "processes were killed\n";

	(void)sig;
	guard_kill_all();
	if (guard.secret[0])
		unlink(guard.secret);
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/* SMART_TEST_SLOW=N (1..50, default 1) stretches the hang guards N
 * times, for a link where every op is a long round trip
 * (tests/verbs/lossy.sh); they are guards against hangs, not speed
 * targets. */
static inline unsigned test_slow(void)
{
	return (unsigned)test_env_int("SMART_TEST_SLOW", 1, 50, 1);
}

/* Arm the guard: kill everything and fail after `seconds` (x test_slow). */
static inline void guard_init(unsigned seconds)
{
	guard.owner = getpid();
	atexit(guard_atexit);
	signal(SIGALRM, guard_alarm);
	alarm(seconds * test_slow());
}

/* A secret file in /tmp (path is a mkstemp template), mode 0600, holding
 * s; removed at exit (test_secret_file), and the first one also by the
 * guard's alarm, which ends the process without exit handlers. */
static inline void secret_file(char *path, const char *s)
{
	test_secret_file(path, strlen(path) + 1, path, s);
	if (!guard.secret[0] && strlen(path) < sizeof(guard.secret))
		strcpy(guard.secret, path);
}

static inline void smartd_stop(struct smartd_proc *d)
{
	char line[512];
	int st;

	CHECK_EQ(kill(d->pid, SIGTERM), 0);
	st = smartd_wait_bounded(d->pid, 5000);
	CHECK_MSG(st != -1, "smartd did not exit within 5 s of SIGTERM");
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "smartd after SIGTERM: expected exit 0, got %s %d",
		  WIFEXITED(st) ? "exit" : "signal",
		  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	/* the memory line smartd prints on its way out comes first */
	do
		line[0] = 0;
	while (!smartd_read_line(d->out, line, sizeof(line), 1000) &&
	       !strncmp(line, "smartd: memory:", 15));
	CHECK_MSG(strstr(line, "clean shutdown"),
		  "expected smartd's clean shutdown line, got \"%s\"", line);
	close(d->out);
}

#endif
