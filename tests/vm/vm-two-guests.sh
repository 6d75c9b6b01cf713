#!/usr/bin/env bash
# tests/vm/vm-two-guests.sh - a server and a client in two Soft-RoCE guests.
#
# Usage: vm-two-guests.sh --server 'CMD' --client 'CMD' [--server-must-exit]
#
# Boots two TCG guests (see vm-run.sh) whose only NIC is a virtio-net wired
# to the other guest by a qemu socket netdev on 127.0.0.1:<random port>:
# a TCP stream (SMART_VM_WIRE=tcp, the default) or UDP datagrams
# (SMART_VM_WIRE=udp, two ports).  qemu sets no TCP_NODELAY on the stream,
# so a frame written while the previous one is unacknowledged waits for
# the host's delayed ACK (Nagle): an RC SEND ping-pong (the responder's
# ACK, then its own SEND, back to back) takes 20-50 ms a round trip
# there (ib_send_lat 32 B: 22.8 ms typical over tcp, 0.5-0.9 ms over
# udp).  A datagram lost on loopback is rxe's to retransmit.
# Each guest has rxe0 on that NIC: the server guest 169.254.78.1/24, the
# client guest 169.254.78.2/24 (addresses that exist only on this private
# wire).  CMD strings run under `bash -c` in the caller's cwd with
# SMART_VM_ROLE (server|client), SMART_VM_IP (own address) and
# SMART_PEER_IP (the other guest's) set.  The client command starts once
# the server command has been running for SMART_VM_SERVER_DELAY seconds
# (default 2).  Output lines are prefixed "[server] " / "[client] ".
#
# Exit status: the client's; if the client succeeded, the server's when it
# failed.  A server still running SMART_VM_SERVER_GRACE seconds (default
# 30) after the client finished is stopped (SIGTERM to its process group)
# and that counts as success unless --server-must-exit is given.  124 on
# timeout, 125 when a guest failed around its command, 77 (SKIP) only when
# qemu cannot run here.  Guests get SMART_VM_MEM each (default 1024M).
set -u
. "$(dirname "$0")/lib.sh"

usage()
{
	echo "usage: $0 --server 'CMD' --client 'CMD' [--server-must-exit]" >&2
	exit 2
}

server_cmd=""
client_cmd=""
must_exit=0
while [ $# -gt 0 ]; do
	case $1 in
	--server) [ $# -ge 2 ] || usage; server_cmd=$2; shift 2 ;;
	--client) [ $# -ge 2 ] || usage; client_cmd=$2; shift 2 ;;
	--server-must-exit) must_exit=1; shift ;;
	*) usage ;;
	esac
done
[ -n "$server_cmd" ] && [ -n "$client_cmd" ] || usage

IP_S=169.254.78.1
IP_C=169.254.78.2
MEM=${SMART_VM_MEM:-1024M}
WIRE=${SMART_VM_WIRE:-tcp}
jobs_dir=""
pid_s=""
pid_c=""
VM_TAILS=""

cleanup()
{
	[ -n "$pid_s" ] && kill -TERM "$pid_s" 2>/dev/null
	[ -n "$pid_c" ] && kill -TERM "$pid_c" 2>/dev/null
	[ -n "$VM_TAILS" ] && kill $VM_TAILS 2>/dev/null
	[ -n "$jobs_dir" ] && [ "${SMART_VM_KEEP:-0}" != 1 ] && rm -rf "$jobs_dir"
}
trap cleanup EXIT
# stopped from outside (an outer timeout): say where the guests stood first
trap 'vm_log "interrupted; stopping the guests"
	[ -n "${S:-}" ] && { vm_steps_report "$S" "server: "
		vm_steps_report "$C" "client: "; }; exit 130' INT TERM HUP

alive()
{
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null
}

