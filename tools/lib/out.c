/*
 * Output and waiting the tools share (tool.h): a JSON string, a blade's
 * memory usage as one line, a sleep that resumes after signals.
 *
 * Invariant: JSON strings are escaped whatever bytes they hold.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tool.h"

void kit_sleep(double secs)
{
	struct timespec ts = { (time_t)secs,
			       (long)((secs - (double)(time_t)secs) * 1e9) };

	if (smart_sim_active()) {
		smart_sim_sleep_ns((uint64_t)(secs * 1e9));
		return;
	}

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void kit_json_str(const char *s, FILE *f)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

void kit_usage_format(const struct smart_alloc_usage *u, char *buf, size_t n)
{
	const double mib = 1024.0 * 1024.0;
	int k = snprintf(buf, n,
			 "%.1f MiB: %.1f used, %.1f free (%.1f fresh "
			 "+ %.1f on the free lists), %.1f cached by %u "
			 "client%s",
			 (double)u->size / mib, (double)u->used / mib,
			 (double)u->free / mib, (double)u->unclaimed / mib,
			 (double)u->pooled / mib, (double)u->cached / mib,
			 u->clients, u->clients == 1 ? "" : "s");

	if (u->fenced && k > 0 && (size_t)k < n)
		snprintf(buf + k, n - (size_t)k, ", %u fenced", u->fenced);
}

void kit_usage_print(const char *prefix, int rc,
		     const struct smart_alloc_usage *u)
{
	char line[256];

	if (rc)
		printf("%s: %s\n", prefix, smart_strerror(rc));
	else {
		kit_usage_format(u, line, sizeof(line));
		printf("%s: %s\n", prefix, line);
	}
	fflush(stdout);
}

int kit_sim_main(struct kit_common *c, void (*fn)(void *), void *arg)
{
	if (!c->sim) {
		fn(arg);
		return 0;
	}
	if (!c->transport)
		c->transport = "sim";
	return smart_sim_run(c->sim, fn, arg);
}

uint64_t kit_mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb << 10;
}
