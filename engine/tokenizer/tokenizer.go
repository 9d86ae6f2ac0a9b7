// Package tokenizer owns text ↔ token ids for Darkroom's models: a loader for
// Hugging Face `tokenizer.json` files as Gemma 3/4 use them (SentencePiece-style
// BPE over raw UTF-8 with byte fallback), and a BPE trainer that writes such a
// file for Darkroom Mini with the Gemma 4 special tokens at fixed ids.
//
// Encoding follows the Hugging Face pipeline step by step:
//
//  1. added tokens (special or not) are cut out of the raw text first,
//     leftmost-longest, honoring lstrip/rstrip/single_word;
//  2. every other section is normalized (Gemma: Replace " " → "▁"), and
//     added tokens marked normalized are cut out of the result;
//  3. the pre-tokenizer splits it into words (Gemma 3: a no-op Split);
//  4. each word is merged by BPE rank (lowest rank first, leftmost on ties),
//     and pieces missing from the vocabulary fall back to `<0xHH>` byte tokens.
//
// Decoding runs the file's decoder chain (Gemma: Replace "▁" → " ",
// ByteFallback, Fuse). Encode adds no BOS; callers prepend BOS() themselves.
package tokenizer

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"
)

// Tokenizer encodes text to ids and back. It is safe for concurrent use.
type Tokenizer struct {
	tokens []string       // id → token string ("" for ids with no token)
	vocab  map[string]int // token → id, model vocab and added tokens

	added      []addedToken
	addedIndex map[string]int // content → index in added
	matcher    *trie          // added tokens matched in the raw text (normalized: false)
	normMatch  *trie          // added tokens matched after normalization (normalized: true)

	normalizer   normalizer   // nil: identity
	preTokenizer preTokenizer // nil: the whole section is one word
	model        *bpe
	decoder      decoder // nil: tokens joined by " "

	specials Specials
}

// Specials lists the ids of well-known special tokens; -1 where the vocabulary
// has no such token.
type Specials struct {
	BOS, EOS, Pad, Unk, Mask int
	// TurnStart/TurnEnd: Gemma 4 `<|turn>`/`<turn|>` (Gemma 3 `<start_of_turn>`/`<end_of_turn>`).
	TurnStart, TurnEnd int
	// Think is `<|think|>`; ChannelStart/ChannelEnd are `<|channel>`/`<channel|>`.
	Think, ChannelStart, ChannelEnd int
	// ToolResponse is `<|tool_response>`, which Gemma 4 also treats as end of generation.
	ToolResponse int
}

type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// Load reads a tokenizer from a `tokenizer.json` file or from a directory that
// holds one (and optionally `tokenizer_config.json`, which names the special tokens).
func Load(path string) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	file := path
	if st.IsDir() {
		file = filepath.Join(path, "tokenizer.json")
	}
	t, err := loadFS(os.DirFS(filepath.Dir(file)), filepath.Base(file))
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", file, err)
	}
	return t, nil
}

// LoadFS reads the tokenizer file at name inside fsys (e.g. an embedded model
// directory). A `tokenizer_config.json` next to it is read when present.
func LoadFS(fsys fs.FS, name string) (*Tokenizer, error) {
	t, err := loadFS(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", name, err)
	}
	return t, nil
}

func loadFS(fsys fs.FS, name string) (*Tokenizer, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	cfgName := "tokenizer_config.json"
	if dir := pathDir(name); dir != "." {
		cfgName = dir + "/" + cfgName
	}
	cfg, err := fs.ReadFile(fsys, cfgName)
	if err != nil {
		cfg = nil // optional
	}
	return parse(data, cfg)
}

func pathDir(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return "."
}

// FromJSON builds a tokenizer from the bytes of a tokenizer.json (and optionally
// of a tokenizer_config.json; nil if none).
func FromJSON(tokenizerJSON, configJSON []byte) (*Tokenizer, error) {
	return parse(tokenizerJSON, configJSON)
}

