#!/usr/bin/env bash
# tests/vm/vm-run.sh - run one command inside a qemu guest with Soft-RoCE.
#
# Usage: vm-run.sh [--link] [--] CMD [ARGS...]
#
# Boots a TCG qemu guest (Debian kernel, rdma_rxe) whose root is the host's
# root (read-only 9p under a tmpfs overlay), gives it a dummy eth0 with
# 169.254.77.1/16 (inside the guest only; the guest has no NIC) and rxe0 on
# it, reserves huge pages, sets `ulimit -l unlimited`, and runs CMD as root
# in the caller's cwd.  CMD's stdout/stderr stream to ours; we exit with its
# status.  Environment: SMART_* and a few standard variables pass through,
# HOME=/root; SMART_VM_IP=169.254.77.1 is set.
#
# --link: instead of the dummy, two virtio-nets joined by a qemu hub (a
# wire): eth0 169.254.79.1 with rxe0 and eth1 169.254.79.2 with rxe1, with
# policy routing so that traffic between rxe0 and rxe1 crosses the wire
# (rxe's internal loopback is not taken; see lib.sh, vm_job_script).
# SMART_VM_NETEM (e.g. "loss 1% delay 10ms 5ms"), when set, is put on both
# NICs as a netem qdisc before CMD runs.  CMD gets SMART_VM_DEV_A=rxe0,
# SMART_VM_DEV_B=rxe1, SMART_VM_IP_A, SMART_VM_IP_B, SMART_VM_NIC_A=eth0,
# SMART_VM_NIC_B=eth1 and SMART_VM_IP=SMART_VM_IP_A.
#
# Knobs: SMART_VM_CACHE (default /var/cache/smart-vm), SMART_VM_TIMEOUT
# (seconds, default 1200), SMART_VM_MEM (default 1536M), SMART_VM_HUGEPAGES
# (2 MiB pages, default 16), SMART_VM_KEEP=1 keeps the job directory,
# SMART_VM_KERNEL_SUITE (a Debian suite, e.g. bookworm-backports: the guest
# boots that suite's linux-image-amd64 instead of the host sources' one).
#
# Exit status: CMD's; 124 on timeout; 125 when the guest failed before or
# around CMD (setup, boot); 77 with a "SKIP:" line only when qemu cannot run
# on this machine at all.  Whenever it is not 0 (and when interrupted),
# the steps that failed or were running (tests/verbs/steps.sh lines), the
# guest's last output and its console's last lines are shown.
set -u
. "$(dirname "$0")/lib.sh"

usage()
{
	sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'
	exit "$1"
}

link=0
while [ $# -gt 0 ]; do
	case $1 in
	--link) link=1; shift ;;
	--help|-h) usage 0 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
if [ $# -eq 0 ]; then
	echo "usage: $0 [--link] [--] CMD [ARGS...]   (--help for more)" >&2
	exit 2
fi

VM_IP=169.254.77.1
job=""
qpid=""
VM_TAILS=""

cleanup()
{
	[ -n "$qpid" ] && kill -TERM "$qpid" 2>/dev/null
	[ -n "$VM_TAILS" ] && kill $VM_TAILS 2>/dev/null
	[ -n "$job" ] && [ "${SMART_VM_KEEP:-0}" != 1 ] && rm -rf "$job"
}
trap cleanup EXIT
# stopped from outside (an outer timeout): say where the guest stood first
trap 'vm_log "interrupted; stopping the guest"
	[ -n "$job" ] && vm_steps_report "$job" ""; exit 130' INT TERM HUP

vm_prepare
vm_lock_run

job=$(mktemp -d "${TMPDIR:-/tmp}/smart-vm.XXXXXX") || vm_die "mktemp failed"
if [ $link = 1 ]; then
	# two NICs on hub 0 and nothing else on it: a private wire
	# shellcheck disable=SC2054 # qemu's commas are inside its arguments
	net_args=(-netdev hubport,id=la,hubid=0
		-device virtio-net-pci,netdev=la,mac=52:54:00:79:00:01,romfile=
		-netdev hubport,id=lb,hubid=0
		-device virtio-net-pci,netdev=lb,mac=52:54:00:79:00:02,romfile=)
	vm_make_job "$job" link "" 0 0 SMART_VM=1 SMART_VM_IP=169.254.79.1 \
		SMART_VM_DEV_A=rxe0 SMART_VM_DEV_B=rxe1 \
		SMART_VM_IP_A=169.254.79.1 SMART_VM_IP_B=169.254.79.2 \
		SMART_VM_NIC_A=eth0 SMART_VM_NIC_B=eth1 -- "$@"
	vm_log "link: eth0/rxe0 169.254.79.1 <-> eth1/rxe1 169.254.79.2${SMART_VM_NETEM:+, netem $SMART_VM_NETEM}"
else
	net_args=(-nic none)
	vm_make_job "$job" dummy "$VM_IP/16" 0 0 SMART_VM=1 SMART_VM_IP=$VM_IP -- "$@"
fi

t0=$EPOCHREALTIME
vm_start_qemu "$job" "${SMART_VM_MEM:-1536M}" "${net_args[@]}"
qpid=$VM_QEMU_PID
vm_stream "$job" "$qpid"
wait "$qpid"
qrc=$?
t1=$EPOCHREALTIME
qpid=""
# the tails end by themselves once qemu is gone, after a last read
for p in $VM_TAILS; do
	wait "$p" 2>/dev/null
done
VM_TAILS=""
rc=$(vm_report "$job" "$qrc" "$t0" "$t1" "")
[ "${SMART_VM_KEEP:-0}" = 1 ] && vm_log "job directory kept: $job"
vm_log "exit status $rc"
exit "$rc"
