#!/usr/bin/env bash
# The ABI check (docs/design.md §12): the built libsmart.so against the
# committed baseline abi/libsmart.abi, with libabigail.
#
#   check   fails when abidiff finds an incompatible change (a function
#           removed, a parameter's or return's type changed, a public
#           struct's layout or an enumerator's value changed), or when a
#           function joined a version node the baseline already has (a
#           released node never changes: abi/nodes.txt puts it in a new
#           one), unless the soname moved (a new major may break anything;
#           then the baseline is stale and the check says so).  Compatible
#           changes (a function added in a new node) pass, and are printed.
#   update  writes the baseline from the built library: the one command
#           after an intended change is `make abi-baseline`.
#
# The baseline holds the types of include/smart only (abidw --headers-dir
# --drop-private-types): an opaque handle (struct smart_ctx) is in it as a
# declaration, so a change inside the library's private definition is no
# ABI change.  It keeps file names without their directories
# (--short-locs, the two --no-*-path), so it is the same from any checkout
# and any rebuild.  The check runs abidiff without --headers-dir2: with it,
# libabigail 2.2 files a parameter's size_t become uint32_t (both typedefs
# of system headers) as a private type's change and filters it out, and
# with a baseline without locations (--no-show-locs) it filtered a field
# inserted in a public struct the same way (tests/install/abi-selftest.sh
# checks both are refused).  They need DWARF (-g: RelWithDebInfo or Debug) and the shipped
# library: a sanitizer, fuzzer or mutant build (KIND not empty) is skipped.
#
# abidiff sees an enum only where an exported function's signature names
# it; the values of the others (every SMART_E* status, the SMART_CTX_ATTR_*
# and SMART_CTX_CAP_* bits, SMART_BT_LOCKS_*) are compiled into callers as
# much, and a changed one went through.  So every public enumerator is
# kept too, "NAME VALUE" a line in abi/enums.txt, as the compiler CC gives
# them (the headers compiled with -fno-eliminate-unused-debug-types, the
# values read from the DWARF): one changed or removed fails, one added
# passes and is printed.
# Usage: abi.sh check|update SOURCE_DIR LIBSMART_SO [KIND [CC]]
set -u
usage="usage: abi.sh check|update SOURCE_DIR LIBSMART_SO [KIND [CC]]"
mode=${1:?$usage}
src=${2:?$usage}
so=${3:?$usage}
kind=${4:-}
cc=${5:-cc}
base=$src/abi/libsmart.abi
enums=$src/abi/enums.txt
hdrs=$src/include/smart
skip() {
	echo "skip: $*"
	[ "$mode" = check ] && exit 77
	exit 1
}

command -v abidiff >/dev/null && command -v abidw >/dev/null ||
	skip "abidiff/abidw missing (Debian abigail-tools; scripts/install-deps.sh)"
[ -z "$kind" ] || skip "a $kind build is not the library that ships"
readelf -S "$so" | grep -q '\.debug_info' ||
	skip "$so has no DWARF (build RelWithDebInfo or Debug)"

