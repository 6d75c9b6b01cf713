/*
 * Flag values: the parsers of numbers, sizes and times, the checks of each
 * flag type against its range or the library's option table, and the one
 * error path of bad input (kit_bad).
 *
 * Invariants: a value is stored only after it passed every check, so a
 * tool never sees half-parsed input; every refusal goes through kit_bad()
 * and names the flag, the reason and the value.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smart/sim.h"
#include "tool.h"
#include "kit_int.h"

void kit_bad(const char *tool, const char *flag, const char *value,
	     const char *why, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool);
	if (flag)
		fprintf(stderr, "--%s: ", flag);
	va_start(ap, why);
	vfprintf(stderr, why, ap);
	va_end(ap);
	if (value)
		fprintf(stderr, " ('%s')", value);
	fputc('\n', stderr);
	exit(2);
}

int kit_parse_u64(const char *s, int suffixes, uint64_t *out)
{
	unsigned long long v;
	int shift = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (suffixes && (*end == 'K' || *end == 'k'))
		shift = 10, end++;
	else if (suffixes && (*end == 'M' || *end == 'm'))
		shift = 20, end++;
	else if (suffixes && (*end == 'G' || *end == 'g'))
		shift = 30, end++;
	else if (suffixes && (*end == 'T' || *end == 't'))
		shift = 40, end++;
	if (errno || *end || v > UINT64_MAX >> shift)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

int kit_parse_double(const char *s, double *out)
{
	char *end;
	double d;

	if (!s || !*s)
		return -1;
	errno = 0;
	d = strtod(s, &end);
	if (errno || *end)
		return -1;
	*out = d;
	return 0;
}

int kit_parse_time(const char *s, double *secs)
{
	static const struct {
		const char *sfx;
		double mul;
	} u[] = {
		{ "ns", 1e-9 }, { "us", 1e-6 }, { "ms", 1e-3 },
		{ "s", 1 },	{ "", 1 },
	};
	char *end;
	double d;
	size_t i;

	if (!s || ((*s < '0' || *s > '9') && *s != '.'))
		return -1;
	errno = 0;
	d = strtod(s, &end);
	if (errno)
		return -1;
	for (i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		if (!strcmp(end, u[i].sfx)) {
			*secs = d * u[i].mul;
			return 0;
		}
	}
	return -1;
}

/* "16M" rather than 16777216 in a message about a size. */
static const char *size_text(double v, char *buf, size_t n)
{
	static const char sfx[] = "KMGTPE";
	uint64_t x = (uint64_t)v;
	int i = -1;

	while (x >= 1024 && !(x & 1023) && i < 5)
		x >>= 10, i++;
	if (i < 0)
		snprintf(buf, n, "%" PRIu64, x);
	else
		snprintf(buf, n, "%" PRIu64 "%c", x, sfx[i]);
	return buf;
}

static void bad_int(const char *tool, const struct kit_flag *f, const char *v)
{
	char a[32], b[32];

	if (f->type == KIT_T_SIZE)
		kit_bad(tool, f->name, v,
			"want a size (K/M/G/T suffixes) in "
			"%s..%s",
			size_text(f->lo, a, sizeof(a)),
			size_text(f->hi, b, sizeof(b)));
	if (f->hi >= 1e18)
		kit_bad(tool, f->name, v, "want an integer >= %.0f", f->lo);
	kit_bad(tool, f->name, v, "want an integer in %.0f..%.0f", f->lo,
		f->hi);
}

static void set_int(const char *tool, const struct kit_flag *f, void *dst,
		    const char *v)
{
	uint64_t x;

	if (kit_parse_u64(v, f->type != KIT_T_INT, &x) || (double)x < f->lo ||
	    (double)x > f->hi)
		bad_int(tool, f, v);
	if (f->type == KIT_T_INT)
		*(int *)dst = (int)x;
	else
		*(uint64_t *)dst = x;
}

static void set_real(const char *tool, const struct kit_flag *f, void *dst,
		     const char *v)
{
	double d;

	if (f->type == KIT_T_TIME) {
		if (kit_parse_time(v, &d) || !(d >= f->lo && d < f->hi))
			kit_bad(tool, f->name, v,
				"want a time (ns/us/ms/s, "
				"seconds without) in [%g s, %g s)",
				f->lo, f->hi);
	} else if (kit_parse_double(v, &d) || !(d >= f->lo && d < f->hi)) {
		kit_bad(tool, f->name, v, "want a number in [%g, %g)", f->lo,
			f->hi);
	}
	*(double *)dst = d;
}

