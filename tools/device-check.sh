#!/usr/bin/env bash
# device-check.sh - the gpu-cuda plugin on a machine with an NVIDIA GPU.
#
#   tools/device-check.sh --prepare    here, after tools/build.sh: fill build/device/
#   tools/device-check.sh              there, from the repository root, build/device carried
#
# The device machine (see the device tool's README) has the CUDA toolkit and
# driver but builds nothing here: the build is made on this machine and
# carried.  --prepare puts what the run needs into build/device/, the one
# path to carry (the working tree travels by itself, 64 MiB in all):
#   bin/      check_backend_ops, the golden suites, strata-bench and
#             strata-writer, without debug info
#   plugins/  strata-gpu-cuda.so (build/plugins/, the shipped plugin) and the
#             other shipped plugins (prompt paths, io: check_window loads them)
#   libs/     the shared libraries they need that are not glibc's or CUDA's
#             (ldd): libsubunit.so.0 (Check's) for the suites, libstdc++ and
#             libgcc_s for the plugin; the run links only those the device
#             lacks (ldconfig -p), CUDA's come from /usr/local/cuda
#   shared/   the llama-spm vocab (the bench model's writer), then as much of
#             ../shared (models, golden) as fits in 61 MiB with
#             the rest, whole suites in the order of SUITES below (../shared
#             does not travel)
#   MANIFEST  what is there, what was left out, and the build's commit
# Then, in the session with a device:
#   run(command="bash tools/device-check.sh", carry=["build/device"], timeout_s=560)
#
# The run, each step under a time limit, all of them within 8 minutes
# (DEVICE_CHECK_BUDGET seconds, 470): nvidia-smi -L; check_backend_ops on
# gpu-cuda (the op conformance suite against the CPU backend); the golden
# suites through the plugin as ctest's *_gpu_all tests run them on gpu-sim,
# each whose data was carried; strata-bench on a bench-qwen3moe Q4_K_M model
# that strata-writer makes on the device (1 GB, 16 cores: ~20 s), budgets
# "all" and "quarter", prompt (pp512) and decode (tg64) tok/s.  Results go to
# $OUT (build/device-out without one): device-check.txt (the summary and
# every step's last lines), device-check.csv (step,status,seconds,detail),
# one log per step, bench.csv.  Exit 0 when every step that ran passed, 1
# when one failed, 77 without a GPU (no nvidia-smi, or it lists none).
#
# For a run of this logic here: DEVICE_CHECK_NO_GPU=1 skips the GPU check,
# DEVICE_CHECK_PLUGIN=gpu-sim and DEVICE_CHECK_PLUGIN_DIR=build/plugins/test
# swap the plugin, DEVICE_CHECK_BENCH_MODEL=FILE skips the writer.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

DEV=build/device
# The golden suites in the order they are carried and run.  check_quant_golden
# runs with any of its models (each one absent is a skipped case); the others
# need every file of theirs.
SUITES="check_qwen3next check_model check_quant_golden check_qwen4exp check_mtp check_window"
PROMPTS="once story mixed"

