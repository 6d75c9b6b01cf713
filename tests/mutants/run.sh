#!/usr/bin/env bash
# make mutants (docs/design.md §10.4): build each mutant of
# tests/mutants/mutants.txt (one guard removed, src/util/mutant.h) and run
# the tests listed for it; a mutant is caught when one of them fails.  Exit
# 0 only when every mutant was built and caught; a mutant that builds but
# survives, or a build that fails, is reported and makes the run fail.
#
# A test named like a shell test (tests/<suite>/test_x.sh, for the tools'
# own mutants, TOOL_*: tools/lib/tool_mutant.h) runs that script on the
# mutant build's bin/ after building the tools.
# Usage: tests/mutants/run.sh [-B BUILD_DIR] [-j LANES] [NAME...]
# (default: all mutants, one lane)
# A test named binary:case runs that case alone (`binary =case`,
# tests/harness/test.h), one named binary every case of it; a case that
# the binary does not list makes the mutant BROKEN, never caught.
# One build directory serves every mutant in turn (only the library and the
# listed tests are rebuilt).  Each test run has a 300-s timeout, so a mutant
# that makes a test hang counts as caught, and says so.
# Lanes (-j N, `make mutants` runs 2): the mutants dealt round-robin to N
# runs of this script at once, each in a build directory of its own
# (BUILD_DIR-laneK) with nproc/N build jobs.  A mutant's build and its
# tests took turns on the cores, and many tests mostly wait (a deadline
# that a mutant makes them reach, a peer's answer): one lane's tests
# overlap the other's build.  Each lane's lines carry its number; the
# totals and the report are every lane's.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$src/build-mutants
lanes=1
while [ $# -gt 0 ]; do
	case $1 in
	-B) build=$2; shift 2 ;;
	-j) lanes=$2; shift 2 ;;
	-h | --help)
		sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"
		exit 0 ;;
	*) break ;;
	esac
done
case $lanes in
'' | *[!0-9]* | 0) echo "mutants: -j wants a number of lanes >= 1, not '$lanes'" >&2; exit 2 ;;
esac
# absolute: the tests run from inside it, and a shell test gets its bin/
# by this path (relative, as `make mutants` passes it, the scripts found
# no binaries there, failed, and every mutant only they check counted as
# caught)
mkdir -p "$build" && build=$(cd "$build" && pwd) || exit 2
list=$here/mutants.txt
jobs=${SMART_MUTANT_JOBS:-$(nproc)}
# Ninja when there is one (and the directory is not a Makefile build):
# it rebuilds an object whose command line changed, so a mutant's switch
# goes to the files that use it alone (CMakeLists.txt,
# smart_mutant_users) and the next mutant recompiles those, not a layer
gen=()
if command -v ninja >/dev/null &&
	! grep -qs '^CMAKE_GENERATOR:INTERNAL=Unix Makefiles' "$build/CMakeCache.txt"; then
	gen=(-G Ninja)
fi

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	mapfile -t names < <(awk '!/^#/ && NF { print $1 }' "$list")
fi

