#!/usr/bin/env bash
# bench-ple.sh - the PLE reader against fio on this machine's disk.
#
# On a synthetic IQ4_NL table of SIZE_GIB (default 4 GiB, cold: O_DIRECT, and
# the file dropped from the page cache before every run):
#   1. fio, io_uring, 4 KiB random reads, iodepth 32 x 8 jobs: the disk's rate,
#      measured right before and right after io-uring x 8 reads the same kind of
#      chunks, because these shared disks drift (the ratio uses their mean);
#   2. strata ple-bench, 32768-token chunks of seeded random tokens, with every
#      io plugin on the search path at 1, 2, 4 and 8 readers (depth 32), and the
#      single-thread path (readers = 0) with io-uring;
#   3. 8192-token chunks with io-uring x 8: the read time T of a chunk, then the
#      consumer's wait when it asks for the rows T ms after starting the read
#      (layer 0 taking as long as the reads: the chunk size the disk keeps up with).
# Prints a summary with ratios and writes OUT/ple.csv, OUT/fio.txt and
# OUT/ple-readers.svg (page reads/s against reader count, fio as a line).
#
# Environment: BUILD (build), OUT (BUILD/ple-bench), TABLE (OUT/table.bin),
# SIZE_GIB (4), CHUNKS (3 per run), FIO_SECS (8), KEEP_TABLE (0: a table this
# script made is deleted at the end; one that was there already is kept).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
OUT=${OUT:-$BUILD/ple-bench}
TABLE=${TABLE:-$OUT/table.bin}
SIZE_GIB=${SIZE_GIB:-4}
CHUNKS=${CHUNKS:-3}
FIO_SECS=${FIO_SECS:-8}
KEEP_TABLE=${KEEP_TABLE:-0}
STRATA=$BUILD/strata
CSV=$OUT/ple.csv

if [ ! -x "$STRATA" ]; then
  echo "bench-ple: $STRATA not found: build first (tools/build.sh) or set BUILD" >&2
  exit 1
fi

# fio and gnuplot from Debian when missing.
missing=()
command -v fio >/dev/null || missing+=(fio)
command -v gnuplot >/dev/null || missing+=(gnuplot-nox)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  echo "bench-ple: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
fi

mkdir -p "$OUT"
rm -f "$CSV"
made=1
[ -f "$TABLE" ] && made=0
cleanup() {
  if [ "$made" = 1 ] && [ "$KEEP_TABLE" != 1 ]; then rm -f "$TABLE"; fi
}
trap cleanup EXIT

echo "== table"
"$STRATA" ple-bench --table "$TABLE" --size "$SIZE_GIB" --make-only

# fio: io_uring, 4 KiB random reads, O_DIRECT, 32 x 8.  Prints the read IOPS.
fio_rate() {
  fio --name=ple --filename="$TABLE" --readonly --direct=1 --rw=randread --bs=4k \
    --ioengine=io_uring --iodepth=32 --numjobs=8 --runtime="$FIO_SECS" --time_based \
    --group_reporting --norandommap --randrepeat=0 --output-format=terse >>"$OUT/fio.txt"
  # terse v3: field 8 is the read IOPS.
  tail -n 1 "$OUT/fio.txt" | awk -F';' '{ print $8 }'
}
: >"$OUT/fio.txt"

# Every io plugin the search path has, best probe first.
mapfile -t PLUGINS < <("$STRATA" plugins 2>/dev/null |
  awk '$1 == "io" && $4 > 0 { print $4, $2 }' | sort -rn | awk '{ print $2 }')
