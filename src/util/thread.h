/*
 * Library threads (the keeper, the blade's control thread): started with
 * every signal blocked, because signals belong to the application, which
 * may not expect one to land on a thread it did not make.
 */
#ifndef SMART_UTIL_THREAD_H
#define SMART_UTIL_THREAD_H

#include <pthread.h>
#include <signal.h>

/* pthread_create with all signals blocked in the new thread; returns its
 * result (0 or an errno value). */
static inline int smart__thread_start(pthread_t *th, void *(*fn)(void *),
				      void *arg)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

#endif
