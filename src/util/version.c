/*
 * smart_version(): the version this library was built as, from the same
 * macros an application compiles against (include/smart/smart.h), so that
 * the two can be compared at run time.  Pure; no state.
 */
#include "smart/smart.h"

const char *smart_version(unsigned *major, unsigned *minor, unsigned *patch)
{
	if (major)
		*major = SMART_VERSION_MAJOR;
	if (minor)
		*minor = SMART_VERSION_MINOR;
	if (patch)
		*patch = SMART_VERSION_PATCH;
	return SMART_VERSION_STRING;
}
