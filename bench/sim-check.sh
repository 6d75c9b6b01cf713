#!/usr/bin/env bash
# Judge the simulator's predictions (bench/sim-figures.sh's CSVs) against
# the criteria of docs/sim.md §9.1, which were committed before the runs.
# Prints one line per criterion: met, NOT met, or not run (a point it
# needs is missing).  Every number is SIMULATED.
#
# Usage: bench/sim-check.sh [DIR]   (default bench/results/sim)
# --help or -h prints this header and exits.
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-bench/results/sim}
# a flag or a typo'd DIR used to judge nothing: every line "not run", exit 0
case $DIR in -*) echo "sim-check.sh: $DIR: unknown flag (see --help)" >&2; exit 2 ;; esac
[ $# -le 1 ] || { echo "sim-check.sh: one DIR at most (see --help)" >&2; exit 2; }
[ -d "$DIR" ] || { echo "sim-check.sh: $DIR: no such directory" >&2; exit 2; }
exec python3 - "$DIR" <<'EOF'
import csv, os, sys

d = sys.argv[1]
CAP = 110.0


def load(name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return list(csv.DictReader(f))


def pick(rows, col, **kw):
    """{x: float(row[col])} of the rows matching kw, keyed by the one
    remaining numeric column named in kw['by']."""
    by = kw.pop("by")
    out = {}
    for r in rows:
        if all(r[k] == str(v) for k, v in kw.items()):
            out[int(r[by])] = float(r[col])
    return out


def say(name, ok, what):
    tag = "not run" if ok is None else ("met" if ok else "NOT met")
    print(f"{name:3} {tag:8} {what}")


def need(*vals):
    return all(v is not None for v in vals)


f13a = load("fig13a.csv")
qp = pick(f13a, "mops", series="qp", by="threads")
db = pick(f13a, "mops", series="db", by="threads")
th = pick(f13a, "mops", series="db-throt", by="threads")
hi = {t: v for t, v in th.items() if t >= 56}
say("A1", all(v >= 0.95 * CAP for v in hi.values()) if hi else None,
    "throttled >= 104.5 Mops from 56 threads: " +
    ", ".join(f"{t}: {v:.1f}" for t, v in sorted(hi.items())))
say("A2", db[96] <= 0.8 * CAP if 96 in db else None,
    f"per-doorbell unthrottled at 96 <= 88: {db.get(96, float('nan')):.1f}")
if qp:
    peak = max(qp, key=qp.get)
    say("A3", 16 <= peak <= 32, f"per-thread QP peaks at {peak} threads "
        f"({qp[peak]:.1f} Mops; 96: {qp.get(96, float('nan')):.1f})")
else:
    say("A3", None, "per-thread QP")
common = sorted(set(qp) & set(db))
if common:
    r = {t: db[t] / qp[t] for t in common}
    tmax = max(r, key=r.get)
    ok = (1 not in r or 0.9 <= r[1] <= 1.1) and 3.0 <= r[tmax] <= 6.5
    say("A4", ok, "per-doorbell / per-thread QP: " +
        ", ".join(f"{t}: {v:.2f}" for t, v in sorted(r.items())) +
        f"; largest {r[tmax]:.2f} at {tmax} (paper text 1.0-4.3x)")
else:
    say("A4", None, "per-doorbell / per-thread QP")

f13b = load("fig13b.csv")
bdb = pick(f13b, "mops", series="db", by="depth")
bth = pick(f13b, "mops", series="db-throt", by="depth")
big = {b: v for b, v in bth.items() if b >= 8}
say("B1", all(v >= 0.95 * CAP for v in big.values()) if big else None,
    "throttled >= 104.5 for batch >= 8: " +
    ", ".join(f"{b}: {v:.1f}" for b, v in sorted(big.items())))
say("B2", bdb[32] <= 0.6 * CAP if 32 in bdb else None,
    f"unthrottled at batch 32 <= 66: {bdb.get(32, float('nan')):.1f}")
if 32 in bdb and 32 in bth:
    r = bth[32] / bdb[32]
    say("B3", 1.6 <= r <= 2.5, f"throttled / unthrottled at 32: {r:.2f} "
        f"({bth[32]:.1f} / {bdb[32]:.1f}; paper 2.0x: 109 / 55)")
else:
    say("B3", None, "throttled / unthrottled at 32")

t1 = load("table1.csv")
tdb = pick(t1, "mops", series="db", by="interval_ms")
tth = pick(t1, "mops", series="db-throt", by="interval_ms")
both = sorted(set(tdb) & set(tth))
if both:
    say("T1", all(tth[i] >= 1.2 * tdb[i] for i in both),
        "throttled / unthrottled: " + ", ".join(
            f"{i} ms: {tth[i]:.1f} / {tdb[i]:.1f} = {tth[i] / tdb[i]:.2f}"
            for i in both))
else:
    say("T1", None, "throttled / unthrottled")
if 8 in tth and len(tth) > 1:
    last = max(tth)
    say("T2", tth[last] >= 0.95 * tth[8],
        f"throttled at {last} ms {tth[last]:.1f} vs 8 ms {tth[8]:.1f}")
else:
    say("T2", None, "throttled row over intervals (needs 8 ms and another)")
say("T3", all(v <= 0.75 * CAP for v in tdb.values()) if tdb else None,
    "unthrottled <= 82.5 at every interval: " +
    ", ".join(f"{i}: {v:.1f}" for i, v in sorted(tdb.items())))

f14 = load("fig14.csv")
n = pick(f14, "mops", series="None", by="threads")
c = pick(f14, "mops", series="CA", by="threads")
nr = pick(f14, "retries_per_op", series="None", by="threads")
cr = pick(f14, "retries_per_op", series="CA", by="threads")
nz = pick(f14, "zero_retry_share", series="None", by="threads")
cz = pick(f14, "zero_retry_share", series="CA", by="threads")
if n and 96 in n:
    peak = max(n, key=n.get)
    say("C1", peak in (8, 16) and n[96] <= n[peak] / 5,
        f"None peaks at {peak} ({n[peak]:.2f} Mops), 96: {n[96]:.2f} "
        f"({n[96] / n[peak]:.2f} of peak)")
else:
    say("C1", None, "None's curve")
say("C2", 1 + nr[96] >= 6 if 96 in nr else None,
    f"None attempts per op at 96 >= 6: {1 + nr.get(96, float('nan')):.2f} "
    "(paper text: 11.5 retries)")
say("C3", 1 + cr[96] <= 2 if 96 in cr else None,
    f"all-CA attempts per op at 96 <= 2: {1 + cr.get(96, float('nan')):.2f} "
    "(paper 1.1-1.4)")
if 96 in c and 96 in n:
    top = max(v for t, v in c.items() if t >= 16)
    say("C4", c[96] >= 0.7 * top and c[96] >= 2 * n[96],
        f"all-CA at 96 {c[96]:.2f} vs its peak over 16-96 {top:.2f}, "
        f"vs None {n[96]:.2f} ({c[96] / n[96]:.2f}x)")
else:
    say("C4", None, "all-CA at 96")
if 96 in cz and 96 in nz:
    say("C5", cz[96] >= 0.8 and nz[96] <= 0.5,
        f"zero-retry share at 96: all-CA {cz[96]:.3f} (>= 0.8; paper 0.91), "
        f"None {nz[96]:.3f} (<= 0.5)")
else:
    say("C5", None, "zero-retry share at 96")
bo = pick(f14, "mops", series="Backoff", by="threads")
dl = pick(f14, "mops", series="DynLimit", by="threads")
if 96 in bo and 96 in dl and 96 in c:
    say("C6", bo[96] < dl[96] < c[96],
        f"Mops at 96: Backoff {bo[96]:.2f} < DynLimit {dl[96]:.2f} < "
        f"CoroThrot (all-CA) {c[96]:.2f}")
else:
    say("C6", None, "Backoff < DynLimit < CoroThrot at 96 (series "
        "Backoff, DynLimit, CA)")

f7 = load("fig7.csv")
y = {w: pick(f7, "mops", workload=w, by="threads") for w in "abc"}


def never_falls(s):
    ts = sorted(s)
    return all(s[b] >= 0.9 * s[a] for a, b in zip(ts, ts[1:]))


if len(y["b"]) > 1 and len(y["c"]) > 1:
    say("Y1", never_falls(y["b"]) and never_falls(y["c"]),
        "read-heavy " + ", ".join(f"{t}: {v:.2f}" for t, v in
                                   sorted(y["b"].items())) +
        "; read-only " + ", ".join(f"{t}: {v:.2f}" for t, v in
                                    sorted(y["c"].items())))
else:
    say("Y1", None, "read curves")
if all(96 in y[w] for w in "abc"):
    a, b, cc = (y[w][96] for w in "abc")
    say("Y2", cc >= b >= a and 0.75 <= b / cc <= 1.0,
        f"at 96: C {cc:.2f} >= B {b:.2f} >= A {a:.2f}, B/C {b / cc:.2f} "
        "(paper 0.89)")
    pa = max(y["a"], key=y["a"].get)
    say("Y3", None if len(y["a"]) < 2 else pa >= 32 and a >= 0.7 * y["a"][pa] and
        0.1 <= y["a"][pa] / cc <= 0.5,
        f"write-heavy peaks at {pa} ({y['a'][pa]:.2f}), 96: {a:.2f}; "
        f"peak / read-only at 96 {y['a'][pa] / cc:.2f} (paper 0.24)")
else:
    say("Y2", None, "the three workloads at 96")
    say("Y3", None, "write-heavy")
EOF
