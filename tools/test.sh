#!/usr/bin/env bash
# Every test on a fresh Debian 12 machine: install what is missing, build, and
# run the whole ctest suite; then (unless --quick) the hardening stages, each
# in its own build dir:
#   asan    the whole suite built with -fsanitize=address,undefined  (build-asan)
#   tsan    the suites that run threads, built with -fsanitize=thread (build-tsan)
#   fuzz    each libFuzzer target of tests/fuzz for STRATA_FUZZ_SECONDS
#           (default 60; 0 = replay the seeds only), built with clang   (build-fuzz)
#           STRATA_FUZZ_FATAL=0 reports a fuzz crash without failing
#   clang   everything built with clang and -Werror                     (build-clang)
#   scalar  the whole suite built with -DSTRATA_SIMD=OFF: no x86 flags, the
#           scalar kernels alone (what a non-x86 build runs)            (build-scalar)
#   windows the Windows build (mingw-w64), its tests under Wine and its zip
#           (tools/win-build.sh --test --zip)                    (build-win/strata)
#   aarch64 everything cross-built for aarch64 (Debian's cross GCC), and the
#           suite but its slowest runs under qemu-user              (build-aarch64)
# Any test failure, sanitizer finding or fuzz crash makes it exit non-zero.
#
#   tools/test.sh                 everything (what CI runs)
#   tools/test.sh --quick         the normal build and suite only
#   tools/test.sh --only=asan,fuzz  the normal suite plus the stages named
#   tools/test.sh -R check_gguf   extra arguments go to the normal ctest run
set -euo pipefail
cd "$(dirname "$0")/.."

stages="asan tsan fuzz clang scalar windows aarch64"
ctest_args=()
for a in "$@"; do
  case "$a" in
    --quick) stages="" ;;
    --only=*) stages="${a#--only=}"; stages="${stages//,/ }" ;;
    *) ctest_args+=("$a") ;;
  esac
done
jobs="$(nproc)"
fuzz_seconds="${STRATA_FUZZ_SECONDS:-60}"
root="$PWD"
declare -a timings=()
slowest_line=""

# stage NAME CMD...: run and record its wall time.
stage() {
  local name="$1" t0=$SECONDS rc=0
  shift
  echo "== test.sh: $name"
  slowest_line=""
  "$@" || rc=$?
  timings+=("$(printf '%-22s %4ds%s' "$name" $((SECONDS - t0)) "$([ $rc -eq 0 ] || echo '  FAILED')")")
  [ -z "$slowest_line" ] || timings+=("  slowest test: $slowest_line")
  return $rc
}

# "AMD EPYC 9R14 96-Core Processor, avx512": the figures depend on both.
cpu_line() {
  local model isa=scalar
  model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
  if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then isa=avx512
  elif grep -qw avx2 /proc/cpuinfo 2>/dev/null; then isa=avx2; fi
  echo "${model:-unknown CPU}, $isa, $(nproc) CPUs"
}

summary() {
  local t
  echo "== test.sh: wall time per stage ($(cpu_line))"
  for t in "${timings[@]}"; do echo "   $t"; done
}

# run_ctest NAME DIR ARGS...: ctest in DIR (with the environment in
# ctest_env), then one line naming its slowest test and how much of that
# test's timeout it used (README's CI timings).
ctest_env=()
run_ctest() {
  local name="$1" dir="$2" log rc=0
  shift 2
  log="$dir/ctest-$name.log"
  env "${ctest_env[@]}" ctest --test-dir "$dir" --output-on-failure -j"$jobs" "$@" 2>&1 |
    tee "$log" || rc=$?
  slowest_line="$(slowest "$dir" "$log")"
  return $rc
}

# slowest DIR LOG: "NAME Xs of its Ys timeout (Z%)" for the slowest test in LOG.
slowest() {
  local dir="$1" log="$2"
  ctest --test-dir "$dir" --show-only=json-v1 | tr -d ' \n' |
    awk -v logf="$log" 'BEGIN { RS = "\"backtrace\"" }
      match($0, /"name":"[^"]*","properties"/) {
        name = substr($0, RSTART + 8, RLENGTH - 22)
        to = 1500
        if (match($0, /"TIMEOUT","value":[0-9.]+/)) to = substr($0, RSTART + 18, RLENGTH - 18) + 0
        timeout[name] = to
      }
      END {
        RS = "\n" # getline reads the log with RS too
        while ((getline line < logf) > 0)
          if (match(line, /Test +#[0-9]+: [^ ]+ [.]* *Passed +[0-9.]+ sec/)) {
            nf = split(substr(line, RSTART, RLENGTH), f, " ")
            for (i = 1; i <= nf; i++) if (f[i] == "Passed") t = f[i + 1] + 0
            n = f[3]
            if (t > worst) { worst = t; wname = n }
          }
        if (wname != "")
          printf "%s %.0fs of its %.0fs timeout (%.0f%%)\n", wname, worst, timeout[wname], 100 * worst / timeout[wname]
      }'
}
trap summary EXIT

