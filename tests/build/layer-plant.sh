#!/bin/bash
# The layer check made to fail, so that it can never pass by checking
# nothing: probe objects that reference upward are planted into copies of
# lower layers' archives, and tests/build/layer-check.sh must refuse each
# with the line that names the reference.
#  1. util calls smart_ht_delete (ds, public: the call through
#     include/smart a util file could make)
#  2. util calls smart__worker_poll (runtime, internal, by a prototype
#     declared by hand)
#  3. runtime calls smart__ebr_prepend (services: the core cycle back)
#  4. msg calls smart__keeper_kick (services, internal: below msg, but not
#     one of msg's layers)
#  5. msg calls smart__worker_qp_slow (runtime, internal, one of msg's
#     layers but not declared by runtime/service.h, all msg may use of it)
#  6. ds calls sb_attempt (bench/workloads, which tests may link and the
#     library never)
#
# usage: layer-plant.sh CC AR NM SRCDIR LAYER=ARCHIVE=DEPS...
set -euo pipefail
cc=$1 ar=$2 nm=$3 src=$4
shift 4
specs=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check="$src/tests/build/layer-check.sh"

if ! bash "$check" "$nm" "${specs[@]}" >"$tmp/clean.out"; then
	cat "$tmp/clean.out"
	echo "FAIL: the check refuses the unplanted layers"
	exit 1
fi

# plant N LAYER SYMBOL EXPECT: a probe calling SYMBOL in a copy of LAYER's
# archive; the check must fail and print EXPECT.
plant() {
	local n=$1 layer=$2 sym=$3 expect=$4 spec args=() found=0
	printf 'void %s(void);\nvoid probe_%s(void);\nvoid probe_%s(void) { %s(); }\n' \
		"$sym" "$n" "$n" "$sym" >"$tmp/probe$n.c"
	"$cc" -c -o "$tmp/probe$n.o" "$tmp/probe$n.c"
	for spec in "${specs[@]}"; do
		IFS== read -r name archive deps <<<"$spec"
		if [ "$name" = "$layer" ]; then
			cp "$archive" "$tmp/planted$n.a"
			"$ar" r "$tmp/planted$n.a" "$tmp/probe$n.o" 2>/dev/null
			spec="$name=$tmp/planted$n.a=$deps"
			found=1
		fi
		args+=("$spec")
	done
	[ $found = 1 ] || { echo "FAIL: no layer $layer"; exit 1; }
	if bash "$check" "$nm" "${args[@]}" >"$tmp/out$n"; then
		cat "$tmp/out$n"
		echo "FAIL: plant $n ($layer calls $sym) passed the check"
		exit 1
	fi
	sed 's/^/  /' "$tmp/out$n"
	if ! grep -qF "$expect" "$tmp/out$n"; then
		echo "FAIL: plant $n: the check failed without saying \"$expect\""
		exit 1
	fi
	echo "plant $n ($layer calls $sym): refused"
}

plant 1 util smart_ht_delete "util uses smart_ht_delete of ds, a layer above it"
plant 2 util smart__worker_poll "util uses smart__worker_poll of runtime, a layer above it"
plant 3 runtime smart__ebr_prepend "runtime uses smart__ebr_prepend of services, a layer above it"
plant 4 msg smart__keeper_kick "msg uses internal smart__keeper_kick of services, not one of its layers"
plant 5 msg smart__worker_qp_slow "msg uses internal smart__worker_qp_slow of runtime, not declared by the header it may use"
plant 6 ds sb_attempt "ds uses sb_attempt of workloads, a layer above it"
echo "ok: 6 plants refused; unplanted: $(cat "$tmp/clean.out")"
