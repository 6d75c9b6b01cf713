# tests/vm/lib.sh - shared code of the Soft-RoCE VM harness (sourced, bash).
#
# What it is for: booting a qemu guest under TCG (never KVM: the hosts'
# /dev/kvm cannot run a stock kernel) with Debian's kernel and rdma_rxe, so
# unmodified host binaries linked against libibverbs run on a real verbs
# device (rxe0).  Used by vm-run.sh (one guest; with --link two rxe devices
# whose traffic crosses a wire, see vm_job_script) and vm-two-guests.sh (two
# guests wired by a qemu socket netdev on host loopback).
#
# Invariants:
# - The guest sees the host's root read-only over 9p, under an overlayfs
#   with a tmpfs upper: nothing the guest does changes a host file, except
#   in its own job directory (second 9p share), which carries the command,
#   its stdout/stderr, markers and its exit status.
# - No packet leaves a guest: single guests have no NIC at all, or (--link)
#   two NICs on one qemu hub that has no other port; the two guests share
#   only a qemu socket on 127.0.0.1.  Guest IPv4s are link-local and exist
#   only inside the guests.
# - The cache directory ($SMART_VM_CACHE, default /var/cache/smart-vm) holds
#   a kernel and an initramfs whose stamps name what they were built from;
#   a stale or partial cache is rebuilt, never used.  Builds are serialized
#   by a lock and replace files only once complete.
# - qemu always runs under `timeout`, and callers kill it on exit (trap).
# - Exit status 77 (SKIP) only when qemu itself cannot run on this machine.

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VM_CACHE=${SMART_VM_CACHE:-/var/cache/smart-vm}
# The guest kernel: linux-image-amd64 of the host's apt sources, or of the
# Debian suite SMART_VM_KERNEL_SUITE names (e.g. bookworm-backports, for a
# newer rdma_rxe), resolved with an apt state of its own under the cache
# so that the host's sources stay untouched.  Each has its own kernel and
# initramfs directory; the locks are shared.
VM_KSUITE=${SMART_VM_KERNEL_SUITE:-}
case $VM_KSUITE in
'') VM_KDIR=$VM_CACHE ;;
*[!a-z0-9-]*) VM_KDIR= ;;	# refused by vm_prepare
*) VM_KDIR=$VM_CACHE/suite-$VM_KSUITE ;;
esac
VM_TIMEOUT=${SMART_VM_TIMEOUT:-1200}
VM_HUGEPAGES=${SMART_VM_HUGEPAGES:-16}
VM_QEMU=qemu-system-x86_64

# Debian packages the harness and the tests run in the guest need.
VM_PACKAGES="qemu-system-x86 busybox-static cpio kmod xz-utils rdma-core
ibverbs-providers libibverbs-dev librdmacm-dev ibverbs-utils rdmacm-utils
perftest iproute2"

# Modules the initramfs loads; their dependencies are added in front, in
# order.  crc32_generic is no symbol dependency of rdma_rxe, but rxe needs the
# crc32 shash when the device is created and nothing could autoload it.
# sch_netem shapes the wire(s) (SMART_VM_NETEM, tests/verbs/lossy.sh).
# The kernel cache records this list: changing it rebuilds the cache.
VM_ROOT_MODULES="virtio_pci 9pnet_virtio 9p overlay crc32_generic rdma_rxe
ib_uverbs rdma_ucm dummy virtio_net sch_netem"

# Variables passed into the guest besides SMART_* ones (HOME is forced).
VM_PASS_ENV="PATH TERM LANG LC_ALL LC_CTYPE TZ TMPDIR USER LOGNAME CI
ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS MSAN_OPTIONS
CTEST_OUTPUT_ON_FAILURE CTEST_PARALLEL_LEVEL MAKEFLAGS CC CFLAGS LDFLAGS"

vm_log()
{
	echo "vm-run: $*" >&2
}

vm_die()
{
	vm_log "ERROR: $*"
	exit 1
}

