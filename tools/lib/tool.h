/*
 * The tools' library (tools/lib): what smartd, smart-ping, smart-stat and
 * the benchmarks (bench/, through the benchmark kit bench/kit/kit.h)
 * share, so that each tool is only its own work (docs/design.md §9).
 *
 *   flags    a declarative table of flags per tool, parsed by one parser:
 *            sizes with K/M/G/T, times with ns/us/ms/s, integers and doubles
 *            with ranges, choices, library options checked as they are
 *            read; one error path, "<tool>: --flag: <why> ('<value>')" and
 *            exit status 2; --help and --version on every tool
 *   common   the flags every tool that runs a ctx takes (--transport,
 *            --qp-mode, --techniques, --credit, --nic-model, --opt,
 *            --connect, ...)
 *   env      the library options of a run, an embedded blade (random
 *            secret, loopback, any port) or the --connect'ed smartds, and
 *            the ctx joined to them
 *   output   a JSON string, a blade's memory usage as one line, a sleep
 *
 * Invariants: the library uses only the public API (include/smart), which
 * its include path enforces (CMakeLists.txt); it has no mutable globals:
 * all state is in the caller's structs.  The only calls that end the
 * process are the flag parser and kit_bad(): exit 0 after --help,
 * --version or --list-options, exit 2 on bad input.  Everything else
 * returns a status.  All calls from the main thread.
 */
#ifndef SMART_TOOL_H
#define SMART_TOOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "smart/smart.h"
#include "tool_mutant.h"

/* ------------------------------------------------------------------ */
/* Flags                                                               */

enum kit_type {
	KIT_T_FLAG,	/* no value: the int is set to 1 */
	KIT_T_STR,	/* const char * (points into argv) */
	KIT_T_STRS,	/* repeatable: struct kit_strs, at most hi values */
	KIT_T_INT,	/* int in [lo, hi] */
	KIT_T_U64,	/* uint64_t in [lo, hi]; K/M/G/T as for sizes */
	KIT_T_SIZE,	/* uint64_t in [lo, hi]; K/M/G/T: binary multiples */
	KIT_T_DOUBLE,	/* double in [lo, hi) */
	KIT_T_TIME,	/* double seconds in [lo, hi); ns/us/ms/s suffixes */
	KIT_T_CHOICE,	/* int: the index of the value in choices */
	KIT_T_LIBOPT,	/* const char *, a valid value of library option key */
	KIT_T_LIBKV,	/* repeatable "key=value" library options (kit_strs) */
	KIT_T_LISTOPTS, /* print the library options and exit 0 */
	KIT_T_OUTFILE,	/* const char *: a file results are appended to,
			 * refused now when it could not be written */
	KIT_T_ADDR,	/* const char *: HOST:PORT, port 1..65535 (0 too
			 * when lo is 0: "any port" for a listener) */
	KIT_T_SIM,	/* const char *: a spec smart_sim_run() takes */
};

#define KIT_STRS_MAX 32
struct kit_strs {
	int n;
	const char *v[KIT_STRS_MAX];
};

/* One flag.  The value is stored at base + off, base being the group's
 * (struct kit_group), so a table can be static and const. */
struct kit_flag {
	const char *name; /* without the leading "--" */
	enum kit_type type;
	size_t off;
	double lo, hi;		    /* range; KIT_T_STRS: hi = most values */
	const char *key;	    /* KIT_T_LIBOPT: the library option */
	const char *const *choices; /* KIT_T_CHOICE: NULL-terminated */
	const char *arg;	    /* the value in --help ("N", "a|b") */
	const char *help;	    /* one line; [default] at the end */
};

/* offsetof(T, f), refusing to compile when f is not of type C (comparing
 * pointers to different types is a constraint violation). */
#define KIT_OFF(T, f, C) (offsetof(T, f) + 0 * sizeof(&((T *)0)->f == (C *)0))

#define KIT_FLAG(n, T, f, h)                                                   \
	{                                                                      \
		n, KIT_T_FLAG, KIT_OFF(T, f, int), 0, 0, NULL, NULL, NULL, h   \
	}