static void set_choice(const char *tool, const struct kit_flag *f, void *dst,
		       const char *v)
{
	int i;

	for (i = 0; f->choices[i]; i++) {
		if (!strcmp(v, f->choices[i])) {
			*(int *)dst = i;
			return;
		}
	}
	kit_bad(tool, f->name, v, "want one of %s", f->arg);
}

static void add_str(const char *tool, const struct kit_flag *f, void *dst,
		    const char *v)
{
	struct kit_strs *s = dst;

	if (s->n >= (int)f->hi || s->n >= KIT_STRS_MAX)
		kit_bad(tool, f->name, v, "at most %d of them", s->n);
	if (f->arg && !strcmp(f->arg, "HOST:PORT"))
		kit_addr_check(tool, f->name, v, 1);
	s->v[s->n++] = v;
}

/* The host of "host:port" (hl bytes) as the library takes it: a dotted
 * IPv4 address, "localhost" or a bracketed IPv6 literal; it resolves no
 * names (src/wire/proto.c).  1 when it does. */
static int host_ok(const char *h, size_t hl)
{
	char buf[64];
	struct in6_addr a6;
	struct in_addr a4;

	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		if (hl - 2 >= sizeof(buf))
			return 0;
		snprintf(buf, sizeof(buf), "%.*s", (int)(hl - 2), h + 1);
		return inet_pton(AF_INET6, buf, &a6) == 1;
	}
	if (hl >= sizeof(buf))
		return 0;
	snprintf(buf, sizeof(buf), "%.*s", (int)hl, h);
	return !strcmp(buf, "localhost") || inet_pton(AF_INET, buf, &a4) == 1;
}

int kit_addr_ok(const char *s, int lo)
{
	const char *colon = s ? strrchr(s, ':') : NULL;
	uint64_t port;

	if (SMART_M_TOOL_ADDR_UNCHECKED)
		return 0;
	if (!colon || colon == s || (s[0] == '[' && colon[-1] != ']'))
		return -1;
	if (kit_parse_u64(colon + 1, 0, &port) || port < (uint64_t)lo ||
	    port > 65535)
		return -1;
	if (!SMART_M_TOOL_HOST_UNCHECKED && !host_ok(s, (size_t)(colon - s)))
		return -2;
	return 0;
}

void kit_addr_check(const char *tool, const char *flag, const char *v, int lo)
{
	int rc = kit_addr_ok(v, lo);

	if (rc == -2)
		kit_bad(tool, flag, v,
			"want HOST:PORT, HOST an IPv4 address, localhost or "
			"[IPv6]: names are not resolved");
	if (rc)
		kit_bad(tool, flag, v, "want HOST:PORT, the port %d..65535",
			lo);
}

/* Open v as the run will (O_APPEND, created when absent), and leave
 * nothing behind: a file made by the probe is removed.  access(2) alone
 * is not enough: root passes it for a directory, /proc or /sys, where the
 * open fails only after the run.  O_NONBLOCK: a FIFO without a reader is
 * refused now, not waited on.  0 or an errno. */
static int probe_outfile(const char *v)
{
	int fd = open(v,
		      O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int made = 0, err;

	if (fd < 0 && errno == ENOENT) {
		fd = open(v,
			  O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK | O_NOCTTY |
				  O_CLOEXEC,
			  0644);
		made = fd >= 0;
	}
	err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	if (made)
		unlink(v);
	return err;
}

/* A file results will be appended to, after a run that may take long:
 * one that could not be written is refused now, without making it (an
 * existing file must be writable, else its directory), and then opened
 * as the run will open it. */
static void check_outfile(const char *tool, const struct kit_flag *f,
			  const char *v)
{
	char dir[4096];
	const char *slash = strrchr(v, '/');
	int err;

	if (SMART_M_TOOL_CSV_UNCHECKED)
		return;
	if (!*v)
		kit_bad(tool, f->name, v, "want a file name");
	if (!access(v, F_OK)) {
		if (access(v, W_OK))
			kit_bad(tool, f->name, v, "cannot write it: %s",
				strerror(errno));
	} else {
		if (errno != ENOENT)
			kit_bad(tool, f->name, v, "%s", strerror(errno));
		snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - v) : 1,
			 slash ? (slash == v ? "/" : v) : ".");
		if (access(dir, W_OK | X_OK))
			kit_bad(tool, f->name, v, "cannot create it in %s: %s",
				dir, strerror(errno));
	}
	err = SMART_M_TOOL_CSV_ACCESS_ONLY ? 0 : probe_outfile(v);
	if (err)
		kit_bad(tool, f->name, v, "cannot open it for appending: %s",
			strerror(err));
}

