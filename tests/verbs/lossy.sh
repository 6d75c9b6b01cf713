#!/usr/bin/env bash
# tests/verbs/lossy.sh - verbs on a lossy fabric: the transport conformance
# suite, the integration tests and smart-ping --verify with the blade on one
# rxe device and the client on another, their traffic crossing a wire that
# netem shapes (loss, delay, jitter-made reordering).  Runs inside ONE boot
# of the Soft-RoCE VM with its wire:
#
#   tests/vm/vm-run.sh --link -- tests/verbs/lossy.sh BUILD_DIR [STEP]
#
# Usage: lossy.sh [--help] BUILD_DIR [STEP-SUBSTRING]
#
# First a clean-link step with no netem: smart-ping of each op must move
# its packets over the wire (NIC tx, not rxe's internal loopback) and see
# no loss: no out-of-sequence request, NAK, exhausted retry or send error.
# rxe's retransmission timer is armed by a send and not pushed back by
# later ACKs, so an op that happens to be in flight when it fires is sent
# again even on a clean link: a few retries and duplicate requests are
# expected there and only reported.  Then the netem spec SMART_VM_NETEM
# (default "loss 1% delay 10ms 5ms"; the jitter reorders packets) goes on
# both NICs and every other step runs over it.
#
# The client side is the device the library picks by itself (the first
# with an active port; SMART_DEVICE is set to it for the tools and the
# suite's initiators); the blade side is the other device:
# SMART_DEVICE_BLADE (the suite's responders), SMART_TEST_BLADE_DEVICE
# (fixture blades and the smartds the tests spawn), smartd --device.  The
# data checks are the tests' own: the suite's (written data, FAA and CAS
# totals of its atomic cases, FAA old values), test_core's, the exact FAA
# and CAS totals of test_smartd_clients and test_one_sided, smart-ping
# --verify of every probe.
#
# After every step: the deltas of the rxe hw_counters of both devices
# (completer_retry_err = retransmission sequences the requester started,
# rcvd_seq_err = sequence NAKs it got, duplicate_request = retransmitted
# requests that reached the responder again: WRITEs acknowledged again,
# READs executed again, atomics answered from the responder's cache;
# out_of_seq_request = requests that arrived early), the packets each NIC
# sent and each qdisc dropped; a step whose RDMA packets did not cross the
# wire fails.  A closing "lossy summary" line sums the lossy steps.
# Prints "PASS name" / "FAIL name" per step and "N passed, N failed";
# exits non-zero when a step failed.
#
# QP retries are the library's (ib_timeout 14 = 67 ms, ib_retry 6) unless
# SMART_IB_TIMEOUT / SMART_IB_RETRY say otherwise (the suite's and the
# tools' QPs; fixture clients always keep the defaults).  Note that rxe
# (Linux 6.1, rxe_comp.c) takes retry_cnt 7 as "retry for ever".
#
# Knobs: SMART_VM_NETEM (netem spec), SMART_CONF_SCALE (percent of the
# suite's heavy cases, default 1 here: every op costs a 10-30 ms round
# trip), SMART_TEST_SCALE and SMART_TEST_SLOW (the integration tests' work
# in percent, default 1, and their hang guards stretched, default 10
# times), SMART_LOSSY_PINGS (probes per smart-ping op, default 100).
set -u

usage()
{
	sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'
	exit "$1"
}
case ${1:-} in --help|-h) usage 0 ;; "") usage 2 >&2 ;; esac

build=$(cd "$1" && pwd) || exit 2
bin=$build/bin
STEP_ONLY=${2:-}
netem=${SMART_VM_NETEM:-loss 1% delay 10ms 5ms}
pings=${SMART_LOSSY_PINGS:-100}
. "$(dirname "$0")/steps.sh"

[ -n "${SMART_VM_DEV_A:-}" ] && [ -n "${SMART_VM_DEV_B:-}" ] || {
	echo "lossy.sh: needs the VM's wire (tests/vm/vm-run.sh --link): no SMART_VM_DEV_A/B" >&2
	exit 2
}

