#!/usr/bin/env bash
# check_sdk.sh BUILD_DIR SHARED_DIR: the installed plugin SDK, as a third
# party meets it.  `cmake --install` of BUILD_DIR into a staging prefix, then:
#   - the layout: strata in bin/, the shipped plugins in lib/strata/ (none of
#     the test-only ones), the ABI's headers, strata-plugin.pc, the CMake package;
#   - examples/io-mmap built twice against the staged SDK only (never the
#     source tree's include/): with cc and `pkg-config --cflags strata-plugin`,
#     and with CMake's find_package(strata-plugin), installed into the prefix;
#   - the installed strata, with no STRATA_PLUGIN_PATH, lists its plugins and
#     the example, passes the example through the io conformance suite
#     (`strata io-check`, both builds), and streams a model's experts through
#     it with the same output as the build tree's strata reading them mapped;
#   - libstrata exports strata.h's functions and nothing else; examples/embed
#     built with `pkg-config --cflags --libs strata` generates what the strata
#     command does, logs through its callback, and fails bad input clearly.
# Exits 77 (skipped) without pkg-config or a C compiler.
# The build's compiler comes in CC (tests/CMakeLists.txt; default cc).  A cross
# build's also gives STRATA_TOOLCHAIN_FILE (the examples' CMake build takes it)
# and STRATA_TEST_EMULATOR (what runs the target's programs; ../../CMakeLists.txt).
set -euo pipefail
build=$(cd "$1" && pwd)
shared="$2"
src=$(cd "$(dirname "$0")/../.." && pwd)
cc=${CC:-cc}
read -ra emu <<<"${STRATA_TEST_EMULATOR:-}"
toolchain=()
[ -z "${STRATA_TOOLCHAIN_FILE:-}" ] || toolchain=(-DCMAKE_TOOLCHAIN_FILE="$STRATA_TOOLCHAIN_FILE")
for tool in pkg-config "$cc" cmake; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is absent"; exit 77; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/strata-check-sdk-XXXXXX")
trap 'rm -rf "$work"' EXIT
stage="$work/stage"
fail() { echo "check_sdk: FAIL: $*" >&2; exit 1; }

echo "== install into $stage"
cmake --install "$build" --prefix "$stage" >/dev/null
pc=$(find "$stage" -name strata-plugin.pc)
[ -n "$pc" ] || fail "no strata-plugin.pc installed"
export PKG_CONFIG_PATH="$(dirname "$pc")"
plugindir=$(realpath "$(pkg-config --variable=plugindir strata-plugin)")
for f in bin/strata include/strata/plugin.h include/strata/io_helpers.h \
         include/strata/backend.h include/strata/quants.h; do
  [ -e "$stage/$f" ] || fail "$f is not installed"
done
[ -e "$(find "$stage" -name strata-plugin-config.cmake)" ] || fail "no CMake package installed"
for p in io-pread io-direct path-batched path-window; do
  [ -e "$plugindir/strata-$p.so" ] || fail "plugin $p is not in $plugindir"
done
if ls "$plugindir" | grep -E 'faulty|gpu-sim|abi-|test'; then
  fail "test-only plugins were installed into $plugindir"
fi

echo "== examples/io-mmap with cc and pkg-config"
cflags=$(pkg-config --cflags strata-plugin)
case "$cflags" in *"$src"*) fail "pkg-config's flags reach into the source tree: $cflags" ;; esac
mkdir -p "$work/pc"
"$cc" -shared -fPIC -O2 -Wall -Wextra -Werror $cflags -Wl,--no-undefined \
  -o "$work/pc/strata-io-mmap.so" "$src/examples/io-mmap/io_mmap.c"

echo "== examples/io-mmap with CMake's find_package(strata-plugin)"
cmake -S "$src/examples/io-mmap" -B "$work/cm" -DCMAKE_PREFIX_PATH="$stage" "${toolchain[@]}" \
  -DCMAKE_C_FLAGS=-Werror >/dev/null
cmake --build "$work/cm" >/dev/null
grep -Eq -- "(-I|-isystem )$stage/include" "$work/cm/CMakeFiles/io-mmap.dir/flags.make" ||
  fail "the CMake build does not take its headers from the staged prefix"
if grep -q -- "$src/include" "$work/cm/CMakeFiles/io-mmap.dir/flags.make"; then
  fail "the CMake build reaches into the source tree"
fi
cmake --install "$work/cm" --prefix "$stage" >/dev/null
[ -e "$plugindir/strata-io-mmap.so" ] || fail "the example did not install into $plugindir"

