#!/usr/bin/env bash
# tests/vm/selftest.sh - checks that the Soft-RoCE VM harness works.
#
# Usage: selftest.sh            (on the host, as root)
#
# One vm-run.sh boot runs this same script with --in-guest: ibv_devinfo,
# huge pages and memlock limits, and loopback pairs on rxe0 (perftest READ/
# WRITE/atomic, ibv_rc_pingpong, rping over rdma_cm) against the guest's
# 169.254.77.1.  The guest part exits with 40 + its failures, which also
# checks that vm-run.sh returns the command's status.  Then a two-guest run
# of ib_read_lat across the wire.  Prints PASS/FAIL per check and a closing
# "N passed, N failed" line; exits 77 when the harness skips (no qemu),
# non-zero when a check failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
pass=0
fail=0

result()
{
	if [ "$1" = 0 ]; then
		echo "PASS $2${3:+ ($3)}"
		pass=$((pass + 1))
	else
		echo "FAIL $2${3:+ ($3)}"
		fail=$((fail + 1))
	fi
}

# --- inside the guest ---------------------------------------------------------

IP=${SMART_VM_IP:-169.254.77.1}

# pair NAME 'SERVER CMD' 'CLIENT CMD': runs the server in the background,
# then the client (plain words, no quoting); prints the client's last
# result line.
pair()
{
	local name=$1 t0=$EPOCHREALTIME srv rc src line
	timeout 60 $2 >/tmp/$name.srv 2>&1 &
	srv=$!
	sleep 1
	timeout 60 $3 >/tmp/$name.cli 2>&1
	rc=$?
	wait $srv
	src=$?
	line=$(grep -E '^ *[0-9]+ +[0-9]+ ' /tmp/$name.cli | tail -1 | tr -s ' \t' ' ')
	[ -n "$line" ] || line=$(tail -1 /tmp/$name.cli)
	[ $rc = 0 ] && [ $src = 0 ] || {
		echo "--- $name server (status $src):"; tail -5 /tmp/$name.srv
		echo "--- $name client (status $rc):"; tail -5 /tmp/$name.cli
		rc=1
	}
	result $rc "$name" "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f s", b - a }'): $line"
}

in_guest()
{
	local d=rxe0 out
	out=$(ibv_devinfo -d $d 2>&1)
	echo "$out" | grep -q PORT_ACTIVE
	result $? devinfo "$(echo "$out" | grep -E 'active_mtu|link_layer' | tr -s ' \t' ' ' | tr '\n' ';')"
	[ "$(ulimit -l)" = unlimited ] && grep -q '^HugePages_Total: *[1-9]' /proc/meminfo
	result $? limits "memlock $(ulimit -l), $(grep HugePages_Total /proc/meminfo | tr -s ' ')"
	local rd="ib_read_bw -d $d -s 8 -n 2000 -F -p 18515"
	pair ib_read_bw "$rd" "$rd $IP"
	local wl="ib_write_lat -d $d -s 8 -n 500 -F -p 18516"
	pair ib_write_lat "$wl" "$wl $IP"
	local rl="ib_read_lat -d $d -s 8 -n 500 -F -p 18517"
	pair ib_read_lat "$rl" "$rl $IP"
	local at="ib_atomic_bw -d $d -A CMP_AND_SWAP -n 1000 -F -p 18518"
	pair ib_atomic_bw "$at" "$at $IP"
	local pp="ibv_rc_pingpong -d $d -g 1 -n 200 -p 18519"
	pair ibv_rc_pingpong "$pp" "$pp $IP"
	pair rping "rping -s -a $IP -C 20 -p 18520" \
		"rping -c -a $IP -C 20 -p 18520"
	echo "guest: $pass passed, $fail failed"
	exit $((40 + fail))
}

[ "${1:-}" = --in-guest ] && in_guest

# --- on the host ----------------------------------------------------------------

t0=$EPOCHREALTIME
log=$(mktemp "${TMPDIR:-/tmp}/smart-vm-selftest.XXXXXX")
"$here/vm-run.sh" bash "$here/selftest.sh" --in-guest | tee "$log"
rc=${PIPESTATUS[0]}
[ $rc = 77 ] && { rm -f "$log"; echo "SKIP: selftest: the VM harness cannot run here"; exit 77; }
pass=$((pass + $(grep -c '^PASS ' "$log")))
fail=$((fail + $(grep -c '^FAIL ' "$log")))
rm -f "$log"
result $((rc != 40)) "vm-run: one boot, exit status passed through" \
	"status $rc, expected 40 = no guest failure; $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f s", b - a }')"

t0=$EPOCHREALTIME
out=$("$here/vm-two-guests.sh" \
	--server 'ib_read_lat -d rxe0 -s 8 -n 300 -F -p 18530' \
	--client 'ib_read_lat -d rxe0 -s 8 -n 300 -F -p 18530 $SMART_PEER_IP' 2>&1)
rc=$?
line=$(echo "$out" | grep -E '^\[client\] +8 +300 ' | tr -s ' \t' ' ')
echo "$out" | grep -E '^vm-run: (wire|server|client)'
[ $rc = 0 ] && [ -n "$line" ]
r=$?
[ $r = 0 ] || { echo "--- two-guest output (status $rc):"; echo "$out" | tail -60; }
result $r "two guests: ib_read_lat across the wire" \
	"$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f s", b - a }'): $line"

echo "$pass passed, $fail failed"
[ $fail = 0 ]
