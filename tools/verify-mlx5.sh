#!/usr/bin/env bash
# verify-mlx5.sh: verify on two hosts with real RDMA NICs (ConnectX, mlx5)
# what Soft-RoCE in the test VM cannot show.  No ssh: run each half by hand.
#
#   host A:  tools/verify-mlx5.sh --server [--device mlx5_0]
#   host B:  tools/verify-mlx5.sh --client A_IP [--device mlx5_0]
#
# Both halves first check their own host: the device's facts (ibv_devinfo
# -v: atomic_cap, max_qp_wr, max_cqe, device memory, link layer) and the
# library's view of it (its log: device, GID, atomics self-test, send
# queue limit), the transport conformance suite on the device
# (test_transport_verbs, full scale, its device_memory case named), the
# flush storm (test_flush_storm: a blade destroyed under full send queues
# of the deepest qp_depth the device takes), the send-queue sweep
# (tests/verbs/qp-depth-sweep.sh: 16 600 768 max; --full-sweep for all),
# and the doorbells: a small mlx5dv program gives each of 4 workers a
# thread domain as per-thread-db does and prints every QP's BlueFlame
# register (distinct UAR pages or not, BlueFlame size), and smart-perf
# --qp-mode per-thread-db says which mode it got.  Then the server serves
# smartd and perftest's servers; the client runs smart-ping --verify of
# every op against that smartd, and smart-perf against ib_read_bw (8-byte
# READs, 16 outstanding) and ib_read_lat (one at a time) in alternating
# pairs, and, with --tclass, reads the NIC's per-priority counters around
# a smart-perf run with that traffic class (PFC/DSCP).
# Each check prints PASS, FAIL, SKIP (why) or INFO; the last line counts
# them.  Exit status: 0 when nothing failed, 1 when something did, 2 for
# bad usage or no RDMA device.
#
# Needs: a build tree (cmake -S . -B build && make -C build), rdma-core's
# ibverbs-utils (ibv_devinfo), perftest (ib_read_bw, ib_read_lat), a C
# compiler with infiniband/mlx5dv.h (libibverbs-dev) for the doorbell
# probe, ethtool for --tclass.  Both hosts: the same --secret-file (the
# server creates it when missing: copy it to the client), the same
# --rounds and --seconds, and a firewall open for TCP --port and 18515-18516
# from the client.
set -u
me=verify-mlx5
src=$(cd "$(dirname "$0")/.." && pwd)

usage() {
	cat <<EOF
usage: $me --server [options]
       $me --client SERVER_IP [options]
  Verify the verbs transport on real RDMA NICs (mlx5), one half per host.
  --server              serve: checks, then smartd and perftest servers
  --client SERVER_IP    checks, then ops and benchmarks against the server
  --device NAME         RDMA device [the first mlx5_* with an active port,
                        else the first device with one]
  --build DIR           build tree with bin/ [$src/build]
  --port N              smartd's TCP port [7470]
  --secret-file FILE    shared secret, the same file on both hosts
                        [~/.smart-verify-secret; --server creates it]
  --rounds N            alternating smart-perf/perftest pairs [3]
  --seconds S           each benchmark run [3]
  --tclass N            also run with traffic_class N (RoCE v2: DSCP << 2)
                        and show the NIC's per-priority counters
  --full-sweep          every qp_depth from 16 up, not 16 600 768 max
  --skip-local          skip the host's own checks (conformance, flush
                        storm, sweep, doorbells): only the two-host part
  --wait S              server: how long to wait for the client [900]
  --help                this text
EOF
}

role="" peer="" dev="" build="$src/build" port=7470
secret="$HOME/.smart-verify-secret" rounds=3 secs=3 tclass="" full=0
skip_local=0 wait_s=900
while [ $# -gt 0 ]; do
	case $1 in
	--server) role=server ;;
	--client) role=client; peer=${2:-}; shift ;;
	--device) dev=${2:-}; shift ;;
	--build) build=${2:-}; shift ;;
	--port) port=${2:-}; shift ;;
	--secret-file) secret=${2:-}; shift ;;
	--rounds) rounds=${2:-}; shift ;;
	--seconds) secs=${2:-}; shift ;;
	--tclass) tclass=${2:-}; shift ;;
	--full-sweep) full=1 ;;
	--skip-local) skip_local=1 ;;
	--wait) wait_s=${2:-}; shift ;;
	--help|-h) usage; exit 0 ;;
	*) echo "$me: unknown argument '$1' (--help)" >&2; exit 2 ;;
	esac
	shift
