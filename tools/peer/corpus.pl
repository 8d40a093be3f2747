#!/usr/bin/perl
# corpus.pl - the tokenizer corpus of tests/vocab/corpus.inp (llama.cpp's .inp
# layout: each text followed by "\n__ggml_vocab_test__\n"), written to stdout.
#
#   tools/peer/corpus.pl > tests/vocab/corpus.inp
#
# Deterministic: the same Perl (its Unicode tables name the blocks and say
# which code points are assigned) writes the same bytes. What it holds:
#   - every Unicode block: three words of four assigned code points spread
#     over the block (surrogates excepted: they cannot be UTF-8);
#   - a sentence or two in each major script;
#   - combining marks stacked, alone, after spaces, digits and punctuation;
#   - precomposed and decomposed forms of the same letters, compatibility forms;
#   - Hangul syllables, conjoining jamo, compatibility and half-width jamo;
#   - CJK (Han, kana, Extension B+, punctuation, ideographic space);
#   - emoji: ZWJ sequences, skin tones, flags, keycaps, tag sequences, selectors;
#   - code points newer than this Perl's Unicode (as llama.cpp's tables may know them);
#   - control characters (C0 with NUL, DEL, C1), format characters, odd spaces;
#   - invalid UTF-8: stray continuation bytes, truncated and overlong forms,
#     encoded surrogates, bytes F5-FF, code points past U+10FFFF;
#   - long runs of spaces, tabs, newlines and digits, numbers in many forms;
#   - contractions in mixed case, code, URLs, special-token look-alikes.
# The separator line never occurs inside a text.
use strict;
use warnings;
use utf8;    # the literals below are characters; t() texts stay below U+0100 (bytes)
use Unicode::UCD qw(charblocks prop_invlist);

binmode STDOUT, ':raw';
my $sep = "\n__ggml_vocab_test__\n";
my @tests;

sub t { my $s = join('', @_); die "t() takes bytes" if $s =~ /[^\x00-\xFF]/; push @tests, $s }
sub u { push @tests, enc(join('', @_)) }    # a Perl string, UTF-8 encoded
sub enc { my $s = shift; utf8::encode($s); $s }
sub cps { join('', map { chr } @_) }

# ---- every block -------------------------------------------------------------
my @assigned = prop_invlist('Assigned');    # inversion list: [start, end) pairs
sub assigned_in {
	my ($lo, $hi) = @_;
	my @cps;
	for (my $i = 0; $i < @assigned; $i += 2) {
		my $s = $assigned[$i];
		my $e = $i + 1 < @assigned ? $assigned[$i + 1] - 1 : 0x10FFFF;
		next if $e < $lo || $s > $hi;
		$s = $lo if $s < $lo;
		$e = $hi if $e > $hi;
		push @cps, $s .. $e;
	}
	return grep { $_ < 0xD800 || $_ > 0xDFFF } @cps;
}

my $blocks = charblocks();
my @ranges = sort { $a->[0] <=> $b->[0] } map { @$_ } values %$blocks;
for my $r (@ranges) {
	my @cps = assigned_in($r->[0], $r->[1]);
	next unless @cps;
	my $n = @cps < 12 ? scalar @cps : 12;
	my @pick = map { $cps[int($_ * @cps / $n)] } 0 .. $n - 1;
	my @words;
	push @words, cps(splice(@pick, 0, 4)) while @pick;
	u(join(' ', @words));
}

