package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/darkroomlabs/darkroom/engine/atomicfile"
)

// MiniSpecialTokens are the special tokens of a trained (Darkroom Mini)
// vocabulary, at ids 0…len-1 in this order: Gemma 4's names, at small ids of
// their own (Gemma 4 itself has e.g. `<turn|>` at 106). The 256 `<0xHH>`
// byte-fallback tokens follow at ids len…len+255, then the learned tokens.
var MiniSpecialTokens = []string{
	"<pad>",            // 0
	"<eos>",            // 1
	"<bos>",            // 2
	"<unk>",            // 3
	"<mask>",           // 4
	"<|turn>",          // 5
	"<turn|>",          // 6
	"<|think|>",        // 7
	"<|channel>",       // 8
	"<channel|>",       // 9
	"<|tool>",          // 10
	"<tool|>",          // 11
	"<|tool_call>",     // 12
	"<tool_call|>",     // 13
	"<|tool_response>", // 14
	"<tool_response|>", // 15
	`<|"|>`,            // 16
	"<|image>",         // 17
	"<image|>",         // 18
	"<|image|>",        // 19
}

// Fixed ids of a trained vocabulary (see MiniSpecialTokens).
const (
	MiniPad          = 0
	MiniEOS          = 1
	MiniBOS          = 2
	MiniUnk          = 3
	MiniMask         = 4
	MiniTurnStart    = 5
	MiniTurnEnd      = 6
	MiniToolResponse = 14
	// MiniFirstByte is the id of `<0x00>`; byte b has id MiniFirstByte+b.
	MiniFirstByte = 20
)

// MiniEndOfGeneration lists the ids that end generation for a trained
// vocabulary, for config.json / generation_config.json `eos_token_id`: `<eos>`,
// `<turn|>` and `<|tool_response>` (the roles of Gemma 4's [1, 106, 50]).
func MiniEndOfGeneration() []int { return []int{MiniEOS, MiniTurnEnd, MiniToolResponse} }

// TrainOptions controls Train.
type TrainOptions struct {
	// VocabSize is the total size: specials + 256 bytes + characters + merges.
	// Default 8000.
	VocabSize int
	// MinFrequency is the least count a pair needs to be merged, and a
	// character to enter the alphabet (rarer ones use byte fallback). Default 2.
	MinFrequency int
	// MaxAlphabet caps the number of single characters (most frequent first).
	// Default 1000.
	MaxAlphabet int
}

// Trained is the result of Train: the files of a Gemma-style tokenizer.
type Trained struct {
	TokenizerJSON []byte // tokenizer.json
	ConfigJSON    []byte // tokenizer_config.json
	VocabSize     int
	Merges        int
}

// Save writes tokenizer.json and tokenizer_config.json into dir.
func (tr *Trained) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save tokenizer: %w", err)
	}
	for name, data := range map[string][]byte{"tokenizer.json": tr.TokenizerJSON, "tokenizer_config.json": tr.ConfigJSON} {
		if err := atomicfile.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("save tokenizer: %w", err)
		}
	}
	return nil
}

// Tokenizer loads the trained files.
func (tr *Trained) Tokenizer() (*Tokenizer, error) { return FromJSON(tr.TokenizerJSON, tr.ConfigJSON) }

// Slice adapts a []string to the iterator Train takes.
func Slice(texts []string) iter.Seq[string] { return slices.Values(texts) }

// miniPipeline is the normalizer/pre-tokenizer/decoder of a trained vocabulary:
// Gemma's " " → "▁", then words split before "▁" and "<", after ">", and
// around "\n", so HTML tags and words become separate BPE words.
const miniPipeline = `{
 "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
  {"type": "Split", "pattern": {"String": "\n"}, "behavior": "Isolated", "invert": false},
  {"type": "Split", "pattern": {"String": "▁"}, "behavior": "MergedWithNext", "invert": false},
  {"type": "Split", "pattern": {"String": "<"}, "behavior": "MergedWithNext", "invert": false},
  {"type": "Split", "pattern": {"String": ">"}, "behavior": "MergedWithPrevious", "invert": false}
 ]},
 "decoder": {"type": "Sequence", "decoders": [
  {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
  {"type": "ByteFallback"},
  {"type": "Fuse"}
 ]}
}`