done
die() { echo "$me: $*" >&2; exit 2; }
[ -n "$role" ] || { usage >&2; exit 2; }
[ "$role" = server ] || [ -n "$peer" ] || die "--client needs the server's IP"
num() { case $2 in ''|*[!0-9]*) die "$1: want a number, not '$2'" ;; esac; }
num --port "$port"; num --rounds "$rounds"; num --seconds "$secs"; num --wait "$wait_s"
[ -z "$tclass" ] || { num --tclass "$tclass"; [ "$tclass" -le 255 ] || die "--tclass: want 0..255, not '$tclass'"; }
[ "$rounds" -ge 1 ] && [ "$secs" -ge 1 ] || die "--rounds and --seconds: want 1 or more" 

# ---- an RDMA device, or a clear refusal ----
command -v ibv_devinfo >/dev/null ||
	die "ibv_devinfo not found: install rdma-core's ibverbs-utils (Debian: apt-get install ibverbs-utils)"
devs=$(ibv_devinfo -l 2>/dev/null | awk 'NR > 1 && NF { print $1 }')
[ -n "$devs" ] || die "no RDMA device here (ibv_devinfo lists none).  This script checks a real NIC; without one, the verbs tests run over Soft-RoCE in a VM: tests/vm/README.md"
port_active() { ibv_devinfo -d "$1" 2>/dev/null | grep -q "state:.*PORT_ACTIVE"; }
if [ -z "$dev" ]; then
	for d in $devs; do case $d in mlx5*) port_active "$d" && { dev=$d; break; } ;; esac; done
	[ -n "$dev" ] || for d in $devs; do port_active "$d" && { dev=$d; break; }; done
	[ -n "$dev" ] || die "no RDMA device with an active port (devices: $(echo $devs))"
fi
echo "$devs" | grep -qx "$dev" || die "no RDMA device '$dev' (devices: $(echo $devs))"
port_active "$dev" || die "$dev has no active port (ibv_devinfo -d $dev)"
bin=$build/bin
for t in smartd smart-ping smart-perf; do
	[ -x "$bin/$t" ] || die "$bin/$t not found: build first (cmake -S $src -B $build && make -C $build), or give --build"
done
export SMART_TRANSPORT=verbs SMART_DEVICE=$dev

pass=0 fail=0 skip=0
work=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
ok() { echo "PASS $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
skp() { echo "SKIP $*"; skip=$((skip + 1)); }
info() { echo "INFO $*"; }
hdr() { echo; echo "=== $*"; }

# ---- facts of the device ----
devinfo=$work/devinfo
ibv_devinfo -v -d "$dev" >"$devinfo" 2>&1
attr() { awk -v k="$1:" '$1 == k { print $2; exit }' "$devinfo"; }
hdr "device $dev"
driver=$(basename "$(readlink -f /sys/class/infiniband/$dev/device/driver 2>/dev/null)" 2>/dev/null)
netdev=$(ls /sys/class/infiniband/$dev/device/net 2>/dev/null | head -1)
if [ -r /sys/class/infiniband/$dev/parent ]; then	# rxe, siw: a netdev
	netdev=$(cat /sys/class/infiniband/$dev/parent)
	driver="${driver:-software, over $netdev}"
fi
link=$(awk '/link_layer:/ { print $2; exit }' "$devinfo")
is_mlx5=0
case $dev:$driver in mlx5*|*:mlx5_core) is_mlx5=1 ;; esac
info "driver ${driver:-?}, netdev ${netdev:-?}, link layer ${link:-?}, fw $(attr fw_ver), part $(attr vendor_part_id)"
info "atomic_cap $(awk '/atomic_cap:/ { print $2, $3; exit }' "$devinfo"), max_qp_wr $(attr max_qp_wr), max_cqe $(attr max_cqe), max_qp_rd_atom $(attr max_qp_rd_atom), active_mtu $(awk '/active_mtu:/ { print $2; exit }' "$devinfo")"
dm=$(grep -iE "device memory|max_dm" "$devinfo" | head -1 | sed 's/^[[:space:]]*//')
info "device memory: ${dm:-none listed by ibv_devinfo}"
[ $is_mlx5 -eq 1 ] || info "WARNING: $dev is not an mlx5 device: the mlx5-only checks say SKIP"
case $(awk '/atomic_cap:/ { print $2; exit }' "$devinfo") in
ATOMIC_HCA|ATOMIC_GLOB) ;;
*) info "atomic_cap says none: smart_cas/smart_faa fail with SMART_ENOTSUP" ;;
esac
if [ "$link" = InfiniBand ]; then
	info "InfiniBand: connections are LID routed (port_lid $(awk '/port_lid:/ { print $2; exit }' "$devinfo"), sm_lid $(awk '/sm_lid:/ { print $2; exit }' "$devinfo")); the two-host part checks that path"