#define KIT_STR(n, T, f, a, h)                                                 \
	{                                                                      \
		n, KIT_T_STR, KIT_OFF(T, f, const char *), 0, 0, NULL, NULL,   \
			a, h                                                   \
	}
#define KIT_STRS(n, T, f, max, a, h)                                           \
	{                                                                      \
		n, KIT_T_STRS, KIT_OFF(T, f, struct kit_strs), 0, max, NULL,   \
			NULL, a, h                                             \
	}
#define KIT_INT(n, T, f, lo, hi, a, h)                                         \
	{                                                                      \
		n, KIT_T_INT, KIT_OFF(T, f, int), lo, hi, NULL, NULL, a, h     \
	}
#define KIT_U64(n, T, f, lo, hi, a, h)                                         \
	{                                                                      \
		n, KIT_T_U64, KIT_OFF(T, f, uint64_t), lo, hi, NULL, NULL, a,  \
			h                                                      \
	}
#define KIT_SIZE(n, T, f, lo, hi, a, h)                                        \
	{                                                                      \
		n, KIT_T_SIZE, KIT_OFF(T, f, uint64_t), lo, hi, NULL, NULL, a, \
			h                                                      \
	}
#define KIT_DOUBLE(n, T, f, lo, hi, a, h)                                      \
	{                                                                      \
		n, KIT_T_DOUBLE, KIT_OFF(T, f, double), lo, hi, NULL, NULL, a, \
			h                                                      \
	}
#define KIT_TIME(n, T, f, lo, hi, a, h)                                        \
	{                                                                      \
		n, KIT_T_TIME, KIT_OFF(T, f, double), lo, hi, NULL, NULL, a, h \
	}
#define KIT_CHOICE(n, T, f, ch, a, h)                                          \
	{                                                                      \
		n, KIT_T_CHOICE, KIT_OFF(T, f, int), 0, 0, NULL, ch, a, h      \
	}
#define KIT_LIBOPT(n, T, f, key, a, h)                                         \
	{                                                                      \
		n, KIT_T_LIBOPT, KIT_OFF(T, f, const char *), 0, 0, key, NULL, \
			a, h                                                   \
	}
#define KIT_LIBKV(n, T, f, a, h)                                               \
	{                                                                      \
		n, KIT_T_LIBKV, KIT_OFF(T, f, struct kit_strs), 0,             \
			KIT_STRS_MAX, NULL, NULL, a, h                         \
	}
#define KIT_OUTFILE(n, T, f, a, h)                                             \
	{                                                                      \
		n, KIT_T_OUTFILE, KIT_OFF(T, f, const char *), 0, 0, NULL,     \
			NULL, a, h                                             \
	}
#define KIT_ADDR(n, T, f, lo, h)                                               \
	{                                                                      \
		n, KIT_T_ADDR, KIT_OFF(T, f, const char *), lo, 65535, NULL,   \
			NULL, "HOST:PORT", h                                   \
	}
#define KIT_SIM(n, T, f, a, h)                                                 \
	{                                                                      \
		n, KIT_T_SIM, KIT_OFF(T, f, const char *), 0, 0, NULL, NULL,   \
			a, h                                                   \
	}
#define KIT_LISTOPTS(n, h)                                                     \
	{                                                                      \
		n, KIT_T_LISTOPTS, 0, 0, 0, NULL, NULL, NULL, h                \
	}
#define KIT_END                                                                \
	{                                                                      \
		NULL, KIT_T_FLAG, 0, 0, 0, NULL, NULL, NULL, NULL              \
	}

/* A table of flags (ending with KIT_END) and the struct its values go to;
 * title heads the table's lines in --help (NULL: none). */
struct kit_group {
	const struct kit_flag *flags;
	void *base;
	const char *title;
};

#define KIT_GROUPS_MAX 4
struct kit_cli {
	const char *tool;     /* names the tool in messages: "smart-perf" */
	const char *synopsis; /* after "usage: " in --help */
	const char *about;    /* lines printed after the usage line */
	struct kit_group group[KIT_GROUPS_MAX]; /* unused: flags NULL */
	int nargs;	  /* positional arguments it takes (exactly) */
	const char *args; /* what they are, for the message: "HOST:PORT" */
};

