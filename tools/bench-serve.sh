#!/bin/sh
# bench-serve.sh - what a chat user waits for, per prompt path (strata-bench-serve):
# first-token latency of "hi" through the decode windows vs batched, a follow-up turn
# after a ~5K-token first turn resumed from its checkpoint vs re-read, and 8K-token
# prompt speed with and without path-window in the path list.  Engine API, no HTTP.
#
#   tools/bench-serve.sh [BUILD_DIR] [THREADS] [ROUNDS]     (defaults: build 2 3)
#
# Writes the model if it is absent, prints the load average before and after (the
# figures mean little on a busy machine), the table, and BUILD_DIR/bench-serve.csv.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
threads=${2:-2}
rounds=${3:-3}
model=${STRATA_BENCH_MODEL:-/work/bench-models/bench-qwen3moe-q8_0.gguf}

[ -x "$build/strata-bench-serve" ] || { echo "bench-serve: build $build first" >&2; exit 1; }
if [ ! -f "$model" ]; then
	mkdir -p "$(dirname "$model")"
	"$build/strata-writer" --preset bench-qwen3moe --type Q8_0 --out "$model"
fi
echo "load average before: $(cat /proc/loadavg)"
"$build/strata-bench-serve" -m "$model" -t "$threads" -r "$rounds" \
	--plugin-dir "$build/plugins" -o "$build/bench-serve.csv"
echo "load average after: $(cat /proc/loadavg)"
echo "CSV: $build/bench-serve.csv"
