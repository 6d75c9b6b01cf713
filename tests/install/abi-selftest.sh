#!/usr/bin/env bash
# The ABI check (tests/install/abi.sh) on a made-up library, so that what
# it must refuse is seen refused: a one-header "smart" 1.0 is built with
# -g and a SMART_1.0 node, its baseline written by abi.sh update, then
# each later build is checked against it:
#   unchanged                                  pass
#   a parameter size_t -> uint32_t             fail (abidiff says 4 only)
#   a field inserted in a public struct        fail
#   an enumerator's value changed              fail
#   the same, in an enum no function names     fail (abidiff misses it)
#   an enumerator added to that enum           pass
#   a function removed                         fail (abidiff says 8)
#   a field inserted in an opaque handle's
#     private definition                       pass (not ABI)
#   a function added in a new node SMART_1.1   pass
#   a function added to the released SMART_1.0 fail
#   the parameter change with soname 2         pass (a new major)
# Usage: abi-selftest.sh SOURCE_DIR CC
set -u
src=${1:?usage: abi-selftest.sh SOURCE_DIR CC}
cc=${2:?usage: abi-selftest.sh SOURCE_DIR CC}
command -v abidiff >/dev/null && command -v abidw >/dev/null || {
	echo "skip: abidiff/abidw missing (Debian abigail-tools; scripts/install-deps.sh)"
	exit 77
}
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
fail=0
fake=$tmp/src
mkdir -p "$fake/include/smart" "$fake/abi"

# build NAME [VAR=VALUE...]: the made-up library with the defaults below
# changed by the assignments (one variant each).
build() {
	local d=$tmp/$1 MAJOR=1 LEN=size_t FIELD=0 DROP=1 NEW=none PRIV=0 B=2 \
		E=-2 EADD=0
	shift
	[ $# -eq 0 ] || local "$@"
	mkdir -p "$d"
	{
		echo '#include <stddef.h>'
		echo '#include <stdint.h>'
		echo 'struct smart_thing {'
		echo '	uint64_t a;'
		[ "$FIELD" = 1 ] && echo '	uint32_t inserted;'
		echo '	uint64_t b;'
		echo '};'
		echo 'struct smart_obj;	/* opaque: defined in priv.h */'
		echo "enum smart_kind { SMART_KIND_A = 1, SMART_KIND_B = $B };"
		echo "enum smart_err { SMART_ERR_A = -1, SMART_ERR_B = $E,"
		[ "$EADD" = 1 ] && echo '	SMART_ERR_C = -3,'
		echo '};'
		echo "int smart_thing_set(struct smart_thing *t, $LEN len);"
		echo 'int smart_thing_get(const struct smart_thing *t, uint64_t *out);'
		echo 'int smart_obj_get(struct smart_obj *o, enum smart_kind k);'
		[ "$DROP" = 1 ] && echo 'int smart_thing_drop(struct smart_thing *t);'
		[ "$NEW" != none ] && echo 'int smart_thing_new(struct smart_thing *t);'
	} >"$fake/include/smart/thing.h"
	{
		echo 'struct smart_obj {'
		[ "$PRIV" = 1 ] && echo '	char inserted[24];'
		echo '	int x;'
		echo '};'
	} >"$d/priv.h"
	{
		echo '#include "smart/thing.h"'
		echo '#include "priv.h"'
		echo "int smart_thing_set(struct smart_thing *t, $LEN len)"
		echo '{ t->a = len; return 0; }'
		echo 'int smart_thing_get(const struct smart_thing *t, uint64_t *out)'
		echo '{ *out = t->a + t->b; return 0; }'
		echo 'int smart_obj_get(struct smart_obj *o, enum smart_kind k)'
		echo '{ return o->x + (int)k; }'
		[ "$DROP" = 1 ] && echo 'int smart_thing_drop(struct smart_thing *t) { t->b = 0; return 0; }'
		[ "$NEW" != none ] && echo 'int smart_thing_new(struct smart_thing *t) { t->b = 1; return 0; }'
	} >"$d/thing.c"
	{
		echo 'SMART_1.0 { global: smart_thing_set; smart_thing_get; smart_obj_get;'
		[ "$DROP" = 1 ] && echo ' smart_thing_drop;'
		[ "$NEW" = SMART_1.0 ] && echo ' smart_thing_new;'
		echo ' local: *; };'
		[ "$NEW" = SMART_1.1 ] &&
			echo 'SMART_1.1 { global: smart_thing_new; } SMART_1.0;'
	} >"$d/map"
	"$cc" -std=c11 -g -O2 -fPIC -shared -I"$fake/include" -o "$d/lib.so" \
		-Wl,-soname,libsmart.so."$MAJOR" -Wl,--version-script="$d/map" \
		"$d/thing.c" >"$d/out" 2>&1 || {
		echo "FAIL the made-up library $1 did not build:"
		cat "$d/out"
		exit 1
	}
}
# expect pass|fail WHAT NAME
expect() {
	bash "$src/tests/install/abi.sh" check "$fake" "$tmp/$3/lib.so" "" \
		"$cc" >"$tmp/$3/check" 2>&1
	local rc=$?
	if { [ "$1" = pass ] && [ $rc -eq 0 ]; } ||
		{ [ "$1" = fail ] && [ $rc -eq 1 ]; }; then
		echo "ok   $2: abi.sh ${1}ed"
	else
		echo "FAIL $2: abi.sh should have ${1}ed (status $rc):"
		sed 's/^/     /' "$tmp/$3/check"
		fail=1
	fi
}

build v1
bash "$src/tests/install/abi.sh" update "$fake" "$tmp/v1/lib.so" "" "$cc" \
	>/dev/null ||
	{ echo "FAIL abi.sh update on the made-up library"; exit 1; }
expect pass "unchanged" v1
build param LEN=uint32_t
expect fail "a parameter size_t -> uint32_t" param
build field FIELD=1
expect fail "a field inserted in a public struct" field
build enum B=3
expect fail "an enumerator's value changed" enum
build err E=-3
expect fail "an enumerator's value changed in an enum no function names" err
build erradd EADD=1
expect pass "an enumerator added to an enum no function names" erradd
build removed DROP=0
expect fail "a function removed" removed
build private PRIV=1
expect pass "a field inserted in an opaque handle's private definition" private
build added NEW=SMART_1.1
expect pass "a function added in a new node SMART_1.1" added
build sealed NEW=SMART_1.0
expect fail "a function added to the released SMART_1.0" sealed
build major MAJOR=2 LEN=uint32_t
expect pass "the parameter change with soname 2" major
[ $fail -eq 0 ] && echo "abi self-test: all passed" || echo "abi self-test: FAILED"
exit $fail
