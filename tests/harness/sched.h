/*
 * How long threads waited for a CPU (header only): the scheduling a test
 * measures instead of guessing it.  A bound on elapsed time that a test
 * asserts is the protocol's bound plus what the test's own threads spent
 * runnable and not running (the kernel's per-thread run-queue wait,
 * /proc/<pid>/task/<tid>/schedstat, second field, in ns), so that a
 * loaded machine adds exactly its measured delay, and an idle one none.
 *
 * Invariant: the values only grow; a thread or kernel without the file
 * counts 0 (then the bound is the protocol's alone: no slack is made up).
 */
#ifndef SMART_TEST_SCHED_H
#define SMART_TEST_SCHED_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

/* ns thread tid of process pid waited on a run queue so far (0: unknown). */
static inline uint64_t sched_wait_ns(pid_t pid, pid_t tid)
{
	unsigned long long run = 0, wait = 0;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid,
		 (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &run, &wait) != 2)
		wait = 0;
	fclose(f);
	return wait;
}

/* The same summed over every thread process pid has now. */
static inline uint64_t sched_wait_all_ns(pid_t pid)
{
	char path[40];
	uint64_t sum = 0;
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			sum += sched_wait_ns(pid, (pid_t)atoi(e->d_name));
	closedir(d);
	return sum;
}

/* ms every thread of this process waited for a CPU since a reading
 * all_ns of sched_wait_all_ns(getpid()): what a wall-clock bound on work
 * of this process's threads adds to the protocol's (0 when a thread
 * that waited has ended: then nothing is added). */
static inline double sched_waited_ms(uint64_t all_ns)
{
	uint64_t now = sched_wait_all_ns(getpid());

	return now > all_ns ? (double)(now - all_ns) / 1e6 : 0;
}

#endif