# ---- sentences in the major scripts -------------------------------------------
u($_) for (
	"The quick brown fox jumps over the lazy dog.",
	"Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.",
	"Voix ambiguë d'un cœur qui, au zéphyr, préfère les jattes de kiwis.",
	"El pingüino Wenceslao hizo kilómetros bajo exhaustiva lluvia y frío, añoraba a su querido cachorro.",
	"Pchnąć w tę łódź jeża lub ośm skrzyń fig.",
	"Příliš žluťoučký kůň úpěl ďábelské ódy.",
	"Tiếng Việt có dấu: Người ta thường nói rằng học, học nữa, học mãi.",
	"Γαζέες καὶ μυρτιὲς δὲν θὰ βρῶ πιὰ στὸ χρυσαφὶ ξέφωτο.",
	"Съешь же ещё этих мягких французских булок, да выпей чаю.",
	"Ґанок, їжак, єдність — українська абетка.",
	"Բարև ձեզ, ինչպե՞ս եք։",
	"ქართული ენა ერთ-ერთი უძველესი ენაა.",
	"דג סקרן שט בים מאוכזב ולפתע מצא חברה.",
	"صِف خَلقَ خَودِ كَمِثلِ الشَمسِ إِذ بَزَغَت — يَحظى الضَجيعُ بِها نَجلاءَ مِعطارِ",
	"زبان فارسی: این یک آزمون است. ۱۲۳۴۵۶۷۸۹۰",
	"اردو زبان میں خوش آمدید",
	"ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले विष्णुवतार भगवान श्रीराम।",
	"আমি বাংলায় গান গাই।",
	"ਪੰਜਾਬੀ ਭਾਸ਼ਾ ਗੁਰਮੁਖੀ ਲਿਪੀ ਵਿੱਚ",
	"ગુજરાતી ભાષા",
	"ଓଡ଼ିଆ ଭାଷା",
	"தமிழ் ஒரு செம்மொழி ஆகும்.",
	"తెలుగు భాష",
	"ಕನ್ನಡ ಭಾಷೆ",
	"മലയാളം ഭാഷ",
	"සිංහල භාෂාව",
	"เป็นมนุษย์สุดประเสริฐเลิศคุณค่า กว่าบรรดาฝูงสัตว์เดรัจฉาน",
	"ພາສາລາວ",
	"ភាសាខ្មែរ",
	"မြန်မာဘာသာ",
	"བོད་ཡིག",
	"ትግርኛ እና አማርኛ ፊደል",
	"ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ",
	"ᐃᓄᒃᑎᑐᑦ",
	"ᠮᠣᠩᠭᠣᠯ ᠪᠢᠴᠢᠭ",
	"ꦧꦱꦗꦮ",
	"ߒߞߏ",
	"ⴰⵎⴰⵣⵉⵖ",
	"𐌲𐌿𐍄𐌹𐍃𐌺 𓀀𓀁𓀂 𒀀𒀁 ᚠᚢᚦᚨᚱᚲ",
	"我能吞下玻璃而不伤身体。",
	"我能吞下玻璃而不傷身體。",
	"いろはにほへと ちりぬるを わかよたれそ つねならむ",
	"私はガラスを食べられます。それは私を傷つけません。カタカナ ﾊﾝｶｸ",
	"다람쥐 헌 쳇바퀴에 타고파.",
	"Ελληνικά, русский, עברית, العربية, हिन्दी, 中文, 日本語, 한국어 in one line",
);

# ---- combining marks -------------------------------------------------------------
u($_) for (
	"e\x{301}\x{327}\x{308}",
	"Z\x{351}\x{36B}\x{343}\x{36A}\x{302}\x{36B}\x{33D}\x{34F}\x{334}\x{319}\x{324}\x{31E}a\x{300}\x{301}l\x{35C}g\x{360}o\x{362}",
	"\x{301}\x{302}\x{303} starts with marks",
	" \x{301}after a space",
	"1\x{301}2\x{308}3",
	"!\x{301}?\x{330}",
	"\x{20DD}\x{20E3}\x{FE20}\x{FE2F}",
	"a\x{200D}\x{301}b\x{34F}c",
	"\x{915}\x{94D}\x{937} \x{915}\x{94D}\x{200D}\x{937}",
	"\x{E01}\x{E34}\x{E48}\x{E49}",
);

