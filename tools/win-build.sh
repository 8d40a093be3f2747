#!/usr/bin/env bash
# The Windows (x86-64) build, cross-compiled here with Debian's mingw-w64:
# its libraries (tools/win-deps.sh), strata.exe, libstrata.dll and the
# plugins (cmake/mingw-w64-x86_64.cmake) in build-win/strata; then, as asked,
# its tests under Wine and the zip anyone can unpack on Windows.
#   tools/win-build.sh            build
#   tools/win-build.sh --test     build, then ctest under wine64 (tests/win)
#   tools/win-build.sh --zip      build, then build-win/strata-VERSION-win64.zip:
#                                 strata.exe, libstrata.dll, the plugins in
#                                 lib/strata, the SDK headers, README.md,
#                                 strata.ini
# Needs gcc-mingw-w64-x86-64-posix, dpkg-dev and (for --test) wine64:
# tools/deps.sh --windows installs them.  Exit status: 0, 1 failed, 3 blocked
# (win-deps.sh found no inih source: it says why).
set -euo pipefail
cd "$(dirname "$0")/.."

test=0 zip=0
for a in "$@"; do
  case $a in
    --test) test=1 ;;
    --zip) zip=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
    *) echo "win-build: unknown argument '$a' (--test, --zip)" >&2; exit 2 ;;
  esac
done
say() { echo "win-build: $*"; }

rc=0
tools/win-deps.sh || rc=$?
[ $rc -eq 0 ] || exit $rc
say "configuring and building build-win/strata"
cmake -S . -B build-win/strata -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-win/strata -j"$(nproc)"

if [ $test = 1 ]; then
  command -v /usr/lib/wine/wine64 >/dev/null 2>&1 || command -v wine64 >/dev/null 2>&1 ||
    { echo "win-build: no wine64 to run the tests (apt-get install wine64)" >&2; exit 1; }
  # The prefix (~/.wine) is made once, before the parallel tests: two wine
  # processes that both find it missing race to make it and one fails.
  say "setting up the Wine prefix (seconds, the first time)"
  wine=$(command -v wine64 || echo /usr/lib/wine/wine64)
  WINEDEBUG=-all "$wine" wineboot --init >/dev/null 2>&1 || true
  WINEDEBUG=-all "$wine" cmd /c exit >/dev/null 2>&1 || true
  say "tests under Wine"
  WINEDEBUG=-all ctest --test-dir build-win/strata --output-on-failure -j"$(nproc)"
fi

if [ $zip = 1 ]; then
  version=$(sed -n 's/^project(strata VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
  stage=build-win/stage/strata-$version-win64
  out=build-win/strata-$version-win64.zip
  rm -rf "$stage" "$out"
  cmake --install build-win/strata --prefix "$stage" >/dev/null
  rm -rf "$stage/share/strata/web"   # the web app is the server's, not in this build
  cp README.md strata.ini "$stage/"
  (cd build-win/stage && cmake -E tar cf "../$(basename "$out")" --format=zip "strata-$version-win64")
  say "$out: $(find "$stage" -type f | wc -l) files, $(du -k "$out" | cut -f1) KiB"
fi
