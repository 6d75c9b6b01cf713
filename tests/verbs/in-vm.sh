#!/usr/bin/env bash
# The verbs part of `make test`, run inside ONE boot of the Soft-RoCE VM
# (tests/vm/vm-run.sh): the transport conformance suite on verbs (and its
# cases that hold without atomics, on domains with atomics off), the
# integration tests with blades and clients talking over rxe0, a short
# smart-perf, and perftest's ib_read_bw against smart-perf with the same
# number of outstanding reads.  Usage: in-vm.sh BUILD_DIR
# Prints one "PASS name" / "FAIL name" line per step and a closing
# "N passed, N failed" line; exits non-zero when a step failed.
set -u
build=${1:?usage: in-vm.sh BUILD_DIR}
bin=$build/bin
dev=${SMART_DEVICE:-rxe0}
export SMART_TRANSPORT=verbs SMART_TEST_TRANSPORT=verbs

STEP_ONLY=${2:-}
. "$(dirname "$0")/steps.sh"

step devinfo ibv_devinfo -d "$dev"
step conformance env SMART_CONF_SCALE=${SMART_CONF_SCALE:-10} "$bin/test_transport_verbs"
step conformance-noatomics "$bin/test_transport_verbs_noatomics"
for t in test_core test_smartd_clients test_one_sided test_flush_storm; do
	[ -x "$bin/$t" ] && step "$t" timeout 600 "$bin/$t"
done
step dead-blade "$(dirname "$0")/dead-blade.sh" "$bin"
# a few send-queue depths filled (the full sweep: qp-depth-sweep.sh BUILD_DIR)
step qp-depth-sweep "$(dirname "$0")/qp-depth-sweep.sh" "$build" 16 600 max
step smart-perf "$bin/smart-perf" --transport verbs --op read --size 8 \
	--threads 1 --depth 8 --seconds 2

# perftest versus smart-perf: 8-byte READs, 8 outstanding, same device,
# three alternating pairs; the medians and their ratio.
ib_once() { # prints ib_read_bw's MsgRate[Mpps]
	local outs=$1 secs=$2 ip=${SMART_VM_IP:-169.254.77.1} port=18515
	ib_read_bw -d "$dev" -s 8 -o $outs -D $secs -p $port -F >/tmp/ibrd_srv.log 2>&1 &
	local srv=$!
	sleep 1
	ib_read_bw -d "$dev" -s 8 -o $outs -D $secs -p $port -F $ip >/tmp/ibrd_cli.log 2>&1
	local rc=$?
	wait $srv
	[ $rc -eq 0 ] || { cat /tmp/ibrd_cli.log /tmp/ibrd_srv.log >&2; return 1; }
	awk '$1 == 8 && NF >= 5 { v = $5 } END { print v }' /tmp/ibrd_cli.log
}
smart_once() { # prints smart-perf's Mops
	"$bin/smart-perf" --transport verbs --op read --size 8 --threads 1 \
		--depth $1 --seconds $2 --techniques None --json |
		sed -n 's/.*"mops":\([0-9.]*\).*/\1/p'
}
compare() {
	local outs=8 secs=3 i a b ib="" sm=""
	for i in 1 2 3; do
		a=$(ib_once $outs $secs) || return 1
		b=$(smart_once $outs $secs) || return 1
		[ -n "$a" ] && [ -n "$b" ] || return 1
		echo "pair $i: ib_read_bw $a Mpps, smart-perf $b Mops"
		ib="$ib $a"; sm="$sm $b"
	done
	awk -v a="$sm" -v b="$ib" 'function med(s,  n, v, i, j, t) {
		n = split(s, v, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		return v[int((n + 1) / 2)] }
	BEGIN { x = med(a); y = med(b)
		printf "verbs READ 8 B, 8 outstanding, median of 3 alternating pairs: smart-perf %.4f Mops, ib_read_bw %.4f Mpps, ratio %.2f\n", x, y, (y > 0 ? x / y : 0) }'
}
step perftest-compare compare

steps_end
