#!/usr/bin/env bash
# The shared library exports the public API and nothing else: every symbol
# libsmart.so defines (nm -D --defined-only) must be a function declared in
# include/smart/*.h, and every such function must be exported; the soname is
# libsmart.so.<major>.  Each is exported under its version node: the one
# abi/nodes.txt names for it, else SMART_<major>.0 (docs/design.md §12),
# and the library defines those nodes and no other.  The list of declared
# functions is the compiler's (gcc -aux-info), not the parse of
# cmake/public-symbols.cmake that made the version script, so a parsing
# slip there is caught here.
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

version=$(sed -n 's/^#define[ \t]*SMART_VERSION_MAJOR[ \t]*\([0-9]*\).*/\1/p' \
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
# nm prints a versioned symbol as name@@NODE, and each node as an absolute
# (A) symbol of its own name.
nm -D --defined-only "$so" | awk '$2 != "A" { print $NF }' | sort -u >"$tmp/versioned"
sed 's/@.*//' "$tmp/versioned" >"$tmp/exported"

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
# Each function under its node: abi/nodes.txt's, else SMART_<major>.0.
declare -A node
while read -r n f; do
	node[$f]=$n
done < <(grep -E '^SMART_[0-9]+\.[0-9]+[ \t]+smart_' "$src/abi/nodes.txt")
while read -r f; do
	echo "$f@@${node[$f]:-SMART_$version.0}"
done <"$tmp/declared" | sort -u >"$tmp/want"
wrong=$(comm -13 "$tmp/want" "$tmp/versioned")
if [ -n "$wrong" ]; then
	echo "FAIL exported under another version node than abi/nodes.txt gives"
	echo "     (want e.g. $(head -1 "$tmp/want")):"
	echo "$wrong" | head -20 | sed 's/^/       /'
	fail=1
else
	echo "ok   every export under its node ($(sed 's/.*@@//' "$tmp/want" |
		sort | uniq -c | awk '{ printf "%s%s: %s", sep, $2, $1; sep = ", " }'))"
fi
nodes=$(nm -D --defined-only "$so" | awk '$2 == "A" { print $NF }' | sort -u)
wantnodes=$(sed 's/.*@@//' "$tmp/want" | sort -u)
if [ "$nodes" != "$wantnodes" ]; then
	echo "FAIL version nodes defined: $(echo $nodes); expected: $(echo $wantnodes)"
	fail=1
fi
# The symbols are functions (text), not data.
nontext=$(nm -D --defined-only "$so" | awk '$2 != "T" && $2 != "A" { print $NF " (" $2 ")" }')
if [ -n "$nontext" ]; then
	echo "FAIL exported symbols that are not functions: $nontext"
	fail=1
fi
[ $fail -eq 0 ] && echo "exports: all passed" || echo "exports: FAILED"
exit $fail
