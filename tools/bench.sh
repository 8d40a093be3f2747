#!/usr/bin/env bash
# bench.sh - strata's speed against llama.cpp on this machine, now.
#
#   tools/bench.sh [--strata-only] MODEL [THREADS] [ROUNDS]
#
# Machines here drift 20-30% between runs, so absolute tok/s mean little;
# what is reported is the ratio strata/llama.cpp measured in the same
# session. Each round runs strata-bench and the llama.cpp peer (llama-bench,
# built for this CPU into build/peer by tools/peer/build.sh on first use) back
# to back on the same model, threads and tests, swapping which goes first
# every round; each side reports the median of REPS repetitions after a
# warm-up. The table gives, per test, the median over rounds of each side and
# of the per-round ratios, with the CPU's ISA and the load average beside
# them, and the CPU seconds each side spent on the same tests (/usr/bin/time),
# which other work sharing the CPUs changes far less than tok/s. Rows are
# appended to build/bench/<model>.csv (in STRATA_BUILD_DIR).
#
#   THREADS  default: all online CPUs     ROUNDS  default: 3
#   --strata-only   skip the peer
# Environment: BENCH_PP (512), BENCH_TG (128), BENCH_REPS (5), BENCH_CHUNK (the
#   prompt's chunk: strata-bench -c, llama-bench -b/-ub; default one batch for
#   strata and llama-bench's own), BENCH_PLE_READERS (8, qwen4exp: strata's PLE
#   readers; its row cache is off, so every repetition reads the table cold),
#   BENCH_WARMUP (1; 0: no untimed first run on either side, for long prompts),
#   BENCH_EVICT (files dropped from the page cache before each side runs, e.g.
#   a PLE shard, so that both read it cold; MODEL itself is read once first),
#   BENCH_FA (auto|on|off: the peer's flash attention, default auto as in
#   llama-bench), BENCH_TIMEOUT (seconds one side of one round may take,
#   default 1800), STRATA_BUILD_DIR (default build/, built by tools/build.sh),
#   BENCH_IK (auto|native|avx2|0: ik_llama.cpp's llama-bench with -fmoe 1
#   -rtr 1 as a third side, built by tools/peer/build-ik.sh from its public
#   repository; auto: the build matching BENCH_SIMD when its source is
#   there, else none), BENCH_SIMD (strata's kernels: STRATA_SIMD, e.g. avx2
#   on an AVX-512 machine; the llama.cpp peer stays built for the CPU),
#   BENCH_DEPTH (0; N: both tests start N positions deep, strata-bench -d and
#   llama-bench -d, the tests named "tg64 @ dN"; ik_llama.cpp's llama-bench
#   has no -d: its -gp N,TG decodes TG tokens after a prompt of N, so it has
#   the tg test at depth and not the pp one; no roofline is given: the KV
#   cache's reads come on top of the weights').
# Decode's memory roofline: each round times a plain read loop with the same
# threads (strata-kbench -T none) just before and just after strata's run,
# and each tg test's share is its
# tok/s x the weight bytes a token reads (strata-bench's "active" line) over
# the mean of the two; for models under 64 MB, which the caches hold, none is given.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "bench.sh: error: $*" >&2; exit 1; }
say() { echo "bench.sh: $*" >&2; }
usage() { sed -n '4,/^set -euo/p' "$0" | sed -n 's/^# \{0,1\}//p'; }

strata_only=0
while [ $# -gt 0 ]; do
	case $1 in
	--strata-only) strata_only=1; shift ;;
	-h|--help) usage; exit 0 ;;
	--) shift; break ;;
	-*) usage >&2; exit 2 ;;
	*) break ;;
	esac
