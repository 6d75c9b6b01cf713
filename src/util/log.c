/*
 * Logging to stderr: "<prefix>: <level>: <message>\n", one line per call.
 *
 * Invariants:
 *  - No global logger and no static state: the level and prefix travel in
 *    the caller's struct smart__log; a NULL logger means prefix "smart" and
 *    level WARN.
 *  - errno is the same after the call as before it, so a caller may log
 *    and then still report errno (and "%m" in fmt sees the caller's errno).
 *  - A logger with a handler (smart_log_set_handler) hands it the message
 *    alone, formatted in the same stack buffer, and writes nothing.
 *  - Each line is formatted into a stack buffer and handed to one write(2).
 *    Lines from concurrent threads therefore never interleave (a write to
 *    a pipe or tty of at most PIPE_BUF bytes is atomic, and the buffer is
 *    smaller than that).  Over-long messages are cut and end in "...".
 */
#include "util/log.h"
#include "util/mutant.h"

#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <unistd.h>

/* Below PIPE_BUF (4096 on Linux) so that one write is atomic on a pipe. */
#define LOG_LINE_MAX 1024

static const char *const level_names[] = {
	[SMART_LOG_ERROR] = "error",
	[SMART_LOG_WARN] = "warn",
	[SMART_LOG_INFO] = "info",
	[SMART_LOG_DEBUG] = "debug",
};

int smart__log_parse_level(const char *s)
{
	if (!s)
		return -1;
	for (int i = SMART_LOG_ERROR; i <= SMART_LOG_DEBUG; i++) {
		if (!strcasecmp(s, level_names[i]))
			return i;
	}
	if (!strcasecmp(s, "warning"))
		return SMART_LOG_WARN;
	if (s[0] >= '0' && s[0] <= '3' && s[1] == '\0')
		return s[0] - '0';
	return -1;
}

static const char *level_name(int level)
{
	if (level <= SMART_LOG_ERROR)
		return level_names[SMART_LOG_ERROR];
	if (level >= SMART_LOG_DEBUG)
		return level_names[SMART_LOG_DEBUG];
	return level_names[level];
}

/* Write all of buf, retrying on EINTR; give up silently on other errors
 * because there is nowhere left to report them. */
static void write_all(const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

void smart__log_msg(const struct smart__log *lg, int level, const char *fmt,
		    ...)
{
	int saved_errno = errno;
	int max_level = lg ? lg->level : SMART_LOG_WARN;
	const char *prefix = lg && lg->prefix ? lg->prefix : "smart";
	char buf[LOG_LINE_MAX];
	size_t len;
	va_list ap;
	int n;

	if (level > max_level)
		goto out;
	if (lg && lg->fn && !SMART_M_LOG_HANDLER_SKIPPED) {
		va_start(ap, fmt);
		n = vsnprintf(buf, sizeof(buf), fmt, ap);
		va_end(ap);
		if (n >= 0)
			lg->fn(lg->arg, level, prefix, buf);
		goto out;
	}
	n = snprintf(buf, sizeof(buf), "%s: %s: ", prefix, level_name(level));
	if (n < 0)
		goto out;
	len = (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
	va_start(ap, fmt);
	n = vsnprintf(buf + len, sizeof(buf) - len, fmt, ap);
	va_end(ap);
	if (n < 0)
		goto out;
	len += (size_t)n;
	/* Keep one byte for the newline; mark a cut message. */
	if (len > sizeof(buf) - 2) {
		len = sizeof(buf) - 2;
		buf[len - 3] = buf[len - 2] = buf[len - 1] = '.';
	}
	buf[len++] = '\n';
	write_all(buf, len);
out:
	errno = saved_errno;
}
