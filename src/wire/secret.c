/*
 * Shared secrets (util layer: both the blade and the ctx need them, and
 * neither may call the other).  A secret file holds 1..SMART_PROTO_
 * SECRET_MAX bytes, one trailing newline removed; generated secrets come
 * from getrandom(), never from a clock-seeded generator.
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
#include "wire/proto.h"

int smart_secret_load(const char *path, char **out, size_t *len)
{
	char *buf;
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd, err = 0;

	if (!path || !out || !len)
		return SMART_EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		smart__err(NULL, "cannot open secret file %s: %s", path,
			   strerror(errno));
		return errno == ENOENT ? SMART_ENOENT : SMART_EINVAL;
	}
	if (!fstat(fd, &st) && (st.st_mode & (S_IRWXG | S_IRWXO)))
		smart__warn(NULL, "secret file %s is accessible to group or "
			    "others; chmod 600 it", path);
	buf = malloc(SMART_PROTO_SECRET_MAX + 2);
	if (!buf) {
		close(fd);
		return SMART_ENOMEM;
	}
	/* Read one byte more than the limit (plus a newline) to see excess. */
	while (got < SMART_PROTO_SECRET_MAX + 2) {
		n = read(fd, buf + got, SMART_PROTO_SECRET_MAX + 2 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = errno;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got && buf[got - 1] == '\n')
		got--;
	if (err || got == 0 || got > SMART_PROTO_SECRET_MAX) {
		smart__err(NULL, "secret file %s must hold 1..4096 bytes%s%s",
			   path, err ? ": " : "", err ? strerror(err) : "");
		explicit_bzero(buf, SMART_PROTO_SECRET_MAX + 2);
		free(buf);
		return SMART_EINVAL;
	}
	buf[got] = '\0';	/* convenience only: the secret is binary */
	*out = buf;
	*len = got;
	return 0;
}

int smart_secret_generate(char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char rnd[64];
	size_t i, n;

	if (!buf || !len || len > SMART_PROTO_SECRET_MAX)
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
