#!/usr/bin/env bash
# Two real RoCE hosts: smartd serving verbs in one qemu guest, clients in
# another, the guests wired by a qemu socket netdev on host loopback
# (tests/vm/vm-two-guests.sh).  The client verifies data end to end with
# smart-ping (READ/WRITE/CAS/FAA, --verify) and runs a short smart-perf,
# each a step with a deadline (tests/verbs/two-guests-client.sh).
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
client="$here/two-guests-client.sh $build/bin $secret"
exec "$vm" --server "$server" --client "$client"