# ---- precomposed and decomposed --------------------------------------------------
u($_) for (
	"\x{E9}t\x{E9} / e\x{301}te\x{301}",
	"\x{C5} A\x{30A} \x{212B}",
	"\x{1EA0}\x{1EA1}\x{1EB7} A\x{323}a\x{323}a\x{306}\x{323}",
	"Vi\x{1EC7}t Nam / Vie\x{323}\x{302}t Nam",
	"\x{FB01}nance \x{FB02}ow \x{FB00}",
	"\x{1C4}\x{1C5}\x{1C6} D\x{17D} Dz\x{30C}",
	"\x{FF21}\x{FF22}\x{FF23}\x{FF41}\x{FF42} \x{FF11}\x{FF12}\x{FF13}",
	"\x{2160}\x{2161}\x{2162} \x{2460}\x{2461} \x{B2}\x{B3}\x{B9} \x{2082}",
	"\x{210C}\x{2115}\x{1D400}\x{1D401}\x{1D44E}",
	"\x{130}stanbul \x{131}\x{130} \x{DF} SS \x{1E9E}",
	"\x{3A3}\x{3C3}\x{3C2} \x{1F00}\x{3B1}\x{313}",
	"\x{AC00} \x{1100}\x{1161}",
);

# ---- Hangul -------------------------------------------------------------------------
u($_) for (
	"\x{D55C}\x{AD6D}\x{C5B4} \x{D6C8}\x{BBFC}\x{C815}\x{C74C}",
	cps(0x1112, 0x1161, 0x11AB, 0x1100, 0x116E, 0x11A8),
	cps(0x1112, 0x1161, 0x11AB) . cps(0xD55C),
	cps(0x314E, 0x314F, 0x3134, 0x3131, 0x315C, 0x3139),
	cps(0xFFBE, 0xFFC2, 0xFFA4),
	cps(0xAC00, 0xAC01, 0xD7A3, 0xD7B0, 0xD7FB, 0xA960, 0xA97C),
	cps(0x1100, 0x1100, 0x1161, 0x1161, 0x11A8),
	"\x{AC00}\x{11A8} \x{3131}\x{314F}",
);

# ---- CJK -------------------------------------------------------------------------------
u($_) for (
	"\x{4E00}\x{4E8C}\x{4E09}\x{56DB}\x{4E94}\x{516D}\x{4E03}\x{516B}\x{4E5D}\x{5341}",
	"\x{20000}\x{20001}\x{2A6D6}\x{2A700}\x{2B740}\x{2B820}\x{2CEB0}\x{30000}",
	"\x{3001}\x{3002}\x{300C}\x{300D}\x{FF01}\x{FF1F}\x{30FB}",
	"\x{6F22}\x{5B57}\x{3000}\x{304B}\x{306A}\x{3000}\x{30AB}\x{30CA}",
	"\x{F900}\x{F901}\x{FA0E}\x{2F800}",
	"\x{3400}\x{4DB5}\x{9FA5}\x{9FA6}\x{9FFF}",
	"\x{3041}\x{3094}\x{309B}\x{309C}\x{30A1}\x{30FA}\x{31F0}",
	"\x{FF8A}\x{FF9D}\x{FF76}\x{FF78}\x{FF9E}\x{FF9F}",
	"Tokyo\x{6771}\x{4EAC}2024\x{5E74}",
);

