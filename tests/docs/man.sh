#!/usr/bin/env bash
# The manual pages as a user gets them (ctest docs_man): a staged install
# (DESTDIR) holds section 1 for every tool and section 3 for the headers and
# their functions (and nothing else: no page named after a struct member),
# and the HTML reference; man -l renders smartd(1) with its
# flags and smart_faa(3) with its header's text.  Skipped (77) when the
# target docs was not built (a build of selected targets) or man is absent.
# Usage: man.sh BUILD_DIR CMAKE
set -u
bld=${1:?usage: man.sh BUILD_DIR CMAKE}
cmake=${2:?usage: man.sh BUILD_DIR CMAKE}
[ -f "$bld/doc/api.stamp" ] || {
	echo "skip: the target docs is not built (cmake --build $bld --target docs)"
	exit 77
}
command -v man >/dev/null || { echo "skip: no man"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
DESTDIR=$tmp "$cmake" --install "$bld" --prefix /usr/local >"$tmp/log" 2>&1 ||
	{ cat "$tmp/log"; exit 1; }
mandir=$tmp/usr/local/share/man
for t in smartd smart-perf smart-ping smart-stat smart-bench; do
	[ -s "$mandir/man1/$t.1" ] || { echo "FAIL no man1/$t.1"; fail=1; }
done
for p in ops.h.3 smart_faa.3 smart_ctx_create.3 smart_epoch_retire.3; do
	[ -s "$mandir/man3/$p" ] || { echo "FAIL no man3/$p"; fail=1; }
done
# section 3 holds public names and headers only: a struct member's link
# page ("free", "index", "rpc") shadowed libc's page of that name, and
# the directory page was named after the build's source path
other=$(ls "$mandir/man3" | grep -Ev '^(smart_.*|SMART_.*|[a-z_]+\.h)\.3$')
if [ -n "$other" ]; then
	echo "FAIL man3 pages of no public name ($(echo "$other" | wc -l)):" \
		$(echo "$other" | head -8)
	fail=1
fi
[ -s "$tmp/usr/local/share/doc/smart/html/index.html" ] ||
	{ echo "FAIL no html/index.html"; fail=1; }
echo "installed: $(ls "$mandir/man1" | wc -l) pages in man1," \
	"$(ls "$mandir/man3" | wc -l) in man3"
MANWIDTH=80 man -l "$mandir/man1/smartd.1" 2>/dev/null >"$tmp/smartd.txt"
grep -q -- '--size' "$tmp/smartd.txt" && grep -q 'memory blade' "$tmp/smartd.txt" ||
	{ echo "FAIL man -l smartd.1:"; head -20 "$tmp/smartd.txt"; fail=1; }
# smart_faa.3 is a ".so man3/ops.h.3" link, resolved from the man root.
(cd "$mandir" && MANWIDTH=80 man -l man3/smart_faa.3) 2>/dev/null >"$tmp/faa.txt"
grep -q 'Fetch-and-add' "$tmp/faa.txt" ||
	{ echo "FAIL man -l smart_faa.3:"; head -20 "$tmp/faa.txt"; fail=1; }
[ $fail -eq 0 ] && echo "docs_man: all passed"
exit $fail
