/*
 * The transport conformance suite (conformance/) run on the shm
 * transport.  shm regions are memfds, so a forked child can attach them
 * (the fd is passed or inherited): both fork cases run.  Each case runs in
 * its own child process so one failure does not hide the others.
 *
 * Usage: test_transport_shm [case-name-substring]
 */
#include "transport/conformance.h"

int main(int argc, char **argv)
{
	return smart_conformance_run_shm(NULL, argc > 1 ? argv[1] : NULL);
}
