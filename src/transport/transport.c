/*
 * The registry of built-in transports: a const table searched by name.
 * Transports register nothing at run time (no mutable globals).  Also the
 * names of the GID types, which the client options and the blade's
 * configuration both parse (both layers sit above this one).
 */
#include <string.h>

#include "transport/transport.h"
#include "transport/shm/shm.h"
#include "util/log.h"

static const struct smart_tp_ops *const smart__transports[] = {
	&smart__tp_shm_ops,
	&smart__tp_sim_ops,
#ifdef SMART_HAVE_VERBS
	&smart__tp_verbs_ops,
#endif
};

const struct smart_tp_ops *smart__tp_find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < sizeof(smart__transports) / sizeof(*smart__transports);
	     i++)
		if (!strcmp(smart__transports[i]->name, name))
			return smart__transports[i];
	return NULL;
}

/* Every transport this source tree knows, built in or not: an option may
 * name one that this build lacks and be told so when a ctx opens it. */
static const char *const smart__transport_names[] = { "shm", "sim", "verbs" };

int smart__tp_known(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(smart__transport_names) /
					    sizeof(*smart__transport_names);
	     i++)
		if (!strcmp(smart__transport_names[i], name))
			return 1;
	return 0;
}

static const char *const smart__gid_type_names[] = {
	[SMART_TP_GID_AUTO] = "auto",
	[SMART_TP_GID_ROCE_V2] = "roce-v2",
	[SMART_TP_GID_ROCE_V1] = "roce-v1",
	[SMART_TP_GID_IB] = "ib",
};

int smart__tp_gid_type_parse(const char *name)
{
	size_t i;

	if (!name)
		return SMART_TP_GID_AUTO;
	for (i = 0;
	     i < sizeof(smart__gid_type_names) / sizeof(*smart__gid_type_names);
	     i++)
		if (!strcmp(smart__gid_type_names[i], name))
			return (int)i;
	return -1;
}

const char *smart__tp_gid_type_name(int type)
{
	if (type < 0 || (size_t)type >= sizeof(smart__gid_type_names) /
						sizeof(*smart__gid_type_names))
		return "?";
	return smart__gid_type_names[type];
}

int smart__tp_nic_model_check(const char *spec)
{
	/* level below error: the parser's message goes nowhere */
	const struct smart__log quiet = { .level = -1 };
	struct shm_model_params p;

	if (!spec || !*spec)
		return 0;
	return smart__shm_model_parse(spec, &p, &quiet) ? SMART_EINVAL : 0;
}