fi

# ---- the host's own checks ----
local_checks() {
	local scale=${VERIFY_CONF_SCALE:-100}
	hdr "the library's view of $dev (smart-perf, log level info)"
	SMART_LOG_LEVEL=info timeout 120 "$bin/smart-perf" --transport verbs --device "$dev" \
		--threads 1 --depth 8 --seconds 1 --blade-size 64M --span 1M \
		--json >"$work/view" 2>"$work/view.log"
	if [ $? -eq 0 ]; then
		ok "smart-perf on $dev: $(sed -n 's/.*"mops":\([0-9.]*\).*/\1/p' "$work/view") Mops (8-byte READs, embedded blade)"
	else
		bad "smart-perf on $dev: $(tail -2 "$work/view.log" | tr '\n' ' ')"
	fi
	grep -E "verbs|atomics|send queue|thread domain|WRs" "$work/view.log" | sort -u | sed 's/^/    /'
	if grep -q "atomics yes" "$work/view.log"; then
		ok "atomics: the library's byte-order self-test passed ($(grep -m1 -o 'atomics yes ([^)]*)' "$work/view.log"))"
	elif grep -q "atomics" "$work/view.log"; then
		bad "atomics: $(grep -m1 -o 'atomics [^,]*' "$work/view.log")"
	else
		info "the library's log says nothing of atomics (a build without the self-test)"
	fi

	hdr "transport conformance suite on $dev (SMART_CONF_SCALE $scale)"
	if [ -x "$bin/test_transport_verbs" ]; then
		if SMART_CONF_SCALE=$scale timeout 1800 "$bin/test_transport_verbs" >"$work/conf" 2>&1; then
			ok "conformance: $(grep -c '^== ' "$work/conf") cases ($(tail -1 "$work/conf"))"
		else
			bad "conformance (status $?): $(grep -m3 'FAIL' "$work/conf" | tr '\n' ' ')"
		fi
		grep -E "^== |SKIP" "$work/conf" | sed 's/^/    /'
		SMART_CONF_SCALE=$scale timeout 600 "$bin/test_transport_verbs" device_memory >"$work/dm" 2>&1
		case $? in
		0) ok "device_memory: NIC memory allocated, registered zero-based, READ/WRITE/atomics through it" ;;
		77) skp "device_memory: $(grep -m1 'SKIP' "$work/dm" | sed 's/^[[:space:]]*//')" ;;
		*) bad "device_memory: $(tail -2 "$work/dm" | tr '\n' ' ')" ;;
		esac
	else
		skp "conformance: $bin/test_transport_verbs not built"
	fi

	hdr "flush storm (test_flush_storm: a blade destroyed under full send queues)"
	if [ -x "$bin/test_flush_storm" ]; then
		if SMART_TEST_TRANSPORT=verbs timeout 900 "$bin/test_flush_storm" >"$work/storm" 2>&1; then
			ok "flush storm: $(grep -m1 '^dead blade' "$work/storm")"
		else
			bad "flush storm: $(grep -m2 -E 'FAIL|hang' "$work/storm" | tr '\n' ' ')"
		fi
		grep -E "^(transport|bound|live blades)" "$work/storm" | sed 's/^/    /'
	else
		skp "flush storm: $bin/test_flush_storm not built"
	fi

	hdr "send queues (tests/verbs/qp-depth-sweep.sh)"
	local steps="16 600 768 max"
	[ $full -eq 1 ] && steps=""
	if SMART_DEVICE=$dev SWEEP_SECONDS=1 bash "$src/tests/verbs/qp-depth-sweep.sh" "$build" $steps >"$work/sweep" 2>&1; then
		ok "qp_depth sweep: $(tail -1 "$work/sweep")"
	else
		bad "qp_depth sweep: $(tail -1 "$work/sweep")"
	fi
	grep -E "^(PASS|FAIL|SKIP)|the library takes|maximum is|qp_depth [0-9]+," "$work/sweep" | sed 's/^/    /'
	info "a QP smaller than asked (mlx5 counts WQE building blocks, 64 B each; an inline WRITE or an atomic takes more than one): the library's log says 'a QP takes at most N send WRs' and the sweep's maximum is then N"

	hdr "doorbells (per-thread-db)"
	doorbells
}

