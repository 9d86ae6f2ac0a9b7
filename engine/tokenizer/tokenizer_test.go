package tokenizer

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// tinyJSON is a hand-made Gemma-style tokenizer: vocab ids are chosen so the
// expected encodings below can be read off by hand.
const tinyJSON = `{
 "added_tokens": [
  {"id": 0, "content": "<pad>", "special": true},
  {"id": 1, "content": "<eos>", "special": true},
  {"id": 2, "content": "<bos>", "special": true},
  {"id": 3, "content": "<unk>", "special": true},
  {"id": 4, "content": "<|turn>", "special": true},
  {"id": 5, "content": "<turn|>", "special": true},
  {"id": 6, "content": "<|turn>x", "special": false},
  {"id": 7, "content": "[L]", "special": false, "lstrip": true},
  {"id": 8, "content": "[R]", "special": false, "rstrip": true},
  {"id": 9, "content": "sw", "special": false, "single_word": true}
 ],
 "normalizer": {"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
 "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false},
 "decoder": {"type": "Sequence", "decoders": [
  {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]},
 "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
  "vocab": {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "<|turn>": 4, "<turn|>": 5,
   "<0xC3>": 10, "<0xA9>": 11, "<0xE2>": 12, "<0x82>": 13, "<0xAC>": 14,
   "a": 20, "b": 21, "c": 22, "▁": 23, "ab": 24, "bc": 25, "abc": 26, "▁a": 27, "▁ab": 28, "s": 29, "w": 30, "x": 31},
  "merges": ["b c", "a b", "▁ a", "▁a b", "ab c"]}
}`

