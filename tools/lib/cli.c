/*
 * The command line of a tool: the groups of flags of a struct kit_cli
 * turned into one getopt_long table, the loop that feeds each value to
 * its flag's check (args.c), and --help, --version and --list-options.
 *
 * Invariants: every tool gets --help and --version from here, so no tool
 * can lack them; an unknown flag, a flag without its value and a value
 * given to a flag that takes none are refused through kit_bad(), exit 2,
 * naming the flag.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"
#include "kit_int.h"

extern char **environ; /* the process's, read only */

#define FLAGS_MAX 96
#define VAL_BASE  256 /* getopt values of the table's flags */
#define HELP_COL  28  /* where the help text of a flag starts */

struct slot {
	const struct kit_flag *f;
	void *base;
};

static int takes_value(const struct kit_flag *f)
{
	return f->type != KIT_T_FLAG && f->type != KIT_T_LISTOPTS;
}

static int is_lib(const struct kit_flag *f)
{
	return f->type == KIT_T_LIBOPT || f->type == KIT_T_LIBKV ||
	       f->type == KIT_T_LISTOPTS;
}

/* The flags of every group in order, then --help and --version; returns
 * how many came from the groups. */
static int collect(const struct kit_cli *cli, struct slot *s, struct option *o)
{
	const struct kit_flag *f;
	int g, n = 0;

	for (g = 0; g < KIT_GROUPS_MAX; g++) {
		for (f = cli->group[g].flags; f && f->name; f++) {
			if (n == FLAGS_MAX - 3)
				kit_bad(cli->tool, f->name, NULL,
					"one flag too "
					"many for the kit (FLAGS_MAX)");
			s[n].f = f;
			s[n].base = cli->group[g].base;
			o[n] = (struct option){ f->name,
						takes_value(f) ?
							required_argument :
							no_argument,
						NULL, VAL_BASE + n };
			n++;
		}
	}
	o[n] = (struct option){ "help", no_argument, NULL, 'h' };
	o[n + 1] = (struct option){ "version", no_argument, NULL, 'V' };
	o[n + 2] = (struct option){ NULL, 0, NULL, 0 };
	return n;
}

static void usage_flag(FILE *out, const struct kit_flag *f)
{
	char left[96];
	const char *h;
	int n = snprintf(left, sizeof(left), "  --%s%s%s", f->name,
			 takes_value(f) ? " " : "",
			 takes_value(f) && f->arg ? f->arg : "");

	fprintf(out, "%s", left);
	if (n >= HELP_COL)
		fprintf(out, "\n%*s", HELP_COL, "");
	else
		fprintf(out, "%*s", HELP_COL - n, "");
	/* A help text may span lines; each one starts at the column. */
	for (h = f->help; *h; h++) {
		fputc(*h, out);
		if (*h == '\n')
			fprintf(out, "%*s", HELP_COL, "");
	}
	fputc('\n', out);
}

void kit_usage(const struct kit_cli *cli, FILE *out)
{
	const struct kit_flag *f;
	int g;

	fprintf(out, "usage: %s\n%s", cli->synopsis, cli->about);
	for (g = 0; g < KIT_GROUPS_MAX; g++) {
		if (!cli->group[g].flags)
			continue;
		if (cli->group[g].title)
			fprintf(out, "%s:\n", cli->group[g].title);
		for (f = cli->group[g].flags; f->name; f++)
			usage_flag(out, f);
	}
	fprintf(out, "  -h, --help, --version\n");
}

/* getopt's '?': an unknown (or ambiguous) flag, or a value given to a
 * flag that takes none. */
static void refuse(const char *tool, const struct slot *s, const char *arg)
{
	char name[64];
	size_t n;

	if (optopt >= VAL_BASE)
		kit_bad(tool, s[optopt - VAL_BASE].f->name, arg,
			"takes no value");
	if (optopt == 'h' || optopt == 'V')
		kit_bad(tool, optopt == 'h' ? "help" : "version", arg,
			"takes no value");
	if (strncmp(arg, "--", 2))
		kit_bad(tool, NULL, arg,
			"unknown flag (flags are --name; "
			"see --help)");
	n = strcspn(arg + 2, "=");
	snprintf(name, sizeof(name), "%.*s", (int)n, arg + 2);
	kit_bad(tool, name, NULL, "unknown or ambiguous flag (see --help)");
}

static void list_options(const char *tool)
{
	smart_opts_t *o;
	int rc = smart_opts_create(&o);

	if (rc)
		kit_bad(tool, "list-options", NULL, "%s", smart_strerror(rc));
	smart_opts_print(o, stdout);
	smart_opts_destroy(o);
	exit(0);
}

/* The library reads SMART_* when a ctx is made; a bad one is the user's
 * input as much as a flag is, so it is refused now, in one line that
 * names it: each SMART_<KEY> of a library option is set on a scratch
 * object of defaults (which logs nothing), as a flag's value is. */
static void check_env(const char *tool, char **env)
{
	smart_opts_t *o;
	char key[64];
	size_t i, n;

	if (smart_opts_create_defaults(&o))
		kit_bad(tool, NULL, NULL, "%s", smart_strerror(SMART_ENOMEM));
	for (; env && *env; env++) {
		const char *eq = strchr(*env, '=');

		n = eq ? (size_t)(eq - *env) : 0;
		if (strncmp(*env, "SMART_", 6) || n <= 6 ||
		    n - 6 >= sizeof(key))
			continue;
		for (i = 6; i < n; i++)
			key[i - 6] = (char)tolower((unsigned char)(*env)[i]);
		key[n - 6] = 0;
		if (smart_opts_set(o, key, eq + 1) == SMART_EINVAL) {
			char hint[320];

			kit__lib_hint(key, hint, sizeof(hint));
			kit_bad(tool, NULL, eq + 1,
				"%.*s: a bad value of library option %s%s "
				"(see --list-options)",
				(int)n, *env, key, hint);
		}
	}
	smart_opts_destroy(o);
}

int kit_parse(const struct kit_cli *cli, int argc, char **argv)
{
	struct slot s[FLAGS_MAX];
	struct option o[FLAGS_MAX];
	smart_opts_t *lib = NULL;
	int n = collect(cli, s, o), ch, list = 0, libflags = 0, i;

	opterr = 0;
	optind = 1;
	/* -h too: what every tool of the field takes for help */
	while ((ch = getopt_long(argc, argv, ":h", o, NULL)) != -1) {
		if (ch == 'h') {
			kit_usage(cli, stdout);
			exit(0);
		}
		if (ch == 'V') {
			printf("%s %s\n", cli->tool, SMART_VERSION_STRING);
			exit(0);
		}
		if (ch == '?')
			refuse(cli->tool, s, argv[optind - 1]);
		if (ch == ':')
			kit_bad(cli->tool, s[optopt - VAL_BASE].f->name, NULL,
				"needs a value");
		i = ch - VAL_BASE;
		list |= s[i].f->type == KIT_T_LISTOPTS;
		kit__set(cli->tool, s[i].f, s[i].base, optarg, &lib);
	}
	smart_opts_destroy(lib);
	for (i = 0; i < n; i++)
		libflags |= is_lib(s[i].f);
	if (libflags && !SMART_M_TOOL_ENV_UNCHECKED)
		check_env(cli->tool, environ);
	if (list)
		list_options(cli->tool);
	if (argc - optind > cli->nargs)
		kit_bad(cli->tool, NULL, argv[optind + cli->nargs],
			"unexpected argument");
	if (argc - optind < cli->nargs)
		kit_bad(cli->tool, NULL, NULL, "want %s (see --help)",
			cli->args);
	return optind;
}
