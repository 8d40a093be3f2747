#!/usr/bin/env bash
# tokcmp.sh - strata's tokenizers against llama.cpp's, text by text.
#
#   tools/peer/tokcmp.sh [--write] [NAME...]
#
# For each vocabulary ../shared/vocab/ggml-vocab-NAME.gguf (all of them by
# default) tokenizes every text of tests/vocab/corpus.inp (tools/peer/corpus.pl)
# and of the vocabulary's own .inp with llama.cpp (peer-tokenize, built by
# tools/peer/build.sh) and with `strata tokenize --inp`, and prints each text
# whose ids differ (escaped, with both id lists). With --write, llama.cpp's ids
# of the corpus become tests/vocab/corpus.NAME.out, which ctest's check_tokenizer
# compares strata with (without llama.cpp). Exit status 1 when any text differs.
# Environment: STRATA_SHARED_DIR (default ../shared), STRATA_BUILD_DIR (build/).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${STRATA_SHARED_DIR:-$root/../shared}
build=${STRATA_BUILD_DIR:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
corpus=$root/tests/vocab/corpus.inp

die() { echo "tokcmp.sh: error: $*" >&2; exit 1; }

write=0
names=()
for a in "$@"; do
	case $a in
	--write) write=1 ;;
	-h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option $a" ;;
	*) names+=("$a") ;;
	esac
done
if [ ${#names[@]} -eq 0 ]; then
	for f in "$shared"/vocab/ggml-vocab-*.gguf; do
		n=${f##*/ggml-vocab-}
		names+=("${n%.gguf}")
	done
fi
[ ${#names[@]} -gt 0 ] || die "no vocabularies in $shared/vocab"
[ -r "$corpus" ] || die "no $corpus (tools/peer/corpus.pl writes it)"

bin=$("$root/tools/peer/build.sh")
[ -x "$build/strata" ] || die "no $build/strata: run tools/build.sh first"
out=$build/peer/tok
mkdir -p "$out"

# report INP LLAMA STRATA: the differing tests, escaped; their count on stdout's last line.
report() {
	perl -e '
		use strict;
		my ($inp, $la, $st) = @ARGV;
		local $/;
		open my $f, "<:raw", $inp or die; my $raw = <$f>; close $f;
		my @texts = split /\n__ggml_vocab_test__\n/, $raw, -1;
		pop @texts if @texts && $texts[-1] eq "";
		open $f, "<", $la or die; my @l = split /\n/, <$f>, -1; close $f;
		open $f, "<", $st or die; my @s = split /\n/, <$f>, -1; close $f;
		my $n = 0;
		my $none = 0;
		for my $i (0 .. $#texts) {
			my ($a, $b) = ($l[$i] // "(none)", $s[$i] // "(none)");
			if ($a =~ /^#/) { $none++; next }   # llama.cpp has no answer
			next if $a eq $b;
			$n++;
			(my $t = $texts[$i]) =~ s/([^\x20-\x7e])/sprintf("\\x%02X", ord $1)/ge;
			printf "  test %d: \"%s\"\n    llama.cpp:%s\n    strata:   %s\n", $i,
				length($t) > 300 ? substr($t, 0, 300) . "..." : $t, $a, $b;
		}
		print "    ($none texts llama.cpp throws on, not compared)\n" if $none;
		print "$n\n";
	' "$@"
}

total=0
for n in "${names[@]}"; do
	v=$shared/vocab/ggml-vocab-$n.gguf
	[ -r "$v" ] || die "no vocabulary $v"
	for set in corpus own; do
		inp=$corpus
		[ $set = own ] && inp=$v.inp
		"$bin/peer-tokenize" "$v" "$inp" >"$out/$n.$set.llama" ||
			die "llama.cpp failed on $n ($inp)"
		"$build/strata" tokenize -m "$v" --inp "$inp" >"$out/$n.$set.strata" ||
			die "strata failed on $n ($inp)"
		report "$inp" "$out/$n.$set.llama" "$out/$n.$set.strata" >"$out/$n.$set.diff"
		k=$(tail -n 1 "$out/$n.$set.diff")
		tests=$(grep -c '' "$out/$n.$set.llama")
		echo "$n ($set, $tests texts): $k differ"
		head -n -1 "$out/$n.$set.diff"
		total=$((total + k))
	done
	if [ $write = 1 ]; then
		cp "$out/$n.corpus.llama" "$root/tests/vocab/corpus.$n.out"
	fi
done
[ $write = 1 ] && echo "wrote tests/vocab/corpus.NAME.out for: ${names[*]}"
[ "$total" = 0 ]
