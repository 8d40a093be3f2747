#!/usr/bin/env bash
# peer/build.sh - llama.cpp, built here, as strata's reference: llama-bench
# (tools/bench.sh), peer-tokenize (tools/peer/tokenize.cpp against libllama,
# for tools/peer/tokcmp.sh) and peer-mtp (tools/peer/mtp.cpp: llama.cpp's MTP
# head, for tools/peer/mtpcmp.sh).
#
#   tools/peer/build.sh          build what is missing into build/peer/, print its bin dir
#
# The source is the git bundle npm's node-llama-cpp ships (llama/gitRelease.bundle:
# ggml-org/llama.cpp at the commit below), fetched with `npm pack`, checked
# against the pinned commit, cloned into build/peer/src and built for this CPU
# (Release, GGML_NATIVE, CPU only) with low priority. Nothing of it is committed;
# the first build takes a while (about 20 minutes on 2 busy cores), later calls
# return at once. Environment: PEER_JOBS (build jobs, default 2), STRATA_BUILD_DIR.
set -euo pipefail

prog=peer/build.sh
. "$(dirname "$0")/lib.sh"
npm_pkg=node-llama-cpp@3.22.1
commit=de3ff815ea7d559ee917f063901b8986f038abc6
peer=$build/peer
jobs=${PEER_JOBS:-2}

bin=$peer/bin
if [ -x "$bin/llama-bench" ] && [ -x "$bin/peer-tokenize" ] && [ -x "$bin/peer-mtp" ] &&
	[ ! "$root/tools/peer/tokenize.cpp" -nt "$bin/peer-tokenize" ] &&
	[ ! "$root/tools/peer/mtp.cpp" -nt "$bin/peer-mtp" ] &&
	[ "$(cat "$peer/COMMIT" 2>/dev/null)" = "$commit" ]; then
	echo "$bin"
	exit 0
fi
mkdir -p "$peer" "$bin"
for t in git cmake c++ cc; do
	command -v $t >/dev/null || die "$t is not installed (tools/deps.sh installs the build tools; git: apt-get install git)"
done

if [ ! -d "$peer/src/.git" ] || [ "$(git -C "$peer/src" rev-parse HEAD 2>/dev/null)" != "$commit" ]; then
	command -v npm >/dev/null || die "npm is not installed (apt-get install npm): llama.cpp's source comes from the $npm_pkg package"
	if [ ! -f "$peer/gitRelease.bundle" ]; then
		say "fetching llama.cpp's source ($npm_pkg's git bundle)..."
		rm -rf "$peer/npm" && mkdir -p "$peer/npm"
		run "$peer/npm.log" npm pack --silent --pack-destination "$peer/npm" "$npm_pkg"
		tar -xzf "$peer/npm"/node-llama-cpp-*.tgz -C "$peer/npm" package/llama/gitRelease.bundle ||
			die "no llama/gitRelease.bundle in $npm_pkg"
		mv "$peer/npm/package/llama/gitRelease.bundle" "$peer/gitRelease.bundle"
		rm -rf "$peer/npm"
	fi
	git bundle list-heads "$peer/gitRelease.bundle" | grep -q "^$commit " ||
		die "$peer/gitRelease.bundle does not hold llama.cpp $commit (delete it to fetch it again)"
	rm -rf "$peer/src"
	run "$peer/clone.log" git -c advice.detachedHead=false clone -q "$peer/gitRelease.bundle" "$peer/src"
	run "$peer/clone.log" git -C "$peer/src" checkout -q "$commit"
fi

if [ ! -x "$peer/build/bin/llama-bench" ] || [ "$(cat "$peer/COMMIT" 2>/dev/null)" != "$commit" ]; then
	say "building llama.cpp ${commit:0:8} (llama-bench, libllama; CPU, Release, native) with $jobs jobs at low priority; this takes a while once..."
	run "$peer/cmake.log" cmake -S "$peer/src" -B "$peer/build" -DCMAKE_BUILD_TYPE=Release \
		-DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_TESTS=OFF \
		-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
		-DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TOOLS=ON
	run "$peer/make.log" nice -n 19 cmake --build "$peer/build" -j"$jobs" --target llama-bench llama
	say "llama.cpp built"
fi
ln -sf "$peer/build/bin/llama-bench" "$bin/llama-bench"

# The tokenizer driver, linked to the libllama just built.
run "$peer/tokenize.log" c++ -O2 -Wall -Wextra -Werror -o "$bin/peer-tokenize" "$root/tools/peer/tokenize.cpp" \
	-I"$peer/src/include" -I"$peer/src/ggml/include" -L"$peer/build/bin" -lllama -lggml -lggml-base \
	-Wl,-rpath,"$peer/build/bin"
# The MTP driver: llama.cpp's staging header (src/llama-ext.h) too.
run "$peer/mtp.log" c++ -O2 -Wall -Wextra -Werror -o "$bin/peer-mtp" "$root/tools/peer/mtp.cpp" \
	-I"$peer/src/include" -I"$peer/src/src" -I"$peer/src/ggml/include" -L"$peer/build/bin" \
	-lllama -lggml -lggml-base -Wl,-rpath,"$peer/build/bin"
echo "$commit" >"$peer/COMMIT"
echo "$bin"
