/*
 * Names and messages for the SMART_E* status codes (include/smart/status.h).
 *
 * Invariants: the table is const and indexed by -status, so it must list
 * every code from SMART_OK down to SMART_E_LAST + 1 in order; a static
 * assertion below catches a code added to the enum but not here.  Both
 * lookups are pure and never return NULL.
 */
#include "smart/status.h"

#include "util/compiler.h"

struct status_desc {
	const char *name;
	const char *msg;
};

static const struct status_desc status_table[] = {
	[0] = { "SMART_OK", "success" },
	[-SMART_EINVAL] = { "SMART_EINVAL", "invalid argument" },
	[-SMART_ENOMEM] = { "SMART_ENOMEM", "out of local memory" },
	[-SMART_ENOSPC] = { "SMART_ENOSPC", "out of remote memory" },
	[-SMART_ENOENT] = { "SMART_ENOENT", "no such entry" },
	[-SMART_EEXIST] = { "SMART_EEXIST", "already exists" },
	[-SMART_EBUSY] = { "SMART_EBUSY", "resource busy" },
	[-SMART_EAGAIN] = { "SMART_EAGAIN", "try again" },
	[-SMART_ETIMEDOUT] = { "SMART_ETIMEDOUT", "timed out" },
	[-SMART_EPROTO] = { "SMART_EPROTO", "protocol error" },
	[-SMART_EVERSION] = { "SMART_EVERSION", "protocol version mismatch" },
	[-SMART_EACCES] = { "SMART_EACCES", "authentication failed" },
	[-SMART_ECONN] = { "SMART_ECONN", "connection refused or lost" },
	[-SMART_EREMOTE] = { "SMART_EREMOTE", "remote access error" },
	[-SMART_EQP] = { "SMART_EQP", "queue pair in error state" },
	[-SMART_ENOTSUP] = { "SMART_ENOTSUP", "not supported" },
	[-SMART_ESYS] = { "SMART_ESYS", "system call failed" },
	[-SMART_ERANGE] = { "SMART_ERANGE", "value out of range" },
	[-SMART_ERETRY] = { "SMART_ERETRY", "too many retries" },
	[-SMART_EFENCED] = { "SMART_EFENCED",
			     "fenced: this client's lease was taken away" },
	[-SMART_EABORT] = { "SMART_EABORT",
			    "transaction aborted by a conflict" },
};

_Static_assert(SMART_ARRAY_SIZE(status_table) == -SMART_E_LAST,
	       "status_table must cover every SMART_E* code");

static const struct status_desc *status_lookup(int status)
{
	/* Compare before negating: -INT_MIN would overflow. */
	if (status > 0 || status <= SMART_E_LAST)
		return NULL;
	return &status_table[-status];
}

const char *smart_strerror(int status)
{
	const struct status_desc *d = status_lookup(status);

	return d ? d->msg : "unknown";
}

const char *smart_status_name(int status)
{
	const struct status_desc *d = status_lookup(status);

	return d ? d->name : "SMART_E?";
}
