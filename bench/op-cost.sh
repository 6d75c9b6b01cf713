#!/usr/bin/env bash
# op-cost.sh: instructions per one-sided op, clock-free (the op path's yardstick).
#
# Runs smart-perf under valgrind's callgrind, which counts instructions,
# not seconds: the same binary, flags and seed give the same count per op
# whatever else the machine does.  Only the threads that do the ops are
# counted, each from its first op to its last: callgrind keeps each
# thread's counts apart (--separate-threads=yes) and the benchmark kit
# zeroes a worker's when it starts its ops and dumps them (the part
# "ops") when it has done them (bench/kit/run.c); the sum over the
# workers is divided by the ops they report.  The other threads run by
# the clock, not by the ops (the lease keeper's renewals, the main
# thread's wait for the window's end): counted, their share per op grew
# as a loaded machine let fewer ops into the window's seconds (READ 1x8
# +4.8 at a tenth of the ops, more on CI's busy cores), so they are not.  The whole is the sum of every
# function's own count in the window; the layers are sums of functions'
# own counts, and "other" is what is left.  Each function's own (exclusive)
# instructions go to the layer of the file they were compiled from:
#   app        tools/, bench/ (smart-perf's task loop, its kit)
#   runtime    src/runtime/, include/smart/ (public inlines), Boost.Context's
#              jump_fcontext (the task switch): queueing, posting, the
#              wait, the wake and the completions' dispatch
#   services   src/services/ (leases, epochs, the allocator: on the op
#              path only what the runtime's hooks call)
#   transport  src/transport/ (shm: the NIC's work done by the CPU)
#   ds         src/ds/ (Smart-HT, Smart-BT: the applications' cases)
#   util       src/util/ (clock, RNG - the benchmark's random offsets
#              are drawn with it, framework and raw alike -, histogram)
#   other      libc, the loader, anything else
# The library's own part is runtime + services + transport + util (the RNG
# apart: the benchmark's); a data structure's own part is ds.
#
# The floor (bench/smart-floor.c, issue 27): smart-perf's READ 8 B work at
# the same depth and batch with nothing but the work - coroutines, a send
# ring, a poller that checks, copies and completes each WR, the dispatch -
# and no library; as the library, it signals only a sync's last WR
# (--signal-last: a completion per sync, not per WR, which at batch 8
# spared it seven completions and their dispatch, 150.5 -> 132.0 per op
# at 1 x 8).  One case per depth and batch, READ only ("read 8B 1xD
# floor", "... floor batch B"), run where raw is (--ops with read), on
# shm only: it is the CPU doing the NIC's work as shm does, so it is no
# floor of verbs (there the NIC does it; --transport verbs skips it).
# --no-floor skips it alone: raw and the floor answer different questions
# (the hardware's limit, the design's), and --no-raw keeps its meaning.
# Its own code counts as "app", not as a column of its own: the floor is
# one file with no library under it, so there is nothing to split it
# from, and a new column would change every row, the JSON's keys and the
# check that the layers add up to the whole (tests/tools/
# op_cost_ceiling.sh); its task switches (jump_fcontext) stay "runtime"
# as in every row, so the switch's share compares across rows, and its
# RNG stays "rng".  So for the floor, app + runtime + rng is its whole,
# and its "library" is Boost.Context's switch alone.  In time, the floor
# against the framework and raw: bench/floor-time.sh.
#
# The applications' cases run `smart-bench ycsb` (1 thread x 8 coroutines,
# 10000 keys of 16 B, 8-B values, Zipf 0.99, preloaded before the window):
#   ht-search  Smart-HT, read-only (YCSB-C): one search per op
#   ht-update  Smart-HT, update-only: one update in place per op
#   bt-lookup  Smart-BT, read-only, its index cache warm (the preload's
#              inserts fill it; the window's first lookups fill the rest)
# their "op" is the data structure's (a search, an update, a lookup), each
# several one-sided ops.
#
# Usage: bench/op-cost.sh [--bin DIR] [--seconds S] [--ops LIST]
#          [--depths LIST] [--batches LIST] [--apps LIST] [--no-raw]
#          [--no-floor] [--transport shm|verbs] [--json] [--ceiling N]
#   --ops LIST       read,write,cas [read,write,cas]
#   --depths LIST    coroutines per thread [1,8]
#   --batches LIST   ops per sync [1,8]
#   --apps LIST      ht-search,ht-update,bt-lookup or none
#                    [ht-search,ht-update,bt-lookup]
#   --no-raw         no raw case (smart-perf --raw)
#   --no-floor       no floor case (smart-floor; READ on shm only)
#   --transport T    the tools' transport [shm]; verbs needs an RDMA
#                    device (the Soft-RoCE guest: tests/vm/vm-run.sh
#                    bench/op-cost.sh --transport verbs ...); there the
#                    transport layer is src/transport/verbs and "other"
#                    holds libibverbs and its provider (the NIC's driver
#                    in user space: posting and polling, no kernel)
#   --ceiling N      exit 1 when a one-sided op costs more than N
#                    instructions per op (a regression guard)
# One line per case: op, size, threads x depth, batch, ops counted,
# instructions per op in all and per layer.  Exit 0, or 1 (a run failed,
# or the ceiling was passed), or 2 (a bad flag).
set -u
cd "$(dirname "$0")/.."

