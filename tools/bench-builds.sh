#!/usr/bin/env bash
# bench-builds.sh - one strata build against another on this machine, now.
#
#   tools/bench-builds.sh BASE_BENCH NEW_BENCH MODEL [ROUNDS] [-- strata-bench args]
#
# For a change that must not slow strata down: BASE_BENCH and NEW_BENCH are
# two strata-bench binaries (a worktree of the commit before the change, and
# this build). Each round runs both on MODEL with the same arguments
# (default: -t 2 -p 512 -n 64 -r 3), swapping which goes first, and the table
# gives, per test, each side's median over the rounds and the median of the
# per-round ratios new/base, with the CPU's ISA and each round's load average:
# the machine drifts more between minutes than a build changes, so only
# ratios measured side by side mean anything.
set -euo pipefail

die() { echo "bench-builds.sh: error: $*" >&2; exit 1; }
say() { echo "bench-builds.sh: $*" >&2; }

[ $# -ge 3 ] || { sed -n '4,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
base=$1 new=$2 model=$3
shift 3
rounds=3
if [ $# -gt 0 ] && [ "$1" != -- ]; then rounds=$1; shift; fi
[ "${1:-}" = -- ] && shift
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-t 2 -p 512 -n 64 -r 3)
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive whole number, got '$rounds'"
for b in "$base" "$new"; do [ -x "$b" ] || die "'$b' is not an executable strata-bench"; done
[ -r "$model" ] || die "cannot read model '$model'"

isa=$(grep -m1 -o -w 'avx512f' /proc/cpuinfo >/dev/null && echo avx512 ||
	{ grep -q -w avx2 /proc/cpuinfo && echo avx2 || echo scalar; })
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "test median" for each table row of strata-bench's output.
rows() { awk -F'|' '$2 ~ /^ *(pp|tg)[0-9]+( @ d[0-9]+)? *$/ { gsub(/ /, "", $2); gsub(/ /, "", $4); print $2, $4 }' "$1"; }

side() { # side NAME BIN ROUND
	timeout --kill-after=10 1800 "$2" -m "$model" "${args[@]}" >"$tmp/$1$3" 2>"$tmp/$1$3.err" ||
		{ cat "$tmp/$1$3.err" >&2; die "$1 ($2) failed in round $3"; }
}

say "cpu: ${cpu:-unknown}, $(nproc) CPUs, $isa; model $model; strata-bench ${args[*]}; $rounds rounds"
for r in $(seq 1 "$rounds"); do
	load=$(cut -d' ' -f1 /proc/loadavg)
	if [ $((r % 2)) = 1 ]; then side base "$base" "$r"; side new "$new" "$r"
	else side new "$new" "$r"; side base "$base" "$r"; fi
	rows "$tmp/base$r" >"$tmp/b"
	rows "$tmp/new$r" >"$tmp/n"
	awk -v r="$r" -v l="$load" 'NR == FNR { b[$1] = $2; next }
		($1 in b) { printf "%s %s %s %s %s\n", r, $1, b[$1], $2, l }' "$tmp/b" "$tmp/n" >>"$tmp/res"
	awk -v r="$r" '$1 == r { printf "bench-builds.sh: round %s %-6s base %9.1f  new %9.1f tok/s  new/base %.3f  (load %s)\n",
		r, $2, $3, $4, $4 / $3, $5 }' "$tmp/res" >&2
done
[ -s "$tmp/res" ] || die "strata-bench printed no pp/tg rows"
echo "| model | test | base tok/s | new tok/s | new/base per round | median ratio | load | ISA |"
echo "|---|---|---:|---:|---|---:|---|---|"
awk -v m="$(basename "$model" .gguf)" -v isa="$isa" '
	function med(a, n,   i, j, x) {
		for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{ t = $2; if (!(t in n)) order[++nt] = t; k = ++n[t]
	  B[t, k] = $3; N[t, k] = $4; R[t, k] = $4 / $3; L[t] = L[t] (k > 1 ? " " : "") $5 }
	END {
		for (i = 1; i <= nt; i++) {
			t = order[i]; rr = ""
			for (k = 1; k <= n[t]; k++) { b[k] = B[t, k]; x[k] = N[t, k]; q[k] = R[t, k]
				rr = rr (k > 1 ? " " : "") sprintf("%.3f", R[t, k]) }
			printf "| %s | %s | %.1f | %.1f | %s | **%.3f** | %s | %s |\n", m, t,
				med(b, n[t]), med(x, n[t]), rr, med(q, n[t]), L[t], isa
		}
	}' "$tmp/res"
