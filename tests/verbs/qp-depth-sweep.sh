#!/usr/bin/env bash
# Send queues of every size the device takes, filled: for qp_depth in 16,
# 32, 64, ... up to the device's maximum, plus 600 and 768 (not powers of
# two: a transport that counts on the power of two above what it asked
# for overruns them) and the maximum itself, a smart-perf client over
# verbs keeps twice qp_depth READs offered (--depth up to 1024 coroutines
# x --batch ops each; at the maximum, as many as one thread can: 65536)
# against an embedded blade, for a short run under `timeout`; every run
# must end with status 0 and ops done.  The step "chain" queues a chain
# longer than the send queue (chain_max 32 on qp_depth 16): it must be
# refused or run, never wait for room that cannot come (a hang is a
# timeout, SWEEP_CHAIN_TIMEOUT s).
#
# Runs where verbs runs: inside the Soft-RoCE VM, or on an RDMA host.
#   tests/vm/vm-run.sh bash tests/verbs/qp-depth-sweep.sh BUILD_DIR   # all
#   qp-depth-sweep.sh BUILD_DIR 16 600 max      # only these steps
# Steps: a depth, "max" (READs and WRITEs at the device's maximum) and
# "chain"; none given = every power of two from 16 below the maximum, 600,
# 768, max and chain.  The maximum is min(max_qp_wr, max_cqe, 65536) from
# ibv_devinfo (a CQ must hold every WR of a queue, which a QP in error
# flushes at once), lowered to what the library takes when it refuses
# that ("takes at most N WRs": at most 16384, a completion naming its
# ring slot in 16 bits).  Environment: SMART_DEVICE (rxe0),
# SWEEP_SECONDS (1), SWEEP_TIMEOUT (120 s per run), SWEEP_CHAIN_TIMEOUT
# (30 s).  Prints one "PASS name" / "FAIL name" line per step and a closing
# "N passed, N failed" line; exits non-zero when a step failed.
#
# Measured in the VM (2 emulated CPUs, rxe0): 4-7 s per depth, the 15
# depth steps ~80 s: too long for a ctest of its own, so tests/verbs/
# in-vm.sh runs "16 600 max" (~25 s) and the full sweep is the manual
# command above.  On rxe, 600 and 768 cannot show an over-counted queue
# (rxe frees a slot when its WR is acknowledged, before the library's own
# count does); on mlx5 they can (tools/verify-mlx5.sh runs them).
set -u
build=${1:?usage: qp-depth-sweep.sh BUILD_DIR [DEPTH|max ...]}
shift
bin=$build/bin
dev=${SMART_DEVICE:-rxe0}
secs=${SWEEP_SECONDS:-1}
tmo=${SWEEP_TIMEOUT:-120}
chain_tmo=${SWEEP_CHAIN_TIMEOUT:-30}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
. "$(dirname "$0")/steps.sh"

# smart-perf over verbs, one thread, an embedded 64 MiB blade; extra
# flags after the fixed ones.  Output in $log.
perf() {
	timeout "$tmo" "$bin/smart-perf" --transport verbs --device "$dev" \
		--threads 1 --seconds "$secs" --blade-size 64M --span 1M \
		--techniques None --qp-mode per-thread --json "$@" >"$log" 2>&1
}

attr() { # a number of `ibv_devinfo -v`
	ibv_devinfo -v -d "$dev" 2>/dev/null |
		awk -v k="$1:" '$1 == k { print $2; exit }'
}

# The device's maximum: what ibv_devinfo says a QP and a CQ hold (every
# WR of a send queue may come back at once as a flush, so a queue never
# holds more than a CQ), the option's 65536, then what the library takes.
device_max() {
	local wr cqe top n
	wr=$(attr max_qp_wr); cqe=$(attr max_cqe)
	[ -n "$wr" ] && [ -n "$cqe" ] || { echo "no $dev (ibv_devinfo)" >&2; return 1; }
	top=65536
	[ "$wr" -lt "$top" ] && top=$wr
	[ "$cqe" -lt "$top" ] && top=$cqe
	perf --op read --size 8 --depth 1 --opt qp_depth="$top"
	n=$(sed -n 's/.*takes at most \([0-9]*\) WRs.*/\1/p' "$log" | head -1)
	if [ -n "$n" ] && [ "$n" -lt "$top" ]; then
		echo "max_qp_wr $wr, max_cqe $cqe: the library takes $n" >&2
		top=$n
	else
		echo "max_qp_wr $wr, max_cqe $cqe: the maximum is $top" >&2
	fi
	echo "$top"
}

# One depth: twice qp_depth ops offered (as many as one thread can), a
# short run, status 0 and ops done.
fill() {
	local d=$1 op=${2:-read} depth batch ops
	depth=$(( d < 1024 ? d : 1024 ))
	batch=$(( (2 * d + depth - 1) / depth ))
	[ $batch -gt 64 ] && batch=64
	perf --op "$op" --size 8 --depth $depth --batch $batch \
		--opt qp_depth="$d"
	local rc=$?
	ops=$(sed -n 's/.*"ops":\([0-9]*\).*/\1/p' "$log")
	echo "qp_depth $d, $op: $depth coroutines x $batch ops offered," \
	     "status $rc, ${ops:-no} ops, $(sed -n 's/.*"mops":\([0-9.]*\).*/\1/p' "$log") Mops"
	[ $rc -eq 0 ] && [ "${ops:-0}" -gt 0 ] && return 0
	[ $rc -eq 124 ] && echo "hang: no end within $tmo s"
	grep -v '^{' "$log" | tail -5
	return 1
}

# A chain longer than the whole send queue can never be posted: it must
# be refused (at setup or as an error) or split, not waited for.
chain_over_queue() {
	local tmo=$chain_tmo rc
	perf --op read --size 8 --depth 1 --batch 32 --opt qp_depth=16 \
		--opt chain_max=32
	rc=$?
	echo "chain_max 32 on qp_depth 16: status $rc"
	grep -v '^{' "$log" | tail -3
	[ $rc -ne 124 ] || { echo "hang: the chain waited for room for $tmo s"; return 1; }
}

max=$(device_max) || { echo "FAIL device-max"; exit 1; }
if [ $# -eq 0 ]; then
	depths=""
	for ((d = 16; d < max; d *= 2)); do depths="$depths $d"; done
	depths="$depths 600 768 max chain"
else
	depths="$*"
fi
for d in $depths; do
	case $d in
	max)	step "qp_depth-max-read" fill "$max" read
		step "qp_depth-max-write" fill "$max" write ;;
	chain)	step chain-over-queue chain_over_queue ;;
	*[!0-9]*|"") echo "qp-depth-sweep: unknown step '$d'" >&2; exit 2 ;;
	*)	if [ "$d" -le "$max" ]; then
			step "qp_depth-$d" fill "$d" read
		else
			echo "SKIP qp_depth-$d (above the maximum, $max)"
		fi ;;
	esac
done

steps_end
