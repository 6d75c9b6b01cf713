#!/usr/bin/env bash
# The library as a user gets it: install the build into a staging directory
# (DESTDIR, prefix /usr/local), build every examples/*.c against the staged
# tree with nothing but pkg-config's flags, once with libsmart.so and once
# with libsmart.a, start the staged smartd with a secret file, and run each
# binary against it: exit 0, counter.c must print "counter = 8" and
# register.c (the tutorial's) its dead writer taken over.
# The same examples are also built by a CMake project with
# find_package(smart 1.0) and the imported targets smart::shared and
# smart::smart, found through CMAKE_PREFIX_PATH in the staged tree; a
# request for another major must be refused.
#
# smart.pc says prefix=/usr/local while the files sit under the staging
# directory: pkg-config is told with --define-variable=prefix=... (README,
# "Using the library", gives this and PKG_CONFIG_SYSROOT_DIR).
# Under sanitizers the examples are built with the same -fsanitize flags,
# as the library's objects need their runtime.
# Usage: example.sh SOURCE_DIR BUILD_DIR CMAKE CC [SANITIZE]
set -u
usage="usage: example.sh SOURCE_DIR BUILD_DIR CMAKE CC [SANITIZE]"
src=${1:?$usage}
bld=${2:?$usage}
cmake=${3:?$usage}
cc=${4:?$usage}
san=${5:-}
command -v pkg-config >/dev/null || {
	echo "skip: pkg-config is not installed (scripts/install-deps.sh installs it)"
	exit 77
}
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; [ -n "${2:-}" ] && cat "$2"; fail=1; }

stage=$tmp/stage
prefix=$stage/usr/local
if DESTDIR=$stage "$cmake" --install "$bld" --prefix /usr/local \
	>"$tmp/out" 2>&1; then
	ok "cmake --install (DESTDIR)"
else
	bad "cmake --install (DESTDIR)" "$tmp/out"
	exit 1
fi
major=$(sed -n 's/^#define[ \t]*SMART_VERSION_MAJOR[ \t]*\([0-9]*\).*/\1/p' \
	"$src/include/smart/smart.h")
pcdir=$(dirname "$(find "$prefix" -name smart.pc | head -1)")
libdir=$(dirname "$pcdir")
for f in include/smart/smart.h include/smart/ops.h bin/smartd bin/smart-perf \
	bin/smart-ping bin/smart-bench; do
	[ -e "$prefix/$f" ] || bad "installed: no $f"
done
for f in libsmart.a libsmart.so libsmart.so.$major pkgconfig/smart.pc \
	cmake/smart/smartConfig.cmake cmake/smart/smartConfigVersion.cmake \
	cmake/smart/smartTargets.cmake; do
	[ -e "$libdir/$f" ] || bad "installed: no $libdir/$f"
done
[ -L "$libdir/libsmart.so.$major" ] &&
	[ -f "$(readlink -f "$libdir/libsmart.so.$major")" ] &&
	ok "installed files" ||
	bad "libsmart.so.$major is not a link to the library"

pc() {
	PKG_CONFIG_PATH=$pcdir pkg-config --define-variable=prefix="$prefix" \
		"$@" smart
}
if pc --exists && grep -q '^prefix=/usr/local$' "$pcdir/smart.pc"; then
	ok "smart.pc (prefix /usr/local, version $(pc --modversion))"
else
	bad "smart.pc: missing, or its prefix is not /usr/local"
fi
static_libs=$(pc --static --libs)
for l in -lboost_context -lsodium -pthread -lm; do
	case " $static_libs " in
	*" $l "*) ;;
	*) bad "pkg-config --static --libs smart lacks $l: $static_libs" ;;
	esac
done