# ---- emoji -----------------------------------------------------------------------------
u($_) for (
	"\x{1F468}\x{200D}\x{1F469}\x{200D}\x{1F467}\x{200D}\x{1F466}",
	"\x{1F44D}\x{1F3FB}\x{1F44D}\x{1F3FC}\x{1F44D}\x{1F3FD}\x{1F44D}\x{1F3FE}\x{1F44D}\x{1F3FF}",
	"\x{1F1EF}\x{1F1F5}\x{1F1FA}\x{1F1F8}\x{1F1E9}\x{1F1EA} \x{1F1E6}",
	"1\x{FE0F}\x{20E3}#\x{FE0F}\x{20E3}*\x{20E3}",
	"\x{1F3F4}\x{E0067}\x{E0062}\x{E0065}\x{E006E}\x{E0067}\x{E007F}",
	"\x{2764}\x{FE0F} \x{2764}\x{FE0E} \x{2764}",
	"\x{1F469}\x{1F3FD}\x{200D}\x{1F4BB} \x{1F3F3}\x{FE0F}\x{200D}\x{1F308}",
	"I \x{2764} you \x{1F60D}\x{1F60D}\x{1F60D}!!!",
	"\x{1FAE0}\x{1FAE8}\x{1FA77}\x{1F6DC}",
);

# ---- newer than this Perl's Unicode (15.0 and later), and unassigned -------------
u($_) for (
	cps(0x11F00, 0x11F04, 0x11F12, 0x11F3E),    # Kawi (15.0)
	cps(0x1E030, 0x1E031, 0x1E04F),             # Cyrillic modifier letters (15.0)
	cps(0x31350, 0x323AF),                      # CJK Extension H (15.0)
	cps(0x2EBF0, 0x2EE5D),                      # CJK Extension I (15.1)
	cps(0x10D40, 0x10D4A, 0x10D50),             # Garay (16.0)
	cps(0x16100, 0x16110),                      # Gurung Khema (16.0)
	cps(0x0378, 0x0379, 0x0380, 0x2FFFF, 0xE0000),
	# the same next to ASCII letters, digits and marks: the category decides the pieces
	"a" . cps(0x31350) . "b" . cps(0x2EBF0) . "c d" . cps(0x2EE5D, 0x2EE5C) . "e",
	"x" . cps(0x11F04) . "y " . cps(0x1E4D0, 0x1E4D1) . "z " . cps(0x1E030) . "q",
	"1" . cps(0x1D2C0) . "2 3" . cps(0x1D2C1, 0x1D2D3) . "4 " . cps(0x11F50, 0x11F51) . "5",
	"a" . cps(0x11B00) . "b" . cps(0x10EFD) . "c" . cps(0x1F6DC) . "d" . cps(0x2FFC, 0x31EF) . "e",
	"k" . cps(0x10D40) . "l" . cps(0x0378) . "m" . cps(0xE0000) . "n",
	cps(0xE000, 0xF8FF, 0xF0000, 0x10FFFD),     # private use
	cps(0xFDD0, 0xFFFE, 0xFFFF, 0x1FFFE),       # noncharacters
);

# ---- control and format characters, spaces ----------------------------------------
t("a\x00b\x00\x00c");
t("\x00");
t(join('', map { chr } 1 .. 9, 11 .. 31) . "x");
t("DEL\x7F\x7Fend");
u(join('', map { chr } 0x80 .. 0x9F) . "C1");
u("zero\x{200B}width\x{200C}non\x{200D}joiner\x{2060}wj\x{FEFF}bom");
u("\x{FEFF}leading BOM");
u("line\x{2028}sep\x{2029}para\x{85}nel");
u("\x{A0}nbsp\x{2007}fig\x{202F}narrow\x{3000}ideo\x{1680}ogham\x{180E}mvs");
u("\x{200E}ltr\x{200F}rtl\x{202A}\x{202B}\x{202C}\x{202D}\x{202E}\x{2066}\x{2069}");
u("soft\x{AD}hy\x{AD}phen");
t("\r\n\r\nCRLF\r\nlines\r");
t("\t\ttabs\t \t mixed \t\t");

