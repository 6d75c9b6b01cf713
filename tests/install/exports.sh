#!/usr/bin/env bash
# The shared library exports the public API and nothing else: every symbol
# libsmart.so defines (nm -D --defined-only) must be a function declared in
# include/smart/*.h, and every such function must be exported; the soname is
# libsmart.so.<major>.  The list of declared functions is the compiler's
# (gcc -aux-info), not cmake/public-symbols.cmake's parse that made the
# version script, so a parsing slip there is caught here.
# Usage: exports.sh SOURCE_DIR LIBSMART_SO [CC]
set -u
src=${1:?usage: exports.sh SOURCE_DIR LIBSMART_SO [CC]}
so=${2:?usage: exports.sh SOURCE_DIR LIBSMART_SO [CC]}
cc=${3:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# -aux-info is gcc's; a clang build asks gcc, which install-deps installs.
gcc=$cc
if ! "$gcc" --version 2>/dev/null | grep -q 'Free Software Foundation'; then
	gcc=$(command -v gcc) || {
		echo "skip: gcc is missing, and only gcc lists a header's prototypes (-aux-info)"
		exit 77
	}
fi

version=$(sed -n 's/^#define[ \t]*SMART_VERSION_STRING[ \t]*"\([0-9]*\)\..*/\1/p' \
	"$src/include/smart/smart.h")
if readelf -d "$so" | grep -q "Library soname: \[libsmart.so.$version\]"; then
	echo "ok   soname libsmart.so.$version"
else
	echo "FAIL soname: expected libsmart.so.$version in:"
	readelf -d "$so" | grep -i soname
	fail=1
fi

for h in "$src"/include/smart/*.h; do
	printf '#include "%s"\n' "$h"
done >"$tmp/all.c"
if ! "$gcc" -std=gnu11 -fsyntax-only -aux-info "$tmp/aux" \
	-I"$src/include" "$tmp/all.c" 2>"$tmp/err"; then
	echo "FAIL the public headers do not compile together:"
	cat "$tmp/err"
	exit 1
fi
# Lines look like: /* .../include/smart/ctx.h:31:NC */ extern int smart_ctx_create (...);
# static inline functions (gaddr.h) are "static" and are not exported.
grep -E '^/\* [^ ]*/include/smart/[^/ ]*\.h:[0-9]+:[A-Z]+ \*/ extern ' "$tmp/aux" |
	sed -E 's/\(.*//; s/.*[ *]([A-Za-z_][A-Za-z0-9_]*) *$/\1/' |
	sort -u >"$tmp/declared"
nm -D --defined-only "$so" | awk '{ print $NF }' | sort -u >"$tmp/exported"

n=$(wc -l <"$tmp/declared")
if [ "$n" -lt 50 ]; then
	echo "FAIL only $n public functions found in the headers: the check is broken"
	exit 1
fi
extra=$(comm -23 "$tmp/exported" "$tmp/declared")
missing=$(comm -13 "$tmp/exported" "$tmp/declared")
if [ -n "$extra" ]; then
	echo "FAIL exported but declared in no public header:"
	echo "$extra" | sed 's/^/       /'
	fail=1
fi
if [ -n "$missing" ]; then
	echo "FAIL declared in include/smart but not exported:"
	echo "$missing" | sed 's/^/       /'
	fail=1
fi
[ -z "$extra$missing" ] && echo "ok   exports = the $n public functions"
# The symbols are functions (text), not data.
nontext=$(nm -D --defined-only "$so" | awk '$2 != "T" { print $NF " (" $2 ")" }')
if [ -n "$nontext" ]; then
	echo "FAIL exported symbols that are not functions: $nontext"
	fail=1
fi
[ $fail -eq 0 ] && echo "exports: all passed" || echo "exports: FAILED"
exit $fail