done
if [ $# -lt 1 ] || [ $# -gt 3 ]; then
	usage >&2
	exit 2
fi

model=$1
threads=${2:-$(nproc)}
rounds=${3:-3}
pp=${BENCH_PP:-512}
tg=${BENCH_TG:-128}
reps=${BENCH_REPS:-5}
fa=${BENCH_FA:-auto}
chunk=${BENCH_CHUNK:-}
warmup=${BENCH_WARMUP:-1}
ple_readers=${BENCH_PLE_READERS:-8}
depth=${BENCH_DEPTH:-0}
ik_mode=${BENCH_IK:-auto}
simd=${BENCH_SIMD:-}
limit=${BENCH_TIMEOUT:-1800}
build=${STRATA_BUILD_DIR:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac

[ -r "$model" ] || die "cannot read model '$model'"
for v in threads:$threads rounds:$rounds BENCH_PP:$pp BENCH_TG:$tg BENCH_REPS:$reps BENCH_TIMEOUT:$limit BENCH_DEPTH:$depth \
	BENCH_CHUNK:${chunk:-0} BENCH_PLE_READERS:$ple_readers BENCH_WARMUP:$warmup; do
	[[ ${v#*:} =~ ^[0-9]+$ ]] || die "${v%%:*} must be a whole number, got '${v#*:}'"
done
if [ "$threads" -lt 1 ] || [ "$rounds" -lt 1 ] || [ "$reps" -lt 1 ]; then
	die "THREADS, ROUNDS and BENCH_REPS must be >= 1"
fi
[ $((pp + tg)) -gt 0 ] || die "BENCH_PP and BENCH_TG are both 0: nothing to measure"
depth=$((10#$depth))
at_depth=""
[ "$depth" = 0 ] || at_depth=" at depth $depth"
case $fa in auto|on|off) ;; *) die "BENCH_FA must be auto, on or off, got '$fa'" ;; esac
case $ik_mode in auto|native|avx2|0) ;; *) die "BENCH_IK must be auto, native, avx2 or 0, got '$ik_mode'" ;; esac
case $simd in ""|scalar|avx2|avx512) ;; *) die "BENCH_SIMD must be scalar, avx2 or avx512, got '$simd'" ;; esac

# --- the peer: llama-bench of llama.cpp de3ff815, built here once --------------
peer_bin=""
install_peer() {
	peer_bin=$("$root/tools/peer/build.sh") ||
		die "building the llama.cpp peer failed (see above); run with --strata-only to benchmark strata alone"
	[ -x "$peer_bin/llama-bench" ] || die "no llama-bench in $peer_bin"
}

# --- ik_llama.cpp: the bar for CPU speed, where its source can be had -------
ik_bin=""
install_ik() {
	local isa=$ik_mode

	[ "$isa" = 0 ] && return 0
	if [ "$depth" != 0 ] && [ "$tg" = 0 ]; then
		say "no ik_llama.cpp side for pp at BENCH_DEPTH=$depth: its llama-bench has no -d (-gp times decode only)"
		return 0
	fi
	if [ "$isa" = auto ]; then
		isa=native
		[ "$simd" = avx2 ] && isa=avx2
		if ! ik_bin=$("$root/tools/peer/build-ik.sh" "$isa" 2>"$tmp/ik-build.err"); then
			say "no ik_llama.cpp side: $(tail -n 1 "$tmp/ik-build.err") (BENCH_IK=0 silences this)"
			ik_bin=""
			return 0
		fi
	else
		ik_bin=$("$root/tools/peer/build-ik.sh" "$isa") || die "building ik_llama.cpp ($isa) failed (see above)"
	fi
	say "ik_llama.cpp ($isa): $ik_bin"
}

# --- strata: (re)build when the binary is missing or older than a source ----
build_strata() {
	local bin=$build/strata-bench stale=""

	if [ -x "$bin" ]; then
		stale=$(find "$root/core" "$root/include" "$root/tools" "$root/CMakeLists.txt" \
			\( -name '*.[ch]' -o -name CMakeLists.txt \) -newer "$bin" -print -quit 2>/dev/null || true)
		[ -z "$stale" ] && return 0
		say "rebuilding strata ($stale is newer than $bin)..."
	else
		say "building strata into $build..."
	fi
	if [ "$build" = "$root/build" ]; then
		"$root/tools/build.sh" >&2 || die "tools/build.sh failed"
	else
		{ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
			cmake --build "$build" -j"$(nproc)" --target strata-bench; } >&2 ||
			die "building strata-bench in $build failed"
	fi
	[ -x "$bin" ] || die "no $bin after the build"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ "$strata_only" = 1 ] || install_peer
[ "$strata_only" = 1 ] || install_ik
build_strata
[ -x "$build/strata-kbench" ] || die "no $build/strata-kbench (the read loop); build it (tools/build.sh)"

results=$tmp/results # lines: round test strata_tok_s peer_tok_s ik_tok_s load1 read_gb_s
cpus=$tmp/cpus       # lines: round strata_cpu_s peer_cpu_s

# Prints "test median" for each table row of strata-bench's output.
# A test at depth N is named "tg64@dN" on every side.
rows() { awk -F'|' '$2 ~ /^ *(pp|tg)[0-9]+( @ d[0-9]+)? *$/ { gsub(/ /, "", $2); gsub(/ /, "", $4); print $2, $4 }' "$1"; }

# The same from llama-bench's output: the median of each test's samples_ts.
# llama.cpp writes JSONL (a test per line), ik_llama.cpp JSON (a field per
# line, samples_ts last): the fields are taken wherever they stand.
peer_rows() {
	awk 'function field(k,   v) { v = $0; if (!sub(".*\"" k "\": *", "", v)) return ""; sub(/[,}].*/, "", v); return v }
	{
		if ((v = field("n_prompt")) != "") { np = v + 0; nd = 0 }
		if ((v = field("n_gen")) != "") ng = v + 0
		if ((v = field("n_depth")) != "") nd = v + 0
		# ik_llama.cpp -gp N,TG: decode after a prompt of N, timed alone
		if ((v = field("test")) ~ /^"tg[0-9]+@pp[0-9]+"$/) { nd = np; np = 0 }
		v = $0
		if (!sub(/.*"samples_ts": *\[ */, "", v)) next
		sub(/ *\].*/, "", v)
		n = split(v, a, / *, */)
		for (i = 2; i <= n; i++) { x = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		m = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		printf "%s%s %.1f\n", (np > 0 ? "pp" np : "tg" ng), (nd > 0 ? "@d" nd : ""), m
	}' "$1"
}

# The CPU and the vector ISA its flags offer (lscpu), for every table and CSV row.
cpu_isa() {
	local model flags isa=""
	model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
	flags=" $(lscpu 2>/dev/null | sed -n 's/^Flags: *//p') "
	for f in avx512f avx512bw avx512vl avx512_vnni avx512_bf16 avx2 fma f16c avx_vnni; do
		case $flags in *" $f "*) isa="$isa${isa:+ }$f" ;; esac
	done
	echo "${model:-unknown CPU}, $(nproc) CPUs, ISA ${isa:-x86-64 baseline}"
}

# Runs one side with a time limit (a hung run must not hang the whole
# benchmark); stdout to $1, stderr to $1.err. $2 names the side for errors.
# The CPU seconds (user + system) each side spent on the same tests, model load
# and warm-ups included: unlike tok/s, hardly changed by other work sharing
# the CPUs (a thread that spins while it waits still counts).
cpu_time=()
[ -x /usr/bin/time ] && cpu_time=(/usr/bin/time -f "%U %S" -o)

evict=${BENCH_EVICT:-}
run_side() {
	local out=$1 what=$2 rc=0 f

	shift 2
	if [ ${#cpu_time[@]} -gt 0 ]; then
		set -- "${cpu_time[@]}" "$out.cpu" "$@"
	fi
	for f in $evict; do
		dd if="$f" iflag=nocache count=0 status=none || die "cannot drop $f from the page cache"
	done
	timeout --kill-after=10 "$limit" "$@" >"$out" 2>"$out.err" || rc=$?
	[ "$rc" = 0 ] && return 0
	cat "$out" "$out.err" >&2
	[ "$rc" = 124 ] || [ "$rc" = 137 ] && die "$what did not finish within ${limit}s (BENCH_TIMEOUT); it hung or the model is too slow"
	die "$what failed (exit status $rc)"
}

strata_chunk=(-w "$warmup")
peer_depth=()
[ "$depth" = 0 ] || peer_depth=(-d "$depth")
ik_tests=(-p "$pp" -n "$tg")
[ "$depth" = 0 ] || ik_tests=(-p 0 -n 0 -gp "$depth,$tg")
peer_chunk=()
[ "$warmup" = 0 ] && peer_chunk=(--no-warmup)
if [ -n "$chunk" ] && [ "$chunk" != 0 ]; then
	strata_chunk+=(-c "$chunk")
	peer_chunk+=(-b "$chunk" -ub "$chunk")
fi

run_strata() {
	run_side "$1" strata-bench env ${simd:+STRATA_SIMD=$simd} "$build/strata-bench" -m "$model" \
		-t "$threads" -p "$pp" -n "$tg" -r "$reps" -R "$ple_readers" -d "$depth" "${strata_chunk[@]}"
}

# ik_llama.cpp does not load every model llama.cpp does (its qwen3next
# wants other tensors than llama.cpp's layout): a model it refuses drops the
# ik side for this run, with its reason, instead of failing the benchmark.
run_ik() {
	if "$ik_bin" -m "$model" -t "$threads" -p 0 -n 1 -r 1 -o json >"$1" 2>"$1.err"; then
		run_side "$1" "ik_llama.cpp's llama-bench (BENCH_IK=0 skips it)" "$ik_bin" \
			-m "$model" -t "$threads" "${ik_tests[@]}" -r "$reps" -fmoe 1 -rtr 1 "${peer_chunk[@]}" -o json
		return 0
	fi
	say "ik_llama.cpp cannot load $(basename "$model"): $({ grep -m1 'error loading model' "$1.err" || grep -m1 error "$1.err"; } | sed 's/.*error[^:]*: //') - no ik side"
	ik_bin=""
	: >"$1"
}

# GB/s of a plain read loop with the same threads, now.
read_rate() {
	"$build/strata-kbench" -t "$threads" -T none -r 5 -M 1024 2>/dev/null |
		sed -n 's/.*read loop \([0-9.]*\) GB\/s.*/\1/p'
}

run_peer() {
	run_side "$1" "llama-bench (--strata-only skips it)" "$peer_bin/llama-bench" \
		-m "$model" -t "$threads" -p "$pp" -n "$tg" -r "$reps" -fa "$fa" "${peer_depth[@]}" \
		"${peer_chunk[@]}" -o jsonl
}

isa=$(cpu_isa)
say "cpu: $isa"
if [ -n "$evict" ]; then
	for f in $evict; do [ -r "$f" ] || die "BENCH_EVICT: cannot read '$f'"; done
	cat "$model" >/dev/null # the weights warm, only the evicted files cold
fi
say "model $model, $threads threads, $rounds rounds of pp$pp/tg$tg$at_depth x $reps reps; load average $(cut -d' ' -f1-3 /proc/loadavg)"
active=""
for r in $(seq 1 "$rounds"); do
	load1=$(cut -d' ' -f1 /proc/loadavg)
	sides=(strata)
	[ "$strata_only" = 1 ] || sides+=(peer)
	[ -n "$ik_bin" ] && sides+=(ik)
	# Each round starts with another side: none always runs on a machine
	# the previous one just warmed (or heated).
	n=${#sides[@]}
	order=()
	for i in $(seq 0 $((n - 1))); do order+=("${sides[$(((i + r - 1) % n))]}"); done
	say "round $r/$rounds: ${order[*]}..."
	touch "$tmp/p$r" "$tmp/k$r"
	for side in "${order[@]}"; do
		case $side in
		strata)
			# the read loop just before and just after strata's run:
			# this machine's memory rate drifts within minutes
			rd0=$(read_rate)
			run_strata "$tmp/s$r"
			rd1=$(read_rate)
			[ -n "$rd0" ] && [ -n "$rd1" ] || die "strata-kbench's read loop gave no rate"
			read_gbs=$(awk -v a="$rd0" -v b="$rd1" 'BEGIN { printf "%.1f", (a + b) / 2 }')
			say "  read loop $rd0 GB/s before strata's run, $rd1 after"
			;;
		peer) run_peer "$tmp/p$r" ;;
		ik) run_ik "$tmp/k$r" ;;
		esac
	done
	[ "$r" = 1 ] && grep -m1 '^model ' "$tmp/s1" >&2
	[ -z "$active" ] && active=$(sed -n 's/^active: \([0-9.]*\) MB.*/\1/p' "$tmp/s$r")
	grep '^ple: ' "$tmp/s$r" | sed 's/^/bench.sh:   strata /' >&2 || true
	rows "$tmp/s$r" >"$tmp/sr"
	peer_rows "$tmp/p$r" >"$tmp/pr"
	peer_rows "$tmp/k$r" >"$tmp/kr"
	[ -s "$tmp/sr" ] || die "no results in strata-bench's output: $(cat "$tmp/s$r")"
	[ "$strata_only" = 1 ] || [ -s "$tmp/pr" ] || die "no results in the peer's output: $(cat "$tmp/p$r")"
	[ -z "$ik_bin" ] || [ -s "$tmp/kr" ] || die "no results in ik_llama.cpp's output: $(cat "$tmp/k$r")"
	awk -v r="$r" -v l="$load1" -v rd="$read_gbs" 'FILENAME == ARGV[1] { p[$1] = $2; next }
		FILENAME == ARGV[2] { k[$1] = $2; next }
		{ printf "%s %s %s %s %s %s %s\n", r, $1, $2, ($1 in p ? p[$1] : "-"), ($1 in k ? k[$1] : "-"), l, rd }' \
		"$tmp/pr" "$tmp/kr" "$tmp/sr" >>"$results"
	awk -v r="$r" -v act="${active:-0}" '$1 == r { printf "bench.sh:   %-7s strata %10.1f tok/s", $2, $3
		if ($4 != "-") printf "   llama.cpp %10.1f tok/s (%.2f)", $4, $3 / $4
		if ($5 != "-") printf "   ik_llama.cpp %10.1f tok/s (%.2f)", $5, $3 / $5
		if ($2 ~ /^tg[0-9]+$/ && act >= 64) printf "   roofline %.0f%%", 100 * $3 * act / 1000 / $7
		print "" }' "$results" >&2
	if [ -s "$tmp/s$r.cpu" ] && [ -s "$tmp/p$r.cpu" ]; then
		read -r su ss <"$tmp/s$r.cpu"
		read -r pu ps <"$tmp/p$r.cpu"
		awk -v r="$r" -v s="$su $ss" -v p="$pu $ps" 'BEGIN { split(s, a); split(p, b)
			cs = a[1] + a[2]; cp = b[1] + b[2]
			printf "%s %.2f %.2f\n", r, cs, cp
			printf "bench.sh:   cpu     strata %8.2f s        llama.cpp %8.2f s        llama.cpp/strata %.2f\n", cs, cp, (cs > 0 ? cp / cs : 0) > "/dev/stderr" }' >>"$cpus"
	fi
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
say "done; load average $load_end"