# mlx5dv: the BlueFlame register (UAR page) each QP rings, with one
# thread domain per worker as per-thread-db does.
doorbells() {
	local cc=${CC:-cc} n=4
	SMART_LOG_LEVEL=debug timeout 120 "$bin/smart-perf" --transport verbs --device "$dev" \
		--qp-mode per-thread-db --threads $n --depth 8 --seconds 1 \
		--blade-size 64M --span 1M --json >"$work/pdb" 2>"$work/pdb.log"
	local mode=$(sed -n 's/.*"qp_mode_effective":"\([^"]*\)".*/\1/p' "$work/pdb")
	case $mode in
	per-thread-db) ok "smart-perf --qp-mode per-thread-db with $n threads: in force (each worker's QPs in a thread domain of its own)" ;;
	"") bad "smart-perf --qp-mode per-thread-db: $(tail -2 "$work/pdb.log" | tr '\n' ' ')" ;;
	*) info "smart-perf --qp-mode per-thread-db runs as '$mode' (the device gave no thread domains, or not to every worker)" ;;
	esac
	if grep -qiE "bf\.reg|uar" "$work/pdb.log"; then
		info "the library's own log of doorbells:"
		grep -iE "bf\.reg|uar" "$work/pdb.log" | sed 's/^/    /'
	else
		info "the library does not log its QPs' doorbell registers; the probe below shows what the same thread domains give (to see the library's own: log mlx5dv_init_obj(MLX5DV_OBJ_QP)'s bf.reg per QP at debug level)"
	fi
	if [ $is_mlx5 -ne 1 ]; then
		skp "doorbell probe: $dev is not an mlx5 device (no mlx5dv)"
		return
	fi
	if ! echo '#include <infiniband/mlx5dv.h>' | $cc -E -x c - >/dev/null 2>&1; then
		skp "doorbell probe: no C compiler with infiniband/mlx5dv.h (apt-get install gcc libibverbs-dev)"
		return
	fi
	probe_source >"$work/dbprobe.c"
	if ! $cc -O2 -o "$work/dbprobe" "$work/dbprobe.c" -libverbs -lmlx5 2>"$work/cc.log"; then
		skp "doorbell probe: does not build: $(head -2 "$work/cc.log" | tr '\n' ' ')"
		return
	fi
	"$work/dbprobe" "$dev" $n >"$work/db" 2>&1
	local rc=$?
	sed 's/^/    /' "$work/db"
	case $rc in
	0) ok "doorbells: $(tail -1 "$work/db")" ;;
	1) bad "doorbells: $(tail -1 "$work/db")" ;;
	*) skp "doorbell probe: $(tail -1 "$work/db")" ;;
	esac
	if grep -q "(BlueFlame)" "$work/db"; then
		info "BlueFlame registers present (bf.size > 0): WQEs can be written to the NIC through write-combining; whether the CPU really combines is the provider's test (rdma-core mlx5 checks it at open; MLX5_SHUT_UP_BF=1 turns BlueFlame off for a comparison run)"
	fi
}

