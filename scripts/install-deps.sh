#!/usr/bin/env bash
# Install the Debian packages the build and tests need, if any is missing.
# Non-interactive; needs root (or sudo) only when something is missing.
# Usage: scripts/install-deps.sh [extra-package ...]   (--help: this text)
set -euo pipefail
# a flag is no package: --help used to run apt-get update and then
# "apt-get install --help", and say "done: --help"
for a in "$@"; do
	case $a in
	-h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	-*) echo "install-deps: $a: unknown flag (see --help)" >&2; exit 2 ;;
	esac
done

# libibverbs-dev: the verbs transport and its tests (run in the Soft-RoCE VM,
# whose own packages tests/vm/lib.sh installs on first use).
# libsodium-dev: the handshakes' HMAC-SHA-256 and nonces (docs/protocol.md).
# valgrind: bench/op-cost.sh counts instructions per op with callgrind
# (and its ctest, op_cost_ceiling).
# abigail-tools: abidw and abidiff, the ABI check against abi/libsmart.abi
# (ctest install_abi, make abi-baseline; docs/design.md §12).
# clang-format: the code's layout (.clang-format, scripts/format.sh; ctest
# style_format).
# python3, python3-yaml: the documents' checks (ctests docs_links and
# docs_citation).
# doxygen, help2man: the manual pages (section 3 and the HTML API reference
# from include/smart/*.h; section 1 from each tool's --help), target docs.
# ninja-build: make mutants' build (one mutant to the next recompiles only
# the files that use their switches: tests/mutants/run.sh).
pkgs=(gcc make cmake pkg-config libboost-context-dev libibverbs-dev
	libsodium-dev valgrind abigail-tools clang-format python3 python3-yaml
	doxygen help2man gnuplot-nox ninja-build "$@")
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" \
		|| missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || {
		echo "install-deps: need root to install: ${missing[*]}" >&2
		exit 1
	}
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# progress, not minutes of silence: each step says what it does, and
# apt-get's own line per package downloaded and set up comes through
echo "install-deps: [1/2] apt-get update (the package lists)"
$SUDO apt-get update -qq
echo "install-deps: [2/2] apt-get install ${#missing[@]} package(s) and what they need"
$SUDO apt-get install -y -q --no-install-recommends \
	-o Dpkg::Progress-Fancy=0 "${missing[@]}" |
	{ grep --line-buffered -E '^(Get:|Setting up|Unpacking)' || true; } |
	sed -u 's/^/install-deps:   /'
echo "install-deps: done: ${missing[*]}"