/*
 * Parse argv[1..argc-1] by the cli's groups (getopt_long: flags and
 * positional arguments may mix; "--" ends the flags).  --help prints
 * kit_usage() and exits 0, --version prints "<tool> <version>" and exits
 * 0; an unknown flag, a missing value or a bad one, and a number of
 * positional arguments other than cli->nargs go to kit_bad().  When the
 * cli has library flags, the SMART_* environment is checked too.
 * Returns the index in argv of the first positional argument, as getopt's
 * permutation leaves them at the end.
 */
int kit_parse(const struct kit_cli *cli, int argc, char **argv);

/* Print the usage line, the about text and every group's flags. */
void kit_usage(const struct kit_cli *cli, FILE *f);

/*
 * The one error path for bad input: print "<tool>: --<flag>: <why>
 * ('<value>')" on stderr and exit 2.  flag NULL: "<tool>: <why>
 * ('<value>')", value NULL: no "('...')".  For the checks a tool makes
 * after parsing (a flag that contradicts another, a missing one).
 */
__attribute__((format(printf, 4, 5), noreturn)) void
kit_bad(const char *tool, const char *flag, const char *value, const char *why,
	...);

/* HOST:PORT with a decimal port in [lo, 65535] and a host the library
 * takes (a dotted IPv4 address, localhost, "[v6]"; it resolves no names):
 * 0, -1 (no port, or out of range) or -2 (the host).  What --connect, a
 * listen address and a tool's HOST:PORT argument must be before anything
 * connects. */
int kit_addr_ok(const char *s, int lo);

/* kit_addr_ok(v, lo), refused through kit_bad (flag NULL: an argument). */
void kit_addr_check(const char *tool, const char *flag, const char *v, int lo);

/* The memory the system can still give (MemAvailable of /proc/meminfo),
 * in bytes; 0 when it cannot be read. */
uint64_t kit_mem_available(void);

/* The parsers behind the flag types, for values that are not flags: 0 or
 * -1 (the value is left alone).  A size is decimal with an optional K, M,
 * G or T (binary multiples, with suffixes set); a time a decimal number with an optional ns,
 * us, ms or s (seconds without). */
int kit_parse_u64(const char *s, int suffixes, uint64_t *out);
int kit_parse_double(const char *s, double *out);
int kit_parse_time(const char *s, double *secs);

/* ------------------------------------------------------------------ */
/* The flags every benchmark shares                                    */

#define KIT_BLADES_MAX 16

struct kit_common {
	const char *tool; /* as in struct kit_cli */
	/* library options (NULL: the default, or the SMART_* environment) */
	const char *transport, *qp_mode, *techniques, *credit, *nic_model;
	const char *device, *secret_file;
	struct kit_strs opts; /* --opt key=value */
	/* blades: --connect host:port, else an embedded one of blade_size */
	struct kit_strs connect;
	uint64_t blade_size; /* 0: the tool chooses */
	/* the run */
	int threads;
	double seconds;
	uint64_t seed;
	/* output */
	int json;
	const char *csv;
	/* --sim SPEC: the run in virtual time (smart/sim.h, docs/sim.md) */
	const char *sim;
	/* the command line, for the records (kit_common_command) */
	char command[1024];
	/* a failed connect's line is held in kit_env.connect_line, not
	 * printed: the tool may say instead what it found (smart-ping) */
	int hold_connect;
};

/* The command line into c->command: the tool's name, then argv[first..]
 * (cut at the buffer's end, said with "..."). */
void kit_common_command(struct kit_common *c, int argc, char **argv, int first);

/* The table of the flags above; its base is a struct kit_common. */
extern const struct kit_flag kit_common_flags[];

/* The seed of one task's random stream: distinct for every (seed, thread,
 * task), however many tasks a thread runs. */
static inline uint64_t kit_task_seed(uint64_t seed, int thread, int task)
{
	uint64_t v[3] = { seed, (uint64_t)thread, (uint64_t)task };

	return smart_hash64(v, sizeof(v), 0x5eed);
}

/* Defaults: 1 thread, 3 s, seed 1, the rest unset. */
void kit_common_init(struct kit_common *c, const char *tool);