# --- summary table and CSV ----------------------------------------------------
mname=$(basename "$model" .gguf)
csv=$build/bench/$mname.csv
mkdir -p "$(dirname "$csv")"
header="date,model,test,threads,round,strata_tok_s,llama_cpp_tok_s,ratio,ik_tok_s,ratio_ik,load1,read_gb_s,active_mb,roofline,simd,strata_rev,peer,ik,cpu"
# A file of an earlier layout is kept aside, not mixed.
[ -s "$csv" ] && [ "$(head -n 1 "$csv")" != "$header" ] && mv "$csv" "$csv.old"
[ -s "$csv" ] || echo "$header" >"$csv"
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git -C "$root" status --porcelain -- core include tools 2>/dev/null)" ] && rev=$rev-dirty
peer=""
[ "$strata_only" = 1 ] ||
	peer="llama-bench $(sed -n 's/.*"build_commit": "\([^"]*\)".*/\1/p' "$tmp/p1" | head -n 1)"
ik=""
[ -n "$ik_bin" ] && ik="ik_llama.cpp $(sed -n 's/.*"build_commit": *"\([^"]*\)".*/\1/p' "$tmp/k1" | head -n 1) ($(basename "$(dirname "$(dirname "$ik_bin")")"), -fmoe 1 -rtr 1)"
kernels=$(sed -n 's/.*; kernels \(.*\)$/\1/p' "$tmp/s1" | head -n 1)

echo
if [ "$strata_only" = 1 ]; then
	echo "strata alone (--strata-only): $mname, $threads threads, median of $rounds rounds"
else
	echo "strata vs $peer${ik:+ and $ik}: $mname, $threads threads, median of $rounds rounds"
fi
echo "cpu: $isa; strata's kernels: ${kernels:-?}${simd:+ (BENCH_SIMD=$simd)}"
echo "load average (1 min) at the start of each round: $(awk '!seen[$1]++ { printf "%s%s", (n++ ? ", " : ""), $6 }' "$results"); at the end: $load_end"
echo "read loop ($threads threads) per round: $(awk '!seen[$1]++ { printf "%s%s GB/s", (n++ ? ", " : ""), $7 }' "$results"); a decoded token reads ${active:-?} MB of weights"
awk -v csv="$csv" -v date="$(date -u +%Y-%m-%dT%H:%M:%SZ)" -v model="$mname" -v t="$threads" \
	-v rev="$rev" -v peer="$peer" -v ik="$ik" -v cpu="$isa" -v act="${active:-0}" -v simd="${kernels:-}" '
	function med(a, n,   i, j, x) {
		for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function rl(tst, v, rd) { return tst ~ /^tg[0-9]+$/ && act >= 64 && rd > 0 ? v * act / 1000 / rd : -1 }
	{
		if (!($2 in n)) { order[++ntests] = $2 }
		m = ++n[$2]; s[$2, m] = $3; p[$2, m] = $4; k[$2, m] = $5; rd[$2, m] = $7
		ratio = $4 == "-" ? "" : sprintf("%.3f", $3 / $4)
		rik = $5 == "-" ? "" : sprintf("%.3f", $3 / $5)
		f = rl($2, $3, $7)
		printf "%s,%s,%s,%s,%s,%.1f,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,\"%s\"\n", date, model, $2, t, $1, $3,
			($4 == "-" ? "" : sprintf("%.1f", $4)), ratio, ($5 == "-" ? "" : sprintf("%.1f", $5)), rik,
			$6, $7, act, (f < 0 ? "" : sprintf("%.3f", f)), simd, rev, peer, ik, cpu >> csv
	}
	END {
		printf "| %-8s | %7s | %12s | %15s | %16s | %12s | %9s | %-20s |\n", "test", "threads", "strata tok/s",
			"llama.cpp tok/s", "strata/llama.cpp", "ik tok/s", "strata/ik", "roofline (strata)"
		printf "|----------|---------|--------------|-----------------|------------------|--------------|-----------|----------------------|\n"
		for (i = 1; i <= ntests; i++) {
			tst = order[i]; m = n[tst]; hp = 1; hk = 1; np = nk = 0
			for (j = 1; j <= m; j++) {
				a[j] = s[tst, j]; fr[j] = rl(tst, s[tst, j], rd[tst, j])
				if (p[tst, j] == "-") hp = 0; else { b[++np] = p[tst, j]; c[np] = s[tst, j] / p[tst, j]; first_c = (np == 1 ? c[1] : first_c); last_c = c[np] }
				if (k[tst, j] == "-") hk = 0; else { d[++nk] = k[tst, j]; e[nk] = s[tst, j] / k[tst, j] }
			}
			ms = med(a, m); mf = fr[1] < 0 ? -1 : med(fr, m)
			mp = hp ? sprintf("%.1f", med(b, np)) : "-"; mr = hp ? sprintf("%.2fx", med(c, np)) : "-"
			mk = hk ? sprintf("%.1f", med(d, nk)) : "-"; mrk = hk ? sprintf("%.2fx", med(e, nk)) : "-"
			if (hp && last_c / first_c > 1.5)
				notes = notes sprintf("note: %s ratios vary %.1fx between rounds: something else shares the CPUs; rerun when the load average is low\n", tst, last_c / first_c)
			printf "| %-8s | %7d | %12.1f | %15s | %16s | %12s | %9s | %-20s |\n", tst, t, ms, mp, mr, mk, mrk,
				(mf < 0 ? "" : sprintf("%.0f%%", 100 * mf))
			printf "%s,%s,%s,%s,median,%.1f,%s,%s,%s,%s,,,%s,%s,%s,%s,%s,%s,\"%s\"\n", date, model, tst, t, ms,
				(hp ? mp : ""), (hp ? sprintf("%.3f", med(c, np)) : ""), (hk ? mk : ""), (hk ? sprintf("%.3f", med(e, nk)) : ""),
				act, (mf < 0 ? "" : sprintf("%.3f", mf)), simd, rev, peer, ik, cpu >> csv
		}
		printf "%s", notes
	}' "$results"
[ -s "$cpus" ] && awk '{ s[NR] = $2; p[NR] = $3; r[NR] = $2 > 0 ? $3 / $2 : 0; rr = rr (NR > 1 ? " " : "") sprintf("%.2f", r[NR]) }
	END { for (i = 2; i <= NR; i++) { x = r[i]; for (j = i - 1; j >= 1 && r[j] > x; j--) r[j + 1] = r[j]; r[j + 1] = x }
		m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
		printf "CPU time for the same tests (user + system, load and warm-ups included): llama.cpp/strata %.2fx (rounds: %s)\n", m, rr }' "$cpus"
awk -v n="$(nproc)" '!seen[$1]++ && $6 + 0 > n { hi = hi (hi ? ", " : "") $6 }
	END { if (hi) printf "note: the load average (%s) exceeded the %d CPUs: the other work on this machine shares them, and two threads that must meet at barriers suffer most; compare ratios, not tok/s\n", hi, n }' "$results"
echo "rows appended to ${csv#"$root"/}"
