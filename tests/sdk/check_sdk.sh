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
#     it with the same output as the build tree's strata reading them mapped.
# Exits 77 (skipped) without pkg-config or a C compiler.
set -euo pipefail
build=$(cd "$1" && pwd)
shared="$2"
src=$(cd "$(dirname "$0")/../.." && pwd)
for tool in pkg-config cc cmake; do
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
cc -shared -fPIC -O2 -Wall -Wextra -Werror $cflags -Wl,--no-undefined \
  -o "$work/pc/strata-io-mmap.so" "$src/examples/io-mmap/io_mmap.c"

echo "== examples/io-mmap with CMake's find_package(strata-plugin)"
cmake -S "$src/examples/io-mmap" -B "$work/cm" -DCMAKE_PREFIX_PATH="$stage" \
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
strata=(env -u STRATA_PLUGIN_PATH "$stage/bin/strata")
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
  "$build/strata" "${args[@]}" >mapped.txt 2>/dev/null
  cmp -s streamed.txt mapped.txt || fail "experts streamed through io-mmap give other tokens than mapped ones"
  echo "streamed through io-mmap = mapped: $(wc -c <mapped.txt) bytes of output"
else
  echo "($model is absent: no model run)"
fi
echo "check_sdk: ok"
