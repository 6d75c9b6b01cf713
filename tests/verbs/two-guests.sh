#!/usr/bin/env bash
# Two real RoCE hosts: smartd serving verbs in one qemu guest, clients in
# another, the guests wired by a qemu socket netdev on host loopback
# (tests/vm/vm-two-guests.sh).  The client verifies data end to end with
# smart-ping (READ/WRITE/CAS/FAA, --verify) and runs a short smart-perf.
# Usage: two-guests.sh BUILD_DIR
set -u
build=$(cd "${1:?usage: two-guests.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
vm=$here/../vm/vm-two-guests.sh
[ -x "$vm" ] || { echo "SKIP: $vm missing"; exit 77; }
secret=$build/two-guests.secret
printf 'two-guests-secret-%s' "$RANDOM$RANDOM" >"$secret"
chmod 600 "$secret"
trap 'rm -f "$secret"' EXIT

server="$build/bin/smartd --transport verbs --size 64M \
--listen \$SMART_VM_IP:7470 --secret-file $secret"
client="set -e; for i in \$(seq 60); do (exec 3<>/dev/tcp/\$SMART_PEER_IP/7470) 2>/dev/null && break; sleep 0.5; done; \
for op in read write cas faa; do $build/bin/smart-ping --transport verbs \
--secret-file $secret --count 20 --interval 0 --verify --op \$op \$SMART_PEER_IP:7470; done; \
$build/bin/smart-perf --transport verbs --connect \$SMART_PEER_IP:7470 \
--secret-file $secret --op read --size 8 --threads 1 --depth 8 --seconds 2"
exec "$vm" --server "$server" --client "$client"