configure_build() { # DIR [cmake args...]: configure and build everything
  local dir="$1"
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
}

# ---- the normal build and suite ---------------------------------------------------
deps_args=()
case " $stages " in *" fuzz "* | *" clang "*) deps_args+=(--fuzz) ;; esac
case " $stages " in *" windows "*) deps_args+=(--windows) ;; esac
case " $stages " in *" aarch64 "*) deps_args+=(--aarch64) ;; esac
stage deps tools/deps.sh "${deps_args[@]}"
stage build tools/build.sh
# The npm packages of tests/web (the official API clients, playwright-core),
# pinned by its package-lock.json, into the ignored tests/web/node_modules.
# Without npm or the registry the web tests skip (77) rather than fail.
npm_packages() {
  command -v npm >/dev/null 2>&1 || { echo "test.sh: no npm: the web tests will skip"; return 0; }
  [ tests/web/node_modules/.installed -nt tests/web/package-lock.json ] && return 0
  if npm ci --prefix tests/web --no-audit --no-fund --loglevel=error; then
    touch tests/web/node_modules/.installed
  else
    echo "test.sh: npm ci failed: the web tests will skip"
  fi
}
stage npm npm_packages
stage ctest run_ctest ctest build "${ctest_args[@]}"

# ---- AddressSanitizer + UndefinedBehaviorSanitizer: the whole suite ---------------
# exitcode=99 so a finding in a subprocess never looks like strata's own exit 1.
# detect_stack_use_after_return stays off: with it GCC 12 puts AVX-512 locals it
# has aligned to 64 bytes in fake frames that are not, and vmovdqa64 faults.
asan_env=(
  "ASAN_OPTIONS=detect_leaks=1:exitcode=99:strict_string_checks=1:check_initialization_order=1:detect_odr_violation=2"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/ubsan.supp"
  "LSAN_OPTIONS=suppressions=$root/tests/lsan.supp:print_suppressions=0"
)
run_asan() {
  configure_build build-asan -DSTRATA_SANITIZE=address,undefined &&
    { ctest_env=("${asan_env[@]}"); run_ctest asan build-asan; }
}

# ---- ThreadSanitizer: every suite that runs threads (a pool, readers, a server) ---
# Those that never start a thread in-process or in a strata subprocess are left out.
# (NAME.avx2, NAME.avx512, NAME.io_uring, ... are parts of suite NAME: tests/CMakeLists.txt)
tsan_tests='^(check_api|check_device|check_model_gpu_mid|check_qwen3next_gpu_mid|check_qwen4exp_gpu_mid|check_window_gpu_all|check_pool|check_steal|check_repack|check_aread|check_ple|check_io|check_serve|check_serve_chat|check_serve_fields|check_serve_dialects|check_serve_constrained|check_serve_access|check_tmpl|web_sdk|web_browser|check_model|check_qwen3next|check_qwen4exp|check_quant_golden|check_kernels|check_quants|check_quants_iq|check_iq_quant|check_cli|check_writer|check_window|check_faults|check_xstore|check_abi|check_plugin|ple_reader_selftest|serve_loadtest)([.][a-z0-9_]+)?$'
tsan_env=(
  "TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$root/tests/tsan.supp"
)
run_tsan() {
  configure_build build-tsan -DSTRATA_SANITIZE=thread &&
    { ctest_env=("${tsan_env[@]}"); run_ctest tsan build-tsan -R "$tsan_tests"; }
}