# Files under ../shared each suite reads, one group a line: the first line
# what it needs, then optional groups ("?" first: a model and its goldens,
# whose absence makes the suite skip those cases).
golden_of() { # MODEL [KIND]: its goldens of every prompt
	local p
	for p in $PROMPTS; do printf ' golden/%s.%s.%sslog' "$1" "$p" "${2:-}"; done
}
suite_files() {
	local m line=
	case $1 in
	check_qwen3next)
		echo "models/syn-qwen3next-f32.gguf models/syn-llama-f32.gguf $(golden_of syn-qwen3next-f32)" ;;
	check_model)
		for m in stories260K syn-llama-f32 syn-qwen3moe-f32 syn-glm4moe-f32 \
			syn-qwen3moe-d256-f32; do
			line="$line models/$m.gguf $(golden_of $m)"
		done
		echo "$line" ;;
	check_quant_golden)
		echo models/syn-qwen3moe-d256-f32.gguf
		for m in q4_k_m q8_0 q6_k iq2_xs q4_0 iq4_nl q2_k iq3_xxs iq3_s iq1_m; do
			echo "?models/syn-qwen3moe-d256-$m.gguf $(golden_of syn-qwen3moe-d256-$m)"
		done ;;
	check_qwen4exp)
		for m in syn-qwen4exp-f32 syn-qwen4exp-r4k16-f32 syn-qwen4exp-mtp-f32; do
			line="$line models/$m.gguf $(golden_of $m)"
		done
		echo "$line $(golden_of syn-qwen4exp-mtp-f32 mtp.)" ;;
	check_mtp)
		line=models/stories260K.gguf
		for m in syn-qwen4exp-mtp-f32 syn-qwen3next-f32 syn-glm4moe-f32; do
			line="$line models/$m.gguf $(golden_of $m)"
		done
		echo "$line $(golden_of syn-qwen4exp-mtp-f32 mtp.)" ;;
	check_window)
		echo "models/stories260K.gguf models/syn-qwen3next-f32.gguf $(golden_of stories260K)" \
			"$(golden_of syn-qwen3next-f32)" ;;
	esac
}

# ---- --prepare: here ------------------------------------------------------------------

# Bytes of the files that travel anyway: tracked, and untracked but not ignored.
tree_bytes() {
	git ls-files -z --cached --others --exclude-standard 2>/dev/null |
		xargs -0 stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}

# The libraries ldd resolves for $@ that the device machine may lack: not
# glibc's, not the vDSO, not CUDA's (the device has its own toolkit).
foreign_libs() {
	ldd "$@" 2>/dev/null | awk '/=> \// { print $1, $3 }' | sort -u |
		while read -r name path; do
			case $name in
			linux-vdso* | ld-linux* | libc.so* | libm.so* | libpthread.so* | libdl.so* | \
				librt.so* | libutil.so* | libresolv.so* | libmvec.so*) continue ;;
			libcuda.so* | libcudart.so* | libcublas* | libnvrtc* | libnvJitLink*) continue ;;
			esac
			case $path in /usr/local/cuda* | /usr/local/nvidia*) continue ;; esac
			echo "$path"
		done
}

