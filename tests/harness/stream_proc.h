/*
 * Helpers of the stream tests whose executors are processes: whole
 * reads and writes of a pipe, and zeroing a checkpoint area before a run
 * (an area must be zero before its first use: docs/stream.md §11).
 */
#ifndef SMART_TEST_STREAM_PROC_H
#define SMART_TEST_STREAM_PROC_H

#include <string.h>
#include <unistd.h>

#include "harness/test.h"
#include "smart/smart.h"

/* n bytes to (wr) or from fd, whole, or the test fails. */
static inline void sp_full_io(int fd, void *p, size_t n, int wr)
{
	for (size_t k = 0; k < n;) {
		ssize_t got = wr ? write(fd, (char *)p + k, n - k) :
				   read(fd, (char *)p + k, n - k);

		if (got <= 0)
			TEST_FAIL("pipe %s: %zd", wr ? "write" : "read", got);
		k += (size_t)got;
	}
}

/* bytes of blade memory at base set to zero, 64 KiB a WRITE. */
static inline void sp_area_zero(smart_worker_t *w, smart_gaddr_t base,
				uint64_t bytes)
{
	const uint64_t chunk = 64 << 10;
	void *buf;

	CHECK_OK(smart_buf_alloc(w, chunk, &buf));
	memset(buf, 0, chunk);
	for (uint64_t off = 0; off < bytes; off += chunk)
		CHECK_OK(smart_write_sync(w, smart_gaddr_add(base, off), buf,
					  bytes - off < chunk ? bytes - off :
								chunk));
	smart_buf_free(w, buf);
}

#endif