echo "== the installed strata"
strata=(env -u STRATA_PLUGIN_PATH "${emu[@]}" "$stage/bin/strata")
cd "$work"
"${strata[@]}" plugins >plugins.txt
cat plugins.txt
for p in io-mmap io-pread path-batched; do
  grep -Eq "^(io|path) +$p +.*$plugindir/strata-$p.so" plugins.txt ||
    fail "strata plugins does not list $p from $plugindir"
done
"${strata[@]}" io-check io-mmap --dir "$work"
"${strata[@]}" io-check "$work/pc/strata-io-mmap.so" --dir "$work" | tail -1

model="$shared/models/syn-qwen3moe-d256-q8_0.gguf"
if [ -e "$model" ]; then
  args=(-m "$model" -p "Once upon a time" -n 16 --temp 0)
  "${strata[@]}" "${args[@]}" --experts stream --io-plugin io-mmap >streamed.txt 2>streamed.err ||
    { cat streamed.err; fail "the installed strata failed to stream experts through io-mmap"; }
  grep -q "through io-mmap" streamed.err || { cat streamed.err; fail "io-mmap did not read the experts"; }
  "${emu[@]}" "$build/strata" "${args[@]}" >mapped.txt 2>/dev/null
  cmp -s streamed.txt mapped.txt || fail "experts streamed through io-mmap give other tokens than mapped ones"
  echo "streamed through io-mmap = mapped: $(wc -c <mapped.txt) bytes of output"
else
  echo "($model is absent: no model run)"
fi
echo "== the application API: libstrata and examples/embed"
for f in include/strata.h; do [ -e "$stage/$f" ] || fail "$f is not installed"; done
lib=$(find "$stage" -name libstrata.so | head -1)
[ -n "$lib" ] || fail "libstrata.so is not installed"
exported=$(nm -D --defined-only "$lib" | awk '{print $3}')
others=$(echo "$exported" | grep -v '^strata_' || true)
[ -z "$others" ] || fail "libstrata exports more than strata.h: $others"
n_api=$(grep -c '^STRATA_API ' "$src/include/strata.h")
[ "$(echo "$exported" | wc -l)" -eq "$n_api" ] ||
  fail "libstrata exports $(echo "$exported" | wc -l) functions, strata.h declares $n_api"
case "$(pkg-config --cflags --libs strata)" in *"$src"*) fail "strata.pc reaches into the source tree" ;; esac
# A sanitized build's libstrata needs its runtime first in the program that loads it.
san=$(sed -n 's/^STRATA_SANITIZE:STRING=//p' "$build/CMakeCache.txt")
"$cc" -O2 -Wall -Wextra -Werror ${san:+-fsanitize=$san} "$src/examples/embed/embed.c" \
  $(pkg-config --cflags --libs strata) -Wl,-rpath,"$(dirname "$lib")" -o "$work/embed"
story="$shared/models/stories260K.gguf"
if [ -e "$story" ]; then
  "${emu[@]}" "$work/embed" "$story" "Once upon a time" run.n_predict=32 run.temp=0 >embed.txt 2>embed.err ||
    { cat embed.err; fail "embed failed"; }
  "${emu[@]}" "$build/strata" -m "$story" -p "Once upon a time" -n 32 --temp 0 >cli.txt 2>/dev/null
  cmp -s embed.txt cli.txt || { diff embed.txt cli.txt || true; fail "embed's tokens differ from the strata command's"; }
  echo "embed = strata: $(head -c 60 embed.txt)..."
  # Bad input: one clear error through strata_last_error(), exit 1.
  if "${emu[@]}" "$work/embed" "$work/none.gguf" "x" >/dev/null 2>bad.err; then fail "embed of a missing model succeeded"; fi
  grep -q "^embed: cannot open $work/none.gguf" bad.err || { cat bad.err; fail "no clear error for a missing model"; }
  grep -q "^embed: strata error: cannot open $work/none.gguf" bad.err ||
    { cat bad.err; fail "the error did not reach the log callback"; }
  [ "$(grep -c "cannot open" bad.err)" -eq 2 ] || { cat bad.err; fail "more than one error line"; }
  if "${emu[@]}" "$work/embed" "$story" "x" run.tmep=0 >/dev/null 2>bad.err; then fail "a misspelt key was taken"; fi
  grep -q "unknown key 'tmep' in \[run\] (did you mean 'temp'?)" bad.err ||
    { cat bad.err; fail "no clear error for a misspelt key"; }
else
  echo "($story is absent: embed not run)"
fi
echo "check_sdk: ok"