probe_source() {
	cat <<'EOF'
/* verify-mlx5's doorbell probe: does each thread domain give its QPs a
 * doorbell (UAR page) of their own?  Mirrors per-thread-db: one thread
 * domain + parent domain per worker and that worker's QP inside it; then
 * one QP without.  Prints each QP's BlueFlame register (mlx5dv). */
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 4, i, j, nd = 0, same = 0;
	struct ibv_device **l = ibv_get_device_list(NULL), *dev = NULL;
	uintptr_t page[65];
	struct ibv_context *c;
	struct ibv_pd *pd;

	for (i = 0; l && l[i]; i++)
		if (argc > 1 && !strcmp(ibv_get_device_name(l[i]), argv[1]))
			dev = l[i];
	if (!dev) {
		printf("no device %s\n", argc > 1 ? argv[1] : "(none)");
		return 2;
	}
	if (!mlx5dv_is_supported(dev)) {
		printf("%s is not an mlx5 device\n", argv[1]);
		return 3;
	}
	if (n < 1 || n > 64)
		n = 4;
	c = ibv_open_device(dev);
	pd = c ? ibv_alloc_pd(c) : NULL;
	if (!pd) {
		printf("cannot open %s\n", argv[1]);
		return 2;
	}
	for (i = 0; i <= n; i++) {	/* n workers, then one without a TD */
		struct ibv_td_init_attr ta = { 0 };
		struct ibv_td *td = i < n ? ibv_alloc_td(c, &ta) : NULL;
		struct ibv_parent_domain_init_attr pa = { .pd = pd, .td = td };
		struct ibv_pd *ppd = td ? ibv_alloc_parent_domain(c, &pa) : NULL;
		struct ibv_cq *cq = ibv_create_cq(c, 64, NULL, NULL, 0);
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 64, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct mlx5dv_qp dq = { 0 };
		struct mlx5dv_obj o = { 0 };
		struct ibv_qp *qp;

		if (i < n && !ppd) {
			printf("worker %d: no thread domain (%s)\n", i,
			       td ? "ibv_alloc_parent_domain failed" :
			       "ibv_alloc_td failed: UARs exhausted?");
			return 4;
		}
		qp = cq ? ibv_create_qp(ppd ? ppd : pd, &ia) : NULL;
		if (!qp) {
			printf("worker %d: cannot create a QP\n", i);
			return 2;
		}
		o.qp.in = qp;
		o.qp.out = &dq;
		if (mlx5dv_init_obj(&o, MLX5DV_OBJ_QP)) {
			printf("mlx5dv_init_obj failed\n");
			return 2;
		}
		page[i] = (uintptr_t)dq.bf.reg & ~(uintptr_t)4095;
		printf("%s %d: bf.reg %p (UAR page %#lx), bf.size %u%s\n",
		       i < n ? "worker" : "no thread domain", i, dq.bf.reg,
		       (unsigned long)page[i], dq.bf.size,
		       dq.bf.size ? " (BlueFlame)" : " (doorbell only)");
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < i; j++)
			same += page[i] == page[j];
		nd += page[i] != page[n];
	}
	printf("%d workers: %s, %d of %d apart from the shared doorbells\n",
	       n, same ? "some share a UAR page" : "each has a UAR page of "
	       "its own", nd, n);
	return same || nd != n ? 1 : 0;
}
EOF
}

# ---- secret ----
if [ ! -f "$secret" ]; then
	[ "$role" = server ] || die "no secret file $secret: copy the server's (it prints where it is) or give --secret-file"
	(umask 077; head -c 32 /dev/urandom | base64 >"$secret") || die "cannot write $secret"
	echo "$me: made the shared secret $secret: copy it to the client host (same path, or --secret-file), mode 600"
fi
export SMART_SECRET_FILE=$secret

[ $skip_local -eq 1 ] || local_checks