// VocabSize is the number of ids (the largest id + 1), the size a model's
// embedding table must have at least.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// ID returns the id of a token string (as stored in the vocabulary, e.g. "▁the"
// or "<|turn>").
func (t *Tokenizer) ID(token string) (int, bool) {
	id, ok := t.vocab[token]
	return id, ok
}

// Token returns the token string of id ("" and false when out of range).
func (t *Tokenizer) Token(id int) (string, bool) {
	if id < 0 || id >= len(t.tokens) || t.tokens[id] == "" {
		return "", false
	}
	return t.tokens[id], true
}

// Specials returns the ids of the well-known special tokens.
func (t *Tokenizer) Specials() Specials { return t.specials }

// BOS returns the beginning-of-sequence id (-1 if none).
func (t *Tokenizer) BOS() int { return t.specials.BOS }

// EOS returns the end-of-sequence id (-1 if none).
func (t *Tokenizer) EOS() int { return t.specials.EOS }

// Pad returns the padding id (-1 if none).
func (t *Tokenizer) Pad() int { return t.specials.Pad }

// IsSpecial reports whether id is an added token marked special (BOS, turn markers, …).
func (t *Tokenizer) IsSpecial(id int) bool {
	if id < 0 || id >= len(t.tokens) {
		return false
	}
	i, ok := t.addedIndex[t.tokens[id]]
	return ok && t.added[i].Special
}

// EndOfGeneration returns the ids that end a model turn: EOS, the end-of-turn
// marker and, where present, `<|tool_response>` (Gemma 4's generation_config
// lists [1, 106, 50]).
func (t *Tokenizer) EndOfGeneration() []int {
	var ids []int
	for _, id := range []int{t.specials.EOS, t.specials.TurnEnd, t.specials.ToolResponse} {
		if id >= 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

// Encode returns the ids of text. Added and special tokens written in the text
// (e.g. "<|turn>") are recognized; no BOS is added.
func (t *Tokenizer) Encode(text string) []int { return t.encode(text, false) }

// EncodeText returns the ids of text read as plain text: special tokens spelled
// in it ("<|turn>", "<eos>", …) are not recognized and encode as the characters
// they are written with (Hugging Face's split_special_tokens). Added tokens not
// marked special are still recognized. Chat templates encode what users write
// with it, so that only the template itself writes control tokens.
func (t *Tokenizer) EncodeText(text string) []int { return t.encode(text, true) }

func (t *Tokenizer) encode(text string, plain bool) []int {
	ids := make([]int, 0, len(text)/3+1)
	for _, sec := range t.split(text, t.matcher, plain) {
		if sec.added >= 0 {
			ids = append(ids, t.added[sec.added].ID)
			continue
		}
		ids = t.encodeSection(ids, sec.text, plain)
	}
	return ids
}

// words normalizes one stretch of text that holds no raw added token and
// splits it into pre-tokenized words and (normalized) added tokens.
func (t *Tokenizer) words(s string, yield func(word string, added int)) { t.wordsOf(s, false, yield) }

// wordsOf is words; plain leaves special tokens unrecognized (EncodeText).
func (t *Tokenizer) wordsOf(s string, plain bool, yield func(word string, added int)) {
	if t.normalizer != nil {
		s = t.normalizer.normalize(s)
	}
	for _, sec := range t.split(s, t.normMatch, plain) {
		switch {
		case sec.added >= 0:
			yield("", sec.added)
		case sec.text == "":
		case t.preTokenizer == nil:
			yield(sec.text, -1)
		default:
			for _, w := range t.preTokenizer.split([]string{sec.text}) {
				yield(w, -1)
			}
		}
	}
}

// encodeSection normalizes, pre-tokenizes and BPE-encodes one stretch of text
// that holds no raw added token, appending its ids; plain as in split.
func (t *Tokenizer) encodeSection(ids []int, s string, plain bool) []int {
	if s == "" {
		return ids
	}
	t.wordsOf(s, plain, func(w string, added int) {
		if added >= 0 {
			ids = append(ids, t.added[added].ID)
		} else {
			ids = t.model.encodeWord(ids, w)
		}
	})
	return ids
}

// Decode returns the text of ids after the decoder chain; byte-fallback runs
// are reassembled into UTF-8 (invalid sequences become U+FFFD). Out-of-range
// ids are skipped. For any text without the metaspace character "▁",
// Decode(Encode(x)) == x.
func (t *Tokenizer) Decode(ids []int) string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if tok, ok := t.Token(id); ok {
			toks = append(toks, tok)
		}
	}
	return t.decodeTokens(toks, false)
}