usage() {
	sed -n '/^# Usage:/,/^# One line/p' "$0" | sed 's/^# \{0,1\}//'
}
bad() { echo "op-cost.sh: $1: $2" >&2; exit 2; }

BIN=build/bin SECONDS_=1 OPS=read,write,cas DEPTHS=1,8 BATCHES=1,8 RAW=1 FLOOR=1
JSON=0 CEIL= APPS=ht-search,ht-update,bt-lookup TRANSPORT=shm
while [ $# -gt 0 ]; do
	case $1 in
	--help|-h) usage; exit 0 ;;
	--no-raw) RAW=0; shift; continue ;;
	--no-floor) FLOOR=0; shift; continue ;;
	--json) JSON=1; shift; continue ;;
	--bin|--seconds|--ops|--depths|--batches|--apps|--ceiling|--transport)
		[ $# -ge 2 ] || bad "$1" "needs a value" ;;
	*) bad "$1" "unknown flag (see --help)" ;;
	esac
	case $1 in
	--bin) BIN=$2 ;;
	--seconds) [[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
		bad "$1" "want seconds ('$2')"; SECONDS_=$2 ;;
	--ops) [[ $2 =~ ^(read|write|cas)(,(read|write|cas))*$ ]] ||
		bad "$1" "want read,write,cas ('$2')"; OPS=$2 ;;
	--depths) [[ $2 =~ ^[0-9]+(,[0-9]+)*$ ]] ||
		bad "$1" "want a list of numbers ('$2')"; DEPTHS=$2 ;;
	--batches) [[ $2 =~ ^[0-9]+(,[0-9]+)*$ ]] ||
		bad "$1" "want a list of numbers ('$2')"; BATCHES=$2 ;;
	--apps) [[ $2 =~ ^(none|(ht-search|ht-update|bt-lookup)(,(ht-search|ht-update|bt-lookup))*)$ ]] ||
		bad "$1" "want ht-search,ht-update,bt-lookup or none ('$2')"
		APPS=${2/none/} ;;
	--transport) [[ $2 =~ ^(shm|verbs)$ ]] ||
		bad "$1" "want shm or verbs ('$2')"; TRANSPORT=$2 ;;
	--ceiling) [[ $2 =~ ^[0-9]+$ ]] ||
		bad "$1" "want a number of instructions ('$2')"; CEIL=$2 ;;
	esac
	shift 2
done
[ -x "$BIN/smart-perf" ] || bad --bin "no smart-perf in $BIN (build first)"
[ -z "$APPS" ] || [ -x "$BIN/smart-bench" ] ||
	bad --bin "no smart-bench in $BIN (build first, or --apps none)"