# The client is what the library picks without a device name; the blade
# gets the other end of the wire.
cdev=$(ibv_devices | awk 'NR > 2 && $1 != "" { print $1; exit }')
case $cdev in
"$SMART_VM_DEV_A") bdev=$SMART_VM_DEV_B; cnic=$SMART_VM_NIC_A; bnic=$SMART_VM_NIC_B ;;
"$SMART_VM_DEV_B") bdev=$SMART_VM_DEV_A; cnic=$SMART_VM_NIC_B; bnic=$SMART_VM_NIC_A ;;
*) echo "lossy.sh: first device '$cdev' is neither $SMART_VM_DEV_A nor $SMART_VM_DEV_B" >&2; exit 1 ;;
esac
export SMART_TRANSPORT=verbs SMART_TEST_TRANSPORT=verbs
export SMART_DEVICE=$cdev SMART_DEVICE_BLADE=$bdev SMART_TEST_BLADE_DEVICE=$bdev
echo "client $cdev on $cnic, blade $bdev on $bnic"

# --- counters -------------------------------------------------------------

# rxe hw_counters shown per step
CNT="sent_pkts rcvd_pkts completer_retry_err rcvd_seq_err duplicate_request
out_of_seq_request retry_exceeded_err send_err rcvd_rnr_err"
# the ones only loss, reordering or an overflow move (checked on the clean
# link); completer_retry_err and duplicate_request also move on rxe's
# spurious timeouts
LOSS_CNT="rcvd_seq_err out_of_seq_request retry_exceeded_err send_err"

# snapshot FILE: "key value" lines for both devices, both NICs, both qdiscs
snapshot()
{
	local d n k
	{
		for d in "$cdev" "$bdev"; do
			for k in $CNT; do
				echo "$d.$k $(cat /sys/class/infiniband/$d/ports/1/hw_counters/$k)"
			done
		done
		for n in "$cnic" "$bnic"; do
			echo "$n.tx $(cat /sys/class/net/$n/statistics/tx_packets)"
			echo "$n.drop $(tc -s qdisc show dev $n root |
				sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' | head -1)"
		done
	} >"$1"
}

# delta BEFORE AFTER: "key delta" lines
delta()
{
	awk 'NR == FNR { a[$1] = $2; next } { print $1, $2 - a[$1] }' "$1" "$2"
}

# val DELTAFILE KEY
val()
{
	awk -v k="$2" '$1 == k { print $2 + 0; f = 1 } END { if (!f) print 0 }' "$1"
}

# report DELTAFILE: prints the counters; fails when RDMA packets were sent
# but the wire did not carry them (rxe's internal loopback).
report()
{
	local f=$1 d k line sent wire
	for d in "$cdev" "$bdev"; do
		line=""
		for k in $CNT; do
			line="$line $k=$(val "$f" "$d.$k")"
		done
		echo "   $d:$line"
	done
	echo "   wire: $cnic tx=$(val "$f" "$cnic.tx") qdisc-drop=$(val "$f" "$cnic.drop"), $bnic tx=$(val "$f" "$bnic.tx") qdisc-drop=$(val "$f" "$bnic.drop")"
	sent=$(( $(val "$f" "$cdev.sent_pkts") + $(val "$f" "$bdev.sent_pkts") ))
	wire=$(( $(val "$f" "$cnic.tx") + $(val "$f" "$bnic.tx") +
		 $(val "$f" "$cnic.drop") + $(val "$f" "$bnic.drop") ))
	if [ "$sent" -gt 0 ] && [ $((wire * 10)) -lt $((sent * 9)) ]; then
		echo "   NOT ON THE WIRE: rxe sent $sent packets, the NICs $wire"
		return 1
	fi
	return 0
}

# clean_link DELTAFILE: no trace of loss on a link without netem
clean_link()
{
	local f=$1 d k bad=0
	for d in "$cdev" "$bdev"; do
		for k in $LOSS_CNT; do
			[ "$(val "$f" "$d.$k")" = 0 ] ||
				{ echo "   clean link: $d $k moved"; bad=1; }
		done
	done
	[ "$(val "$f" "$cdev.sent_pkts")" -gt 0 ] ||
		{ echo "   clean link: no RDMA traffic"; bad=1; }
	return $bad
}

tmp=$(mktemp -d)
secret=$tmp/secret
printf 'lossy-secret-%s' "$RANDOM$RANDOM" >"$secret"
chmod 600 "$secret"
sd=""
trap '[ -n "$sd" ] && kill -9 $sd 2>/dev/null; rm -rf "$tmp"' EXIT

