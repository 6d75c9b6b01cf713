/*
 * Shared secrets (wire layer: both the blade and the ctx need them, and
 * neither may call the other).
 *
 * A secret file holds SMART_SECRET_MIN..SMART_SECRET_MAX bytes, one
 * trailing newline removed.  It is refused, with a message naming the file
 * and the fix, unless it is a regular file that neither group nor others
 * may access (as ssh treats a private key).  It is opened non-blocking and
 * checked with fstat() on the open descriptor before any read, so a FIFO
 * or a device is refused at once instead of hanging the caller, and no
 * rename between check and read can swap it.  Symlinks are followed: a
 * secret mounted through a link is normal, and what matters is the file
 * read.  Generated secrets come from getrandom(), never from a
 * clock-seeded generator.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "smart/secret.h"
#include "smart/status.h"
#include "util/log.h"
#include "wire/secret.h"

/* Room to read one byte past the limit plus a newline, to see excess. */
#define SECRET_BUF (SMART_SECRET_MAX + 2)

static const char *file_kind(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

/* The open file must be a regular file private to its owner. */
static int check_file(const struct smart__log *lg, int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st)) {
		smart__err(lg, "cannot stat secret file %s: %s", path,
			   strerror(errno));
		return SMART_EINVAL;
	}
	if (!S_ISREG(st.st_mode)) {
		smart__err(lg,
			   "secret file %s is %s, not a regular file: "
			   "put the secret in a file",
			   path, file_kind(st.st_mode));
		return SMART_EINVAL;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		smart__err(lg,
			   "secret file %s is accessible by group or "
			   "others (mode 0%03o): run chmod 600 %s",
			   path, (unsigned)(st.st_mode & 0777), path);
		return SMART_EINVAL;
	}
	return 0;
}

static int open_checked(const struct smart__log *lg, const char *path,
			int *fd_out)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer before
	 * fstat() can refuse it.  O_NOCTTY: a terminal never becomes ours. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	int rc;

	if (fd < 0) {
		rc = errno == ENOENT ? SMART_ENOENT : SMART_EINVAL;
		smart__err(lg, "cannot open secret file %s: %s", path,
			   strerror(errno));
		return rc;
	}
	rc = check_file(lg, fd, path);
	if (rc) {
		close(fd);
		return rc;
	}
	*fd_out = fd;
	return 0;
}

/* Read at most SECRET_BUF bytes; *got says how many.  0 or an errno. */
static int read_bounded(int fd, char *buf, size_t *got)
{
	ssize_t n;

	*got = 0;
	while (*got < SECRET_BUF) {
		n = read(fd, buf + *got, SECRET_BUF - *got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	return 0;
}

int smart__secret_load(const struct smart__log *lg, const char *path,
		       char **out, size_t *len)
{
	char *buf;
	size_t got;
	int fd, err, rc;

	if (!path || !out || !len)
		return SMART_EINVAL;
	rc = open_checked(lg, path, &fd);
	if (rc)
		return rc;
	buf = malloc(SECRET_BUF);
	if (!buf) {
		close(fd);
		return SMART_ENOMEM;
	}
	err = read_bounded(fd, buf, &got);
	close(fd);
	if (got && buf[got - 1] == '\n')
		got--;
	if (err || got < SMART_SECRET_MIN || got > SMART_SECRET_MAX) {
		smart__err(lg,
			   "secret file %s must hold %d..%d bytes%s%s "
			   "(make one with: umask 077; head -c 32 /dev/urandom "
			   "| base64 > %s)",
			   path, SMART_SECRET_MIN, SMART_SECRET_MAX,
			   err ? ": " : "", err ? strerror(err) : "", path);
		explicit_bzero(buf, SECRET_BUF);
		free(buf);
		return SMART_EINVAL;
	}
	buf[got] = '\0'; /* convenience only: the secret is binary */
	*out = buf;
	*len = got;
	return 0;
}

int smart_secret_load(const char *path, char **out, size_t *len)
{
	return smart__secret_load(NULL, path, out, len);
}

int smart_secret_generate(char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char rnd[64];
	size_t i, n;

	if (!buf || !len || len > SMART_SECRET_MAX)
		return SMART_EINVAL;
	for (i = 0; i < len; i += n) {
		n = len - i < sizeof(rnd) ? len - i : sizeof(rnd);
		if (getrandom(rnd, n, 0) != (ssize_t)n)
			return SMART_ESYS;
		for (size_t k = 0; k < n; k++)
			buf[i + k] = hex[rnd[k] & 15];
	}
	explicit_bzero(rnd, sizeof(rnd));
	return 0;
}