static void sim_nothing(void *arg)
{
	(void)arg;
}

/* A --sim spec is checked by the engine itself, on an empty run (no
 * thread, no memory beyond the engine's), so that a bad one is refused
 * here and not after the setup as "invalid argument", exit 1. */
static void check_sim(const char *tool, const struct kit_flag *f, const char *v)
{
	if (SMART_M_TOOL_SIM_UNCHECKED)
		return;
	if (smart_sim_run(v, sim_nothing, NULL))
		kit_bad(tool, f->name, v,
			"want default or key=value,... of seed, sync_ns, "
			"jitter_ns (0..1e9), max_threads (1..65536), "
			"idle_skip_ns, poll_ns, wc_ns (docs/sim.md)");
}

void kit__lib_hint(const char *key, char *buf, size_t len)
{
	smart_opts_t *o = NULL;
	char names[256];

	buf[0] = 0;
	if (strcmp(key, "techniques") || smart_opts_create_defaults(&o))
		return;
	if (!smart_opts_get(o, key, names, sizeof(names)))
		snprintf(buf, len,
			 ": one or more of %s (comma separated), or None",
			 names);
	smart_opts_destroy(o);
}

/* A library option's value is checked by the library's own table, on a
 * scratch options object of defaults, so that the flag is named when it
 * is wrong rather than the ctx failing later. */
static void check_lib(const char *tool, const struct kit_flag *f, const char *v,
		      smart_opts_t **lib)
{
	int rc = *lib ? 0 : smart_opts_create_defaults(lib);

	if (rc)
		kit_bad(tool, f->name, v, "%s", smart_strerror(rc));
	if (f->type == KIT_T_LIBOPT)
		rc = smart_opts_set(*lib, f->key, v);
	else
		rc = smart_opts_set_kv(*lib, v);
	if (!rc)
		return;
	if (f->type == KIT_T_LIBOPT) {
		char hint[320];

		kit__lib_hint(f->key, hint, sizeof(hint));
		kit_bad(tool, f->name, v,
			"want %s, as --help says (library option %s)%s", f->arg,
			f->key, hint);
	}
	if (rc == SMART_ENOENT)
		kit_bad(tool, f->name, v,
			"no such library option (see "
			"--list-options)");
	kit_bad(tool, f->name, v,
		"want key=value with a valid value (see "
		"--list-options)");
}

void kit__set(const char *tool, const struct kit_flag *f, void *base,
	      const char *v, smart_opts_t **lib)
{
	void *dst = (char *)base + f->off;

	switch (f->type) {
	case KIT_T_FLAG:
		*(int *)dst = 1;
		break;
	case KIT_T_STR:
		*(const char **)dst = v;
		break;
	case KIT_T_LIBOPT:
		check_lib(tool, f, v, lib);
		*(const char **)dst = v;
		break;
	case KIT_T_LIBKV:
		check_lib(tool, f, v, lib);
		/* fall through */
	case KIT_T_STRS:
		add_str(tool, f, dst, v);
		break;
	case KIT_T_INT:
	case KIT_T_U64:
	case KIT_T_SIZE:
		set_int(tool, f, dst, v);
		break;
	case KIT_T_DOUBLE:
	case KIT_T_TIME:
		set_real(tool, f, dst, v);
		break;
	case KIT_T_CHOICE:
		set_choice(tool, f, dst, v);
		break;
	case KIT_T_OUTFILE:
		check_outfile(tool, f, v);
		*(const char **)dst = v;
		break;
	case KIT_T_ADDR:
		kit_addr_check(tool, f->name, v, (int)f->lo);
		*(const char **)dst = v;
		break;
	case KIT_T_SIM:
		check_sim(tool, f, v);
		*(const char **)dst = v;
		break;
	case KIT_T_LISTOPTS:
		break;
	}
}
