#!/usr/bin/env bash
# Every test on a fresh Debian 12 machine: install what is missing, build, and
# run the whole ctest suite.  Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