flags=(-std=c11 -Wall -Wextra -Wpedantic -Werror -O2)
[ -n "$san" ] && flags+=(-fsanitize="$san" -fno-omit-frame-pointer)
apps=()
for c in "$src"/examples/*.c; do
	name=$(basename "$c" .c)
	# shellcheck disable=SC2046 # pkg-config's words are separate flags
	if "$cc" "${flags[@]}" -o "$tmp/$name-shared" "$c" \
		$(pc --cflags --libs) >"$tmp/out" 2>&1; then
		ok "$name: built with libsmart.so"
	else
		bad "$name: cc \$(pkg-config --cflags --libs smart)" "$tmp/out"
		continue
	fi
	# The archive first: then the -lsmart that follows is left unused.
	# shellcheck disable=SC2046
	if "$cc" "${flags[@]}" -o "$tmp/$name-static" "$c" $(pc --cflags) \
		"$libdir/libsmart.a" -Wl,--as-needed $(pc --static --libs) \
		>"$tmp/out" 2>&1; then
		ok "$name: built with libsmart.a"
	else
		bad "$name: cc libsmart.a \$(pkg-config --static --libs smart)" \
			"$tmp/out"
		continue
	fi
	readelf -d "$tmp/$name-shared" | grep -q "NEEDED.*\[libsmart\.so\.$major\]" ||
		bad "$name-shared does not load libsmart.so.$major"
	! readelf -d "$tmp/$name-static" | grep -q 'NEEDED.*libsmart' ||
		bad "$name-static still loads libsmart.so"
	apps+=("$name-shared" "$name-static")
done

# CMake: find_package(smart) in the staged tree, both imported targets.
app=$tmp/cmake-app
mkdir -p "$app"
{
	echo 'cmake_minimum_required(VERSION 3.16)'
	echo 'project(smart_examples C)'
	echo 'find_package(smart ${SMART_WANT} REQUIRED CONFIG)'
	echo 'set(CMAKE_C_STANDARD 11)'
	for c in "$src"/examples/*.c; do
		name=$(basename "$c" .c)
		echo "add_executable($name-cmake-shared $c)"
		echo "target_link_libraries($name-cmake-shared smart::shared)"
		echo "add_executable($name-cmake-static $c)"
		echo "target_link_libraries($name-cmake-static smart::smart)"
	done
} >"$app/CMakeLists.txt"
cmflags="-Wall -Wextra -Wpedantic -Werror -O2"
[ -n "$san" ] && cmflags+=" -fsanitize=$san -fno-omit-frame-pointer"
cmake_app() {	# cmake_app WANTED_VERSION BUILD_DIR
	"$cmake" -S "$app" -B "$2" -DSMART_WANT="$1" \
		-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
		-DCMAKE_C_FLAGS="$cmflags" -DCMAKE_EXE_LINKER_FLAGS="${san:+-fsanitize=$san}"
}
if cmake_app "$major.0" "$app/build" >"$tmp/out" 2>&1 &&
	"$cmake" --build "$app/build" >>"$tmp/out" 2>&1; then
	ok "find_package(smart $major.0): examples built with smart::shared and smart::smart"
	for c in "$src"/examples/*.c; do
		name=$(basename "$c" .c)
		for k in shared static; do
			cp "$app/build/$name-cmake-$k" "$tmp/" &&
				apps+=("$name-cmake-$k")
		done
		readelf -d "$tmp/$name-cmake-shared" |
			grep -q "NEEDED.*\[libsmart\.so\.$major\]" ||
			bad "$name-cmake-shared does not load libsmart.so.$major"
		! readelf -d "$tmp/$name-cmake-static" | grep -q 'NEEDED.*libsmart' ||
			bad "$name-cmake-static still loads libsmart.so"
	done
else
	bad "find_package(smart $major.0) and the examples' build" "$tmp/out"
fi
if cmake_app "$((major + 1)).0" "$app/build2" >"$tmp/out" 2>&1; then
	bad "find_package(smart $((major + 1)).0) accepted libsmart $major" "$tmp/out"
elif grep -q 'version' "$tmp/out"; then
	ok "find_package(smart $((major + 1)).0) refused (another major)"
else
	bad "find_package(smart $((major + 1)).0) failed, but not on the version" "$tmp/out"
fi

# The blade, from the staged tree, with a secret file as the README makes it.
head -c 32 /dev/urandom | base64 >"$tmp/secret"
chmod 600 "$tmp/secret"
"$prefix/bin/smartd" --size 64M --listen 127.0.0.1:0 \
	--secret-file "$tmp/secret" >"$tmp/smartd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	grep -q "serving" "$tmp/smartd.log" && break
	sleep 0.1
done
addr=$(sed -n 's/.* on \([0-9.]*:[0-9]*\) .*/\1/p' "$tmp/smartd.log")
if [ -z "$addr" ]; then
	echo "FAIL the staged smartd did not start:"
	cat "$tmp/smartd.log"
	exit 1
fi
ok "staged smartd on $addr"

for app in "${apps[@]}"; do
	if SMART_SECRET_FILE=$tmp/secret LD_LIBRARY_PATH=$libdir \
		timeout 30 "$tmp/$app" "$addr" >"$tmp/out" 2>&1; then
		case $app in
		counter-*)
			if [ "$(cat "$tmp/out")" = "counter = 8" ]; then
				ok "$app: counter = 8"
			else
				bad "$app: expected exactly \"counter = 8\"" \
					"$tmp/out"
			fi ;;
		register-*) # the tutorial's (docs/tutorial.md): its dead
			# writer's torn head seen and its lock taken over
			if grep -Eq '^register: seq 802, torn reads [1-9][0-9]*, takeovers 1, retired 801$' "$tmp/out"; then
				ok "$app: $(cat "$tmp/out")"
			else
				bad "$app: expected seq 802, torn reads > 0, takeovers 1" \
					"$tmp/out"
			fi ;;
		*) ok "$app: exit 0" ;;
		esac
	else
		bad "$app $addr: status $?" "$tmp/out"
	fi
done
# Without the secret the example reports the refusal and exits 1.
if [ ${#apps[@]} -gt 0 ]; then
	SMART_SECRET_FILE= LD_LIBRARY_PATH=$libdir timeout 30 \
		"$tmp/${apps[0]}" "$addr" >"$tmp/out" 2>&1
	rc=$?
	if [ $rc -eq 1 ] && grep -q "smart_ctx_connect: " "$tmp/out"; then
		ok "${apps[0]} without a secret: exit 1, error printed"
	else
		bad "${apps[0]} without a secret: status $rc" "$tmp/out"
	fi
fi

kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
[ $rc -eq 0 ] && ok "smartd stopped cleanly" || bad "smartd exit $rc"
[ $fail -eq 0 ] && echo "install example: all passed" || echo "install example: FAILED"
exit $fail
