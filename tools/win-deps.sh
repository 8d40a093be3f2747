#!/usr/bin/env bash
# Build the libraries strata's Windows (mingw-w64, x86-64) build links --
# pcre2 (8-bit), utf8proc, cJSON, inih -- as static libraries with pkg-config
# files, from Debian's sources, into a prefix that cmake/mingw-w64-x86_64.cmake
# points pkg-config at (the server's libmicrohttpd and the logits dump's
# libcrypto are not in the Windows build).
#   tools/win-deps.sh [PREFIX]        PREFIX: default build-win/deps
# Sources and build trees: build-win/src/<lib>.  One line per step; a step's
# own output only when it fails (its log stays in build-win/src/<lib>/).
# Idempotent: a library whose stamp (PREFIX/.stamps/<lib>) names the same
# source version, recipe and compiler is skipped.
#
# Needs gcc-mingw-w64-x86-64-posix, cmake, pkg-config, dpkg-dev; a deb-src
# entry for Debian's main (added by this script, as root, when missing).
# inih: Debian's mirror serves bookworm's libinih .dsc (55-1) but 404s its
# tarballs, so when `apt-get source libinih` fails, Debian's libinih 59-1 (a
# later release's source, the same ini.h defaults) is taken from the same
# mirror's pool, each file checked against the sha256 pinned below; else
# STRATA_INIH_SRC may name an inih source tree (r55 or later: ini.c, ini.h).
# Exit status: 0 done, 1 failed, 3 blocked (inih: no source to build from).
set -euo pipefail
export LC_ALL=C   # messages, and a "." in $EPOCHREALTIME

root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$root/build-win/deps}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
srcroot=$root/build-win/src
toolchain=$root/cmake/mingw-w64-x86_64.cmake
stamps=$prefix/.stamps
jobs=$(nproc)
cc=x86_64-w64-mingw32-gcc-posix
ar=x86_64-w64-mingw32-gcc-ar-posix
# Bump when a library's build recipe below changes: every library rebuilds.
recipe=1

say() { echo "win-deps: $*"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
die() { echo "win-deps: $*" >&2; exit 1; }

for tool in "$cc" "$ar" cmake pkg-config dpkg-source apt-get sha256sum; do
  command -v "$tool" >/dev/null 2>&1 ||
    die "$tool not found (apt-get install gcc-mingw-w64-x86-64-posix cmake pkg-config dpkg-dev)"
done
ccver=$("$cc" -dumpversion)
mkdir -p "$srcroot" "$stamps"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)

# run LOG CMD...: CMD's output into LOG; on failure, the log's tail and exit 1.
run() {
  local log=$1
  shift
  if ! "$@" >>"$log" 2>&1; then
    echo "win-deps: failed: $*" >&2
    echo "---- last 60 lines of $log ----" >&2
    tail -n 60 "$log" >&2
    exit 1
  fi
}

# ---- deb-src ----------------------------------------------------------------------
# apt-get source needs a deb-src entry for this release's main, and its index
# fetched.  Added as a file of our own, only when no source list has one.
# shellcheck disable=SC1091
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || die "cannot tell the Debian release (no VERSION_CODENAME in /etc/os-release)"
aptparts=/etc/apt/sources.list.d/
eval "$(apt-config shell aptparts Dir::Etc::sourceparts/d)"   # where APT_CONFIG says
srcfile=${aptparts%/}/strata-deb-src.sources

# shellcheck disable=SC2016 # $(...) below: apt-get's format fields
sources_fetched() {
  apt-get indextargets --format '$(IDENTIFIER) $(CODENAME) $(COMPONENT)' 2>/dev/null |
    grep -qx "Sources $codename main"
}
sources_configured() {
  apt-get -o Debug::NoLocking=1 update --print-uris 2>/dev/null |
    grep -q "/dists/$codename/main/source/Sources"
}
need_root() {
  [ "$(id -u)" -eq 0 ] || die "$1: run this script as root"
}

