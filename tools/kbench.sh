#!/usr/bin/env bash
# kbench.sh - the CPU kernels' GMAC/s per weight type, SIMD level and token
# count on this machine, as a table, a CSV and a plot.
#
#   tools/kbench.sh [THREADS] [-- strata-kbench args]
#
# Runs build/strata-kbench (see tools/kbench.c: W of 1024 x 4096 cycled
# through 512 MiB of copies so that every product reads memory; the median
# of 3 passes over 256 MiB) for the types of the shipped packs and the bench
# models at the SIMD levels this CPU has (AVX2, and AVX-512 with VNNI; the
# scalar reference only where neither is there), with 1, 8 and 64 tokens
# (decode, a speculative window, a prompt), and writes build/kbench/kbench.csv, kbench.md (one
# table per level: GMAC/s by type and token count, and decode's share of
# the read loop) and kbench.svg (GMAC/s by type, one bar per level and
# token count; ATTN: decode's attention, strata-kbench -T ATTN, one token).
# THREADS defaults to 1: per-core figures, which other work
# on the machine disturbs least. gnuplot comes from Debian when missing.
# Environment: STRATA_BUILD_DIR (default build/).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${STRATA_BUILD_DIR:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
die() { echo "kbench.sh: error: $*" >&2; exit 1; }

threads=1
if [ $# -gt 0 ] && [ "$1" != -- ]; then threads=$1; shift; fi
[ "${1:-}" = -- ] && shift
[[ $threads =~ ^[0-9]+$ ]] && [ "$threads" -ge 1 ] || die "THREADS must be a whole number >= 1, got '$threads'"
[ -x "$build/strata-kbench" ] || "$root/tools/build.sh" >&2 || die "tools/build.sh failed"
if ! command -v gnuplot >/dev/null; then
	sudo=()
	[ "$(id -u)" -eq 0 ] || sudo=(sudo)
	echo "kbench.sh: installing gnuplot-nox" >&2
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends gnuplot-nox >&2 ||
		die "cannot install gnuplot-nox (the table and CSV are still written)"
fi

out=$build/kbench
mkdir -p "$out"
csv=$out/kbench.csv
rm -f "$csv"
"$build/strata-kbench" -t "$threads" -n 1,8,64 -M 256 -r 3 -o "$csv" "$@" | tee "$out/kbench.txt"
# decode's attention (one token, 4 query heads on a KV head of 4096 x 64), unless
# the arguments chose the types
case " $* " in *" -T "*) ;; *)
	"$build/strata-kbench" -t "$threads" -T ATTN -M 256 -r 3 -o "$csv" | grep '^| ATTN ' | tee -a "$out/kbench.txt" ;;
esac

cpu=$(sed -n '2p' "$csv" | awk -F'"' '{ print $2 }')
read_gbs=$(sed -n '2p' "$csv" | awk -F, '{ print $9 }')
# One markdown table per level: rows = types, columns = tokens.
awk -F, -v cpu="$cpu" -v rd="$read_gbs" -v t="$threads" 'function cell(a, b, c) { return (a, b, c) in g ? sprintf("%.1f", g[a, b, c]) : "-" }
	NR == 1 { next }
	{ if (!($2 in seenl)) { seenl[$2] = 1; lv[++nl] = $2 }
	  if (!($1 in seent)) { seent[$1] = 1; ty[++nt] = $1 }
	  g[$1, $2, $6] = $7; gb[$1, $2, $6] = $8; rr[$1, $2, $6] = $9 }
	END {
		printf "%s, %d thread%s; read loop %.1f GB/s\n", cpu, t, (t > 1 ? "s" : ""), rd
		for (i = 1; i <= nl; i++) {
			printf "\n%s:\n\n| type | GMAC/s, 1 token | decode GB/s (share of the read loop) | 8 tokens | 64 tokens |\n|---|---:|---:|---:|---:|\n", lv[i]
			for (j = 1; j <= nt; j++)
				if ((ty[j], lv[i], 1) in g)
					printf "| %s | %.1f | %.1f (%.0f%%) | %s | %s |\n", ty[j], g[ty[j], lv[i], 1],
						gb[ty[j], lv[i], 1], 100 * gb[ty[j], lv[i], 1] / rr[ty[j], lv[i], 1],
						cell(ty[j], lv[i], 8), cell(ty[j], lv[i], 64)
		}
	}' "$csv" >"$out/kbench.md"

# The plot: per type, one bar per (level, tokens).
awk -F, 'function later(a, b,   x, y) { split(a, x, "/"); split(b, y, "/"); return x[1] != y[1] ? x[1] > y[1] : x[2] + 0 > y[2] + 0 }
	NR > 1 { if (!($1 in s)) { s[$1] = 1; ty[++n] = $1 } v[$1, $2 "/" $6] = $7; k[$2 "/" $6] = 1 }
	END { printf "type"; for (c in k) cols[++m] = c
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (later(cols[i], cols[j])) { x = cols[i]; cols[i] = cols[j]; cols[j] = x }
		for (i = 1; i <= m; i++) printf " %s", cols[i]; print ""
		for (r = 1; r <= n; r++) { printf "%s", ty[r]; for (i = 1; i <= m; i++) printf " %s", ((ty[r], cols[i]) in v ? v[ty[r], cols[i]] : "0"); print "" } }' \
	"$csv" >"$out/kbench.dat"
ncol=$(head -n 1 "$out/kbench.dat" | wc -w)
{
	echo "set terminal svg size 1100,520 dynamic background rgb 'white'"
	echo "set output '$out/kbench.svg'"
	echo "set title \"strata CPU kernels: GMAC/s per weight type ($cpu, $threads thread(s))\" noenhanced"
	echo "set style data histograms"
	echo "set style histogram clustered gap 1"
	echo "set style fill solid 0.8 border -1"
	echo "set ylabel 'GMAC/s (level/tokens)'"
	echo "set key outside right top noenhanced"
	echo "set grid ytics"
	echo "set xtics noenhanced"
	printf "plot '%s' using 2:xtic(1) title columnhead" "$out/kbench.dat"
	for i in $(seq 3 "$ncol"); do printf ", '' using %d title columnhead" "$i"; done
	echo
} >"$out/kbench.gp"
gnuplot "$out/kbench.gp"
echo
cat "$out/kbench.md"
echo
echo "wrote $csv, $out/kbench.md, $out/kbench.svg"
