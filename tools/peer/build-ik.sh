#!/usr/bin/env bash
# peer/build-ik.sh - ik_llama.cpp, built here, as the bar for CPU speed: its
# llama-bench, for tools/bench.sh (BENCH_IK=1).
#
#   tools/peer/build-ik.sh [native|avx2]   build what is missing, print the llama-bench path
#
# ik_llama.cpp is not on npm or in Debian: the source is its public git
# repository (github.com/ikawrakow/ik_llama.cpp), pinned to the commit below.
# IK_REPO names a clone or a bare mirror of it (the session tool `fetch` makes
# one under /work/.mirror, the default). It is cloned into build/ik/src and
# built for this CPU with low priority into build/ik/ISA: "native" is
# -march=native, "avx2" leaves AVX-512 out (AVX2 + FMA + F16C), so an AVX-512
# machine can also measure what an AVX2-only one runs. CPU only, Release,
# OpenMP off (strata's and llama.cpp's pools are plain threads too).
# Nothing of it is committed. A build takes about 25 minutes on 2 busy cores.
# Environment: IK_REPO, IK_JOBS (default 2), STRATA_BUILD_DIR.
set -euo pipefail

prog=peer/build-ik.sh
. "$(dirname "$0")/lib.sh"
commit=8337e4cd3861406fc04e0854b1409cd1b027fbc9
isa=${1:-native}
repo=${IK_REPO:-/work/.mirror/ikawrakow+ik_llama.cpp/repo}
ik=$build/ik
jobs=${IK_JOBS:-2}

case $isa in
native) flags=(-DGGML_NATIVE=ON) ;;
avx2) flags=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
	-DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AVX512_VBMI=OFF) ;;
*) die "unknown ISA '$isa' (native or avx2)" ;;
esac

out=$ik/$isa
if [ -x "$out/bin/llama-bench" ] && [ "$(cat "$out/COMMIT" 2>/dev/null)" = "$commit" ]; then
	echo "$out/bin/llama-bench"
	exit 0
fi
for t in git cmake c++ cc; do
	command -v $t >/dev/null || die "$t is not installed (tools/deps.sh installs the build tools)"
done
mkdir -p "$ik"
if [ ! -d "$ik/src/.git" ] || [ "$(git -C "$ik/src" rev-parse HEAD 2>/dev/null)" != "$commit" ]; then
	git -C "$repo" cat-file -e "$commit^{commit}" 2>/dev/null ||
		die "no ik_llama.cpp $commit at $repo (IK_REPO: a clone of github.com/ikawrakow/ik_llama.cpp)"
	rm -rf "$ik/src"
	run "$ik/clone.log" git -c advice.detachedHead=false clone -q --no-checkout "$repo" "$ik/src"
	run "$ik/clone.log" git -C "$ik/src" checkout -q "$commit"
fi
say "building ik_llama.cpp ${commit:0:8} ($isa, llama-bench; CPU, Release) with $jobs jobs at low priority; this takes a while once..."
run "$ik/cmake-$isa.log" cmake -S "$ik/src" -B "$out" -DCMAKE_BUILD_TYPE=Release \
	"${flags[@]}" -DGGML_OPENMP=OFF -DGGML_IQK_FA_ALL_QUANTS=OFF -DBUILD_SHARED_LIBS=OFF \
	-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF \
	-DCMAKE_RUNTIME_OUTPUT_DIRECTORY="$out/bin"
run "$ik/make-$isa.log" nice -n 19 cmake --build "$out" -j"$jobs" --target llama-bench
echo "$commit" >"$out/COMMIT"
say "ik_llama.cpp ($isa) built"
echo "$out/bin/llama-bench"