# --- steps ------------------------------------------------------------------

# around every step (tests/verbs/steps.sh): the counters' deltas, which
# must show the traffic crossed the wire; on the clean link, no loss
step_before()
{
	snapshot "$tmp/before"
}

step_after()
{
	snapshot "$tmp/after"
	delta "$tmp/before" "$tmp/after" >"$tmp/delta"
	report "$tmp/delta" || return 1
	[ "$2" != 0 ] || [ "$1" != clean-link ] || clean_link "$tmp/delta"
}

# smartd on the blade device; sets sd and addr
smartd_up()
{
	"$bin/smartd" --transport verbs --device "$bdev" --size 16M \
		--listen 127.0.0.1:0 --secret-file "$secret" >"$tmp/smartd.log" 2>&1 &
	sd=$!
	for _ in $(seq 100); do
		grep -q serving "$tmp/smartd.log" && break
		kill -0 $sd 2>/dev/null || break
		sleep 0.1
	done
	addr=$(sed -n 's/.* on \([0-9.]*:[0-9]*\) .*/\1/p' "$tmp/smartd.log")
	[ -n "$addr" ] || { cat "$tmp/smartd.log"; return 1; }
}

smartd_down()
{
	kill -TERM $sd 2>/dev/null
	timeout 10 tail --pid=$sd -f /dev/null
	kill -9 $sd 2>/dev/null
	wait $sd 2>/dev/null
	sd=""
}

# smart-ping --verify of every op, N probes each, against a smartd on the
# blade device
pings()
{
	local n=$1 op rc=0
	smartd_up || return 1
	for op in read write cas faa; do
		timeout 300 "$bin/smart-ping" --transport verbs --secret-file "$secret" \
			--count "$n" --interval 0 --verify --quiet --op $op "$addr" ||
			{ echo "   smart-ping --op $op failed"; rc=1; }
	done
	smartd_down
	return $rc
}

netem_on()
{
	local n
	for n in "$cnic" "$bnic"; do
		tc qdisc replace dev "$n" root netem $netem || return 1
	done
	tc qdisc show dev "$cnic" root
	tc qdisc show dev "$bnic" root
}

# the clean link first (the harness may have put SMART_VM_NETEM on already)
for n in "$cnic" "$bnic"; do
	tc qdisc del dev "$n" root 2>/dev/null
done
step clean-link pings 50

echo "netem on $cnic and $bnic: $netem"
netem_on || { echo "FAIL netem: cannot put netem on the NICs"; exit 1; }
snapshot "$tmp/first"
# SMART_CONF_LOSSY: a remote error may end in RETRY_EXC (its NAK lost)
step conformance env SMART_CONF_SCALE="${SMART_CONF_SCALE:-1}" SMART_CONF_LOSSY=1 \
	timeout 900 "$bin/test_transport_verbs"
# the integration tests' work scaled down and their hang guards
# stretched, as the suite's heavy cases are: an op is a 10-30 ms round trip
for t in test_core test_smartd_clients test_one_sided; do
	[ -x "$bin/$t" ] && step "$t" env SMART_TEST_SCALE="${SMART_TEST_SCALE:-1}" \
		SMART_TEST_SLOW="${SMART_TEST_SLOW:-10}" timeout 600 "$bin/$t"
done
step smart-ping pings "$pings"

snapshot "$tmp/last"
delta "$tmp/first" "$tmp/last" >"$tmp/total"
echo "=== totals of the steps on the lossy link"
report "$tmp/total"
tot() { echo $(( $(val "$tmp/total" "$cdev.$1") + $(val "$tmp/total" "$bdev.$1") )); }
echo "lossy summary: netem '$netem': retransmission sequences $(tot completer_retry_err)," \
	"sequence NAKs $(tot rcvd_seq_err), duplicate requests (re-acked, re-executed or" \
	"replayed) $(tot duplicate_request), out-of-sequence requests $(tot out_of_seq_request)," \
	"retries exhausted $(tot retry_exceeded_err), send errors $(tot send_err)," \
	"qdisc drops $(( $(val "$tmp/total" "$cnic.drop") + $(val "$tmp/total" "$bnic.drop") ))," \
	"wire packets $(( $(val "$tmp/total" "$cnic.tx") + $(val "$tmp/total" "$bnic.tx") ))"
steps_end