# Deal the mutants to the lanes, run them at once, add up what they say.
run_lanes() {
	local k i pids=() per=$((($(nproc) + lanes - 1) / lanes))
	local caught=0 survived=0 broken=0 c v b out
	for ((k = 0; k < lanes; k++)); do
		local sub=()
		for i in "${!names[@]}"; do
			[ $((i % lanes)) -eq $k ] && sub+=("${names[i]}")
		done
		[ ${#sub[@]} -eq 0 ] && continue
		out=$build-lane$k.out
		(SMART_MUTANT_JOBS=$per "$0" -B "$build-lane$k" "${sub[@]}" 2>&1 |
			tee "$out" | sed -u "s/^/[lane $k] /") &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i"
	done
	echo
	for ((k = 0; k < lanes; k++)); do
		out=$build-lane$k.out
		[ -f "$out" ] || continue
		read -r c v b < <(sed -n 's/^mutants: \([0-9]*\) caught, \([0-9]*\) survived, \([0-9]*\) broken$/\1 \2 \3/p' "$out")
		if [ -z "${c:-}" ]; then
			echo "mutants: lane $k ended without its totals (see $out)" >&2
			broken=$((broken + 1))
			continue
		fi
		caught=$((caught + c)) survived=$((survived + v)) broken=$((broken + b))
	done
	echo "mutants: $caught caught, $survived survived, $broken broken ($lanes lanes)"
	for ((k = 0; k < lanes; k++)); do
		[ -f "$build-lane$k.out" ] &&
			sed -n '/^mutants: [0-9]/,$p' "$build-lane$k.out" | sed 1d
	done
	[ $survived -eq 0 ] && [ $broken -eq 0 ]
}
if [ "$lanes" -gt 1 ] && [ ${#names[@]} -gt 1 ]; then
	rm -f "$build"-lane*.out
	run_lanes
	exit
fi

# the script of a shell test named NAME, if there is one
shell_test() {
	local f
	for f in "$src"/tests/*/"$1.sh"; do
		[ -f "$f" ] && echo "$f" && return 0
	done
	return 1
}

caught=0 survived=0 broken=0
declare -a report
for name in "${names[@]}"; do
	line=$(awk -v n="$name" '$1 == n' "$list")
	if [ -z "$line" ]; then
		echo "mutants: no mutant $name in $list" >&2
		exit 2
	fi
	# the switch must exist in the code, or the "mutant" is the original
	if ! grep -rq "SMART_M_$name\b" "$src/src" "$src/tools" "$src/bench"; then
		report+=("BROKEN   $name: SMART_M_$name is used nowhere in src/, tools/, bench/")
		broken=$((broken + 1))
		continue
	fi
	read -r -a tests <<<"$(echo "$line" | awk '{ for (i = 2; i <= NF && $i ~ /^test_/; i++) printf "%s ", $i }')"
	targets=$(for t in "${tests[@]}"; do
		b=${t%%:*}
		if shell_test "$b" >/dev/null; then
			echo smartd smart-bench smart-perf smart-ping smart-stat
		else
			echo "$b"
		fi
	done | tr ' ' '\n' | sort -u | tr '\n' ' ')
	echo "== mutant $name: building $targets"
	if ! cmake "${gen[@]}" -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DSMART_MUTANT="$name" >"$build.log" 2>&1 ||
	   ! cmake --build "$build" -j"$jobs" --target $targets >>"$build.log" 2>&1; then
		tail -20 "$build.log"
		report+=("BROKEN   $name: the build failed (see $build.log)")
		broken=$((broken + 1))
		continue
	fi
	# a case named must exist: "=CASE" of a missing one fails, which
	# would count as caught
	missing=
	for t in "${tests[@]}"; do
		bin=${t%%:*}
		[ "$bin" = "$t" ] && continue
		"$build/bin/$bin" --list 2>/dev/null | grep -qx -- "${t#*:}" ||
			missing+=" $t"
	done
	if [ -n "$missing" ]; then
		report+=("BROKEN   $name: no such case:$missing")
		broken=$((broken + 1))
		continue
	fi
	verdict=survived why=
	for t in "${tests[@]}"; do
		bin=${t%%:*} case=
		[ "$bin" != "$t" ] && case="=${t#*:}"
		echo "-- $name: $bin ${case:-(all cases)}"
		if sh=$(shell_test "$bin"); then
			# a script that finds no tools fails for that alone
			if [ ! -x "$build/bin/smart-bench" ]; then
				verdict=broken
				why="no $build/bin/smart-bench for $bin"
				break
			fi
			(cd "$build" && timeout 300 bash "$sh" "$build/bin") >"$build/mutant.out" 2>&1
		else
			(cd "$build" && timeout 300 "bin/$bin" $case) >"$build/mutant.out" 2>&1
		fi
		rc=$?
		tail -3 "$build/mutant.out" | sed 's/^/   | /'
		if [ $rc -eq 77 ]; then
			why="$bin skipped itself"
		elif [ $rc -eq 124 ]; then
			verdict=caught why="$bin hung (timeout)"
			break
		elif [ $rc -ne 0 ]; then
			verdict=caught why="$t failed ($rc)"
			break
		fi
	done
	if [ $verdict = broken ]; then
		report+=("BROKEN   $name: $why")
		broken=$((broken + 1))
	elif [ $verdict = caught ]; then
		report+=("caught   $name: $why")
		caught=$((caught + 1))
	else
		report+=("SURVIVED $name: ${tests[*]} passed${why:+ ($why)}")
		survived=$((survived + 1))
	fi
done
# leave the directory as a plain build, not a mutant one
cmake -S "$src" -B "$build" -DSMART_MUTANT= >/dev/null 2>&1

echo
echo "mutants: $caught caught, $survived survived, $broken broken"
printf '  %s\n' "${report[@]}"
[ $survived -eq 0 ] && [ $broken -eq 0 ]
