package tokenizer

import (
	"encoding/json"
	"fmt"
)

// fileJSON is the part of a Hugging Face tokenizer.json the tokenizer reads.
type fileJSON struct {
	AddedTokens  []addedToken    `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        modelJSON       `json:"model"`
}

type modelJSON struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ByteFallback            bool            `json:"byte_fallback"`
	FuseUnk                 bool            `json:"fuse_unk"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
}

// maxVocab bounds token ids (Gemma: 262,144), so a corrupt file cannot make
// the loader allocate without limit.
const maxVocab = 1 << 24

func parse(data, configData []byte) (*Tokenizer, error) {
	f, err := splitFile(data)
	if err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	if f.Model.Type != "" && f.Model.Type != "BPE" {
		return nil, fmt.Errorf("model type %q not supported (only BPE)", f.Model.Type)
	}
	vocab, err := scanVocab(f.Model.Vocab)
	if err != nil {
		return nil, err
	}
	if vocab == nil {
		return nil, fmt.Errorf("model has no vocab")
	}
	if s := f.Model.ContinuingSubwordPrefix; s != nil && *s != "" {
		return nil, fmt.Errorf("BPE continuing_subword_prefix %q not supported", *s)
	}
	if s := f.Model.EndOfWordSuffix; s != nil && *s != "" {
		return nil, fmt.Errorf("BPE end_of_word_suffix %q not supported", *s)
	}

	t := &Tokenizer{vocab: vocab, addedIndex: map[string]int{}}
	maxID := -1
	for tok, id := range t.vocab {
		if id < 0 {
			return nil, fmt.Errorf("vocab token %q has negative id %d", tok, id)
		}
		maxID = max(maxID, id)
	}
	for _, a := range f.AddedTokens {
		if a.ID < 0 || a.Content == "" {
			return nil, fmt.Errorf("added token %q has id %d", a.Content, a.ID)
		}
		maxID = max(maxID, a.ID)
	}
	if maxID >= maxVocab {
		return nil, fmt.Errorf("token id %d too large (limit %d)", maxID, maxVocab-1)
	}
	t.tokens = make([]string, maxID+1)
	for tok, id := range t.vocab {
		t.tokens[id] = tok
	}
	if t.normalizer, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	// Added tokens take their id and content over (as transformers.js does, a
	// vocab string that had the id keeps mapping to it). Tokens marked
	// normalized are matched after normalization, against their normalized
	// content, as Hugging Face does.
	for _, a := range f.AddedTokens {
		t.tokens[a.ID] = a.Content
		t.vocab[a.Content] = a.ID
		t.addedIndex[a.Content] = len(t.added)
		t.added = append(t.added, a)
		m, content := &t.matcher, a.Content
		if a.Normalized && t.normalizer != nil {
			m, content = &t.normMatch, t.normalizer.normalize(a.Content)
		}
		if *m == nil {
			*m = newTrie()
		}
		(*m).insert(content, len(t.added)-1)
	}

	if t.preTokenizer, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if t.decoder, err = parseDecoder(f.Decoder); err != nil {
		return nil, err
	}
	if t.model, err = buildBPE(f.Model, t.vocab); err != nil {
		return nil, err
	}
	t.specials = findSpecials(t, configData)
	return t, nil
}

// splitFile reads the top level of a tokenizer.json with the fast scanner and
// decodes only the small parts with encoding/json.
func splitFile(data []byte) (*fileJSON, error) {
	top, err := objectFields(data)
	if err != nil {
		return nil, err
	}
	f := &fileJSON{Normalizer: top["normalizer"], PreTokenizer: top["pre_tokenizer"], Decoder: top["decoder"]}
	if raw, ok := top["added_tokens"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &f.AddedTokens); err != nil {
			return nil, fmt.Errorf("added_tokens: %w", err)
		}
	}
	model, ok := top["model"]
	if !ok || isNull(model) {
		return nil, fmt.Errorf("no model")
	}
	fields, err := objectFields(model)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	vocab, merges := fields["vocab"], fields["merges"]
	delete(fields, "vocab")
	delete(fields, "merges")
	small, err := json.Marshal(fields) // re-encode the small fields for encoding/json
	if err == nil {
		err = json.Unmarshal(small, &f.Model)
	}
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	f.Model.Vocab, f.Model.Merges = vocab, merges
	return f, nil
}

