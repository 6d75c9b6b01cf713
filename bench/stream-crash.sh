#!/bin/sh
# A stream of several executors under kill -9 at random moments
# (docs/stream.md §11): ROUNDS rounds of test_stream_cuts' `random` case,
# each 2 or 3 executor processes running one of four queries (tumbling
# MAX, sliding SUM over Pareto keys, sessions over Zipf keys, NB8's
# join) with checkpoints on; one of them killed with SIGKILL after a
# seeded delay within the run, wherever it is (pushing, shipping, inside a checkpoint
# write, after its input ended); the survivors fail with SMART_ECONN, the
# area is rolled back to the newest cut every executor holds, a new run
# finishes, and the committed output must equal the sequential reference.
# Prints one line a round and the count of rounds with a death; exit 1 on
# any difference.
#   bench/stream-crash.sh [BUILD_DIR] [ROUNDS] [SEED]
# --help or -h prints this header and exits.
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -eu
case ${1:-} in -*) echo "${0##*/}: $1: unknown flag (see --help)" >&2; exit 2 ;; esac
B=${1:-build}
R=${2:-30}
SEED=${3:-1}
BIN=$B/bin/test_stream_cuts
[ -x "$BIN" ] || { echo "no $BIN: build first" >&2; exit 2; }
case $R$SEED in *[!0-9]*) echo "${0##*/}: ROUNDS and SEED are numbers" >&2; exit 2 ;; esac
SMART_CRASH_ROUNDS=$R SMART_CRASH_SEED=$SEED exec "$BIN" random
