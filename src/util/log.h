/*
 * Logging.  There is no global logger (no mutable globals): each ctx and
 * blade owns a struct smart__log holding its level and prefix (and the
 * application's handler, smart_log_set_handler), and passes it down.  A NULL logger logs warnings and errors to stderr.  Messages are
 * lowercase, one line, without a trailing period (UCX style).
 */
#ifndef SMART_UTIL_LOG_H
#define SMART_UTIL_LOG_H

#include <stdarg.h>

#include "smart/options.h" /* smart_log_fn */

enum smart__log_level {
	SMART_LOG_ERROR = 0,
	SMART_LOG_WARN = 1,
	SMART_LOG_INFO = 2,
	SMART_LOG_DEBUG = 3,
};

struct smart__log {
	int level;
	const char *prefix; /* e.g. "smart" or "smartd"; NULL = "smart" */
	smart_log_fn fn;    /* the application's handler; NULL: stderr */
	void *arg;
};

/* Parse "error|warn|info|debug" (or 0..3); -1 when unknown. */
int smart__log_parse_level(const char *s);

void smart__log_msg(const struct smart__log *lg, int level, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));

#define smart__err(lg, ...)  smart__log_msg((lg), SMART_LOG_ERROR, __VA_ARGS__)
#define smart__warn(lg, ...) smart__log_msg((lg), SMART_LOG_WARN, __VA_ARGS__)
#define smart__info(lg, ...) smart__log_msg((lg), SMART_LOG_INFO, __VA_ARGS__)
#define smart__dbg(lg, ...)  smart__log_msg((lg), SMART_LOG_DEBUG, __VA_ARGS__)

#endif