# the floor models shm's READ: not of verbs, not of another op
[ "$TRANSPORT" = shm ] && [[ ,$OPS, == *,read,* ]] || FLOOR=0
[ $FLOOR = 0 ] || [ -x "$BIN/smart-floor" ] ||
	bad --bin "no smart-floor in $BIN (build first, or --no-floor)"
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
	{ echo "op-cost.sh: valgrind is not installed" \
		"(scripts/install-deps.sh installs it)" >&2; exit 1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# layers OUT: "total app runtime services transport util rng other ds" from
# a callgrind output file.  Each function's self (exclusive) cost is read
# from the file itself: cost lines under fn= (and fi=/fe= for inlined
# code, which goes to the file it was written in), a calls= line's next
# line being the call's inclusive cost, never summed.  The total is the
# sum of the self costs, the file's "totals:" (its "summary:", which
# callgrind_annotate prints as PROGRAM TOTALS, also counts threads that
# ended before the window: smart-bench's preload, 73 M instructions);
# each function's count goes to the layer of its file; other is the rest.
layers() {
	awk '
		function nm(v, tab,   id, rest) {
			if (match(v, /^\([0-9]+\)/)) {
				id = substr(v, RSTART, RLENGTH)
				rest = substr(v, RLENGTH + 2)
				if (rest != "") tab[id] = rest
				return tab[id]
			}
			return v
		}
		/^fl=/ { fl = nm(substr($0, 4), files); cur = fl; next }
		/^(fi|fe)=/ { cur = nm(substr($0, 4), files); next }
		/^fn=/ { fn = nm(substr($0, 4), fns); cur = fl; next }
		/^(cfi|cfl)=/ { nm(substr($0, 5), files); next }
		/^cfn=/ { nm(substr($0, 5), fns); next }
		/^calls=/ { call = 1; next }
		/^[0-9+*-]/ {
			if (call) { call = 0; next }
			n = split($0, a, " "); c[cur ":" fn] += a[n]; next
		}
		END {
			for (k in c) {
				f = k; n = c[k]; tot += n
				if (f ~ /jump_fcontext|make_fcontext|ontop_fcontext/) l = "runtime"
				else if (f ~ /(^|\/)(tools|bench)\//) l = "app"
				else if (f ~ /layer-include\/[a-z]+\/services\/|(^|\/)src\/services\//) l = "services"
				else if (f ~ /layer-include\/[a-z]+\/runtime\/|(^|\/)src\/runtime\/|(^|\/)include\/smart\//) l = "runtime"
				else if (f ~ /layer-include\/[a-z]+\/transport\/|(^|\/)src\/transport\//) l = "transport"
				else if (f ~ /layer-include\/[a-z]+\/ds\/|(^|\/)src\/ds\//) l = "ds"
				else if (f ~ /util\/rng\.c|util\/rng\.h/) l = "rng"
				else if (f ~ /layer-include\/[a-z]+\/util\/|(^|\/)src\/util\//) l = "util"
				else continue
				s[l] += n; t += n
			}
			printf "%d %d %d %d %d %d %d %d %d\n", tot, s["app"],
			       s["runtime"], s["services"], s["transport"],
			       s["util"], s["rng"], tot - t, s["ds"]
		}' "$1"
}

# run NAME KIND ARGS...: smart-perf (KIND lib or raw), smart-floor (KIND
# floor) or smart-bench ycsb (KIND app) under callgrind; prints the case's
# line (or JSON), 1 when the run failed
fails=0 over=0
run() {
	local name=$1 kind=$2 out=$TMP/cg.out ops cmd
	shift 2
	rm -f "$out" "$out".*
	if [ "$kind" = app ]; then
		cmd=("$BIN/smart-bench" ycsb --seconds "$SECONDS_" --seed 1
		     --transport "$TRANSPORT" --json "$@")
	elif [ "$kind" = floor ]; then # its own ring and poller: no library
		cmd=("$BIN/smart-floor" --seconds "$SECONDS_" --seed 1
		     --span 64M --signal-last --json "$@")
	elif [ "$kind" = raw ]; then # loads and stores: no transport
		cmd=("$BIN/smart-perf" --seconds "$SECONDS_" --seed 1
		     --span 64M --json "$@")
	else
		cmd=("$BIN/smart-perf" --seconds "$SECONDS_" --seed 1
		     --span 64M --transport "$TRANSPORT" --json "$@")
	fi
	# --fair-sched: valgrind runs one thread at a time, and a worker
	# that busy-polls would otherwise starve the lease keeper (fenced).
	# On a loaded machine (callgrind runs it ~50x slower) the keeper may
	# still miss its lease: such a run is lost, not miscounted, and is
	# run again (up to 3 times in all)
	local try rc=1
	for try in 1 2 3; do
		rm -f "$out" "$out".*
		valgrind --tool=callgrind --fair-sched=yes \
			--separate-threads=yes \
			--callgrind-out-file="$out" "${cmd[@]}" \
			>"$TMP/perf.json" 2>"$TMP/perf.err"
		rc=$?
		[ $rc = 0 ] && break
		grep -q 'fenced' "$TMP/perf.err" || break
		echo "op-cost.sh: $name: fenced (a starved keeper), again" >&2
	done
	if [ $rc != 0 ]; then
		echo "op-cost.sh: $name: ${cmd[0]##*/} failed:" >&2
		grep -v '^==' "$TMP/perf.err" >&2
		fails=$((fails + 1))
		return 1
	fi
	ops=$(grep -o '"ops":[0-9]*' "$TMP/perf.json" | cut -d: -f2)
	if [ -z "$ops" ] || [ "$ops" = 0 ]; then
		echo "op-cost.sh: $name: no op counted" >&2
		fails=$((fails + 1))
		return 1
	fi
	# the workers' parts "ops" (one file per thread and dump), summed
	local f parts=()
	for f in "$out".*; do
		grep -q '^desc: Trigger: Client Request: ops$' "$f" &&
			parts+=("$f")
	done
	t=0
	[ ${#parts[@]} -gt 0 ] &&
		read -r t app rt svc tp util rng other ds <<<"$(
			for f in "${parts[@]}"; do layers "$f"; done |
			awk '{ for (i = 1; i <= NF; i++) s[i] += $i }
			     END { for (i = 1; i <= 9; i++)
					printf "%d ", s[i]; print "" }')"
	if [ "${t:-0}" = 0 ]; then
		echo "op-cost.sh: $name: no worker's ops were dumped (a binary" \
			"built without valgrind's callgrind.h?)" >&2
		fails=$((fails + 1))
		return 1
	fi
	awk -v name="$name" -v ops="$ops" -v t="$t" -v app="$app" \
	    -v rt="$rt" -v svc="$svc" -v tp="$tp" -v util="$util" -v rng="$rng" \
	    -v other="$other" -v ds="$ds" -v json="$JSON" 'BEGIN {
		lib = rt + svc + tp + util
		if (json)
			printf "{\"case\":\"%s\",\"ops\":%d,\"per_op\":%.1f," \
			       "\"app\":%.1f,\"runtime\":%.1f,\"services\":%.1f," \
			       "\"transport\":%.1f,\"ds\":%.1f,\"util\":%.1f," \
			       "\"rng\":%.1f,\"other\":%.1f,\"library\":%.1f}\n",
			       name, ops, t / ops, app / ops, rt / ops, svc / ops,
			       tp / ops, ds / ops, util / ops, rng / ops,
			       other / ops, lib / ops
		else
			printf "%-26s %9d %8.1f %7.1f %7.1f %8.1f %9.1f %6.1f " \
			       "%6.1f %6.1f %6.1f %8.1f\n", name, ops, t / ops,
			       app / ops, rt / ops, svc / ops, tp / ops,
			       ds / ops, util / ops, rng / ops, other / ops,
			       lib / ops
	}'
	if [ -n "$CEIL" ] && [ "$kind" = lib ] &&
	   [ "$(( t / ops ))" -gt "$CEIL" ]; then
		echo "op-cost.sh: $name: $(( t / ops )) instructions per op," \
			"over the ceiling of $CEIL" >&2
		over=$((over + 1))
	fi
}

[ $JSON = 1 ] || printf "%-26s %9s %8s %7s %7s %8s %9s %6s %6s %6s %6s %8s\n" \
	case ops "instr/op" app runtime services transport ds util rng other \
	library
for op in ${OPS//,/ }; do
	for d in ${DEPTHS//,/ }; do
		for b in ${BATCHES//,/ }; do
			run "$op 8B 1x$d batch $b" lib --op "$op" \
				--size 8 --threads 1 --depth "$d" --batch "$b"
		done
		if [ $FLOOR = 1 ] && [ "$op" = read ]; then
			for b in ${BATCHES//,/ }; do
				n="read 8B 1x$d floor"
				[ "$b" = 1 ] || n="$n batch $b"
				run "$n" floor --depth "$d" --batch "$b"
			done
		fi
		[ $RAW = 1 ] && run "$op 8B 1x$d raw" raw \
			--op "$op" --size 8 --threads 1 --depth "$d" --raw
	done
done
for a in ${APPS//,/ }; do
	case $a in
	ht-search) run "ht search 1x8" app --ds ht --workload read-only \
		--keys 10000 --coros 8 --threads 1 ;;
	ht-update) run "ht update 1x8" app --ds ht --workload update-only \
		--keys 10000 --coros 8 --threads 1 ;;
	bt-lookup) run "bt lookup 1x8 (warm)" app --ds bt \
		--workload read-only --keys 10000 --coros 8 --threads 1 ;;
	esac
done
[ $fails = 0 ] && [ $over = 0 ] || exit 1
