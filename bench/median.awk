# median.awk: med(a, n), the median of a[1..n] (sorted in place, by
# insertion: the benchmarks' scripts take medians of a few rounds), for
# awk programs that start with this file's text (any awk: mawk has no -i
# or -e, so the scripts prepend it, bench/floor-time.sh,
# bench/ycsb-bound.sh).
function med(a, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
