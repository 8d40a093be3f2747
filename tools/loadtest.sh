#!/usr/bin/env bash
# Load test of `strata --serve`: start the server on a free loopback port with
# stories260K, drive it with strata-loadtest (CLIENTS concurrent clients for
# SECONDS, some dropping streams mid-answer, some sending malformed bodies),
# then stop it with SIGTERM and check that it exits cleanly.
#
#   tools/loadtest.sh [BUILD_DIR] [CLIENTS] [SECONDS] [QUEUE]   (default: build 8 15 4)
#
# Exit status: 0 pass, 1 fail, 77 skipped (no model in ../shared).  ctest runs
# a small one (tools/CMakeLists.txt).  STRATA_SHARED_DIR overrides ../shared;
# STRATA_LOADTEST_RSS=0 skips the RSS check (sanitizer builds keep freed memory).
# STRATA_TEST_EMULATOR runs a cross build's programs (../CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
clients=${2:-8}
seconds=${3:-15}
queue=${4:-4}
model=${STRATA_SHARED_DIR:-../shared}/models/stories260K.gguf
read -ra emu <<<"${STRATA_TEST_EMULATOR:-}"

if [ ! -f "$model" ]; then
	echo "SKIP: $model is absent (the load test serves stories260K)"
	exit 77
fi
for f in "$build/strata" "$build/strata-loadtest"; do
	if [ ! -x "$f" ]; then
		echo "loadtest: $f is not built" >&2
		exit 1
	fi
done

log=$(mktemp "${TMPDIR:-/tmp}/strata-loadtest.XXXXXX")
pid=
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$log"
}
trap cleanup EXIT

# Port 0: the system picks a free one and the server logs it.  One engine
# thread per CPU, as strata.ini's threads = 0.
"${emu[@]}" "$build/strata" -m "$model" --serve --port 0 --queue "$queue" 2>"$log" &
pid=$!
port=
for _ in $(seq 200); do
	port=$(sed -n 's|.*serving .* on http://[^ ]*:\([0-9][0-9]*\) .*|\1|p' "$log" | head -n1)
	[ -n "$port" ] && break
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "loadtest: the server did not start:" >&2
		cat "$log" >&2
		exit 1
	fi
	sleep 0.1
done
if [ -z "$port" ]; then
	echo "loadtest: the server logged no port within 20 s:" >&2
	cat "$log" >&2
	exit 1
fi
echo "loadtest: server pid $pid on port $port"

rss=()
[ "${STRATA_LOADTEST_RSS:-1}" = 0 ] && rss=(--no-rss-check)
rc=0
"${emu[@]}" "$build/strata-loadtest" --port "$port" --pid "$pid" --clients "$clients" \
	--seconds "$seconds" --queue "$queue" "${rss[@]}" || rc=$?

# SIGTERM: the server stops its generations and exits 0 within a bounded time.
kill -TERM "$pid"
for _ in $(seq 100); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
	echo "loadtest: FAIL: the server did not exit within 10 s of SIGTERM" >&2
	rc=1
else
	src=0
	wait "$pid" || src=$?
	pid=
	if [ "$src" -ne 0 ]; then
		echo "loadtest: FAIL: the server exited with status $src" >&2
		rc=1
	fi
fi
if grep -q "strata: error:" "$log"; then
	echo "loadtest: the server logged errors:" >&2
	grep "strata: error:" "$log" | head -n 20 >&2
	rc=1
fi
exit "$rc"