func loadTiny(t *testing.T) *Tokenizer {
	t.Helper()
	tok, err := FromJSON([]byte(tinyJSON), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestEncodeTiny(t *testing.T) {
	tok := loadTiny(t)
	tests := []struct {
		text string
		want []int
	}{
		{"abc", []int{20, 25}},   // "b c" has rank 0: a + bc, then no merge (a,bc)
		{"ab", []int{24}},        // a b
		{" ab", []int{23, 24}},   // a b (rank 1) merges before ▁ a (rank 2)
		{" ac", []int{27, 22}},   // ▁ a → ▁a
		{"abab", []int{24, 24}},  // ties: leftmost first, both merge
		{"é", []int{10, 11}},     // byte fallback
		{"€", []int{12, 13, 14}}, // byte fallback, 3 bytes
		{"z", []int{3}},          // no byte tokens for 'z': unk
		{"zz", []int{3}},         // fused unk
		{"<|turn>a<turn|>", []int{4, 20, 5}},
		{"<|turn>x", []int{6}},      // longest added token wins
		{"<|turn>xa", []int{6, 20}}, // …
		{"<bos><bos>", []int{2, 2}}, //
		{"a [L]", []int{20, 7}},     // lstrip eats the space before
		{"[R] a", []int{8, 20}},     // rstrip eats the space after
		{"a sw a", []int{20, 23, 9, 27}},
		{"asw", []int{20, 29, 30}}, // single_word: not inside a word
		{"", nil},
	}
	for _, tc := range tests {
		got := tok.Encode(tc.text)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestDecodeTiny(t *testing.T) {
	tok := loadTiny(t)
	for _, text := range []string{"abc", " ab é€", "<|turn>ab<turn|>", "a b  c"} {
		if got := tok.Decode(tok.Encode(text)); got != text {
			t.Errorf("Decode(Encode(%q)) = %q", text, got)
		}
	}
	// Byte tokens on their own are raw bytes, so a stream reassembles.
	var b strings.Builder
	for _, id := range tok.Encode("é€") {
		b.WriteString(tok.DecodeToken(id))
	}
	if b.String() != "é€" {
		t.Errorf("DecodeToken stream = %q", b.String())
	}
	if got := tok.Decode([]int{10}); got != "\uFFFD" {
		t.Errorf("Decode of a lone lead byte = %q, want U+FFFD", got)
	}
	if got := tok.Decode([]int{20, 999, -1, 21}); got != "ab" {
		t.Errorf("Decode skips out-of-range ids: got %q", got)
	}
}

func TestAccessorsTiny(t *testing.T) {
	tok := loadTiny(t)
	if tok.VocabSize() != 32 {
		t.Errorf("VocabSize = %d", tok.VocabSize())
	}
	if id, ok := tok.ID("▁ab"); !ok || id != 28 {
		t.Errorf("ID(▁ab) = %d, %v", id, ok)
	}
	if s, ok := tok.Token(26); !ok || s != "abc" {
		t.Errorf("Token(26) = %q, %v", s, ok)
	}
	sp := tok.Specials()
	if sp.BOS != 2 || sp.EOS != 1 || sp.Pad != 0 || sp.Unk != 3 || sp.TurnStart != 4 || sp.TurnEnd != 5 || sp.Think != -1 {
		t.Errorf("Specials = %+v", sp)
	}
	if got := tok.EndOfGeneration(); !reflect.DeepEqual(got, []int{1, 5}) {
		t.Errorf("EndOfGeneration = %v", got)
	}
	if !tok.IsSpecial(4) || tok.IsSpecial(6) || tok.IsSpecial(20) {
		t.Error("IsSpecial wrong")
	}
}

func TestMergeForms(t *testing.T) {
	// The array form of merges gives the same tokenizer as the string form.
	arr := strings.Replace(tinyJSON, `["b c", "a b", "▁ a", "▁a b", "ab c"]`, `[["b","c"],["a","b"],["▁","a"],["▁a","b"],["ab","c"]]`, 1)
	t1 := loadTiny(t)
	t2, err := FromJSON([]byte(arr), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"abc", " ab abc", "cab"} {
		if a, b := t1.Encode(s), t2.Encode(s); !reflect.DeepEqual(a, b) {
			t.Errorf("%q: string form %v, array form %v", s, a, b)
		}
	}
}

func TestIgnoreMerges(t *testing.T) {
	// With ignore_merges, a word that is itself in the vocab is taken whole
	// ("abc" would otherwise be a + bc).
	j := strings.Replace(tinyJSON, `"fuse_unk": true,`, `"fuse_unk": true, "ignore_merges": true,`, 1)
	tok, err := FromJSON([]byte(j), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode("abc"); !reflect.DeepEqual(got, []int{26}) {
		t.Errorf("Encode(abc) = %v, want [26]", got)
	}
}

func TestPreTokenizerSplitBehaviors(t *testing.T) {
	m := &matcher{lit: "-"}
	tests := map[string][]string{
		"Removed":            {"a", "b", "c"},
		"Isolated":           {"a", "-", "b", "-", "-", "c", "-"},
		"MergedWithPrevious": {"a-", "b-", "-", "c-"},
		"MergedWithNext":     {"a", "-b", "-", "-c", "-"},
		"Contiguous":         {"a", "-", "b", "--", "c", "-"},
	}
	for behavior, want := range tests {
		got := preSplit{m: m, behavior: behavior}.split([]string{"a-b--c-"})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q, want %q", behavior, got, want)
		}
	}
}

func TestDecoderStripAndMetaspace(t *testing.T) {
	d, err := parseDecoder([]byte(`{"type": "Sequence", "decoders": [
		{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "Fuse"},
		{"type": "Strip", "content": " ", "start": 1, "stop": 0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(d.decode([]string{"▁Hello", "▁world"}, false), ""); got != "Hello world" {
		t.Errorf("Llama-style decoder: %q", got)
	}
	p, err := parsePreTokenizer([]byte(`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.split([]string{"Hello big world"}); !reflect.DeepEqual(got, []string{"▁Hello", "▁big", "▁world"}) {
		t.Errorf("Metaspace split: %q", got)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := map[string]string{
		"not json":        `{`,
		"unigram":         `{"model": {"type": "Unigram", "vocab": []}}`,
		"no vocab":        `{"model": {"type": "BPE"}}`,
		"bad normalizer":  strings.Replace(tinyJSON, `"type": "Replace", "pattern"`, `"type": "Precompiled", "pattern"`, 1),
		"bad merge":       strings.Replace(tinyJSON, `"b c",`, `"bc",`, 1),
		"missing unk":     strings.Replace(tinyJSON, `"unk_token": "<unk>"`, `"unk_token": "<nope>"`, 1),
		"bad split":       strings.Replace(tinyJSON, `"MergedWithPrevious"`, `"Sideways"`, 1),
		"negative add id": strings.Replace(tinyJSON, `{"id": 9,`, `{"id": -9,`, 1),
	}
	for name, j := range tests {
		if _, err := FromJSON([]byte(j), nil); err == nil {
			t.Errorf("%s: want error", name)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing file: want error")
	}
}

func TestLoadPaths(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(tinyJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	// tokenizer_config.json names the specials (here: a different BOS).
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"bos_token": {"content": "<|turn>"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "tokenizer.json")} {
		tok, err := Load(p)
		if err != nil {
			t.Fatalf("Load(%s): %v", p, err)
		}
		if tok.BOS() != 4 {
			t.Errorf("Load(%s): BOS = %d, want 4 from tokenizer_config.json", p, tok.BOS())
		}
	}
	fsys := fstest.MapFS{"m/tokenizer.json": {Data: []byte(tinyJSON)}}
	tok, err := LoadFS(fsys, "m/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	if tok.BOS() != 2 {
		t.Errorf("LoadFS: BOS = %d", tok.BOS())
	}
}

func TestNormalizedAddedToken(t *testing.T) {
	// A normalized added token is matched after normalization, against its
	// normalized content (" " → "▁"), as Hugging Face does.
	j := strings.Replace(tinyJSON, `{"id": 9, "content": "sw", "special": false, "single_word": true}`,
		`{"id": 9, "content": "sw", "special": false, "single_word": true},
  {"id": 32, "content": "c a", "special": false, "normalized": true}`, 1)
	tok, err := FromJSON([]byte(j), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode("bc ab"); !reflect.DeepEqual(got, []int{21, 32, 21}) {
		t.Errorf("Encode(bc ab) = %v, want [21 32 21]", got)
	}
	if got := tok.Decode([]int{32}); got != "c a" {
		t.Errorf("Decode([32]) = %q", got)
	}
}

// TestEncodeText: special tokens spelled in plain text are characters, not
// control ids; non-special added tokens and ordinary text encode as Encode does.
func TestEncodeText(t *testing.T) {
	tok := loadTiny(t)
	for _, text := range []string{"<|turn>a<turn|>", "a<eos>", "<bos>"} {
		got := tok.EncodeText(text)
		for _, id := range got {
			if id == 1 || id == 2 || id == 4 || id == 5 { // <eos> <bos> <|turn> <turn|> (<unk> stands for '<' here)
				t.Errorf("EncodeText(%q) = %v: holds the control id %d", text, got, id)
			}
		}
		if len(got) < 2 {
			t.Errorf("EncodeText(%q) = %v: want the characters' ids", text, got)
		}
	}
	for _, text := range []string{"abc", " ab", "é", "a [L]", "[R] a", "<|turn>xa"} {
		if got, want := tok.EncodeText(text), tok.Encode(text); !reflect.DeepEqual(got, want) {
			t.Errorf("EncodeText(%q) = %v, Encode = %v", text, got, want)
		}
	}
}