func buildBPE(mj modelJSON, vocab map[string]int) (*bpe, error) {
	m := &bpe{
		vocab:        vocab,
		runeIDs:      map[rune]int32{},
		unk:          -1,
		fuseUnk:      mj.FuseUnk,
		byteFallback: mj.ByteFallback,
		ignoreMerges: mj.IgnoreMerges,
	}
	m.bmpIDs = make([]int32, 0x10000)
	for i := range m.bmpIDs {
		m.bmpIDs[i] = -1
	}
	for tok, id := range vocab {
		if r, n := firstRune(tok); n == len(tok) && n > 0 {
			if r < 0x10000 {
				m.bmpIDs[r] = int32(id)
			} else {
				m.runeIDs[r] = int32(id)
			}
		}
	}
	if mj.UnkToken != nil {
		id, ok := vocab[*mj.UnkToken]
		if !ok {
			return nil, fmt.Errorf("unk_token %q not in vocab", *mj.UnkToken)
		}
		m.unk = int32(id)
	}
	for b := 0; b < 256; b++ {
		m.byteIDs[b] = -1
		if id, ok := vocab[byteToken(byte(b))]; ok {
			m.byteIDs[b] = int32(id)
		}
	}
	type entry struct {
		key  uint64
		rule mergeRule
	}
	var entries []entry
	rank := int32(0)
	var buf []byte
	err := scanMerges(mj.Merges, func(pa, pb []byte) {
		defer func() { rank++ }()
		a, okA := vocab[string(pa)]
		b, okB := vocab[string(pb)]
		buf = append(append(buf[:0], pa...), pb...)
		c, okC := vocab[string(buf)]
		if !okA || !okB || !okC {
			// Hugging Face refuses such files; llama.cpp skips such merges
			// (applying them would byte-fall-back common words). Skip too.
			return
		}
		entries = append(entries, entry{pairKey(int32(a), int32(b)), mergeRule{rank: rank, id: int32(c)}})
	})
	if err != nil {
		return nil, err
	}
	m.merges = newMergeTable(len(entries))
	for _, e := range entries {
		// A repeated pair keeps its last rank, as HF and transformers.js do.
		m.merges.put(e.key, e.rule)
	}
	return m, nil
}

func firstRune(s string) (rune, int) {
	for _, r := range s {
		return r, len(string(r))
	}
	return 0, 0
}

func cutSpace(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// findSpecials resolves the well-known special tokens: the names in
// tokenizer_config.json where given, else the Gemma 4 then Gemma 3 names.
func findSpecials(t *Tokenizer, configData []byte) Specials {
	cfg := map[string]json.RawMessage{}
	if configData != nil {
		_ = json.Unmarshal(configData, &cfg) // optional; a broken config leaves the defaults
	}
	named := func(key string, defaults ...string) int {
		if raw, ok := cfg[key]; ok {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				var obj struct {
					Content string `json:"content"`
				}
				if json.Unmarshal(raw, &obj) == nil {
					s = obj.Content
				}
			}
			if id, ok := t.vocab[s]; ok && s != "" {
				return id
			}
		}
		for _, d := range defaults {
			if id, ok := t.vocab[d]; ok {
				return id
			}
		}
		return -1
	}
	byName := func(names ...string) int { return named("", names...) }
	eos := byName("<eos>", "</s>")
	if eos < 0 {
		eos = named("eos_token")
	}
	return Specials{
		BOS: named("bos_token", "<bos>", "<s>"),
		// Gemma's `<eos>` ends a sequence; instruction-tuned configs often name
		// the end-of-turn marker as eos_token instead, which TurnEnd covers.
		EOS:          eos,
		Pad:          named("pad_token", "<pad>"),
		Unk:          named("unk_token", "<unk>"),
		Mask:         named("mask_token", "<mask>"),
		TurnStart:    byName("<|turn>", "<start_of_turn>"),
		TurnEnd:      byName("<turn|>", "<end_of_turn>"),
		Think:        byName("<|think|>"),
		ChannelStart: byName("<|channel>"),
		ChannelEnd:   byName("<channel|>"),
		ToolResponse: byName("<|tool_response>"),
	}
}
