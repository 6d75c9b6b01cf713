/*
 * Inside the kit: what its files share and no tool may call.
 *
 * Invariant: nothing here is part of the kit's contract (kit.h); names
 * carry a double underscore so that a call site shows the boundary.
 */
#ifndef SMART_KIT_INT_H
#define SMART_KIT_INT_H

#include "tool.h"

/* Check v against flag f (its type, range, choices or the library's
 * option table) and store it at base + f->off; kit_bad() when it does
 * not pass.  *lib is a scratch options object, created on first use. */
void kit__set(const char *tool, const struct kit_flag *f, void *base,
	      const char *v, smart_opts_t **lib);

/* What library option key accepts, when a refusal should list it (the
 * techniques: their names, from the library's default value, which
 * switches them all on); "" for the others. */
void kit__lib_hint(const char *key, char *buf, size_t len);

#endif