// Train learns a BPE vocabulary from texts (special tokens written in the
// texts are recognized and not learned from) and returns Gemma-style files
// with MiniSpecialTokens at fixed ids.
//
// It counts word types once, then merges the most frequent adjacent pair
// (ties: the smaller pair of ids) and updates only the words that contain it,
// so the cost is near-linear in corpus size.
func Train(texts iter.Seq[string], opts TrainOptions) (*Trained, error) {
	if opts.VocabSize == 0 {
		opts.VocabSize = 8000
	}
	if opts.MinFrequency <= 0 {
		opts.MinFrequency = 2
	}
	if opts.MaxAlphabet <= 0 {
		opts.MaxAlphabet = 1000
	}
	base := len(MiniSpecialTokens) + 256
	if opts.VocabSize <= base {
		return nil, fmt.Errorf("train tokenizer: vocab size %d must exceed the %d special and byte tokens", opts.VocabSize, base)
	}

	// A tokenizer with only the specials and the pipeline splits the texts
	// into words exactly as encoding will.
	skeleton, err := FromJSON(buildJSON(nil, nil), nil)
	if err != nil {
		return nil, fmt.Errorf("train tokenizer: %w", err)
	}
	wordCount := map[string]int{}
	for text := range texts {
		for _, sec := range skeleton.splitAdded(text, skeleton.matcher) {
			if sec.added >= 0 || sec.text == "" {
				continue
			}
			skeleton.words(sec.text, func(w string, added int) {
				if added < 0 {
					wordCount[w]++
				}
			})
		}
	}
	if len(wordCount) == 0 {
		return nil, errors.New("train tokenizer: empty corpus")
	}

	// Alphabet: the most frequent characters.
	charCount := map[rune]int{}
	for w, n := range wordCount {
		for _, r := range w {
			charCount[r] += n
		}
	}
	chars := make([]rune, 0, len(charCount))
	for r, n := range charCount {
		if n >= opts.MinFrequency && r != utf8.RuneError {
			chars = append(chars, r)
		}
	}
	sort.Slice(chars, func(i, j int) bool {
		if charCount[chars[i]] != charCount[chars[j]] {
			return charCount[chars[i]] > charCount[chars[j]]
		}
		return chars[i] < chars[j]
	})
	room := opts.VocabSize - base
	chars = chars[:min(len(chars), opts.MaxAlphabet, room)]

	vocab := make([]string, 0, opts.VocabSize) // learned part: chars, then merges
	index := map[string]int32{}
	reserved := map[string]bool{}
	for _, s := range MiniSpecialTokens {
		reserved[s] = true
	}
	for b := 0; b < 256; b++ {
		reserved[byteToken(byte(b))] = true
	}
	for _, r := range chars {
		s := string(r)
		if reserved[s] {
			continue
		}
		index[s] = int32(len(vocab))
		vocab = append(vocab, s)
	}

	// Words as symbol sequences; characters outside the alphabet are -1 and
	// never merge (they become byte fallback).
	type word struct {
		syms  []int32
		count int
	}
	words := make([]word, 0, len(wordCount))
	keys := make([]string, 0, len(wordCount))
	for w := range wordCount {
		keys = append(keys, w)
	}
	sort.Strings(keys) // deterministic
	for _, w := range keys {
		syms := make([]int32, 0, len(w))
		for _, r := range w {
			id, ok := index[string(r)]
			if !ok {
				id = -1
			}
			syms = append(syms, id)
		}
		words = append(words, word{syms: syms, count: wordCount[w]})
	}

	pairCount := map[uint64]int{}
	where := map[uint64][]int32{}
	for wi, w := range words {
		for i := 0; i+1 < len(w.syms); i++ {
			a, b := w.syms[i], w.syms[i+1]
			if a < 0 || b < 0 {
				continue
			}
			k := pairKey(a, b)
			pairCount[k] += w.count
			where[k] = append(where[k], int32(wi))
		}
	}
	h := &pairHeap{}
	for k, n := range pairCount {
		if n >= opts.MinFrequency {
			h.push(pairEntry{count: n, key: k})
		}
	}

	var merges [][2]string
	stamp := make([]int32, len(words))
	for i := range stamp {
		stamp[i] = -1
	}
	delta := map[uint64]int{}
	for base+len(vocab) < opts.VocabSize && h.len() > 0 {
		e := h.pop()
		cur := pairCount[e.key]
		if cur != e.count {
			if cur < e.count && cur >= opts.MinFrequency {
				h.push(pairEntry{count: cur, key: e.key})
			}
			continue
		}
		if cur < opts.MinFrequency {
			break
		}
		a, b := int32(e.key>>32), int32(uint32(e.key))
		merged := vocab[a] + vocab[b]
		if reserved[merged] {
			pairCount[e.key] = 0 // never produce a special or byte token's text
			continue
		}
		c, exists := index[merged]
		if !exists {
			c = int32(len(vocab))
			index[merged] = c
			vocab = append(vocab, merged)
		}
		mergeNo := int32(len(merges))
		merges = append(merges, [2]string{vocab[a], vocab[b]})

		clear(delta)
		for _, wi := range where[e.key] {
			if stamp[wi] == mergeNo {
				continue
			}
			stamp[wi] = mergeNo
			w := &words[wi]
			if !containsPair(w.syms, a, b) {
				continue
			}
			for i := 0; i+1 < len(w.syms); i++ {
				if x, y := w.syms[i], w.syms[i+1]; x >= 0 && y >= 0 {
					delta[pairKey(x, y)] -= w.count
				}
			}
			out := w.syms[:0]
			for i := 0; i < len(w.syms); i++ {
				if i+1 < len(w.syms) && w.syms[i] == a && w.syms[i+1] == b {
					out = append(out, c)
					i++
					continue
				}
				out = append(out, w.syms[i])
			}
			w.syms = out
			for i := 0; i+1 < len(w.syms); i++ {
				if x, y := w.syms[i], w.syms[i+1]; x >= 0 && y >= 0 {
					k := pairKey(x, y)
					delta[k] += w.count
					if x == c || y == c {
						where[k] = append(where[k], wi)
					}
				}
			}
		}
		delete(where, e.key)
		for k, d := range delta {
			if d == 0 {
				continue
			}
			n := pairCount[k] + d
			pairCount[k] = n
			if d > 0 && n >= opts.MinFrequency {
				h.push(pairEntry{count: n, key: k})
			}
		}
		pairCount[e.key] = 0
	}

	data := buildJSON(vocab, merges)
	tr := &Trained{TokenizerJSON: data, ConfigJSON: miniConfigJSON(), VocabSize: base + len(vocab), Merges: len(merges)}
	return tr, nil
}