vm_skip()
{
	echo "" >&2
	echo "SKIP: *** Soft-RoCE VM harness cannot run here: $* ***" >&2
	echo "" >&2
	exit 77
}

# Seconds since $1 (an $EPOCHREALTIME value), one decimal.
vm_since()
{
	awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

# --- host packages -------------------------------------------------------

vm_apt()
{
	DEBIAN_FRONTEND=noninteractive apt-get -o Dpkg::Use-Pty=0 \
		-o Dpkg::Options::=--force-confdef \
		-o Dpkg::Options::=--force-confold -q "$@"
}

vm_missing_packages()
{
	local p st
	for p in $VM_PACKAGES; do
		st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
		[ "$st" = "install ok installed" ] || echo "$p"
	done
}

vm_install_packages()
{
	local t0=$EPOCHREALTIME missing
	missing=$(vm_missing_packages | tr '\n' ' ')
	if [ -z "${missing// /}" ]; then
		vm_log "apt: 0.0 s (all packages present)"
		return 0
	fi
	vm_log "apt: installing $missing"
	if ! { vm_apt update >/dev/null &&
	       vm_apt install -y --no-install-recommends $missing >/dev/null; }
	then
		vm_log "apt-get install failed for: $missing"
	fi
	vm_log "apt: $(vm_since "$t0") s"
}

# Fails with SKIP when qemu cannot be had or cannot start a trivial machine:
# the only case the harness may skip.
vm_check_qemu()
{
	local out
	command -v "$VM_QEMU" >/dev/null ||
		vm_skip "$VM_QEMU not installed and apt-get could not install qemu-system-x86"
	out=$(printf '%s\n' '{"execute":"qmp_capabilities"}' '{"execute":"quit"}' |
	      timeout 60 "$VM_QEMU" -accel tcg -machine none -nodefaults \
		-no-user-config -display none -qmp stdio 2>&1) ||
		vm_skip "$VM_QEMU fails to start a trivial guest: $(echo "$out" | tail -3)"
}

# --- kernel ---------------------------------------------------------------

# apt's options for the kernel's packages: none for the host's sources, or
# a sources list of VM_KSUITE alone and state directories of its own.
vm_kapt_opts()
{
	local d=$VM_KDIR/apt
	[ -n "$VM_KSUITE" ] || return 0
	mkdir -p "$d/lists/partial" "$d/archives/partial" &&
	echo "deb http://deb.debian.org/debian $VM_KSUITE main" >"$d/sources.list" ||
		return 1
	echo "-o Dir::Etc::SourceList=$d/sources.list" \
	     "-o Dir::Etc::SourceParts=/nonexistent" \
	     "-o Dir::State::Lists=$d/lists" \
	     "-o Dir::Cache::Archives=$d/archives" \
	     "-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache="
}

vm_kapt() { vm_apt $(vm_kapt_opts) "$@"; }
vm_kapt_cache() { apt-cache $(vm_kapt_opts) "$@"; }

# Prints "PKG VERSION" of the kernel image linux-image-amd64 depends on.
vm_kernel_wanted()
{
	local pkg ver
	pkg=$(vm_kapt_cache depends linux-image-amd64 2>/dev/null |
	      awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
	[ -n "$pkg" ] || return 1
	ver=$(vm_kapt_cache policy "$pkg" 2>/dev/null |
	      awk '$1 == "Candidate:" { print $2; exit }')
	[ -n "$ver" ] && [ "$ver" != "(none)" ] || return 1
	echo "$pkg $ver"
}

# Writes the uncompressed ELF vmlinux hidden in bzImage $1 to $2.  Booting it
# through its PVH entry skips the decompressor, ~6 s under TCG.
vm_extract_vmlinux()
{
	local off
	off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$1" 2>/dev/null |
	      head -1 | cut -d: -f1)
	[ -n "$off" ] || return 1
	tail -c +$((off + 1)) "$1" | xz -dc --single-stream >"$2" 2>/dev/null
	[ "$(head -c 4 "$2" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]
}

# Copies the modules of VM_ROOT_MODULES and their dependencies, in load
# order and decompressed, from root $1 (kernel $2) into $3; writes
# $3/modules.order.
vm_collect_modules()
{
	local root=$1 kver=$2 out=$3 m f name
	mkdir -p "$out"
	for m in $VM_ROOT_MODULES; do
		modprobe -d "$root" -S "$kver" --show-depends "$m" ||
			{ echo "missing module $m" >&2; return 1; }
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' >"$out/paths"
	: >"$out/modules.order"
	while read -r f; do
		name=$(basename "$f")
		case $f in
		*.ko.xz) xz -dc "$f" >"$out/${name%.xz}"; name=${name%.xz} ;;
		*.ko.zst) zstd -qdc "$f" >"$out/${name%.zst}"; name=${name%.zst} ;;
		*.ko.gz) gzip -dc "$f" >"$out/${name%.gz}"; name=${name%.gz} ;;
		*) cp "$f" "$out/$name" ;;
		esac || return 1
		echo "$name" >>"$out/modules.order"
	done <"$out/paths"
	rm -f "$out/paths"
	[ -s "$out/modules.order" ]
}