# ---- the server half ----
serve() {
	hdr "serving: smartd on 0.0.0.0:$port, ib_read_bw on 18515, ib_read_lat on 18516 ($rounds rounds each)"
	local tc=""
	[ -n "$tclass" ] && tc="--opt traffic_class=$tclass"
	"$bin/smartd" --transport verbs --device "$dev" --size 1G \
		--listen "0.0.0.0:$port" --secret-file "$secret" >"$work/smartd" 2>&1 &
	local sd=$!
	pids="$pids $sd"
	for _ in $(seq 100); do grep -q serving "$work/smartd" && break; sleep 0.1; done
	grep -q serving "$work/smartd" || { bad "smartd: $(tail -3 "$work/smartd" | tr '\n' ' ')"; return; }
	ok "smartd: $(grep -m1 serving "$work/smartd")"
	grep -iE "device memory|dm[-_ ]size" "$work/smartd" | sed 's/^/    /'
	command -v ib_read_bw >/dev/null || { bad "perftest not installed (apt-get install perftest): the client's comparison fails"; }
	perf_server() { # tool port
		local i
		for ((i = 1; i <= rounds; i++)); do
			timeout "$wait_s" "$1" -d "$dev" -s 8 -p "$2" -F $3 >"$work/$1.$i" 2>&1 ||
				{ echo "$1 round $i: status $?"; return 1; }
		done
	}
	local bw lat rcb rcl
	perf_server ib_read_bw 18515 "-D $secs -o 16" & bw=$!
	perf_server ib_read_lat 18516 "-n 10000" & lat=$!
	pids="$pids $bw $lat"
	echo "waiting for the client (at most $wait_s s a round): on the other host run"
	echo "    $0 --client <this host's IP on $dev's network> --device <its device> --rounds $rounds --seconds $secs"
	wait $bw; rcb=$?
	wait $lat; rcl=$?
	[ $rcb -eq 0 ] && ok "ib_read_bw server: $rounds rounds served" || bad "ib_read_bw server (status $rcb)"
	[ $rcl -eq 0 ] && ok "ib_read_lat server: $rounds rounds served" || bad "ib_read_lat server (status $rcl)"
	# the client's last smart-perf runs after its last perftest round
	echo "smartd stays up $((2 * secs + 30)) s more for the client's last runs"
	sleep $((2 * secs + 30))
	kill "$sd" 2>/dev/null; wait "$sd" 2>/dev/null
	grep -iE "error|warn" "$work/smartd" | head -5 | sed 's/^/    smartd: /'
}

# ---- the client half ----
# perftest's client, retried while the server is not up yet (ssh-free:
# the halves start by hand, in any order).
perftest_client() { # tool port extra
	local i out=$work/$1.client
	for i in $(seq 60); do
		timeout $((secs + 60)) "$1" -d "$dev" -s 8 -p "$2" -F $3 "$peer" >"$out" 2>&1 && return 0
		grep -qiE "Couldn't connect|Unable to|connect" "$out" || break
		sleep 2
	done
	cat "$out" >&2
	return 1
}