# ---- libFuzzer: each target for a bounded time -------------------------------------
# A crash leaves its input in build-fuzz/crashes/TARGET/; once fixed, copy it
# to tests/fuzz/regress-TARGET/, where ctest replays it in every build.
run_fuzz() {
  local t rc=0 out
  # set -e does not hold inside a function called from `||`: each step checks
  # (a failed build had let the old targets run)
  cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSTRATA_FUZZ=ON -DSTRATA_BUILD_TESTS=OFF >/dev/null || return 1
  cmake --build build-fuzz -j"$jobs" --target fuzz || { echo "test.sh: the fuzz build (clang) failed" >&2; return 1; }
  rm -rf build-fuzz/seeds
  build-fuzz/fuzz_seeds build-fuzz/seeds || return 1
  for t in gguf ini tokenizer json chat; do
    local dirs=("build-fuzz/corpus/$t")
    local d
    for d in build-fuzz/seeds/$t tests/fuzz/corpus-$t tests/fuzz/regress-$t; do
      [ -d "$d" ] && dirs+=("$d")
    done
    mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashes/$t"
    out="build-fuzz/fuzz-$t.log"
    # STRATA_FUZZ_SECONDS=0: only replay the seeds and corpora (-runs=0).
    local budget=(-max_total_time="$fuzz_seconds")
    [ "$fuzz_seconds" = 0 ] && budget=(-runs=0)
    if env "${asan_env[@]}" "build-fuzz/fuzz_$t" "${budget[@]}" -max_len=65536 -timeout=30 \
         -print_final_stats=1 -artifact_prefix="build-fuzz/crashes/$t/" "${dirs[@]}" \
         >"$out" 2>&1; then
      echo "fuzz_$t: $(grep -E '^stat::number_of_executed_units' "$out" | awk '{print $2}') runs" \
        "in ${fuzz_seconds}s, $(grep -E '^stat::new_units_added' "$out" | awk '{print $2}')" \
        "new inputs, no crash"
    else
      # A crash fails the stage; STRATA_FUZZ_FATAL=0 only reports it (to look
      # for more while one is open; fixed ones are replayed by ctest anyway).
      [ "${STRATA_FUZZ_FATAL:-1}" = 0 ] || rc=1
      echo "fuzz_$t: CRASH (the input is in build-fuzz/crashes/$t/); the log:" >&2
      tail -60 "$out" >&2
    fi
  done
  return $rc
}

# ---- portability: clang with -Werror, and a build without the x86 SIMD levels -------
run_clang() {
  command -v clang >/dev/null || { echo "test.sh: no clang (tools/deps.sh --fuzz installs it)" >&2; return 1; }
  configure_build build-clang -DCMAKE_C_COMPILER=clang -DCMAKE_C_FLAGS=-Werror
}
run_scalar() {
  configure_build build-scalar -DSTRATA_SIMD=OFF && run_ctest scalar build-scalar
}
# The Windows build (mingw-w64) and its tests under Wine (tests/win).
run_windows() {
  tools/win-build.sh --test --zip
}

# ---- aarch64: the cross build, its suite under qemu-user ----------------------------
# cmake/aarch64-linux-gnu.cmake: Debian's cross GCC and the :arm64 libraries
# (multiarch); ctest runs each test through qemu-aarch64, and the strata
# commands the tests start too (build-aarch64/emu/).  No x86 flag reaches the
# compiler (STRATA_SIMD is off off x86): the scalar kernels, without FMA
# contraction (CMakeLists.txt).  Skipped (77, saying why): the .avx2/.avx512
# parts, check_writer.peer, and check_io.io_uring and io-direct's AIO case
# (qemu-user emulates neither io_uring nor Linux AIO).  Left out, for time
# alone (qemu-user runs the suites 10-40x slower than the native stage; the
# whole suite took 26 min on 2 cores, partly shared with another build, and
# check_writer ran past its 600 s timeout), what runs the code of what stays:
#   the model suites again on the gpu-sim device (*_gpu_*: placement over the
#   same kernels, 17 min of test time), check_writer (every type written and
#   run, 8-10 min; its quantisers are check_quants' and check_iq_quant's), and
#   check_window, check_spec and check_mtp (decode windows and drafting over
#   the forward pass that check_model and check_quant_golden hold to the
#   goldens; 2-4 min each, 14 min for the stage with them under load).
aarch64_excluded='_gpu_|^(check_writer|check_window|check_spec|check_mtp)$'
run_aarch64() {
  command -v aarch64-linux-gnu-gcc >/dev/null && command -v qemu-aarch64 >/dev/null ||
    { echo "test.sh: no aarch64-linux-gnu-gcc or qemu-aarch64 (tools/deps.sh --aarch64 installs them)" >&2; return 1; }
  configure_build build-aarch64 -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" &&
    run_ctest aarch64 build-aarch64 -E "$aarch64_excluded"
}

failed=0
for s in $stages; do
  case "$s" in
    asan) stage asan+ubsan run_asan || failed=1 ;;
    tsan) stage tsan run_tsan || failed=1 ;;
    fuzz) stage fuzz run_fuzz || failed=1 ;;
    clang) stage clang-werror run_clang || failed=1 ;;
    scalar) stage scalar run_scalar || failed=1 ;;
    windows) stage windows run_windows || failed=1 ;;
    aarch64) stage aarch64 run_aarch64 || failed=1 ;;
    *) echo "test.sh: unknown stage '$s' (asan, tsan, fuzz, clang, scalar, windows, aarch64)" >&2; exit 2 ;;
  esac
done
exit $failed
