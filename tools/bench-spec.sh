#!/usr/bin/env bash
# bench-spec.sh - decode speed with speculative decoding against without it.
#
#   tools/bench-spec.sh MODEL PROMPT_FILE [ROUNDS] [-- strata args]
#
# Each round runs the strata command twice on the same prompt, greedy, one
# decoding a token per forward pass ([spec] drafter = none), the other in
# drafted windows (drafter BENCH_SPEC_DRAFTER, default lookup; window
# BENCH_SPEC_WINDOW, default 4), swapping which goes first every round, and
# compares the two texts
# (greedy speculation keeps the model's tokens; only a near tie between the
# top two logits, which a window's rows and a one-token pass may round
# differently, can part them: the "same text" column counts the rounds).  The table gives each
# side's median decode tok/s (the command's own "generated N tokens in T ms"
# line), the median of the per-round ratios drafted/none, the drafts kept,
# the tokens each verify pass committed, and what a window cost in one-token
# passes (none's tok/s x tokens per window / drafted tok/s, drafting
# included: a trained drafter committing T tokens a window speeds decode up
# T / cost), with the CPU's ISA and load.
#
# Environment: BENCH_SPEC_N (tokens to generate, default 256),
#   BENCH_SPEC_WINDOW (4), BENCH_SPEC_DRAFTER (lookup, mtp or auto),
#   STRATA_BUILD_DIR (default build/).  Extra strata args (--no-spec-adapt,
#   to measure every window) go after --.
set -euo pipefail

die() { echo "bench-spec.sh: error: $*" >&2; exit 1; }
say() { echo "bench-spec.sh: $*" >&2; }

[ $# -ge 2 ] || { sed -n '4,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
model=$1 prompt=$2
shift 2
rounds=7
if [ $# -gt 0 ] && [ "$1" != -- ]; then rounds=$1; shift; fi
[ "${1:-}" = -- ] && shift
extra=("$@")
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive whole number, got '$rounds'"
[ -r "$model" ] || die "cannot read model '$model'"
[ -r "$prompt" ] || die "cannot read prompt file '$prompt'"
bin=${STRATA_BUILD_DIR:-build}/strata
[ -x "$bin" ] || die "'$bin' is not built (tools/build.sh)"
n=${BENCH_SPEC_N:-256} win=${BENCH_SPEC_WINDOW:-4} drafter=${BENCH_SPEC_DRAFTER:-lookup}
case $drafter in lookup|mtp|auto) ;; *) die "BENCH_SPEC_DRAFTER is lookup, mtp or auto, not '$drafter'" ;; esac

isa=$(grep -m1 -o -w 'avx512f' /proc/cpuinfo >/dev/null && echo avx512 ||
	{ grep -q -w avx2 /proc/cpuinfo && echo avx2 || echo scalar; })
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

side() { # side NAME ROUND DRAFTER
	timeout --kill-after=10 1800 "$bin" -m "$model" -f "$prompt" -n "$n" --temp 0 \
		--spec-drafter "$3" --spec-window "$win" "${extra[@]}" \
		>"$tmp/$1$2.out" 2>"$tmp/$1$2.err" || { cat "$tmp/$1$2.err" >&2; die "$1 failed in round $2"; }
	# decode tok/s from "generated N tokens in T ms (R tok/s)"
	sed -n 's/.*generated [0-9]* tokens in [0-9.]* ms (\([0-9.]*\) tok\/s).*/\1/p' "$tmp/$1$2.err"
}

say "model $model, prompt $prompt, $n tokens, drafter $drafter, window $win, $rounds rounds, $isa"
for r in $(seq 1 "$rounds"); do
	load=$(cut -d' ' -f1 /proc/loadavg)
	if [ $((r % 2)) = 1 ]; then a=$(side none "$r" none); b=$(side look "$r" "$drafter")
	else b=$(side look "$r" "$drafter"); a=$(side none "$r" none); fi
	same=1
	cmp -s "$tmp/none$r.out" "$tmp/look$r.out" || {
		same=0
		say "round $r: the texts differ: a near tie between the top two logits, where a" \
			"window's rows and a one-token pass round differently? (--dump-logits shows" \
			"one-token decoding's margins)"
	}
	acc=$(sed -n 's/^drafts accepted \([0-9]*\) of \([0-9]*\) .*, \([0-9.]*\) tokens per window/\1 \2 \3/p' \
		"$tmp/look$r.err")
	echo "$a $b ${acc:-0 0 1} $load $same" >>"$tmp/rows"
	say "round $r: none $a, $drafter $b tok/s; drafts kept/drafted, tokens per window: ${acc:-none}  (load $load)"
done
awk -v isa="$isa" -v m="$(basename "$model")" -v p="$(basename "$prompt")" -v dr="$drafter" '
function med(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ n++; x[n] = $1; y[n] = $2; q[n] = $2 / $1; k += $3; d += $4; w[n] = $5; c[n] = $1 * $5 / $2
  l = l " " $6; same += $7 }
END {
	printf "| model | prompt | none tok/s | %s tok/s | median ratio | drafts kept | tokens per window | window cost | same text | load | ISA |\n", dr
	printf "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n"
	printf "| %s | %s | %.0f | %.0f | **%.3f** | %d of %d | %.2f | %.2f | %d of %d |%s | %s |\n", m, p,
		med(x, n), med(y, n), med(q, n), k / n, d / n, med(w, n), med(c, n), same, n, l, isa
}' "$tmp/rows"