/* ------------------------------------------------------------------ */
/* The environment of a run: blades and the ctx                        */

struct kit_env {
	smart_ctx_t *ctx;
	smart_blade_t *embedded; /* NULL with --connect */
	char secret[32];	 /* the embedded blade's */
	int nblades;
	uint16_t blade[KIT_BLADES_MAX];
	struct smart_blade_info info[KIT_BLADES_MAX];
	/* the options in force, whichever way they were given (a flag,
	 * --opt, SMART_*): what the reports say ("" = off) */
	char nic_model[128], adversarial[128];
	/* the library's messages (smart_log_set_handler): one voice, the
	 * tool's.  With log_level info or debug each is printed as it
	 * comes ("<tool>: smart <level>: ..."); else the errors and
	 * warnings are held: the first is the cause a failure line gives
	 * (kit_env_cause), and a run that did not fail says at close how
	 * many there were and the last, in one line. */
	struct kit_log {
		const char *tool;
		pthread_mutex_t lock;
		int verbose, failed;
		unsigned held;
		char first[256], last[256];
	} log;
	/* the failed connect's one line when kit_common.hold_connect */
	char connect_line[384];
};

/* The library options of a run, as kit_env_open() makes them (for a tool
 * that needs a ctx but no blade): the SMART_* environment, the common
 * library flags set in c, then kv (NULL-terminated, may be NULL), then
 * --opt.  The caller destroys *out. */
int kit_opts_build(const struct kit_common *c, const char *const *kv,
		   smart_opts_t **out);

/* The library options of a run with e's log handler on them (the
 * library's messages go where kit_env_open() sends them: one voice, the
 * tool's), for a tool that makes its own ctx and no blade (smart-ping
 * --rpc).  e is reset; kit_env_close(e) still closes it.  The caller
 * destroys *out. */
int kit_env_opts(struct kit_env *e, const struct kit_common *c,
		 const char *const *kv, smart_opts_t **out);

/*
 * Open the run's environment: the library options (the SMART_*
 * environment, the common flags, then the tool's own "key=value" in kv
 * (NULL-terminated, may be NULL), then --opt, so the user has the last
 * word); without --connect an embedded blade of c->blade_size bytes (0:
 * the library's default) on the transport and device those options name,
 * with a random secret handed to the ctx; the ctx; every blade joined and
 * its geometry in e->info.  Says on stderr which step failed.  Returns 0
 * or the error; kit_env_close() undoes a partial open.
 */
/* The first library message held (see struct kit_log), "" if none; the
 * run is marked failed: kit_env_close says no more. */
const char *kit_env_cause(struct kit_env *e);

int kit_env_open(struct kit_env *e, const struct kit_common *c,
		 const char *const *kv);
void kit_env_close(struct kit_env *e);

/* "embedded" or "connected". */
const char *kit_env_kind(const struct kit_env *e);

/* ------------------------------------------------------------------ */
/* Output                                                              */

/* Sleep, resuming after signals. */
void kit_sleep(double secs);

/* Run fn(arg): in virtual time when --sim was given (the transport then
 * defaults to sim), else directly.  0, or smart_sim_run's error. */
int kit_sim_main(struct kit_common *c, void (*fn)(void *), void *arg);

/* One line on a blade's memory (struct smart_alloc_usage):
 * "1024.0 MiB: 3.1 used, 1020.9 free (1016.0 fresh + 4.9 on the free
 * lists), 0.5 cached by 2 clients[, N fenced]" (MiB), into buf. */
void kit_usage_format(const struct smart_alloc_usage *u, char *buf, size_t n);

/* Print "<prefix>: <that line>" for the usage a query returned (rc 0),
 * or "<prefix>: <the error>", on stdout, flushed. */
void kit_usage_print(const char *prefix, int rc,
		     const struct smart_alloc_usage *u);

/* s as a quoted JSON string: '"' and '\\' escaped, and every byte below
 * 0x20 or from 0x7f up written \u00XX, so that the output is ASCII and
 * valid JSON whatever s holds (a byte from 0x80 up reads back as that
 * code point: UTF-8 is not decoded). */
void kit_json_str(const char *s, FILE *f);

#endif
