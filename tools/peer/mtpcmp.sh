#!/usr/bin/env bash
# peer/mtpcmp.sh - strata's MTP (nextn) block against llama.cpp's own (the
# graph its draft-mtp speculation runs), on the same inputs.
#
#   tools/peer/mtpcmp.sh          qwen3next and glm4moe, the three golden prompts
#
# For each golden model with a nextn block that llama.cpp runs (syn-qwen3next-f32,
# syn-glm4moe-f32; llama.cpp has no MTP graph for qwen4exp, whose block has
# golden rows of its own) and each golden prompt, peer-mtp (tools/peer/mtp.cpp)
# reads the golden tokens with the trunk and feeds the block row i = (token
# i+1, the trunk's final-normed hidden state of row i), writing the rows'
# logits to build/peer/mtp/MODEL.PROMPT.mtp.slog; then check_mtp's peer_rows
# case (its tcase "peer") computes the same rows with strata and compares (F32: max |diff| <=
# 1e-3). Builds the peer first (tools/peer/build.sh). Environment:
# STRATA_BUILD_DIR (default build/), STRATA_SHARED_DIR (default ../shared).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${STRATA_BUILD_DIR:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
shared=${STRATA_SHARED_DIR:-$root/../shared}

die() { echo "mtpcmp.sh: error: $*" >&2; exit 1; }

[ -x "$build/tests/check_mtp" ] || die "$build/tests/check_mtp is not built (tools/build.sh)"
bin=$("$root/tools/peer/build.sh")
out=$build/peer/mtp
mkdir -p "$out"
for m in syn-qwen3next-f32 syn-glm4moe-f32; do
	[ -r "$shared/models/$m.gguf" ] || die "$shared/models/$m.gguf is absent"
	for p in once story mixed; do
		g=$shared/golden/$m.$p.slog
		[ -r "$g" ] || die "$g is absent"
		# the .slog header: magic, version, n_prompt, n_vocab, n_gen; then the ids
		hdr=($(od -An -v -t u4 -N 20 "$g"))
		np=${hdr[2]} ng=${hdr[4]}
		mapfile -t ids < <(od -An -v -t d4 -j 20 -N $((4 * (np + ng))) "$g" | tr -s ' ' '\n' | sed '/^$/d')
		"$bin/peer-mtp" "$shared/models/$m.gguf" "$out/$m.$p.mtp.slog" "${ids[@]}" ||
			die "peer-mtp failed on $m.$p"
	done
done
echo "mtpcmp.sh: llama.cpp's rows are in $out; strata's against them:"
cd "$root"
STRATA_PEER_MTP_DIR=$out CK_RUN_CASE=peer "$build/tests/check_mtp" 2>&1 | grep -v '^strata: '
