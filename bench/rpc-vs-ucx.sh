#!/bin/sh
# The messaging layer against UCX active messages over shared memory, side
# by side in one run (docs/rpc.md §16): ROUNDS alternations of
#   ucx_perftest -t ucp_am_lat -s SIZE  vs  smart-bench rpc --size SIZE (echo)
#   ucx_perftest -t ucp_am_bw  -s SIZE  vs  smart-bench rpc --size SIZE --oneway
# and the medians of each, with our echo round trip against twice UCX's
# latency figure (UCX reports half a round trip) and our one-way rate
# against its message rate.  BUSY processes spinning in a shell loop run
# meanwhile (the machine oversubscribed; 0: none).  Needs Debian's
# ucx-utils.
#   bench/rpc-vs-ucx.sh [BUILD_DIR] [ROUNDS] [SIZE] [BUSY]
# --help or -h prints this header and exits.
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -eu
case ${1:-} in -*) echo "${0##*/}: $1: unknown flag (see --help)" >&2; exit 2 ;; esac
B=${1:-build}
R=${2:-5}
S=${3:-32}
BUSY=${4:-0}
BIN=$B/bin/smart-bench
command -v ucx_perftest >/dev/null || { echo "needs ucx_perftest (apt-get install ucx-utils)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "no $BIN: build first" >&2; exit 2; }
export UCX_TLS=sm,self
port=$((20000 + $$ % 20000))
# fewer iterations for large messages: a round stays a few seconds
n=$((2000000 / (1 + S / 1024)))
ucx() { # test, field of the Final line (3: p50 latency, 9: overall msg rate)
	port=$((port + 1))
	ucx_perftest -p $port >/dev/null 2>&1 &
	sleep 0.5
	ucx_perftest -p $port localhost -t "$1" -s "$S" -n "$n" 2>/dev/null |
		awk -v f="$2" '/^Final:/ { print $f }'
	wait
}
busy=""
i=0
while [ $i -lt "$BUSY" ]; do
	i=$((i + 1))
	sh -c 'while :; do :; done' &
	busy="$busy $!"
done
trap '[ -z "$busy" ] || kill $busy 2>/dev/null' EXIT INT TERM
med() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
: > /tmp/rvu.$$
i=0
while [ $i -lt "$R" ]; do
	i=$((i + 1))
	echo "ucx_lat $(ucx ucp_am_lat 3)" >> /tmp/rvu.$$
	echo "our_rtt $($BIN rpc --size "$S" --seconds 2 --json 2>/dev/null | sed 's/.*"p50_us":\([0-9.]*\).*/\1/')" >> /tmp/rvu.$$
	echo "ucx_bw $(ucx ucp_am_bw 9)" >> /tmp/rvu.$$
	echo "our_bw $($BIN rpc --size "$S" --seconds 2 --oneway --json 2>/dev/null | sed 's/.*"mrps":\([0-9.]*\).*/\1/')" >> /tmp/rvu.$$
done
ul=$(awk '$1 == "ucx_lat" { print $2 }' /tmp/rvu.$$ | med)
ol=$(awk '$1 == "our_rtt" { print $2 }' /tmp/rvu.$$ | med)
ub=$(awk '$1 == "ucx_bw" { print $2 / 1e6 }' /tmp/rvu.$$ | med)
ob=$(awk '$1 == "our_bw" { print $2 }' /tmp/rvu.$$ | med)
echo "rounds $R, $BUSY busy loops (medians; every figure in /tmp/rvu.$$)"
awk -v ul="$ul" -v ol="$ol" -v ub="$ub" -v ob="$ob" -v s="$S" 'BEGIN {
	printf "echo %d B: UCX am_lat %.3f us (rtt %.3f)  ours rtt p50 %.3f us  ratio %.2fx\n", s, ul, 2 * ul, ol, 2 * ul / ol
	printf "one-way %d B: UCX am_bw %.3f M msg/s  ours %.3f M msg/s  ratio %.2fx\n", s, ub, ob, ob / ub }'