// DecodeToken returns the text of one token on its own. A byte-fallback token
// yields its raw byte (possibly an incomplete UTF-8 sequence), so concatenated
// DecodeToken results form the exact bytes of a stream.
func (t *Tokenizer) DecodeToken(id int) string {
	tok, ok := t.Token(id)
	if !ok {
		return ""
	}
	return t.decodeTokens([]string{tok}, true)
}

func (t *Tokenizer) decodeTokens(toks []string, rawBytes bool) string {
	if t.decoder == nil {
		return strings.Join(toks, " ")
	}
	return strings.Join(t.decoder.decode(toks, rawBytes), "")
}

// section is a piece of input text: an added token (added ≥ 0) or plain text.
type section struct {
	text  string
	added int
}

// splitAdded cuts the added tokens of matcher out of text, leftmost-longest,
// as the Hugging Face and transformers.js tokenizers do.
func (t *Tokenizer) splitAdded(text string, matcher *trie) []section {
	return t.split(text, matcher, false)
}

// split is splitAdded; plain leaves the special tokens in the text (EncodeText).
func (t *Tokenizer) split(text string, matcher *trie, plain bool) []section {
	if matcher == nil {
		return []section{{text: text, added: -1}}
	}
	var out []section
	start := 0
	for i := 0; i < len(text); {
		idx, n := matcher.longest(text, i)
		if idx < 0 || (plain && t.added[idx].Special) || !t.singleWordOK(idx, text, i, i+n) {
			_, sz := utf8.DecodeRuneInString(text[i:])
			i += sz
			continue
		}
		if i > start {
			out = append(out, section{text: text[start:i], added: -1})
		}
		out = append(out, section{added: idx})
		i += n
		start = i
	}
	if start < len(text) {
		out = append(out, section{text: text[start:], added: -1})
	}
	// lstrip/rstrip: an added token swallows the whitespace beside it.
	for k := range out {
		if out[k].added < 0 {
			continue
		}
		a := t.added[out[k].added]
		if a.LStrip && k > 0 && out[k-1].added < 0 {
			out[k-1].text = strings.TrimRightFunc(out[k-1].text, isSpace)
		}
		if a.RStrip && k+1 < len(out) && out[k+1].added < 0 {
			out[k+1].text = strings.TrimLeftFunc(out[k+1].text, isSpace)
		}
	}
	return out
}

func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\v', '\f', 0x85, 0xA0:
		return true
	}
	return r > 0xFF && strings.ContainsRune("\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff", r)
}

// singleWordOK applies an added token's single_word flag: the match must not
// touch word characters on either side.
func (t *Tokenizer) singleWordOK(idx int, text string, start, end int) bool {
	if !t.added[idx].SingleWord {
		return true
	}
	if start > 0 {
		r, _ := utf8.DecodeLastRuneInString(text[:start])
		if isWordRune(r) {
			return false
		}
	}
	if end < len(text) {
		r, _ := utf8.DecodeRuneInString(text[end:])
		if isWordRune(r) {
			return false
		}
	}
	return true
}

// wordCache memoizes BPE results of short words; it is dropped when full.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]int32
}

const (
	maxCachedWordLen = 256
	maxCacheEntries  = 1 << 16
)

func (c *wordCache) get(w string) ([]int32, bool) {
	c.mu.RLock()
	v, ok := c.m[w]
	c.mu.RUnlock()
	return v, ok
}

func (c *wordCache) put(w string, ids []int32) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCacheEntries {
		c.m = make(map[string][]int32, 1024)
	}
	c.m[w] = ids
	c.mu.Unlock()
}
