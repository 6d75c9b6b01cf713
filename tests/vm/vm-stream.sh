#!/usr/bin/env bash
# tests/vm/vm-stream.sh - the stream engine (include/smart/stream.h,
# docs/stream.md) across two Soft-RoCE guests on verbs, in ONE boot of
# tests/vm/vm-two-guests.sh: YSB with slash, then with uppar, over IMM
# channels and then over FOOTER ones (slash-ft, uppar-ft: --chan footer),
# each executor checking its results against the sequential reference.
#
# Usage: tests/vm/vm-stream.sh [BUILD_DIR]      (default: build)
#
# The server guest (169.254.78.1) is executor 0, the client guest
# (169.254.78.2) executor 1; each runs, per engine,
#   smart-bench stream --transport verbs --workload ysb --engine E
#       --peer 169.254.78.1:P --peer 169.254.78.2:P --executor I
#       --records N --check --json --secret-file F
# (cross-host mode, docs/stream.md §8: each executor generates every
# partition from the same seeds, computes the reference share of the keys
# it leads, waits for the other to listen, runs, and compares the count and
# digest of its results with that share).  The guests step in lockstep
# between engines (a busybox-nc barrier on the server, TCP port 7499), so
# slash and uppar never overlap.
# Checks: both engines ran on both guests, every executor's check is
# "equal" and its result count and digest match the reference's.  At the
# end: input records/s of each engine (both executors' records over the
# slower one's time), the ratio slash/uppar, channel bytes per record.
#
# Environment: SMART_STREAM_VM_ENGINES ("slash uppar slash-ft uppar-ft",
# run in that order), SMART_STREAM_VM_RECORDS (200000, per executor),
# SMART_STREAM_VM_EPOCH (16384), SMART_STREAM_VM_ROUNDS (1: slash, uppar
# alternated that many times), SMART_STREAM_VM_IB_TIMEOUT (18, as
# vm-chan.sh); the harness's SMART_VM_* (SMART_VM_TIMEOUT 1400 here; udp
# wire, tsc=reliable, as vm-chan.sh).
#
# Figures are Soft-RoCE under TCG emulation: a functional signal, never a
# gate.  Not in `make test` (one boot takes 5-15 minutes on a loaded
# 2-core host): run it by hand, or `ctest -C vmstream -R vm_stream`.
#
# Exit status: 0 all steps passed; 1 a step failed or a figure is missing;
# the harness's 124 (timeout), 125 (guest setup) and 77 (SKIP: no qemu).
set -u
here=$(cd "$(dirname "$0")" && pwd)

# ---- inside a guest ----------------------------------------------------

ROUNDS=${SMART_STREAM_VM_ROUNDS:-1}
ENGINES=${SMART_STREAM_VM_ENGINES:-slash uppar slash-ft uppar-ft}
RECORDS=${SMART_STREAM_VM_RECORDS:-200000}
EPOCH=${SMART_STREAM_VM_EPOCH:-16384}
BAR=7499
IP0=169.254.78.1
IP1=169.254.78.2

bar_wait() # server: until the client knocks (at most 600 s)
{
	timeout 600 busybox nc -l -p $BAR </dev/null >/dev/null 2>&1 ||
		{ echo "ERROR: barrier: no knock from the client" >&2; return 1; }
}

bar_knock() # client: knock once the server listens (at most 600 s)
{
	for _ in $(seq 3000); do
		(exec 3<>"/dev/tcp/$SMART_PEER_IP/$BAR") 2>/dev/null && return 0
		sleep 0.2
	done
	echo "ERROR: barrier: the server never listened" >&2
	return 1
}

json_field() # KEY FILE: a field of the benchmark's one-line record
{
	sed -n "s/.*\"$1\":\"\{0,1\}\([-0-9a-z.e+]*\).*/\1/p" "$2" | tail -1
}

in_guest() # $1: executor index, $2: barrier function
{
	local me=$1 bar=$2 r e p rc out=/tmp/vm-stream ok=1 eng chan k
	echo "INFO wire=${SMART_VM_WIRE:-tcp} records=$RECORDS epoch=$EPOCH"
	for r in $(seq "$ROUNDS"); do
		k=0
		for e in $ENGINES; do
			eng=${e%-ft} chan=imm
			[ "$eng" = "$e" ] || chan=footer
			p=$((7600 + r * 10 + k)) k=$((k + 1))
			$bar || return 1
			timeout 900 "$SMART_STREAM_VM_BENCH" stream --transport verbs \
				--opt "ib_timeout=${SMART_STREAM_VM_IB_TIMEOUT:-18}" \
				--secret-file "$SMART_STREAM_VM_SECRET" \
				--workload ysb --engine $eng --chan $chan \
				--records "$RECORDS" \
				--epoch "$EPOCH" --peer $IP0:$p --peer $IP1:$p \
				--executor "$me" --dial-wait 300 --check --json \
				>$out.$e.json 2>$out.$e.err
			rc=$?
			[ $rc = 0 ] || { ok=0; echo "ERROR: $e executor $me exited $rc"; tail -20 $out.$e.err; }
			echo "RESULT round=$r engine=$e executor=$me rc=$rc ns=$(json_field ns $out.$e.json) records=$(json_field records $out.$e.json) bytes_per_rec=$(json_field bytes_per_rec $out.$e.json) epochs=$(json_field epochs $out.$e.json) results=$(json_field results $out.$e.json) digest=$(json_field digest $out.$e.json) ref_results=$(json_field ref_results $out.$e.json) ref_digest=$(json_field ref_digest $out.$e.json) check=$(json_field check $out.$e.json)"
		done
	done
	$bar || return 1
	[ $ok = 1 ]
}