listening()
{
	[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

udp_bound()
{
	[ -n "$(ss -Hlun "sport = :$1" 2>/dev/null)" ]
}

# The server guest's end of the wire on port $1 (udp: $1 its own, $1 + 1
# the client's), whether it is up, whether a port is taken already.
wire_server()
{
	if [ "$WIRE" = udp ]; then
		echo "socket,id=w,udp=127.0.0.1:$(($1 + 1)),localaddr=127.0.0.1:$1"
	else
		echo "socket,id=w,listen=127.0.0.1:$1"
	fi
}

wire_up()
{
	if [ "$WIRE" = udp ]; then udp_bound "$1"; else listening "$1"; fi
}

wire_taken()
{
	if [ "$WIRE" = udp ]; then
		udp_bound "$1" || udp_bound $(($1 + 1))
	else
		listening "$1"
	fi
}

# Starts the server guest listening on a random free 127.0.0.1 port; sets
# pid_s and port.  Retries when another process took the port meanwhile.
start_server()
{
	local try i
	for try in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		wire_taken "$port" && continue
		vm_start_qemu "$S" "$MEM" \
			-netdev "$(wire_server "$port")" \
			-device virtio-net-pci,netdev=w,mac=52:54:00:77:00:01,romfile=
		pid_s=$VM_QEMU_PID
		for i in $(seq 100); do
			wire_up "$port" && return 0
			alive "$pid_s" || break
			sleep 0.1
		done
		alive "$pid_s" && return 0
		wait "$pid_s"
		pid_s=""
		vm_log "server guest failed to start on port $port: $(tail -2 "$S/qemu.log")"
	done
	return 1
}

case $WIRE in
tcp|udp) ;;
*) vm_die "SMART_VM_WIRE=$WIRE: tcp or udp" ;;
esac
vm_prepare
vm_lock_run

jobs_dir=$(mktemp -d "${TMPDIR:-/tmp}/smart-vm2.XXXXXX") || vm_die "mktemp failed"
S=$jobs_dir/server
C=$jobs_dir/client
mkdir "$S" "$C"
vm_make_job "$S" nic "$IP_S/24" 0 1 SMART_VM=1 SMART_VM_ROLE=server \
	SMART_VM_IP=$IP_S SMART_PEER_IP=$IP_C -- bash -c "$server_cmd"
vm_make_job "$C" nic "$IP_C/24" 1 0 SMART_VM=1 SMART_VM_ROLE=client \
	SMART_VM_IP=$IP_C SMART_PEER_IP=$IP_S -- bash -c "$client_cmd"

t0=$EPOCHREALTIME
start_server || vm_die "could not start the server guest"
if [ "$WIRE" = udp ]; then
	vm_log "wire: qemu socket netdev, udp 127.0.0.1:$port <-> 127.0.0.1:$((port + 1))"
	cnet="socket,id=w,udp=127.0.0.1:$port,localaddr=127.0.0.1:$((port + 1))"
else
	vm_log "wire: qemu socket netdev on 127.0.0.1:$port"
	cnet="socket,id=w,connect=127.0.0.1:$port"
fi
vm_start_qemu "$C" "$MEM" \
	-netdev "$cnet" \
	-device virtio-net-pci,netdev=w,mac=52:54:00:77:00:02,romfile=
pid_c=$VM_QEMU_PID
vm_stream "$S" "$pid_s" "[server] "
vm_stream "$C" "$pid_c" "[client] "

# Release the client once the server command is up (or is gone).
while alive "$pid_c" && [ ! -e "$C/go" ]; do
	if [ -e "$S/started" ] || [ -e "$S/rc" ] || ! alive "$pid_s"; then
		[ -e "$S/started" ] && sleep "${SMART_VM_SERVER_DELAY:-2}"
		: >"$C/go"
		break
	fi
	sleep 0.2
done
wait "$pid_c"
qrc_c=$?
t_c=$EPOCHREALTIME
pid_c=""

# Let the server finish on its own, then stop it.
grace=${SMART_VM_SERVER_GRACE:-30}
for i in $(seq $((grace * 5))); do
	alive "$pid_s" || break
	sleep 0.2
done
if alive "$pid_s"; then
	vm_log "server still running ${grace} s after the client; stopping it"
	: >"$S/stop"
	for i in $(seq 100); do
		alive "$pid_s" || break
		sleep 0.2
	done
	alive "$pid_s" && kill -TERM "$pid_s"
fi
wait "$pid_s"
qrc_s=$?
t_s=$EPOCHREALTIME
pid_s=""
for p in $VM_TAILS; do
	wait "$p" 2>/dev/null
done
VM_TAILS=""

rc_s=$(vm_report "$S" "$qrc_s" "$t0" "$t_s" "server: ")
rc_c=$(vm_report "$C" "$qrc_c" "$t0" "$t_c" "client: ")
vm_log "server status $rc_s, client status $rc_c"
[ "${SMART_VM_KEEP:-0}" = 1 ] && vm_log "job directories kept: $jobs_dir"
if [ "$rc_c" != 0 ]; then
	exit "$rc_c"
fi
if [ "$rc_s" != 0 ]; then
	if [ -e "$S/stopped" ] && [ "$must_exit" = 0 ]; then
		vm_log "server was stopped by the harness; not a failure"
		exit 0
	fi
	vm_log "client passed but the server failed"
	exit "$rc_s"
fi
exit 0
