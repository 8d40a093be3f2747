#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install what is missing, build,
# and run `strata -c strata.ini` (extra arguments are passed to strata).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh
exec build/strata -c strata.ini "$@"
