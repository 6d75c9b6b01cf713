#!/usr/bin/env bash
# Every test tests/mutants/mutants.txt names exists: a binary of BIN_DIR,
# and for binary:case a case that `binary --list` prints.  A mutant's test
# runs its case by exact name (tests/mutants/run.sh: `binary =case`),
# which fails for a case renamed or moved; run.sh calls such a mutant
# broken, and this check (a ctest entry) finds it without building one.
# Usage: check-cases.sh BIN_DIR
set -u
bin=${1:?usage: check-cases.sh BIN_DIR}
list=$(dirname "$0")/mutants.txt
bad=0 n=0
for t in $(awk '!/^#/ && NF { for (i = 2; i <= NF && $i ~ /^test_/; i++) print $i }' "$list" | sort -u); do
	b=${t%%:*}
	# a build without libibverbs has no verbs tests (CMakeLists.txt)
	case $b in *verbs*) [ -x "$bin/$b" ] || continue ;; esac
	n=$((n + 1))
	# a shell test (tests/<suite>/test_*.sh, the tools' guards)
	if [ "$b" = "$t" ] && ls "$(dirname "$0")"/../*/"$b.sh" >/dev/null 2>&1; then
		continue
	fi
	if [ ! -x "$bin/$b" ]; then
		echo "mutants.txt names $t: no binary $bin/$b"
		bad=$((bad + 1))
	elif [ "$b" != "$t" ] && ! "$bin/$b" --list | grep -qx -- "${t#*:}"; then
		echo "mutants.txt names $t: $b has no case ${t#*:}"
		bad=$((bad + 1))
	fi
done
echo "$n tests named by mutants.txt, $bad missing"
[ $bad -eq 0 ]
