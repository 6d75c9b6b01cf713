#!/usr/bin/env bash
# tests/vm/vm-run.sh - run one command inside a qemu guest with Soft-RoCE.
#
# Usage: vm-run.sh [--] CMD [ARGS...]
#
# Boots a TCG qemu guest (Debian kernel, rdma_rxe) whose root is the host's
# root (read-only 9p under a tmpfs overlay), gives it a dummy eth0 with
# 169.254.77.1/16 (inside the guest only; the guest has no NIC) and rxe0 on
# it, reserves huge pages, sets `ulimit -l unlimited`, and runs CMD as root
# in the caller's cwd.  CMD's stdout/stderr stream to ours; we exit with its
# status.  Environment: SMART_* and a few standard variables pass through,
# HOME=/root; SMART_VM_IP=169.254.77.1 is set.
#
# Knobs: SMART_VM_CACHE (default /var/cache/smart-vm), SMART_VM_TIMEOUT
# (seconds, default 1200), SMART_VM_MEM (default 1536M), SMART_VM_HUGEPAGES
# (2 MiB pages, default 16), SMART_VM_KEEP=1 keeps the job directory.
#
# Exit status: CMD's; 124 on timeout; 125 when the guest failed before or
# around CMD (setup, boot); 77 with a "SKIP:" line only when qemu cannot run
# on this machine at all.
set -u
. "$(dirname "$0")/lib.sh"

[ "${1:-}" = -- ] && shift
if [ $# -eq 0 ]; then
	echo "usage: $0 [--] CMD [ARGS...]" >&2
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
trap 'vm_log "interrupted; stopping the guest"; exit 130' INT TERM HUP

vm_prepare
vm_lock_run

job=$(mktemp -d "${TMPDIR:-/tmp}/smart-vm.XXXXXX") || vm_die "mktemp failed"
vm_make_job "$job" dummy "$VM_IP/16" 0 0 SMART_VM=1 SMART_VM_IP=$VM_IP -- "$@"

t0=$EPOCHREALTIME
vm_start_qemu "$job" "${SMART_VM_MEM:-1536M}" -nic none
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