# ---- invalid UTF-8 --------------------------------------------------------------------
t("\x80");
t("abc\x80\xBF\x80def");
t("\xC3");
t("caf\xC3");
t("\xC3(\xC3\xA9");
t("\xE2\x82");
t("\xE2\x82 x \xE2\x28\xA1");
t("\xF0\x9F\x98");
t("\xF0\x9F\x98 smile");
t("\xC0\x80 \xC1\xBF overlong");
t("\xE0\x80\x80 \xF0\x80\x80\x80");
t("\xED\xA0\x80\xED\xBF\xBF surrogates");
t("\xF4\x90\x80\x80 past U+10FFFF");
t("\xF5\xF6\xF7\xF8\xF9\xFA\xFB\xFC\xFD\xFE\xFF");
t("\xFE\xFF\xFF\xFE");
t("\xF8\x88\x80\x80\x80 \xFC\x84\x80\x80\x80\x80");
t("mixed \xE4\xB8\xAD\xE6\x96 \xE6\x96\x87 text");
t("\xE4\xB8");
t("\x{7f}\x80\x{7f}");

# ---- long runs, numbers -----------------------------------------------------------------
t(' ' x 1);
t(' ' x 2);
t(' ' x 17);
t(' ' x 100);
t('x' . ' ' x 64 . 'y');
t("\t" x 40);
t("\n" x 50);
t(" \n" x 20);
t("a" . "\n" x 3 . " " x 5 . "b" . " \t\n" x 7);
t('1' x 1);
t('12');
t('123');
t('1234');
t('12345');
t('1234567890' x 1);
t('1' x 64);
t(join('', map { $_ % 10 } 0 .. 999));
t('0' x 300);
t('3.14159265358979323846264338327950288419716939937510');
t('1,234,567.89 -42 +7 1e-10 0x1F 0b1010 007');
t('2024-06-01T12:34:56Z 192.168.0.1 10:30pm');
u('$1.99 €5 ¥1000 £20.00 ₹500');
u("\x{661}\x{662}\x{663}\x{664} \x{6F1}\x{6F2}\x{6F3} \x{967}\x{968}\x{969} \x{E51}\x{E52}");
u("\x{FF11}\x{FF12}\x{FF13}\x{FF14}\x{FF15}");
u("\x{2070}\x{B9}\x{B2}\x{B3}\x{2074} \x{2080}\x{2081}\x{2082} \x{BD}\x{BC}\x{2153}");
u("\x{1D7CE}\x{1D7CF}\x{1D7D0} \x{1F100}\x{1F101}");
t('a1b22c333d4444e55555f');
t('.' x 40);
t('-' x 80);
t('=' x 33 . '>' . '!' x 9 . '?' x 9);

# ---- contractions, code, markup, special-token look-alikes -----------------------------
t("I'm you're he's we'll they'd can't I'VE WE'RE She'S It'LL");
u("don\x{2019}t won\x{2019}t it\x{2019}s \x{2018}quoted\x{2019} \x{201C}double\x{201D}");
t("'s 't 're 've 'm 'll 'd ''s");
t("int main(void) {\n\treturn printf(\"%d\\n\", 42) ? 0 : 1; // comment\n}\n");
t("def f(x):\n    if x >= 10 and x != 3:\n        return x ** 2\n    return None\n");
t("<html><body class=\"a-b\">Hello&nbsp;&amp;&lt;world&gt;</body></html>");
t("https://example.com/path?q=1&lang=en#frag user.name+tag\@mail.example.org");
t("<s> </s> <unk> <|endoftext|> <|im_start|>user\nhi<|im_end|> [CLS] [SEP] [MASK] <pad>");
t("<0x41><0xFF>\xE2\x96\x81 \xC4\xA0 \xC4\x8A");
t("__ggml_vocab_test__");
t("camelCaseIdentifier snake_case_identifier SCREAMING_CASE kebab-case-identifier");
t("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
t("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
t("Hello\n\n\nWorld \n \n  Hello  World  ");
u("Mixed 混合 text with مختلط scripts and emoji \x{1F680} in one \x{0939}\x{093F}\x{0928}\x{094D}\x{0926}\x{0940} line.");

for my $s (@tests) {
	die "a text holds the separator" if index($s, $sep) >= 0;
	print $s, $sep;
}