func containsPair(s []int32, a, b int32) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == a && s[i+1] == b {
			return true
		}
	}
	return false
}

type pairEntry struct {
	count int
	key   uint64
}

// pairHeap is a max-heap by count (ties: smaller key first).
type pairHeap struct{ s []pairEntry }

func (h *pairHeap) len() int { return len(h.s) }

func (h *pairHeap) before(i, j int) bool {
	if h.s[i].count != h.s[j].count {
		return h.s[i].count > h.s[j].count
	}
	return h.s[i].key < h.s[j].key
}

func (h *pairHeap) push(e pairEntry) {
	h.s = append(h.s, e)
	for i := len(h.s) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.before(i, p) {
			break
		}
		h.s[i], h.s[p] = h.s[p], h.s[i]
		i = p
	}
}

func (h *pairHeap) pop() pairEntry {
	top := h.s[0]
	last := len(h.s) - 1
	h.s[0] = h.s[last]
	h.s = h.s[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h.s) {
			break
		}
		m := l
		if r := l + 1; r < len(h.s) && h.before(r, l) {
			m = r
		}
		if !h.before(m, i) {
			break
		}
		h.s[i], h.s[m] = h.s[m], h.s[i]
		i = m
	}
	return top
}

// buildJSON writes a tokenizer.json: specials, bytes, then learned (a list of
// token strings) with the given merges.
func buildJSON(learned []string, merges [][2]string) []byte {
	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	var pipe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(miniPipeline), &pipe); err != nil {
		panic("tokenizer: bad miniPipeline: " + err.Error()) // constant; caught by any test
	}
	addedTokens := make([]added, len(MiniSpecialTokens))
	vocab := orderedVocab{}
	for i, s := range MiniSpecialTokens {
		addedTokens[i] = added{ID: i, Content: s, Special: true}
		vocab = append(vocab, s)
	}
	for b := 0; b < 256; b++ {
		vocab = append(vocab, byteToken(byte(b)))
	}
	vocab = append(vocab, learned...)
	if merges == nil {
		merges = [][2]string{}
	}
	f := struct {
		Version       string          `json:"version"`
		Truncation    any             `json:"truncation"`
		Padding       any             `json:"padding"`
		AddedTokens   []added         `json:"added_tokens"`
		Normalizer    json.RawMessage `json:"normalizer"`
		PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
		PostProcessor json.RawMessage `json:"post_processor"`
		Decoder       json.RawMessage `json:"decoder"`
		Model         any             `json:"model"`
	}{
		Version:      "1.0",
		AddedTokens:  addedTokens,
		Normalizer:   pipe["normalizer"],
		PreTokenizer: pipe["pre_tokenizer"],
		PostProcessor: json.RawMessage(`{"type": "TemplateProcessing",
  "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
  "pair": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<bos>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
  "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]}}}`),
		Decoder: pipe["decoder"],
		Model: struct {
			Type                    string       `json:"type"`
			Dropout                 any          `json:"dropout"`
			UnkToken                string       `json:"unk_token"`
			ContinuingSubwordPrefix any          `json:"continuing_subword_prefix"`
			EndOfWordSuffix         any          `json:"end_of_word_suffix"`
			FuseUnk                 bool         `json:"fuse_unk"`
			ByteFallback            bool         `json:"byte_fallback"`
			IgnoreMerges            bool         `json:"ignore_merges"`
			Vocab                   orderedVocab `json:"vocab"`
			Merges                  [][2]string  `json:"merges"`
		}{Type: "BPE", UnkToken: "<unk>", FuseUnk: true, ByteFallback: true, Vocab: vocab, Merges: merges},
	}
	return marshalJSON(f)
}