if ! sources_fetched; then
  log=$srcroot/apt.log
  : >"$log"
  if sources_configured; then
    need_root "fetching the deb-src index"
    say "deb-src for $codename main configured but not fetched: apt-get update"
    run "$log" apt-get update
  else
    need_root "adding a deb-src entry ($srcfile)"
    # The mirror the binary packages come from (else Debian's).
    # shellcheck disable=SC2016
    site=$(apt-get indextargets --format '$(IDENTIFIER) $(CODENAME) $(COMPONENT) $(SITE)' 2>/dev/null |
           awk -v c="$codename" '$1 == "Packages" && $2 == c && $3 == "main" { print $4; exit }')
    site=${site:-http://deb.debian.org/debian}
    say "adding deb-src for $codename main ($srcfile): apt-get update of it alone"
    {
      echo "# Added by strata's tools/win-deps.sh: apt-get source for the Windows build's libraries."
      echo "Types: deb-src"
      echo "URIs: $site"
      echo "Suites: $codename"
      echo "Components: main"
      [ -e /usr/share/keyrings/debian-archive-keyring.gpg ] &&
        echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
    } >"$srcfile"
    # Only this file's index: the other lists are left as they are.
    run "$log" apt-get update -o "Dir::Etc::sourcelist=$srcfile" \
      -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
  fi
  sources_fetched || die "still no deb-src index for $codename main after apt-get update (see $log)"
fi

# ---- helpers ----------------------------------------------------------------------
# What apt-get source would fetch, as "name sha256" lines, for the four at once
# (no download; each apt-get run costs seconds here).  One at a time when one
# of them is not in the index (then the whole call fails).
print_uris() {
  apt-get source --print-uris "$@" 2>/dev/null |
    sed -n "s/^'[^']*' \([^ ]*\) [0-9]* SHA256:\([0-9a-f]*\)\$/\1 \2/p"
}
apt_pkgs=(pcre2 utf8proc cjson libinih)
apt_uris=$(print_uris "${apt_pkgs[@]}") || apt_uris=
if [ -z "$apt_uris" ]; then
  for p in "${apt_pkgs[@]}"; do
    apt_uris+=$(print_uris "$p")$'\n' || true
  done
fi
# apt_files PKG: PKG's files (its .dsc first).
apt_files() {
  awk -v p="$1_" 'index($1, p) == 1' <<<"$apt_uris" |
    sort -t' ' -k1,1 | awk '/\.dsc /{ print; next } { rest = rest $0 "\n" } END { printf "%s", rest }'
}

# apt_fetch PKG DIR LOG: the source package into DIR, unless all of its files
# are there with the right checksums.  Prints the .dsc's path.
apt_fetch() {
  local pkg=$1 dir=$2 log=$3 files ok=1 name sum
  files=$(apt_files "$pkg")
  [ -n "$files" ] || return 1
  while read -r name sum; do
    [ -f "$dir/$name" ] && [ "$(sha256sum <"$dir/$name" | cut -d' ' -f1)" = "$sum" ] || ok=0
  done <<<"$files"
  if [ $ok = 0 ]; then
    (cd "$dir" && apt-get source --download-only "$pkg") >>"$log" 2>&1 || return 1
  fi
  echo "$dir/$(head -n1 <<<"$files" | cut -d' ' -f1)"
}

# up_to_date LIB STAMP ARCHIVE: the stamp matches and the library is there.
up_to_date() {
  [ -f "$stamps/$1" ] && [ "$(cat "$stamps/$1")" = "$2" ] && [ -f "$prefix/lib/$3" ]
}

# extract DSC DIR LOG: the Debian source, patches applied, into DIR (fresh).
extract() {
  rm -rf "$2"
  run "$3" dpkg-source -x "$1" "$2"
}

# cmake_build LIB SRC LOG ARGS...: configure with the toolchain, build,
# install into the prefix; the build tree is build-win/src/LIB/build (fresh).
cmake_build() {
  local lib=$1 src=$2 log=$3
  shift 3
  rm -rf "$srcroot/$lib/build"
  run "$log" cmake -S "$src" -B "$srcroot/$lib/build" "${generator[@]}" \
    -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DSTRATA_WIN_DEPS="$prefix" \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
  run "$log" cmake --build "$srcroot/$lib/build" -j "$jobs"
  run "$log" cmake --install "$srcroot/$lib/build"
}

# pc_add_cflag FILE FLAG: FLAG on the .pc file's Cflags line, once.
pc_add_cflag() {
  grep -q "^Cflags:.*[[:space:]]$2\([[:space:]]\|\$\)" "$1" ||
    sed -i "s/^Cflags:\(.*[^[:space:]]\)[[:space:]]*\$/Cflags:\1 $2/" "$1"
}

# ---- the three from apt-get source -------------------------------------------------
# build_apt LIB PKG ARCHIVE: fetch, extract, then build_LIB SRCDIR LOG VERSION.
build_apt() {
  local lib=$1 pkg=$2 archive=$3 dir=$srcroot/$1 files ver stamp dsc log t0
  mkdir -p "$dir"
  log=$dir/build.log
  files=$(apt_files "$pkg")
  [ -n "$files" ] || die "$lib: apt-get source --print-uris $pkg gives nothing (no deb-src for it?)"
  ver=$(head -n1 <<<"$files" | cut -d' ' -f1 | sed "s/^${pkg}_//; s/\.dsc\$//")
  stamp="$lib $ver (Debian source $pkg) recipe $recipe gcc $ccver"
  if up_to_date "$lib" "$stamp" "$archive"; then
    say "$lib $ver: up to date"
    return
  fi
  : >"$log"
  : >"$dir/fetch.log"
  rm -f "$stamps/$lib"
  say "$lib $ver: fetching the source (apt-get source $pkg)"
  dsc=$(apt_fetch "$pkg" "$dir" "$dir/fetch.log") || {
    echo "win-deps: $lib: apt-get source --download-only $pkg failed; its output:" >&2
    cat "$dir/fetch.log" >&2
    exit 1
  }
  say "$lib $ver: extracting (dpkg-source -x: Debian's patches applied)"
  extract "$dsc" "$dir/source" "$log"
  say "$lib $ver: building (log: ${log#"$root"/})"
  t0=$EPOCHREALTIME
  "build_$lib" "$dir/source" "$log" "$ver"
  printf '%s\n' "$stamp" >"$stamps/$lib"
  say "$lib $ver: built and installed in $(since "$t0") s"
}

build_pcre2() {
  # The 8-bit library only (pcre2-posix comes with it), static, JIT on as in
  # Debian's amd64 build (strata calls pcre2_jit_compile); no pcre2grep,
  # pcre2test or the optional zlib/bzip2/readline.
  cmake_build pcre2 "$1" "$2" -DBUILD_SHARED_LIBS=OFF -DBUILD_STATIC_LIBS=ON \
    -DPCRE2_BUILD_PCRE2_8=ON -DPCRE2_BUILD_PCRE2_16=OFF -DPCRE2_BUILD_PCRE2_32=OFF \
    -DPCRE2_SUPPORT_JIT=ON -DPCRE2_SUPPORT_UNICODE=ON \
    -DPCRE2_BUILD_PCRE2GREP=OFF -DPCRE2_BUILD_TESTS=OFF \
    -DPCRE2_SUPPORT_LIBZ=OFF -DPCRE2_SUPPORT_LIBBZ2=OFF \
    -DPCRE2_SUPPORT_LIBEDIT=OFF -DPCRE2_SUPPORT_LIBREADLINE=OFF
  # A static pcre2 on Windows: consumers need PCRE2_STATIC, or pcre2.h
  # declares everything __declspec(dllimport).  Autotools' .pc says so,
  # CMake's (10.42) leaves it out.
  local pc
  for pc in "$prefix"/lib/pkgconfig/libpcre2-8.pc "$prefix"/lib/pkgconfig/libpcre2-posix.pc; do
    [ -f "$pc" ] && pc_add_cflag "$pc" -DPCRE2_STATIC
  done
  true
}

build_utf8proc() {
  cmake_build utf8proc "$1" "$2" -DBUILD_SHARED_LIBS=OFF \
    -DUTF8PROC_INSTALL=ON -DUTF8PROC_ENABLE_TESTING=OFF
  # utf8proc's own .pc says -DUTF8PROC_EXPORTS (dllexport: for building the
  # DLL); a static library's consumers need UTF8PROC_STATIC instead, or
  # utf8proc.h declares everything __declspec(dllimport).
  cat >"$prefix/lib/pkgconfig/libutf8proc.pc" <<EOF
# Written by strata's tools/win-deps.sh: utf8proc $3, static, for x86_64-w64-mingw32.
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: libutf8proc
Description: UTF8 processing
Version: ${3%%-*}
Libs: -L\${libdir} -lutf8proc
Cflags: -I\${includedir} -DUTF8PROC_STATIC
EOF
}

build_cjson() {
  # ENABLE_CUSTOM_COMPILER_FLAGS=OFF: cJSON's own warning set with -Werror,
  # and -fstack-protector-strong, which with this mingw-w64 would need -lssp
  # in every program that links it.  Hidden symbols: no __declspec(dllexport)
  # in a static library (the default would make every .exe linking it export
  # cJSON's API); consumers get the same CJSON_HIDE_SYMBOLS from the .pc.
  cmake_build cjson "$1" "$2" -DBUILD_SHARED_LIBS=OFF -DBUILD_SHARED_AND_STATIC_LIBS=OFF \
    -DENABLE_CJSON_TEST=OFF -DENABLE_CJSON_UTILS=OFF -DENABLE_CUSTOM_COMPILER_FLAGS=OFF \
    -DENABLE_PUBLIC_SYMBOLS=OFF -DENABLE_HIDDEN_SYMBOLS=ON -DENABLE_TARGET_EXPORT=OFF
  pc_add_cflag "$prefix/lib/pkgconfig/libcjson.pc" -DCJSON_HIDE_SYMBOLS
}

# ---- inih ---------------------------------------------------------------------------
# One C file, compiled here.  No INI_* defines: Debian's libinih (55-1) is
# built with meson's distro_install=true, which ignores every inih option, so
# ini.h's defaults hold there (checked against the installed libinih.so.55:
# multi-line on, BOM on, ';' and '#' start comments, ';' inline comments,
# stack buffer of INI_MAX_LINE 200, no realloc, no stop on first error, no
# name without value) -- what core/config/ini.c relies on.  Debian's patch
# makes those run-time variables (ini_max_line, ...) with the same defaults;
# upstream's inih has them as compile-time constants: the same behaviour.
build_inih_from() { # SRCDIR LOG VERSION
  local b=$srcroot/inih/build
  rm -rf "$b"
  mkdir -p "$b" "$prefix/lib/pkgconfig" "$prefix/include"
  run "$2" "$cc" -O2 -g -Wall -c "$1/ini.c" -I"$1" -o "$b/ini.o"
  rm -f "$b/libinih.a"
  run "$2" "$ar" rcs "$b/libinih.a" "$b/ini.o"
  install -m 644 "$b/libinih.a" "$prefix/lib/libinih.a"
  install -m 644 "$1/ini.h" "$prefix/include/ini.h"
  cat >"$prefix/lib/pkgconfig/inih.pc" <<EOF
# Written by strata's tools/win-deps.sh: inih $3, static, for x86_64-w64-mingw32.
prefix=$prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: inih
Description: simple .INI file parser
Version: $3
Libs: -L\${libdir} -linih
Cflags: -I\${includedir}
EOF
}

# inih_apt_why LOG: why apt-get source libinih failed, in a few words.
inih_apt_why() {
  if grep -q 'orig\.tar.*404\|404.*orig\.tar' "$1"; then
    echo "the mirror 404s libinih's orig tarball"
  elif [ -s "$1" ]; then
    echo "see ${1#"$root"/}"
  else
    echo "libinih is not in the deb-src index"
  fi
}

# Debian's libinih 59-1 in the pool of the mirror the packages come from:
# "file sha256" (the .dsc's own checksums for the other two; apt's
# downloader checks each, so no curl is needed).
inih_pool_ver=59-1
inih_pool_files="libinih_59-1.dsc ec3334b0ad6a817e84b0bfa7599097536f8433c7fc36f82561dc9c4930fe9779
libinih_59.orig.tar.gz 062279922805f5e9a369551a08d5ddb506140fe50774183ffdbb7c22bb97e3f4
libinih_59-1.debian.tar.xz 1271db2900148296fd5b9ea1518947458d26957b737b07042422023b362fc353"

# inih_pool_fetch DIR LOG: those three into DIR (kept when their sums match).
inih_pool_fetch() {
  local dir=$1 log=$2 site name sum
  # shellcheck disable=SC2016
  site=$(apt-get indextargets --format '$(IDENTIFIER) $(COMPONENT) $(SITE)' 2>/dev/null |
         awk '$1 == "Packages" && $2 == "main" { print $3; exit }')
  site=${site:-http://deb.debian.org/debian}
  while read -r name sum; do
    [ -f "$dir/$name" ] && [ "$(sha256sum <"$dir/$name" | cut -d' ' -f1)" = "$sum" ] && continue
    rm -f "$dir/$name"
    /usr/lib/apt/apt-helper download-file "${site%/}/pool/main/libi/libinih/$name" \
      "$dir/$name" "SHA256:$sum" >>"$log" 2>&1 || return 1
  done <<<"$inih_pool_files"
}

build_inih() {
  local dir=$srcroot/inih log=$srcroot/inih/build.log flog=$srcroot/inih/fetch.log
  local files aptver stamp dsc src ver how t0 sum why
  mkdir -p "$dir"
  : >"$log"
  : >"$flog"
  files=$(apt_files libinih)
  aptver=$(head -n1 <<<"$files" | cut -d' ' -f1 | sed 's/^libinih_//; s/\.dsc$//')
  if [ -n "$aptver" ]; then
    stamp="inih $aptver (Debian source libinih) recipe $recipe gcc $ccver"
    if up_to_date inih "$stamp" libinih.a; then
      say "inih $aptver: up to date"
      return
    fi
  fi
  # (1) Debian's source.
  if [ -n "$aptver" ] && dsc=$(apt_fetch libinih "$dir" "$flog"); then
    say "inih $aptver: fetched the source (apt-get source libinih); extracting"
    extract "$dsc" "$dir/source" "$log"
    src=$dir/source ver=${aptver%%-*} how="$aptver (Debian source libinih)"
  # (2) STRATA_INIH_SRC, when set: the user's choice comes first.
  elif why=$(inih_apt_why "$flog") && [ -n "${STRATA_INIH_SRC:-}" ]; then
    say "inih: apt-get source libinih failed ($why); using STRATA_INIH_SRC=$STRATA_INIH_SRC"
    if ! src=$(cd "$STRATA_INIH_SRC" 2>/dev/null && pwd) || [ ! -f "$src/ini.c" ] || [ ! -f "$src/ini.h" ]; then
      die "inih: STRATA_INIH_SRC=$STRATA_INIH_SRC is not an inih source tree (no ini.c and ini.h there)"
    fi
    ver=$(sed -n "s/^ *version *: *'\([0-9.]*\)'.*/\1/p" "$src/meson.build" 2>/dev/null | head -n1)
    [ -n "$ver" ] || die "inih: cannot tell the version of $src (no version in its meson.build); r55 or later is needed"
    [ "${ver%%.*}" -ge 55 ] 2>/dev/null ||
      die "inih: $src is inih r$ver; r55 or later is needed"
    sum=$(cat "$src/ini.c" "$src/ini.h" | sha256sum | cut -c1-16)
    how="r$ver from $src (ini.c+ini.h sha256 $sum)"
    stamp="inih $how recipe $recipe gcc $ccver"
    if up_to_date inih "$stamp" libinih.a; then
      say "inih r$ver: up to date"
      return
    fi
  # (3) Debian's libinih of a later release, from the mirror's pool.
  elif stamp="inih $inih_pool_ver (Debian pool libinih) recipe $recipe gcc $ccver" &&
       up_to_date inih "$stamp" libinih.a; then
    say "inih $inih_pool_ver: up to date"
    return
  elif inih_pool_fetch "$dir" "$flog"; then
    say "inih: apt-get source libinih failed ($why); took Debian's libinih $inih_pool_ver from the mirror's pool; extracting"
    extract "$dir/libinih_$inih_pool_ver.dsc" "$dir/source" "$log"
    src=$dir/source ver=${inih_pool_ver%%-*} how="$inih_pool_ver (Debian pool libinih)"
  # (4) Nothing to build from: what is installed stays, else blocked.
  elif [ -f "$stamps/inih" ] && [ -f "$prefix/lib/libinih.a" ]; then
    say "inih: no source now (apt-get source libinih: $why; STRATA_INIH_SRC unset); keeping the installed one: $(cat "$stamps/inih")"
    return
  else
    case $why in
      *404*) why= ;;
      *) why=" (this time: $why)" ;;
    esac
    echo "win-deps: inih: cannot get its source: Debian's mirror 404s libinih's orig tarball (libinih_55.orig.tar.gz)$why, and its pool has no libinih $inih_pool_ver (see ${flog#"$root"/}); set STRATA_INIH_SRC to an inih source tree (r55 or later: ini.c, ini.h)" >&2
    exit 3
  fi
  rm -f "$stamps/inih"
  say "inih $ver: building (log: ${log#"$root"/})"
  t0=$EPOCHREALTIME
  build_inih_from "$src" "$log" "$ver"
  printf '%s\n' "inih $how recipe $recipe gcc $ccver" >"$stamps/inih"
  say "inih $ver: built and installed in $(since "$t0") s"
}

build_apt pcre2 pcre2 libpcre2-8.a
build_apt utf8proc utf8proc libutf8proc.a
build_apt cjson cjson libcjson.a
build_inih

PKG_CONFIG_LIBDIR=$prefix/lib/pkgconfig PKG_CONFIG_PATH='' \
  pkg-config --exists inih libpcre2-8 libutf8proc libcjson ||
  die "pkg-config cannot find all four in $prefix/lib/pkgconfig"
say "done: PKG_CONFIG_LIBDIR=${prefix}/lib/pkgconfig (inih libpcre2-8 libutf8proc libcjson)"