# Downloads and unpacks kernel package $1 (version $2) into $VM_KDIR/kernel.
vm_build_kernel()
{
	local pkg=$1 ver=$2 kver=${1#linux-image-} tmp root
	tmp=$(mktemp -d "$VM_KDIR/kernel.tmp.XXXXXX") || return 1
	root=$tmp/root
	(cd "$tmp" && chmod 755 . && vm_kapt download "$pkg=$ver" >/dev/null 2>&1 ||
	 vm_kapt download "$pkg" >/dev/null) || { rm -rf "$tmp"; return 1; }
	dpkg -x "$tmp"/*.deb "$root" && rm -f "$tmp"/*.deb &&
	depmod -b "$root" "$kver" &&
	mkdir -p "$tmp/out" &&
	cp "$root/boot/vmlinuz-$kver" "$tmp/out/vmlinuz" &&
	vm_collect_modules "$root" "$kver" "$tmp/out/modules" &&
	echo $VM_ROOT_MODULES >"$tmp/out/modules/roots" ||
		{ rm -rf "$tmp"; return 1; }
	vm_extract_vmlinux "$tmp/out/vmlinuz" "$tmp/out/vmlinux" ||
		{ vm_log "no vmlinux in the bzImage; booting the bzImage";
		  rm -f "$tmp/out/vmlinux"; }
	echo "$pkg $ver" >"$tmp/out/stamp"
	rm -rf "$VM_KDIR/kernel.old"
	[ -d "$VM_KDIR/kernel" ] && mv "$VM_KDIR/kernel" "$VM_KDIR/kernel.old"
	mv "$tmp/out" "$VM_KDIR/kernel" && rm -rf "$tmp" "$VM_KDIR/kernel.old"
}

# A kernel cache is valid when complete, built from package $1 (any when
# empty) and holding the modules of the current VM_ROOT_MODULES.
vm_kernel_valid()
{
	local k=$VM_KDIR/kernel
	[ -s "$k/stamp" ] && [ -s "$k/vmlinuz" ] && [ -s "$k/modules/modules.order" ] &&
		[ "$(cat "$k/modules/roots" 2>/dev/null)" = "$(echo $VM_ROOT_MODULES)" ] &&
		{ [ -z "$1" ] || [ "$(cat "$k/stamp")" = "$1" ]; }
}

vm_ensure_kernel()
{
	local t0=$EPOCHREALTIME want
	want=$(vm_kernel_wanted) ||
		{ vm_kapt update >/dev/null 2>&1; want=$(vm_kernel_wanted); }
	if [ -z "$want" ]; then
		vm_kernel_valid "" ||
			vm_die "cannot resolve linux-image-amd64 and no cached kernel (with the modules: $(echo $VM_ROOT_MODULES))"
		vm_log "kernel: apt cannot resolve linux-image-amd64; using cached $(cat "$VM_KDIR/kernel/stamp")"
		return 0
	fi
	if vm_kernel_valid "$want"; then
		vm_log "kernel: 0.0 s (cached $want)"
		return 0
	fi
	vm_log "kernel: fetching $want"
	if ! vm_build_kernel $want; then
		# a stale package list may name a version the mirror dropped
		vm_kapt update >/dev/null 2>&1
		want=$(vm_kernel_wanted) && vm_build_kernel $want ||
			vm_die "could not download/unpack the kernel ($want)"
	fi
	vm_log "kernel: $(vm_since "$t0") s ($want)"
}

# --- initramfs --------------------------------------------------------------

# The guest's /init (busybox sh, PID 1).  It loads the modules, builds the
# guest root (host root over 9p, read-only, under an overlay with a tmpfs
# upper), mounts the job share, runs job.sh from it in a chroot and powers
# off.  Everything per run lives in job.sh, so this rarely changes.
vm_init_script()
{
	cat <<'EOF'
#!/bin/busybox sh
/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
die() {
	echo "smart-vm init: FATAL: $*"
	sync
	poweroff -f
	reboot -f
}
for m in $(cat /modules.order); do
	opt=
	[ "$m" = dummy.ko ] && opt=numdummies=0
	insmod "/lib/modules/$m" $opt || echo "smart-vm init: insmod $m failed"
done
o=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o $o,ro,cache=loose hostroot /lower || die "cannot mount hostroot"
mount -t tmpfs -o mode=0755 tmpfs /upper || die "cannot mount tmpfs"
mkdir -p /upper/u /upper/w
mount -t overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w \
	overlay /newroot || die "cannot mount the overlay root"
r=/newroot
mkdir -p $r/smart-vm-job $r/proc $r/sys $r/dev
mount -t 9p -o $o job $r/smart-vm-job || die "cannot mount the job share"
mount -t proc proc $r/proc
mount -t sysfs sysfs $r/sys
mount -t devtmpfs devtmpfs $r/dev
mkdir -p $r/dev/pts $r/dev/shm $r/dev/hugepages
mount -t devpts -o newinstance,ptmxmode=0666 devpts $r/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $r/dev/shm
mount -t hugetlbfs hugetlbfs $r/dev/hugepages
[ -x $r/bin/bash ] || die "no /bin/bash on the host root"
chroot $r /bin/bash /smart-vm-job/job.sh </dev/null
sync
poweroff -f
reboot -f
EOF
}

vm_initramfs_stamp()
{
	{ cat "$VM_KDIR/kernel/stamp" "$VM_KDIR/kernel/modules/modules.order"
	  vm_init_script; sha256sum /bin/busybox; } |
		sha256sum | cut -d' ' -f1
}

vm_build_initramfs()
{
	local tmp d
	tmp=$(mktemp -d "$VM_KDIR/initramfs.tmp.XXXXXX") || return 1
	d=$tmp/root
	mkdir -p "$d"/{bin,dev,proc,sys,lib/modules,lower,upper,newroot} &&
	cp /bin/busybox "$d/bin/busybox" &&
	mknod "$d/dev/console" c 5 1 && mknod "$d/dev/null" c 1 3 &&
	cp "$VM_KDIR/kernel/modules/"*.ko "$d/lib/modules/" &&
	cp "$VM_KDIR/kernel/modules/modules.order" "$d/modules.order" &&
	vm_init_script >"$d/init" && chmod 755 "$d/init" &&
	(cd "$d" && find . | LC_ALL=C sort |
	 cpio -o -H newc -R 0:0 --quiet | gzip -6 >"$tmp/initramfs.cpio.gz") &&
	mv "$tmp/initramfs.cpio.gz" "$VM_KDIR/initramfs.cpio.gz" &&
	vm_initramfs_stamp >"$VM_KDIR/initramfs.stamp"
	local rc=$?
	rm -rf "$tmp"
	return $rc
}

vm_ensure_initramfs()
{
	local t0=$EPOCHREALTIME
	if [ -s "$VM_KDIR/initramfs.cpio.gz" ] &&
	   [ "$(cat "$VM_KDIR/initramfs.stamp" 2>/dev/null)" = "$(vm_initramfs_stamp)" ]
	then
		vm_log "initramfs: 0.0 s (cached)"
		return 0
	fi
	rm -f "$VM_KDIR/initramfs.stamp"
	vm_build_initramfs || vm_die "could not build the initramfs"
	vm_log "initramfs: $(vm_since "$t0") s ($(du -k "$VM_KDIR/initramfs.cpio.gz" | cut -f1) KiB)"
}

# Everything a boot needs: packages, qemu check, kernel, initramfs.  Sets
# VM_KERNEL and VM_INITRD.
vm_prepare()
{
	[ "$(id -u)" = 0 ] || vm_die "must run as root (apt-get, cache in $VM_CACHE)"
	[ -n "$VM_KDIR" ] ||
		vm_die "SMART_VM_KERNEL_SUITE=$VM_KSUITE is no Debian suite name"
	mkdir -p "$VM_CACHE" "$VM_KDIR" || vm_die "cannot create $VM_KDIR"
	exec {VM_BUILD_LOCK}>"$VM_CACHE/.build.lock"
	flock "$VM_BUILD_LOCK"
	# leftovers of a build that was killed; safe to drop under the lock
	rm -rf "$VM_KDIR"/kernel.tmp.* "$VM_KDIR"/initramfs.tmp.*
	vm_install_packages
	vm_check_qemu
	for c in busybox cpio depmod modprobe xz; do
		command -v $c >/dev/null || vm_die "$c missing after apt-get install"
	done
	vm_ensure_kernel
	vm_ensure_initramfs
	flock -u "$VM_BUILD_LOCK"
	exec {VM_BUILD_LOCK}>&-
	VM_KERNEL=$VM_KDIR/kernel/vmlinux
	[ -s "$VM_KERNEL" ] || VM_KERNEL=$VM_KDIR/kernel/vmlinuz
	VM_INITRD=$VM_KDIR/initramfs.cpio.gz
}

# One guest at a time on these 2-core machines: callers queue on this lock.
vm_lock_run()
{
	exec {VM_RUN_LOCK}>"$VM_CACHE/.run.lock"
	if ! flock -n "$VM_RUN_LOCK"; then
		vm_log "another guest is running; waiting for it"
		flock "$VM_RUN_LOCK"
	fi
}

# --- per-run job ---------------------------------------------------------

# The script the guest runs as root in its chroot (host's bash, host's
# files).  vars.sh (written by vm_make_job) gives VM_CWD, VM_NET
# (dummy|nic|link), VM_IP_CIDR, VM_NETEM, VM_HUGEPAGES, VM_WAIT_GO,
# VM_STOPPABLE, VM_ENV, VM_CMD.
#
# VM_NET=link: two virtio-nets on one qemu hub, i.e. a wire between eth0
# (MAC ...:79:00:01, 169.254.79.1/32, rxe0) and eth1 (...:79:00:02,
# 169.254.79.2/32, rxe1).  Both addresses are local, so by default the
# kernel would route between them over lo and rxe would take its internal
# loopback (it does when the resolved destination MAC is its own).  Policy
# routing sends what the guest itself sends from one address to the other
# out of the owning NIC instead: rules "iif lo from A to B lookup 100"
# (and B to A, 101) come before the local table (moved from pref 0 to
# 1000); tables 100/101 route B via eth0 and A via eth1; permanent
# neighbour entries give the other NIC's MAC (ARP between two local
# addresses is refused); accept_local=1 and rp_filter=0 let a packet from
# a local source in.  Received packets (iif eth0/eth1) still meet the
# local table.  VM_NETEM, when not empty, is a netem spec put as the root
# qdisc of each NIC the guest has (link: eth0 and eth1; nic: eth0).
vm_job_script()
{
	cat <<'EOF'
#!/bin/bash
J=/smart-vm-job
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
. $J/vars.sh
finish() {
	echo "$1" >$J/rc.tmp && mv $J/rc.tmp $J/rc
	sync
	exit 0
}
fail() {
	echo "vm-run(guest): FAIL: $*" >>$J/stderr
	cat $J/setup.log >>$J/stderr 2>/dev/null
	finish 125
}
# the interface whose MAC is $1
nic_of() {
	local f
	for f in /sys/class/net/*/address; do
		[ "$(cat $f)" = "$1" ] && { basename "$(dirname $f)"; return 0; }
	done
	return 1
}
# eth0/eth1 by MAC, whatever order the kernel probed them in
link_names() {
	local a b
	a=$(nic_of 52:54:00:79:00:01) && b=$(nic_of 52:54:00:79:00:02) ||
		return 1
	[ "$a" = eth0 ] && [ "$b" = eth1 ] && return 0
	ip link set "$a" name lnk-a && ip link set "$b" name lnk-b &&
		ip link set lnk-a name eth0 && ip link set lnk-b name eth1
}
link_setup() {
	local a=169.254.79.1 b=169.254.79.2 k
	link_names || return 1
	for k in all default eth0 eth1; do
		sysctl -qw net.ipv4.conf.$k.accept_local=1 \
			net.ipv4.conf.$k.rp_filter=0 || return 1
	done
	ip link set eth0 up && ip link set eth1 up &&
	ip addr add $a/32 dev eth0 && ip addr add $b/32 dev eth1 &&
	ip neigh replace $b lladdr 52:54:00:79:00:02 dev eth0 nud permanent &&
	ip neigh replace $a lladdr 52:54:00:79:00:01 dev eth1 nud permanent &&
	ip route add $b/32 dev eth0 src $a table 100 &&
	ip route add $a/32 dev eth1 src $b table 101 &&
	ip rule add pref 100 iif lo from $a to $b lookup 100 &&
	ip rule add pref 101 iif lo from $b to $a lookup 101 &&
	ip rule add pref 1000 lookup local &&
	ip rule del pref 0 lookup local &&
	rdma link add rxe0 type rxe netdev eth0 &&
	rdma link add rxe1 type rxe netdev eth1
}
setup() {
	ip link set lo up || return 1
	if [ "$VM_NET" = link ]; then
		link_setup || return 1
	else
		if [ "$VM_NET" = dummy ]; then
			ip link add eth0 type dummy || return 1
		fi
		ip link set eth0 up && ip addr add "$VM_IP_CIDR" dev eth0 &&
			rdma link add rxe0 type rxe netdev eth0 || return 1
	fi
	if [ -n "$VM_NETEM" ] && [ "$VM_NET" != dummy ]; then
		for k in eth0 eth1; do
			[ -e /sys/class/net/$k ] || continue
			tc qdisc replace dev $k root netem $VM_NETEM || return 1
		done
	fi
}
setup >>$J/setup.log 2>&1 || fail "network/rxe setup failed"
for d in /sys/class/infiniband/*; do
	s=$d/ports/1/state
	for i in $(seq 200); do
		grep -q ACTIVE $s 2>/dev/null && break
		sleep 0.05
	done
	grep -q ACTIVE $s 2>/dev/null ||
		fail "${d##*/} port not ACTIVE: $(cat $s 2>&1)"
