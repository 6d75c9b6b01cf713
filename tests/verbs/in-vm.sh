#!/usr/bin/env bash
# The verbs part of `make test`, run inside ONE boot of the Soft-RoCE VM
# (tests/vm/vm-run.sh): the transport conformance suite on verbs, the
# integration tests with blades and clients talking over rxe0, a short
# smart-perf, and perftest's ib_read_bw against smart-perf with the same
# number of outstanding reads.  Usage: in-vm.sh BUILD_DIR
# Prints one "PASS name" / "FAIL name" line per step and a closing
# "N passed, N failed" line; exits non-zero when a step failed.
set -u
build=${1:?usage: in-vm.sh BUILD_DIR}
bin=$build/bin
dev=${SMART_DEVICE:-rxe0}
pass=0
fail=0
export SMART_TRANSPORT=verbs SMART_TEST_TRANSPORT=verbs

step() {
	local name=$1; shift
	local t0=$(date +%s)
	echo "=== $name: $*"
	if "$@"; then
		echo "PASS $name ($(( $(date +%s) - t0 )) s)"; pass=$((pass + 1))
	else
		echo "FAIL $name (status $?, $(( $(date +%s) - t0 )) s)"; fail=$((fail + 1))
	fi
}

step devinfo ibv_devinfo -d "$dev"
step conformance env SMART_CONF_SCALE=${SMART_CONF_SCALE:-10} "$bin/test_transport_verbs"
for t in test_core test_smartd_clients test_one_sided; do
	[ -x "$bin/$t" ] && step "$t" timeout 600 "$bin/$t"
done
step smart-perf "$bin/smart-perf" --transport verbs --op read --size 8 \
	--threads 1 --depth 8 --seconds 2

# perftest versus smart-perf: 8-byte READs, 8 outstanding, same device.
compare() {
	local outs=8 secs=3 ip=169.254.77.1 port=18515 perf_json
	ib_read_bw -d "$dev" -s 8 -o $outs -D $secs -p $port -F >/tmp/ibrd_srv.log 2>&1 &
	local srv=$!
	sleep 1
	ib_read_bw -d "$dev" -s 8 -o $outs -D $secs -p $port -F $ip >/tmp/ibrd_cli.log 2>&1
	local rc=$?
	wait $srv
	cat /tmp/ibrd_cli.log
	[ $rc -eq 0 ] || return 1
	# the data row: "#bytes #iterations BW peak BW average MsgRate[Mpps]"
	local ib_mpps=$(awk '$1 == 8 && NF >= 5 { v = $5 } END { print v }' /tmp/ibrd_cli.log)
	perf_json=$("$bin/smart-perf" --transport verbs --op read --size 8 \
		--threads 1 --depth $outs --seconds $secs --opts None --json) || return 1
	echo "$perf_json"
	local smart_mpps=$(echo "$perf_json" | sed -n 's/.*"mops":\([0-9.]*\).*/\1/p')
	[ -n "$ib_mpps" ] && [ -n "$smart_mpps" ] || return 1
	awk -v a="$smart_mpps" -v b="$ib_mpps" 'BEGIN {
		printf "verbs READ 8 B, %d outstanding: smart-perf %.4f Mops, ib_read_bw %.4f Mpps, ratio %.2f\n", 8, a, b, (b > 0 ? a / b : 0) }'
}
step perftest-compare compare

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