dump() {
	abidw --headers-dir "$hdrs" --drop-private-types --short-locs \
		--no-corpus-path --no-comp-dir-path --out-file "$1" "$so"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The public enumerators, "NAME VALUE", sorted (DWARF 4: no value is left
# in the abbreviation table, where readelf -wi would not print it).
enum_dump() {
	local p=$tmp/probe
	for h in "$hdrs"/*.h; do
		printf '#include "%s"\n' "$h"
	done >"$p.c"
	echo 'int smart__abi_probe(void) { return 0; }' >>"$p.c"
	"$cc" -std=gnu11 -gdwarf-4 -fno-eliminate-unused-debug-types -fPIC \
		-shared -I"$src/include" -o "$p.so" "$p.c" >"$p.err" 2>&1 || {
		echo "FAIL the public headers did not compile ($cc):"
		cat "$p.err"
		return 1
	}
	readelf -wi "$p.so" | awk '/DW_TAG_enumerator/ { e = 1; next }
		e && /DW_AT_name/ { n = $NF; next }
		e && /DW_AT_const_value/ { print n, $NF; e = 0 }' |
		grep '^SMART_' | LC_ALL=C sort -u
}

if [ "$mode" = update ]; then
	dump "$base" || exit 1
	enum_dump >"$tmp/enums" && mv "$tmp/enums" "$enums" || exit 1
	echo "wrote $base: $(grep -c '<elf-symbol ' "$base") symbols," \
		"soname $(sed -n "s/.* soname='\([^']*\)'.*/\1/p" "$base" | head -1)"
	echo "wrote $enums: $(wc -l <"$enums") enumerators"
	exit 0
fi
[ "$mode" = check ] || { echo "$usage"; exit 2; }
[ -f "$base" ] || { echo "FAIL no baseline $base (make abi-baseline)"; exit 1; }
[ -f "$enums" ] || { echo "FAIL no baseline $enums (make abi-baseline)"; exit 1; }
fail=0

was=$(sed -n "s/.* soname='\([^']*\)'.*/\1/p" "$base" | head -1)
now=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$was" != "$now" ]; then
	echo "ok   soname moved from $was to $now: a new major may break the ABI;"
	echo "     the baseline is of the old one: make abi-baseline"
	exit 0
fi
echo "ok   soname $now, as in the baseline"

# Released nodes are sealed: each node of the baseline holds, in the
# library, exactly the functions it held there.
sed -n "s/.*<elf-symbol name='\([^']*\)' version='\([^']*\)'.*is-defined='yes'.*/\1@@\2/p" \
	"$base" | sort -u >"$tmp/was"
nm -D --defined-only "$so" | awk '$2 == "T" { print $NF }' | sort -u >"$tmp/now"
sed 's/.*@@//' "$tmp/was" | sort -u >"$tmp/nodes"
awk 'FILENAME == ARGV[1] { was[$0] = 1; n = $0; sub(/.*@@/, "", n);
	node[n] = 1; next }
	{ n = $0; sub(/.*@@/, "", n); if ((n in node) && !($0 in was)) print }' \
	"$tmp/was" "$tmp/now" >"$tmp/joined"
while read -r s; do
	echo "FAIL ${s%@@*} joined the released node ${s#*@@}: a function added"
	echo "     after it goes into a new node (abi/nodes.txt, docs/design.md §12)"
	fail=1
done <"$tmp/joined"
[ -s "$tmp/joined" ] &&
	echo "     (before a node is released, an intended addition: make abi-baseline)"
[ $fail -eq 0 ] && echo "ok   released nodes unchanged: $(tr '\n' ' ' <"$tmp/nodes")"

# Enumerators: each of the baseline's with its value, or the ABI broke.
if enum_dump >"$tmp/enums"; then
	LC_ALL=C comm -23 "$enums" "$tmp/enums" >"$tmp/enum_gone"
	awk 'FILENAME == ARGV[1] { was[$1] = 1; next } !($1 in was)' \
		"$enums" "$tmp/enums" >"$tmp/enum_new"
	while read -r n v; do
		now=$(awk -v n="$n" '$1 == n { print $2 }' "$tmp/enums")
		echo "FAIL enumerator $n = $v in the baseline, now ${now:-gone}"
		fail=1
	done <"$tmp/enum_gone"
	if [ -s "$tmp/enum_gone" ]; then
		echo "     (callers compiled the value in: undo it, or move the major)"
	else
		echo "ok   public enumerators: the baseline's $(wc -l <"$enums")" \
			"unchanged"
	fi
	[ -s "$tmp/enum_new" ] &&
		echo "ok   enumerators added: $(cut -d' ' -f1 "$tmp/enum_new" | tr '\n' ' ')"
else
	fail=1
fi

abidiff "$base" "$so" >"$tmp/diff" 2>&1
rc=$?
# abidiff's status is a bit field: 1 error, 2 usage, 4 a change, 8 an
# incompatible change.  libabigail 2.2 sets 8 only for a removed symbol: a
# parameter of size_t become uint32_t is "4, 1 Changed".  So any function
# or variable removed or changed fails (its harmless changes, such as an
# enumerator added, are filtered out of the counts and not counted), and
# only additions pass.
broken=$(sed -n 's/.*changes summary: \([0-9]*\) Removed[^,]*, \([0-9]*\) Changed.*/\1 \2/p' \
	"$tmp/diff" | awk '{ n += $1 + $2 } END { print n + 0 }')
if [ $((rc & 3)) -ne 0 ]; then
	echo "FAIL abidiff could not compare (status $rc):"
	cat "$tmp/diff"
	fail=1
elif [ $((rc & 8)) -ne 0 ] || [ "$broken" -gt 0 ]; then
	echo "FAIL incompatible ABI change against $base, soname still $now"
	echo "     (abidiff status $rc, $broken removed or changed):"
	sed 's/^/     /' "$tmp/diff"
	echo "     Undo it, or move the major (SMART_VERSION_MAJOR, a new soname);"
	echo "     before a release, an intended change: make abi-baseline"
	fail=1
elif [ $((rc & 4)) -ne 0 ]; then
	echo "ok   compatible ABI changes (the baseline is updated at release):"
	sed 's/^/     /' "$tmp/diff"
else
	echo "ok   abidiff: the ABI is the baseline's"
fi
[ $fail -eq 0 ] && echo "abi: all passed" || echo "abi: FAILED"
exit $fail