prepare() {
	local STRIP="strip --strip-debug" shared=${STRATA_SHARED_DIR:-../shared} f rel
	local budget=$((61 * 1024 * 1024)) used need suite missing note line opt out
	local bins="tests/check_backend_ops tests/check_model tests/check_qwen3next
		tests/check_quant_golden tests/check_qwen4exp tests/check_mtp tests/check_window
		strata-bench strata-writer"

	for f in $bins; do
		if [ ! -x "build/$f" ]; then
			echo "device-check: build/$f is missing: build first (tools/build.sh)" >&2
			return 2
		fi
	done
	rm -rf "$DEV"
	mkdir -p "$DEV/bin" "$DEV/plugins" "$DEV/libs" "$DEV/shared"
	for f in $bins; do
		$STRIP -o "$DEV/bin/$(basename "$f")" "build/$f" || return 2
	done
	if [ -f build/plugins/strata-gpu-cuda.so ]; then
		$STRIP -o "$DEV/plugins/strata-gpu-cuda.so" build/plugins/strata-gpu-cuda.so || return 2
	else
		echo "device-check: build/plugins/strata-gpu-cuda.so was not built (no CUDA toolkit" \
			"found by cmake?): the device run will have nothing to check" >&2
	fi
	# the other shipped plugins: check_window's engines load the prompt paths and
	# name an io plugin where a prompt path belongs (the suites search $DEV/plugins)
	for f in build/plugins/strata-path-*.so build/plugins/strata-io-*.so; do
		[ -f "$f" ] && { $STRIP -o "$DEV/plugins/$(basename "$f")" "$f" || return 2; }
	done
	# the vocab strata-writer's bench-qwen3moe preset copies (0.7 MiB)
	if [ -f "$shared/vocab/ggml-vocab-llama-spm.gguf" ]; then
		mkdir -p "$DEV/shared/vocab"
		cp "$shared/vocab/ggml-vocab-llama-spm.gguf" "$DEV/shared/vocab/" || return 2
	fi
	for f in $(foreign_libs "$DEV"/bin/* "$DEV"/plugins/*.so); do
		cp -L "$f" "$DEV/libs/$(basename "$f")" || return 2
	done
	used=$(($(tree_bytes) + $(du -sb "$DEV" | cut -f1)))
	{
		echo "built from $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)') on $(date -u +%F\ %T) UTC"
		echo "libs: $(cd "$DEV/libs" && ls | tr '\n' ' ')"
	} >"$DEV/MANIFEST"
	# the suites' data, whole suites (then optional groups) in order, while 61 MiB hold (3 to spare)
	for suite in $SUITES; do
		note=carried
		out=
		while read -r line; do
			opt=
			case $line in \?*) opt=1 line=${line#\?} ;; esac
			need=0
			missing=
			for rel in $line; do
				if [ ! -f "$shared/$rel" ]; then
					missing="$shared/$rel"
					break
				fi
				[ -f "$DEV/shared/$rel" ] || need=$((need + $(stat -c %s "$shared/$rel")))
			done
			if [ -n "$missing" ] || [ $((used + need)) -gt $budget ]; then
				if [ -z "$opt" ]; then
					note="left out: ${missing:+$missing is absent here}"
					[ -n "$missing" ] ||
						note="$note$((need >> 10)) KiB more would pass the 64 MiB that travel"
					break
				fi
				out="$out ${line%% *}"
				note="carried in part, not:$out"
				continue
			fi
			for rel in $line; do
				[ -f "$DEV/shared/$rel" ] && continue
				mkdir -p "$DEV/shared/$(dirname "$rel")"
				cp "$shared/$rel" "$DEV/shared/$rel" || return 2
			done
			used=$((used + need))
		done < <(suite_files "$suite")
		echo "suite $suite: $note" >>"$DEV/MANIFEST"
	done
	echo "travels: $((used >> 20)) MiB of the 64 (working tree $(($(tree_bytes) >> 20)) MiB, $DEV $(($(du -sb "$DEV" | cut -f1) >> 20)) MiB)" >>"$DEV/MANIFEST"
	cat "$DEV/MANIFEST"
	echo "then, with a device: run(command=\"bash tools/device-check.sh\", carry=[\"$DEV\"], timeout_s=560)"
}

# ---- the run: there ---------------------------------------------------------------------

START=$(date +%s)
BUDGET=${DEVICE_CHECK_BUDGET:-470}
PLUGIN=${DEVICE_CHECK_PLUGIN:-gpu-cuda}
PLUGDIR=${DEVICE_CHECK_PLUGIN_DIR:-$DEV/plugins}
# absolute: the suites write INI files elsewhere, whose relative paths would be theirs
case $PLUGDIR in /*) ;; *) PLUGDIR=$PWD/$PLUGDIR ;; esac
SHARED=$PWD/$DEV/shared
OUTDIR=${OUT:-build/device-out}
TXT=$OUTDIR/device-check.txt
CSV=$OUTDIR/device-check.csv
FAILED=0

say() { echo "$*" | tee -a "$TXT"; }

# One CSV row: step, status (pass, FAIL, skip, timeout), seconds, detail.
row() { printf '%s,%s,%s,"%s"\n' "$1" "$2" "$3" "${4//\"/\'}" >>"$CSV"; }

left() { echo $((BUDGET - ($(date +%s) - START))); }

# step NAME LIMIT LOG CMD...: CMD under min(LIMIT, the time left), its output
# into LOG (appended; STEP_OUT: this step's part of it) and its last lines
# into the summary.  Sets RC ("budget" when there was no time left to run it).
step() {
	local name=$1 limit=$2 log=$3 t0 t secs from
	shift 3
	t=$(left)
	[ "$limit" -lt "$t" ] || limit=$t
	STEP_OUT=/dev/null
	if [ "$limit" -lt 20 ]; then
		say "== $name: not run, the ${BUDGET} s budget is spent"
		row "$name" skip 0 "budget spent"
		RC=budget
		return
	fi
	say "== $name (at most $limit s): $*"
	echo "== $name: $*" >>"$log"
	from=$(wc -l <"$log")
	t0=$(date +%s)
	timeout -k 10 "$limit" "$@" >>"$log" 2>&1
	RC=$?
	secs=$(($(date +%s) - t0))
	STEP_OUT=$OUTDIR/.step
	tail -n +$((from + 1)) "$log" >"$STEP_OUT"
	tail -n 12 "$STEP_OUT" | sed 's/^/   /' | tee -a "$TXT"
	say "   exit $RC after $secs s"
}

# Record a step's outcome from RC (0 pass, 77 skip, 124/137 timeout, else FAIL).
verdict() {
	local name=$1 detail=$2 st
	case $RC in
	budget) return ;; # step said so
	0) st=pass ;;
	77) st=skip ;;
	124 | 137) st=timeout FAILED=1 ;;
	*) st=FAIL FAILED=1 ;;
	esac
	row "$name" "$st" "$3" "$detail"
}

# The libraries of libs/ the system lacks, linked into a folder of our own: LIBDIR.
link_libs() {
	local f soname cache
	LIBDIR=$(mktemp -d)
	cache=$(ldconfig -p 2>/dev/null) # once: grep -q on the pipe would SIGPIPE it
	for f in "$DEV"/libs/*; do
		[ -e "$f" ] || continue
		soname=$(basename "$f")
		if ! grep -q "^[[:space:]]*$soname " <<<"$cache"; then
			ln -s "$PWD/$f" "$LIBDIR/$soname"
			say "   using the carried $soname (the system has none)"
		fi
	done
}

# 1 when a test binary's tu_gpu() takes its device from STRATA_GPU_PLUGIN
# (tests/testutil.c); before that it loaded gpu-sim from the build tree.
takes_plugin_env() {
	grep -aq STRATA_GPU_PLUGIN "$1"
}

# Every file a suite needs (its first group) under the carried shared/.
suite_present() {
	local rel
	for rel in $(suite_files "$1" | head -1); do
		[ -f "$DEV/shared/$rel" ] || return 1
	done
}

goldens() {
	local suite bin t0 env
	for suite in $SUITES; do
		bin=$DEV/bin/$suite
		if ! suite_present "$suite"; then
			say "== ${suite}_gpu_all: not run, its data was not carried (see $DEV/MANIFEST)"
			row "${suite}_gpu_all" skip 0 "data not carried"
			continue
		fi
		case $suite in
		check_window | check_mtp)
			env="CK_DEFAULT_TIMEOUT=300" ;; # the engine's [gpu] plugin, from the environment
		*)
			if ! takes_plugin_env "$bin"; then
				say "== ${suite}_gpu_all: not run: this build's tu_gpu() (tests/testutil.c)" \
					"loads gpu-sim from the build tree, not STRATA_GPU_PLUGIN"
				row "${suite}_gpu_all" skip 0 "tu_gpu ignores STRATA_GPU_PLUGIN"
				continue
			fi
			env="CK_DEFAULT_TIMEOUT=300 STRATA_TEST_GPU=all" ;;
		esac
		t0=$(date +%s)
		# shellcheck disable=SC2086
		step "${suite}_gpu_all" 150 "$OUTDIR/goldens.log" env $env STRATA_GPU_PLUGIN="$PLUGIN" \
			STRATA_PLUGIN_PATH="$PLUGDIR" STRATA_SHARED_DIR="$SHARED" "$bin"
		verdict "${suite}_gpu_all" "$(grep -a '^[0-9]*%: Checks' "$STEP_OUT" | tail -1)" \
			$(($(date +%s) - t0))
	done
}

bench() {
	local model=${DEVICE_CHECK_BENCH_MODEL:-} b t0 line
	if [ -z "$model" ]; then
		model=/tmp/strata-bench-qwen3moe-q4_k_m.gguf
		t0=$(date +%s)
		step "write bench-qwen3moe Q4_K_M" 150 "$OUTDIR/bench.log" "$DEV/bin/strata-writer" \
			--preset bench-qwen3moe --type Q4_K_M --vocab "$SHARED/vocab/ggml-vocab-llama-spm.gguf" \
			--out "$model"
		verdict "write bench model" "$model" $(($(date +%s) - t0))
		[ "$RC" = 0 ] || return
	fi
	for b in all quarter; do
		t0=$(date +%s)
		step "strata-bench -b $b" 100 "$OUTDIR/bench.log" "$DEV/bin/strata-bench" -m "$model" \
			-t "$(nproc)" -p 512 -n 64 -r 3 -P "$PLUGDIR" -g "$PLUGIN" -b "$b" \
			-o "$OUTDIR/bench.csv"
		line=$(grep -a '^| \(pp\|tg\)' "$STEP_OUT" | tail -2 |
			awk -F'|' '{ gsub(/ /, "", $2); gsub(/ /, "", $4); printf "%s %s tok/s; ", $2, $4 }')
		verdict "strata-bench -b $b" "$line" $(($(date +%s) - t0))
	done
}

run() {
	local smi t0 line
	mkdir -p "$OUTDIR"
	: >"$TXT"
	echo "step,status,seconds,detail" >"$CSV"
	if [ -z "${DEVICE_CHECK_NO_GPU:-}" ]; then
		if ! command -v nvidia-smi >/dev/null 2>&1; then
			say "device-check: no GPU here (no nvidia-smi): nothing to check"
			row nvidia-smi skip 0 "no nvidia-smi"
			return 77
		fi
		smi=$(timeout 30 nvidia-smi -L 2>&1)
		echo "$smi" >"$OUTDIR/nvidia-smi.txt"
		if ! echo "$smi" | grep -q '^GPU '; then
			say "device-check: no GPU here (nvidia-smi -L: $smi): nothing to check"
			row nvidia-smi skip 0 "no GPU listed"
			return 77
		fi
		say "$smi"
		row nvidia-smi pass 0 "$(echo "$smi" | head -1)"
	fi
	if [ ! -f "$DEV/MANIFEST" ]; then
		say "device-check: $DEV is absent: run tools/device-check.sh --prepare on the build" \
			"machine and carry $DEV"
		return 2
	fi
	say "$(cat "$DEV/MANIFEST")"
	link_libs
	export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/lib:$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	if [ -f "$PLUGDIR/strata-$PLUGIN.so" ] && ldd "$PLUGDIR/strata-$PLUGIN.so" | grep -q 'not found'; then
		say "device-check: the plugin's libraries are missing here:"
		ldd "$PLUGDIR/strata-$PLUGIN.so" | grep 'not found' | tee -a "$TXT"
	fi

	t0=$(date +%s)
	step "check_backend_ops on $PLUGIN" 200 "$OUTDIR/conformance.log" env CK_DEFAULT_TIMEOUT=240 \
		STRATA_GPU_PLUGIN="$PLUGIN" STRATA_PLUGIN_PATH="$PLUGDIR" "$DEV/bin/check_backend_ops"
	line=$(grep -a '^coverage of' "$STEP_OUT" | tail -1)
	grep -a '^FAIL\|not supported by\|^MATMUL ' "$STEP_OUT" | head -60 | sed 's/^/   /' >>"$TXT"
	verdict check_backend_ops "${line:-$(tail -1 "$STEP_OUT")}" $(($(date +%s) - t0))
	goldens
	bench
	say "device-check: $( ((FAILED)) && echo 'a step FAILED' || echo 'every step that ran passed') in $(($(date +%s) - START)) s; $CSV:"
	tee -a "$TXT" <"$CSV"
	rm -rf "$LIBDIR" "$OUTDIR/.step"
	return $FAILED
}

case ${1:-} in
--prepare) prepare ;;
"") run ;;
*)
	echo "usage: tools/device-check.sh [--prepare]" >&2
	exit 2
	;;
esac
exit $?