if [ "${1:-}" = --in-guest ]; then
	case ${SMART_VM_ROLE:-} in
	server) in_guest 0 bar_wait ;;
	client) in_guest 1 bar_knock ;;
	*) echo "vm-stream: --in-guest outside a two-guest VM" >&2; exit 2 ;;
	esac
	exit
fi

# ---- on the host ---------------------------------------------------------

build=$(cd "${1:-build}" && pwd) || { echo "usage: $0 [BUILD_DIR]" >&2; exit 2; }
vm=$here/vm-two-guests.sh
"$build/bin/smart-bench" stream --help 2>/dev/null | grep -q -- --peer ||
	{ echo "vm-stream: $build/bin/smart-bench has no stream --peer" >&2; exit 1; }
export SMART_STREAM_VM_BENCH=$build/bin/smart-bench

# the secret: in the build directory, which the guests see read-only
export SMART_STREAM_VM_SECRET=$build/vm-stream.secret
(umask 077 && head -c 32 /dev/urandom | base64 >"$SMART_STREAM_VM_SECRET") || exit 1
log=$(mktemp "${TMPDIR:-/tmp}/vm-stream.XXXXXX")
trap 'rm -f "$SMART_STREAM_VM_SECRET" "$log"' EXIT

export SMART_STREAM_VM_ROUNDS=$ROUNDS SMART_STREAM_VM_RECORDS=$RECORDS
export SMART_STREAM_VM_ENGINES="$ENGINES"
export SMART_STREAM_VM_EPOCH=$EPOCH
export SMART_VM_TIMEOUT=${SMART_VM_TIMEOUT:-1400}
export SMART_VM_WIRE=${SMART_VM_WIRE:-udp}
export SMART_VM_CMDLINE=${SMART_VM_CMDLINE:-tsc=reliable}

t0=$SECONDS
"$vm" --server-must-exit \
	--server "exec bash $here/vm-stream.sh --in-guest" \
	--client "exec bash $here/vm-stream.sh --in-guest" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" = 77 ] && exit 77

awk -v rounds="$ROUNDS" -v engines="$ENGINES" -v secs="$((SECONDS - t0))" -v rc="$rc" '
/^\[(server|client)\] RESULT / {
	n++
	delete kv1
	for (i = 3; i <= NF; i++) { split($i, kv, "="); kv1[kv[1]] = kv[2] }
	e = kv1["engine"]; r = kv1["round"]
	if (kv1["rc"] != 0) bad_rc++
	if (kv1["check"] != "equal" || kv1["results"] != kv1["ref_results"] ||
	    kv1["digest"] != kv1["ref_digest"] || kv1["digest"] == "") unequal++
	if (kv1["ns"] + 0 > ns[e, r]) ns[e, r] = kv1["ns"] + 0
	rec[e, r] += kv1["records"]; bytes[e, r] += kv1["bytes_per_rec"] * kv1["records"]
	res[e] += kv1["results"]
}
END {
	ne = split(engines, eng, " ")
	printf "\nvm-stream: YSB on two TCG guests over Soft-RoCE (figures under emulation)\n"
	printf "%-8s %5s %12s %10s %8s\n", "engine", "round", "records/s", "chB/rec", "results"
	for (r = 1; r <= rounds; r++) for (k = 1; k <= ne; k++) {
		e = eng[k]
		rps[e, r] = ns[e, r] ? rec[e, r] / (ns[e, r] / 1e9) : 0
		printf "%-8s %5d %12.0f %10.3f %8d\n", e, r, rps[e, r],
			rec[e, r] ? bytes[e, r] / rec[e, r] : 0, res[e] / rounds
	}
	for (r = 1; r <= rounds; r++) {
		if (rps["uppar", r]) printf "round %d: slash/uppar %.2f\n", r, rps["slash", r] / rps["uppar", r]
		if (rps["uppar-ft", r]) printf "round %d: slash-ft/uppar-ft %.2f\n", r, rps["slash-ft", r] / rps["uppar-ft", r]
	}
	bad = 0
	if (n != rounds * ne * 2) { printf "FAIL: %d of %d executor runs reported\n", n, rounds * ne * 2; bad = 1 }
	if (bad_rc) { printf "FAIL: %d executor runs failed\n", bad_rc; bad = 1 }
	if (unequal) { printf "FAIL: %d executor runs differ from the reference\n", unequal; bad = 1 }
	else if (n) printf "every executor: results equal to the reference (count and digest)\n"
	if (rc != 0) { printf "FAIL: the two-guest run exited %d\n", rc; bad = 1 }
	printf "%s (%d s)\n", bad ? "vm-stream: FAIL" : "vm-stream: PASS", secs
	exit bad
}' "$log"
st=$?
case $rc in 124|125) exit "$rc" ;; esac
exit "$st"