// marshalJSON writes v indented, without escaping "<", ">" and "&" (the
// special tokens stay readable).
func marshalJSON(v any) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		panic("tokenizer: marshal JSON: " + err.Error()) // only strings, bools and ints inside
	}
	return []byte(b.String())
}

// orderedVocab marshals as a JSON object {token: id} in id order (index = id).
type orderedVocab []string

func (v orderedVocab) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteString("{")
	for i, s := range v {
		if i > 0 {
			b.WriteString(",\n  ")
		}
		b.Write(bytesTrimNL(marshalJSON(s)))
		fmt.Fprintf(&b, ": %d", i)
	}
	b.WriteString("}")
	return []byte(b.String()), nil
}

func miniConfigJSON() []byte {
	cfg := map[string]any{
		"tokenizer_class":              "GemmaTokenizer",
		"backend":                      "tokenizers",
		"add_bos_token":                true,
		"add_eos_token":                false,
		"bos_token":                    "<bos>",
		"eos_token":                    "<eos>",
		"pad_token":                    "<pad>",
		"unk_token":                    "<unk>",
		"mask_token":                   "<mask>",
		"clean_up_tokenization_spaces": false,
		"padding_side":                 "left",
		"model_max_length":             1 << 20,
	}
	return marshalJSON(cfg)
}

func bytesTrimNL(b []byte) []byte { return []byte(strings.TrimSuffix(string(b), "\n")) }
