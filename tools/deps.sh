#!/usr/bin/env bash
# Install the Debian packages strata needs to build and test, when missing.
# Run as root (or with sudo available); prints what it installs.
#   tools/deps.sh           what the build and the test suite need
#   tools/deps.sh --fuzz    also clang and its runtimes (libFuzzer, for tools/test.sh)
set -euo pipefail

pkgs=(build-essential cmake pkg-config libinih-dev check libssl-dev liburing-dev libpcre2-dev
      libmicrohttpd-dev libcjson-dev libutf8proc-dev
      python3-jinja2  # the reference renderer check_tmpl_oracle holds core/tmpl against
      chromium)       # the browser tests/web/browser.test.mjs drives (node >= 20 and npm
                      # are expected from the system; tools/test.sh installs the npm packages)
# GCC's ASan/UBSan/TSan runtimes come with build-essential (libgcc-12-dev);
# libFuzzer is clang's, in Debian 12's compiler-rt package.
if [ "${1:-}" = --fuzz ]; then
  pkgs+=(clang libclang-rt-dev)
fi

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
echo "strata: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
