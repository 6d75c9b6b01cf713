/*
 * shm transport: the parser of the option specs that switch on the shm
 * transport's optional behaviours (nic_model, shm_adversarial).
 *
 * A spec is a comma-separated list of items; an item is a word meaning
 * "the defaults" (e.g. "default", "on") or key=value.  Each caller gives
 * its table of keys (name, field, integer or decimal, range), its words
 * and a struct already holding its defaults.
 *
 * Invariants:
 *  - The value is checked the same way for every key: plain decimal digits
 *    (and one '.' for decimals), nothing strtod or strtoull would accept
 *    beyond that (no sign, exponent, hex, inf, nan, spaces), then the
 *    range.  A key given twice, an unknown key, an empty or overlong item
 *    is refused.
 *  - Every refusal logs one line that starts with the option's name and
 *    names the offending key or item; nothing is ever asserted, the spec
 *    comes from the user.
 *  - The caller's struct is written field by field as items parse; on an
 *    error it may be half written, so callers parse into a copy and keep it
 *    only on success.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/shm/shm.h"
#include "util/log.h"

#define SHM_SPEC_TOKEN_MAX 64

/* A plain decimal: digits, at most one '.' when frac, nothing else (no
 * sign, exponent, hex, inf or nan: strtod alone would take them). */
static int shm_is_decimal(const char *v, int frac)
{
	int digits = 0, dots = 0;

	for (; *v; v++) {
		if (*v >= '0' && *v <= '9')
			digits++;
		else if (*v == '.' && frac && !dots)
			dots++;
		else
			return 0;
	}
	return digits > 0;
}

static int shm_spec_value(const struct shm_spec *s,
			  const struct shm_spec_key *k, const char *v, void *p,
			  const struct smart__log *log)
{
	unsigned long long u = 0;
	char *end;
	double x;

	if (!shm_is_decimal(v, k->is_double)) {
		smart__err(log, "%s: %s=%s is not a %s", s->what, k->name, v,
			   k->is_double ? "decimal number" :
					  "non-negative integer");
		return SMART_EINVAL;
	}
	errno = 0;
	if (k->is_double) {
		x = strtod(v, &end);
	} else {
		u = strtoull(v, &end, 10);
		x = (double)u;
	}
	if (*end || errno || !isfinite(x) || x < k->min || x > k->max) {
		smart__err(log, "%s: %s=%s is out of range [%.15g, %.15g]",
			   s->what, k->name, v, k->min, k->max);
		return SMART_EINVAL;
	}
	if (k->is_double)
		memcpy((char *)p + k->off, &x, sizeof(x));
	else
		memcpy((char *)p + k->off, &(uint64_t){ u }, sizeof(uint64_t));
	return 0;
}

/* "key1, key2, ..." of the table, for the message about an unknown key. */
static void shm_spec_keys(const struct shm_spec *s, char *buf, size_t len)
{
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < s->nkeys && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
				      s->keys[i].name);
}

/* One item; *seen guards against a key given twice. */
static int shm_spec_item(const struct shm_spec *s, char *item, void *p,
			 uint32_t *seen, const struct smart__log *log)
{
	char *eq = strchr(item, '='), keys[256];
	const char *const *w;
	size_t i;

	for (w = s->words; *w; w++)
		if (!strcmp(item, *w))
			return 0;
	if (!eq) {
		smart__err(log, "%s: '%s' is not key=value or \"%s\"", s->what,
			   item, s->words[0]);
		return SMART_EINVAL;
	}
	*eq = '\0';
	for (i = 0; i < s->nkeys; i++) {
		if (strcmp(item, s->keys[i].name))
			continue;
		if (*seen & (UINT32_C(1) << i)) {
			smart__err(log, "%s: %s given twice", s->what, item);
			return SMART_EINVAL;
		}
		*seen |= UINT32_C(1) << i;
		return shm_spec_value(s, &s->keys[i], eq + 1, p, log);
	}
	shm_spec_keys(s, keys, sizeof(keys));
	smart__err(log, "%s: unknown key '%s' (keys: %s)", s->what, item, keys);
	return SMART_EINVAL;
}

int smart__shm_spec_parse(const struct shm_spec *s, const char *spec,
			  void *params, const struct smart__log *log)
{
	char item[SHM_SPEC_TOKEN_MAX];
	const char *whole = spec;
	uint32_t seen = 0;
	size_t len;
	int rc;

	if (!s || !spec || !params || s->nkeys > 32)
		return SMART_EINVAL;
	for (;;) {
		len = strcspn(spec, ",");
		if (!len || len >= sizeof(item)) {
			smart__err(log, "%s: %s item in \"%s\"", s->what,
				   len ? "overlong" : "empty", whole);
			return SMART_EINVAL;
		}
		memcpy(item, spec, len);
		item[len] = '\0';
		rc = shm_spec_item(s, item, params, &seen, log);
		if (rc)
			return rc;
		spec += len;
		if (!*spec)
			break;
		spec++; /* the comma; an item must follow it */
	}
	return 0;
}
