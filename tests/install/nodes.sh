#!/usr/bin/env bash
# The version-node list (abi/nodes.txt, docs/design.md §12) as the map
# generator cmake/public-symbols.cmake reads it, on lists made up here
# rather than the committed one (which names no later node yet): a later
# node holds its functions, chained to the one before, and takes them out
# of SMART_<major>.0; every wrong list stops the generator, saying why.
# Usage: nodes.sh SOURCE_DIR CMAKE
set -u
src=${1:?usage: nodes.sh SOURCE_DIR CMAKE}
cmake=${2:?usage: nodes.sh SOURCE_DIR CMAKE}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

gen() {	# gen VERSION LINES...: the map into $tmp/map, output into $tmp/out
	local v=$1
	shift
	printf '%s\n' "# a comment" "" "$@" >"$tmp/nodes"
	rm -f "$tmp/map"
	"$cmake" -DHEADER_DIR="$src/include/smart" -DNODES="$tmp/nodes" \
		-DVERSION="$v" -DOUT="$tmp/map" \
		-P "$src/cmake/public-symbols.cmake" >"$tmp/out" 2>&1
}
# node_of NAME: the node whose block holds NAME in $tmp/map
node_of() {
	awk -v n="$1;" '/^SMART_/ { node = $1 } $1 == n { print node }' "$tmp/map"
}

if gen 1.2.0 "SMART_1.1 smart_strerror" "SMART_1.2 smart_version" \
	"SMART_1.2 smart_ctx_query"; then
	if [ "$(node_of smart_strerror)" = SMART_1.1 ] &&
		[ "$(node_of smart_version)" = SMART_1.2 ] &&
		[ "$(node_of smart_ctx_query)" = SMART_1.2 ] &&
		[ "$(node_of smart_ctx_create)" = SMART_1.0 ] &&
		grep -q '^} SMART_1.0;$' "$tmp/map" &&
		grep -q '^} SMART_1.1;$' "$tmp/map" &&
		[ "$(grep -c 'local:' "$tmp/map")" = 1 ]; then
		echo "ok   later nodes: SMART_1.1 and SMART_1.2 hold their functions, chained"
	else
		echo "FAIL later nodes misplaced:"
		cat "$tmp/map"
		fail=1
	fi
else
	echo "FAIL a good list refused:"
	cat "$tmp/out"
	fail=1
fi

refused() {	# refused WHY PATTERN VERSION LINES...
	local why=$1 pat=$2
	shift 2
	if gen "$@"; then
		echo "FAIL accepted: $why"
		fail=1
	elif tr -s ' \n' '  ' <"$tmp/out" | grep -q "$pat"; then
		echo "ok   refused: $why"
	else
		echo "FAIL refused, but not saying why ($why):"
		cat "$tmp/out"
		fail=1
	fi
}
refused "a node above the header's minor" "no later node of version 1.0.0" \
	1.0.0 "SMART_1.1 smart_strerror"
refused "a node of another major" "no later node of version 1.1.0" \
	1.1.0 "SMART_2.1 smart_strerror"
refused "SMART_1.0 named (it is every other function)" "no later node" \
	1.1.0 "SMART_1.0 smart_strerror"
refused "a function no header declares" "declared in no" \
	1.1.0 "SMART_1.1 smart_no_such_function"
refused "a function listed twice" "listed twice" \
	1.2.0 "SMART_1.1 smart_strerror" "SMART_1.2 smart_strerror"
refused "a line of another shape" "cannot read" \
	1.1.0 "SMART_1.1: smart_strerror"

# The committed list is the one the build uses: it must pass as well.
v=$(sed -n 's/^#define[ \t]*SMART_VERSION_STRING[ \t]*"\(.*\)"/\1/p' \
	"$src/include/smart/smart.h")
cp "$src/abi/nodes.txt" "$tmp/nodes"
if "$cmake" -DHEADER_DIR="$src/include/smart" -DNODES="$tmp/nodes" \
	-DVERSION="$v" -DOUT="$tmp/map" -P "$src/cmake/public-symbols.cmake" \
	>"$tmp/out" 2>&1; then
	echo "ok   abi/nodes.txt with version $v"
else
	echo "FAIL abi/nodes.txt with version $v:"
	cat "$tmp/out"
	fail=1
fi
[ $fail -eq 0 ] && echo "nodes: all passed" || echo "nodes: FAILED"
exit $fail
