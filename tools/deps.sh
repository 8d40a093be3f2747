#!/usr/bin/env bash
# Install the Debian packages strata needs to build and test, when missing.
# Run as root (or with sudo available); prints one line per step (apt's output
# only when a step fails).
#   tools/deps.sh           what the build and the test suite need
#   tools/deps.sh --fuzz    also clang and its runtimes (libFuzzer, for tools/test.sh)
#   tools/deps.sh --windows also mingw-w64, wine64 and dpkg-dev (tools/win-build.sh)
#   tools/deps.sh --aarch64 also Debian's aarch64 cross GCC, qemu-user and the libraries
#                           above for arm64 (tools/test.sh's aarch64 stage)
set -euo pipefail

pkgs=(build-essential cmake pkg-config libinih-dev check libssl-dev liburing-dev libpcre2-dev
      libmicrohttpd-dev libcjson-dev libutf8proc-dev
      python3-jinja2  # the reference renderer check_tmpl_oracle holds core/tmpl against
      chromium)       # the browser tests/web/browser.test.mjs drives (node >= 20 and npm
                      # are expected from the system; tools/test.sh installs the npm packages)
# GCC's ASan/UBSan/TSan runtimes come with build-essential (libgcc-12-dev);
# libFuzzer is clang's, in Debian 12's compiler-rt package.
arm64=0
for a in "$@"; do
  case $a in
    --fuzz) pkgs+=(clang libclang-rt-dev) ;;
    # the Windows build: the cross compiler, Wine to run its tests, dpkg-source
    # to unpack its libraries' Debian sources (tools/win-deps.sh)
    --windows) pkgs+=(gcc-mingw-w64-x86-64-posix wine64 dpkg-dev) ;;
    # the aarch64 cross build (cmake/aarch64-linux-gnu.cmake): the libraries through
    # multiarch, the arm64 architecture added to dpkg first.  They are Multi-Arch:
    # same, so apt brings their amd64 twins to the same version (an upgrade at most);
    # libc6:arm64 comes with them, whose ld.so runs the tests under qemu-aarch64.
    --aarch64)
      arm64=1
      pkgs+=(gcc-aarch64-linux-gnu qemu-user libinih-dev:arm64 check:arm64 libssl-dev:arm64
             liburing-dev:arm64 libpcre2-dev:arm64 libmicrohttpd-dev:arm64
             libcjson-dev:arm64 libutf8proc-dev:arm64) ;;
    *) echo "deps.sh: unknown argument '$a' (--fuzz, --windows, --aarch64)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "strata: missing Debian packages: ${missing[*]} (run this script as root)" >&2
  exit 1
fi
# One line per step; apt's own output only when a step fails.
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
step() {
  local what="$1"
  shift
  echo "strata: $what"
  if ! "$@" >"$log" 2>&1; then
    echo "strata: $what failed; its output:" >&2
    cat "$log" >&2
    exit 1
  fi
}
if [ $arm64 = 1 ] && ! dpkg --print-foreign-architectures | grep -x arm64 >/dev/null; then
  step "adding the arm64 architecture (dpkg --add-architecture arm64)" \
    "${sudo[@]}" dpkg --add-architecture arm64
fi
step "updating the package lists (apt-get update)" "${sudo[@]}" apt-get update
step "installing ${missing[*]}" \
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