[ ${#PLUGINS[@]} -gt 0 ] || { echo "bench-ple: no io plugin found" >&2; exit 1; }
echo "io plugins: ${PLUGINS[*]}"

bench() {
  "$STRATA" ple-bench --table "$TABLE" --size "$SIZE_GIB" --csv "$CSV" --depth 32 "$@"
}
N32=$((32768 * CHUNKS))
HAS_URING=0
for p in "${PLUGINS[@]}"; do [ "$p" = io-uring ] && HAS_URING=1; done
MAIN=${PLUGINS[0]}
[ "$HAS_URING" = 1 ] && MAIN=io-uring

# The disk's rate drifts (shared machines): fio right before and right after
# the run it is compared with, and the ratio is taken against their mean.
echo "== fio: io_uring, 4 KiB random reads, O_DIRECT, 32 x 8, ${FIO_SECS} s (before)"
FIO1=$(fio_rate)
echo "fio: $FIO1 reads/s"
echo "== $MAIN, 8 readers, 32768-token chunks"
bench --chunk 32768 --random "$N32" --plugin "$MAIN" --readers 8
echo "== fio again (after)"
FIO2=$(fio_rate)
echo "fio: $FIO2 reads/s"
FIO_IOPS=$(awk -v a="$FIO1" -v b="$FIO2" 'BEGIN { printf "%.0f", (a + b) / 2 }')

echo "== 32768-token chunks, every io plugin, readers 1 2 4 8"
bench --chunk 32768 --random "$N32" --plugin "$(IFS=,; echo "${PLUGINS[*]}")" \
  --readers 1,2,4,8
echo "== 32768-token chunks, the single-thread path"
bench --chunk 32768 --random "$N32" --plugin "$MAIN" --readers 0

echo "== 8192-token chunks: read time, then the consumer's wait"
N8=$((8192 * CHUNKS * 2))
bench --chunk 8192 --random "$N8" --plugin "$MAIN" --readers 8
# Read time of one chunk with nothing else running: the CSV's read_ms_per_chunk.
T8=$(awk -F, -v p="$MAIN" '$1 == p && $3 == 8 && $5 == 8192 && $6 == 0 { t = $17 } END { print t }' "$CSV")
bench --chunk 8192 --random "$N8" --plugin "$MAIN" --readers 8 --compute-ms "$T8"

echo
echo "== summary (same session, same disk; ratios against fio)"
awk -F, -v fio="$FIO_IOPS" -v fio1="$FIO1" -v fio2="$FIO2" -v main="$MAIN" '
  NR == 1 { next }
  $2 == "direct" && $5 == 32768 && $6 == 0 && $3 > 0 {
    if ($13 > best[$1]) { best[$1] = $13; bestr[$1] = $3 }
    if ($1 == main && $3 == 8 && !m8) { m8 = $13; m8ms = $17 }
  }
  $1 == main && $3 == 0 && $5 == 32768 { single = $13; single_ms = $17 }
  $1 == main && $3 == 8 && $5 == 8192 && $6 == 0 { t8 = $17 }
  $1 == main && $3 == 8 && $5 == 8192 && $6 > 0 { c8 = $6; w8 = $19; w8max = $20 }
  END {
    printf "%-44s %10.0f reads/s  (%.0f before, %.0f after)\n", "fio io_uring 32 x 8", fio, fio1, fio2
    printf "%-44s %10.0f reads/s  %5.2f x fio\n", main " 8 readers, between the fio runs", m8, m8 / fio
    for (p in best)
      printf "%-44s %10.0f reads/s  %5.2f x fio\n", p " best: " bestr[p] " readers (sweep)", best[p], best[p] / fio
    printf "%-44s %10.0f reads/s  %5.2f x fio\n", main " single-thread path (readers 0)", single, single / fio
    printf "%-44s %8.0f ms vs %.0f ms: %.2f x faster\n", "32768-token chunk: batched vs single", m8ms, single_ms, single_ms / m8ms
    printf "%-44s %8.1f ms read; asked after %.1f ms: waited %.2f ms avg, %.2f ms max\n", "8192-token chunk, " main " x 8", t8, c8, w8, w8max
  }' "$CSV"

# Page reads/s against reader count (the sweep), one line per plugin, fio as the ceiling.
for p in "${PLUGINS[@]}"; do
  awk -F, -v p="$p" -v main="$MAIN" '$1 == p && $5 == 32768 && $6 == 0 && $3 > 0 {
      if (p == main && $3 == 8 && !seen++) next   # the run between the fio runs
      print $3, $13 }' "$CSV" | sort -n >"$OUT/rate-$p.dat"
done
{
  echo "set terminal svg size 800,500 dynamic noenhanced background rgb 'white'"
  echo "set output '$OUT/ple-readers.svg'"
  echo "set title 'PLE page reads, 32768-token chunks, ${SIZE_GIB} GiB table, cold (O_DIRECT)'"
  echo "set xlabel 'reader threads (32 reads in flight each)'"
  echo "set ylabel 'page reads/s (4 KiB)'"
  echo "set key bottom right"
  echo "set logscale x 2"
  echo "set xtics (1, 2, 4, 8)"
  echo "set xrange [0.8:10]"
  echo "set yrange [0:*]"
  printf "plot %s title 'fio io_uring 32 x 8' dt 2 lw 2" "$FIO_IOPS"
  for p in "${PLUGINS[@]}"; do
    printf ", '%s' using 1:2 with linespoints lw 2 pt 7 title '%s'" "$OUT/rate-$p.dat" "$p"
  done
  echo
} >"$OUT/ple-readers.gp"
gnuplot "$OUT/ple-readers.gp"
echo
echo "wrote $CSV, $OUT/fio.txt, $OUT/ple-readers.svg"