client() {
	local op size i rc
	hdr "smart-ping --verify of every op against $peer:$port"
	for i in $(seq 30); do	# the server may not be up yet
		timeout 60 "$bin/smart-ping" --transport verbs --secret-file "$secret" \
			--count 1 --quiet "$peer:$port" >/dev/null 2>&1 && break
		sleep 2
	done
	for op in read:8 read:4096 write:8 write:4096 cas:8 faa:8; do
		size=${op#*:}; op=${op%:*}
		timeout 120 "$bin/smart-ping" --transport verbs --secret-file "$secret" \
			--count 200 --interval 0 --size "$size" --op "$op" --verify \
			--quiet "$peer:$port" >"$work/ping" 2>&1
		rc=$?
		if [ $rc -eq 0 ] && grep -q " 0 failed" "$work/ping"; then
			ok "smart-ping --op $op --size $size --verify: $(grep -m1 'probes,' "$work/ping"); $(grep -m1 '^rtt' "$work/ping" | cut -d, -f1)"
		else
			bad "smart-ping --op $op --size $size --verify (status $rc): $(tail -2 "$work/ping" | tr '\n' ' ')"
		fi
	done
	grep -ihE "atomic|byte order" "$work/ping" | head -3 | sed 's/^/    /'

	hdr "smart-perf against perftest, $rounds alternating pairs, ${secs} s each"
	command -v ib_read_bw >/dev/null || { bad "perftest not installed (apt-get install perftest)"; return; }
	local sp ib spl ibl
	sp="" ib="" spl="" ibl=""
	for ((i = 1; i <= rounds; i++)); do
		if perftest_client ib_read_bw 18515 "-D $secs -o 16"; then
			ib="$ib $(awk '$1 == 8 && NF >= 5 { v = $5 } END { print v }' "$work/ib_read_bw.client")"
		else
			bad "ib_read_bw round $i"
		fi
		"$bin/smart-perf" --transport verbs --device "$dev" --connect "$peer:$port" \
			--secret-file "$secret" --op read --size 8 --threads 1 --depth 16 \
			--seconds "$secs" --techniques None --json >"$work/sp" 2>"$work/sp.log" &&
			sp="$sp $(sed -n 's/.*"mops":\([0-9.]*\).*/\1/p' "$work/sp")" ||
			bad "smart-perf READ round $i: $(tail -2 "$work/sp.log" | tr '\n' ' ')"
		if perftest_client ib_read_lat 18516 "-n 10000"; then
			ibl="$ibl $(awk '$1 == 8 && NF >= 8 { v = $5 "/" $8 } END { print v }' "$work/ib_read_lat.client")"
		else
			bad "ib_read_lat round $i"
		fi
		"$bin/smart-perf" --transport verbs --device "$dev" --connect "$peer:$port" \
			--secret-file "$secret" --op read --size 8 --threads 1 --depth 1 \
			--seconds "$secs" --techniques None --json >"$work/spl" 2>"$work/spl.log" &&
			spl="$spl $(sed -n 's/.*"p50_us":\([0-9.]*\).*"p99_us":\([0-9.]*\).*/\1\/\2/p' "$work/spl")" ||
			bad "smart-perf latency round $i: $(tail -2 "$work/spl.log" | tr '\n' ' ')"
	done
	info "8-byte READs, 16 outstanding: ib_read_bw Mpps:$ib; smart-perf Mops:$sp"
	info "8-byte READs, one at a time, typical(p50)/p99 us: ib_read_lat:$ibl; smart-perf:$spl"
	awk -v a="$sp" -v b="$ib" 'function med(s,  n, v, i, j, t) {
		n = split(s, v, " "); if (!n) return 0
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		return v[int((n + 1) / 2)] }
	BEGIN { x = med(a); y = med(b)
		printf "INFO READ rate, median of the pairs: smart-perf %.3f Mops, ib_read_bw %.3f Mpps, ratio %.2f\n", x, y, (y > 0 ? x / y : 0) }'
	[ -n "$sp" ] && [ -n "$ib" ] && ok "benchmarks: $rounds pairs ran"

	if [ -n "$tclass" ]; then
		hdr "traffic class $tclass (DSCP $((tclass >> 2)))"
		if [ -z "$netdev" ]; then
			skp "per-priority counters: no netdev for $dev (InfiniBand?)"
		elif ! command -v ethtool >/dev/null; then
			skp "per-priority counters: ethtool not installed (apt-get install ethtool)"
		else
			ethtool -S "$netdev" | grep -E "tx_prio[0-7]_(packets|bytes)" >"$work/before"
			"$bin/smart-perf" --transport verbs --device "$dev" --connect "$peer:$port" \
				--secret-file "$secret" --op read --size 8 --threads 1 --depth 16 \
				--seconds "$secs" --techniques None --opt traffic_class="$tclass" \
				--json >"$work/tc" 2>&1 || bad "smart-perf with traffic_class $tclass: $(tail -1 "$work/tc")"
			ethtool -S "$netdev" | grep -E "tx_prio[0-7]_(packets|bytes)" >"$work/after"
			if [ -s "$work/after" ]; then
				info "tx per priority during that run (the priority follows the port's DSCP trust map: mlnx_qos -i $netdev):"
				join "$work/before" "$work/after" 2>/dev/null |
					awk '{ d = $3 - $2; if (d > 0) printf "    %s +%d\n", $1, d }'
				ok "traffic class: counters read (check the priority above is the one DSCP $((tclass >> 2)) maps to)"
			else
				skp "per-priority counters: $netdev has no tx_prioN counters (not mlx5?)"
			fi
		fi
	fi
}

if [ "$role" = server ]; then serve; else client; fi
echo
echo "$me ($role, $dev): $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