done
[ -e /sys/class/infiniband/rxe0 ] || fail "no rxe0"
echo "$VM_HUGEPAGES" >/proc/sys/vm/nr_hugepages
ulimit -l unlimited || fail "ulimit -l unlimited"
ulimit -c 0
if [ "$VM_WAIT_GO" = 1 ]; then
	while [ ! -e $J/go ]; do sleep 0.1; done
fi
cd "$VM_CWD" || fail "cannot cd to $VM_CWD"
: >$J/started
# its own session and process group, so a stop reaches all its children
setsid env -i "${VM_ENV[@]}" "${VM_CMD[@]}" </dev/null \
	>>$J/stdout 2>>$J/stderr &
pid=$!
if [ "$VM_STOPPABLE" = 1 ]; then
	while kill -0 $pid 2>/dev/null && [ ! -e $J/stop ]; do sleep 0.2; done
	if [ -e $J/stop ] && kill -0 $pid 2>/dev/null; then
		: >$J/stopped
		kill -TERM -- -$pid 2>/dev/null
		( sleep 5; kill -KILL -- -$pid 2>/dev/null ) &
	fi
fi
wait $pid
finish $?
EOF
}

# vm_make_job DIR NET IP_CIDR WAIT_GO STOPPABLE [VAR=VALUE...] -- CMD...
# Writes the job directory shared with the guest (NET: dummy|nic|link;
# SMART_VM_NETEM is the netem spec of its NICs).  The command runs with
# the caller's cwd and a clean environment: passed-through variables (SMART_*
# and VM_PASS_ENV), HOME=/root, and the VAR=VALUE pairs given here.
vm_make_job()
{
	local dir=$1 net=$2 ip=$3 go=$4 stop=$5 v
	local -a env=()
	shift 5
	for v in $VM_PASS_ENV $(compgen -e | grep '^SMART_'); do
		[ -n "${!v+x}" ] && env+=("$v=${!v}")
	done
	env+=(HOME=/root)
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		env+=("$1")
		shift
	done
	[ "$1" = -- ] && shift
	[ $# -gt 0 ] || vm_die "no command given"
	{
		printf 'VM_CWD=%q\nVM_NET=%q\nVM_IP_CIDR=%q\n' "$PWD" "$net" "$ip"
		printf 'VM_NETEM=%q\n' "${SMART_VM_NETEM:-}"
		printf 'VM_HUGEPAGES=%q\nVM_WAIT_GO=%q\nVM_STOPPABLE=%q\n' \
			"$VM_HUGEPAGES" "$go" "$stop"
		printf 'VM_ENV=('; printf ' %q' "${env[@]}"; printf ' )\n'
		printf 'VM_CMD=('; printf ' %q' "$@"; printf ' )\n'
	} >"$dir/vars.sh"
	vm_job_script >"$dir/job.sh"
	: >"$dir/stdout"
	: >"$dir/stderr"
}

# vm_start_qemu DIR MEM QEMU-ARGS...: boots a guest for job DIR in the
# background under `timeout`; sets VM_QEMU_PID (the timeout process).
# SMART_VM_CMDLINE, when set, is appended to the kernel's command line
# (e.g. tsc=reliable: TCG guests otherwise mark the TSC unstable and read
# time from an emulated HPET, a system call and an MMIO exit per read).
# no_timer_check: under TCG on a loaded host the kernel's boot-time check
# that the IO-APIC timer ticks can miss its window and panic ("IO-APIC +
# timer doesn't work!", seen with a load of 9 on two cores); the timer
# works, the check is what a virtual CPU this slow cannot pass.
vm_start_qemu()
{
	local dir=$1 mem=$2
	shift 2
	timeout -k 10 "$VM_TIMEOUT" "$VM_QEMU" \
		-accel tcg,thread=multi,tb-size=256 -cpu max -m "$mem" -smp 2 \
		-nodefaults -no-user-config -display none -no-reboot -monitor none \
		-kernel "$VM_KERNEL" -initrd "$VM_INITRD" \
		-append "console=ttyS0 quiet loglevel=3 panic=-1 no_timer_check rdinit=/init${SMART_VM_CMDLINE:+ $SMART_VM_CMDLINE}" \
		-serial "file:$dir/console.log" \
		-fsdev local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=fsroot,mount_tag=hostroot \
		-fsdev "local,id=fsjob,path=$dir,security_model=none,multidevs=remap" \
		-device virtio-9p-pci,fsdev=fsjob,mount_tag=job \
		"$@" </dev/null >"$dir/qemu.log" 2>&1 &
	VM_QEMU_PID=$!
}

# vm_stream DIR PID [PREFIX]: copies the guest's stdout/stderr to ours as
# they grow, until PID exits.  Appends the copiers' pids to VM_TAILS.
vm_stream()
{
	local dir=$1 pid=$2 prefix=${3:-}
	if [ -z "$prefix" ]; then
		tail -s 0.2 -n +1 -f --pid="$pid" "$dir/stdout" &
		VM_TAILS+=" $!"
		tail -s 0.2 -n +1 -f --pid="$pid" "$dir/stderr" >&2 &
		VM_TAILS+=" $!"
	else
		tail -s 0.2 -n +1 -f --pid="$pid" "$dir/stdout" |
			sed -u "s/^/$prefix/" &
		VM_TAILS+=" $!"
		tail -s 0.2 -n +1 -f --pid="$pid" "$dir/stderr" |
			sed -u "s/^/$prefix/" >&2 &
		VM_TAILS+=" $!"
	fi
}

# Modification time of file $1 (host clock: 9p files are written by qemu).
vm_mtime()
{
	stat -c %.3Y "$1" 2>/dev/null
}

# vm_steps_report DIR NAME: for a run that failed or was cut short, the
# steps of tests/verbs/steps.sh in the guest's stdout that failed
# ("FAIL ..." lines) and the one still running (an "=== NAME:" line with no
# PASS/FAIL after it), then the guest's last output and its console's
# (kernel) last lines: where the run stood, without the whole log.
vm_steps_report()
{
	local dir=$1 name=$2 failed running
	failed=$(sed -n 's/^FAIL //p' "$dir/stdout" 2>/dev/null)
	running=$(awk '/^=== / { s = $2; sub(/:$/, "", s); open = s }
		/^(PASS|FAIL) / { open = "" } END { print open }' \
		"$dir/stdout" 2>/dev/null)
	[ -n "$failed" ] && { vm_log "${name}failed steps:"
		echo "$failed" | sed 's/^/  /' >&2; }
	[ -n "$running" ] && vm_log "${name}step running when the guest ended: $running"
	vm_log "${name}guest's last output:"
	tail -n 15 "$dir/stdout" 2>/dev/null | sed 's/^/  /' >&2
	vm_log "${name}guest console (kernel), last lines:"
	tail -n 30 "$dir/console.log" 2>/dev/null | sed 's/^/  /' >&2
}

# vm_report DIR QEMU_STATUS T_START T_END NAME: prints timings and the
# reason when the guest gave no status, where a failed run stood
# (vm_steps_report); prints the command's status.
vm_report()
{
	local dir=$1 qrc=$2 t0=$3 t1=$4 name=$5 ts rc
	ts=$(vm_mtime "$dir/started")
	if [ -n "$ts" ]; then
		vm_log "${name}boot: $(awk -v a="$t0" -v b="$ts" 'BEGIN { printf "%.1f", b - a }') s"
		vm_log "${name}command: $(awk -v a="$ts" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
	fi
	if [ -s "$dir/rc" ]; then
		rc=$(cat "$dir/rc")
		[ "$rc" = 125 ] && vm_log "${name}guest setup failed (see above)"
		[ "$rc" != 0 ] && vm_steps_report "$dir" "$name"
		echo "$rc"
		return 0
	fi
	if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
		vm_log "${name}TIMEOUT after ${VM_TIMEOUT} s (SMART_VM_TIMEOUT); qemu killed"
		echo 124
	else
		vm_log "${name}guest gave no exit status (qemu status $qrc)"
		echo 125
	fi
	vm_log "${name}qemu output:"; tail -20 "$dir/qemu.log" | sed 's/^/  /' >&2
	vm_steps_report "$dir" "$name"
}
