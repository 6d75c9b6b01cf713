#!/usr/bin/env bash
# tests/verbs/rxe-repro.sh - the raw-libibverbs rxe reproducer
# (tests/verbs/rxe-repro.c, no Smart code) on the Soft-RoCE VM's wire:
# once on the clean link, then with netem on both NICs.  Runs inside the
# VM:
#
#   tests/vm/vm-run.sh --link -- bash tests/verbs/rxe-repro.sh [ARGS...]
#   SMART_VM_KERNEL_SUITE=bookworm-backports \
#       tests/vm/vm-run.sh --link -- bash tests/verbs/rxe-repro.sh
#
# Usage: rxe-repro.sh [--help] [ARGS...]
#
# ARGS go to rxe-repro (e.g. --test faa --rounds 1000 --retry 7).  The
# program is compiled with cc into a temporary directory under /tmp (the
# guest's root is read-only).  The devices are $SMART_VM_DEV_A (requester)
# and $SMART_VM_DEV_B (responder), the NICs $SMART_VM_NIC_A and
# $SMART_VM_NIC_B (all set by vm-run.sh --link).  Any root qdisc on the
# NICs is removed before the clean run; for the lossy run
# "tc qdisc add dev NIC root netem SPEC" goes on both, SPEC being
# SMART_VM_NETEM (default "loss 1% delay 10ms 5ms"; the jitter reorders).
# After each run: the nonzero deltas of the rxe hw_counters of both
# devices and the packets each NIC sent; after the lossy run the qdisc
# statistics.  Everything goes to stdout (files in the VM are lost).
#
# Exit status: the lossy run's (0 clean, 1 bad data / error completions /
# stuck, 2 setup error); 2 when compiling or adding netem failed.
set -u

usage()
{
	sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'
	exit "$1"
}
case ${1:-} in --help|-h) usage 0 ;; esac

if [ -z "${SMART_VM_DEV_A:-}" ] || [ -z "${SMART_VM_DEV_B:-}" ] ||
	[ -z "${SMART_VM_NIC_A:-}" ] || [ -z "${SMART_VM_NIC_B:-}" ]; then
	echo "rxe-repro.sh: needs the VM's wire (tests/vm/vm-run.sh --link): no SMART_VM_DEV_A/B, SMART_VM_NIC_A/B" >&2
	exit 2
fi
netem=${SMART_VM_NETEM:-loss 1% delay 10ms 5ms}
src=$(cd "$(dirname "$0")" && pwd)/rxe-repro.c
TMP=$(mktemp -d /tmp/rxe-repro.XXXXXX) || exit 2
trap 'rm -rf "$TMP"' EXIT

echo "== kernel $(uname -r); $SMART_VM_DEV_A on $SMART_VM_NIC_A -> $SMART_VM_DEV_B on $SMART_VM_NIC_B"
echo "== compiling $src"
cc -O2 -Wall -Wextra -o "$TMP/rxe-repro" "$src" -libverbs || {
	echo "rxe-repro.sh: compiling failed" >&2
	exit 2
}

# snapshot FILE: the rxe hw_counters of both devices and the NICs' tx packets
snapshot()
{
	local d k f
	{
		for d in "$SMART_VM_DEV_A" "$SMART_VM_DEV_B"; do
			for f in "/sys/class/infiniband/$d/ports/1/hw_counters"/*; do
				[ -r "$f" ] || continue
				k=${f##*/}
				echo "$d.$k $(cat "$f")"
			done
		done
		for k in "$SMART_VM_NIC_A" "$SMART_VM_NIC_B"; do
			echo "$k.tx_packets $(cat "/sys/class/net/$k/statistics/tx_packets")"
		done
	} >"$1"
}

# deltas BEFORE AFTER: the counters that changed
deltas()
{
	echo "-- counters that changed:"
	awk 'NR == FNR { v[$1] = $2; next }
	     ($2 - v[$1]) != 0 { printf "   %-40s %d\n", $1, $2 - v[$1] }' "$1" "$2"
}

# run LABEL ARGS...: one run of the program with the counters around it
run()
{
	local label=$1 rc
	shift
	echo "== $label run: rxe-repro --dev-a $SMART_VM_DEV_A --dev-b $SMART_VM_DEV_B $*"
	snapshot "$TMP/before"
	"$TMP/rxe-repro" --dev-a "$SMART_VM_DEV_A" --dev-b "$SMART_VM_DEV_B" "$@"
	rc=$?
	snapshot "$TMP/after"
	deltas "$TMP/before" "$TMP/after"
	echo "== $label run: exit status $rc"
	return $rc
}

for nic in "$SMART_VM_NIC_A" "$SMART_VM_NIC_B"; do
	tc qdisc del dev "$nic" root 2>/dev/null
done
run clean "$@"
clean_rc=$?

echo "== netem on $SMART_VM_NIC_A and $SMART_VM_NIC_B: $netem"
for nic in "$SMART_VM_NIC_A" "$SMART_VM_NIC_B"; do
	# shellcheck disable=SC2086 # the spec is words
	tc qdisc add dev "$nic" root netem $netem || {
		echo "rxe-repro.sh: tc qdisc add dev $nic root netem $netem failed" >&2
		exit 2
	}
done
run lossy "$@"
lossy_rc=$?
for nic in "$SMART_VM_NIC_A" "$SMART_VM_NIC_B"; do
	echo "-- tc -s qdisc show dev $nic"
	tc -s qdisc show dev "$nic"
done
echo "== summary: clean run exit $clean_rc, lossy run exit $lossy_rc"
exit $lossy_rc
