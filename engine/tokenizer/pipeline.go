package tokenizer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// pattern is a Hugging Face pattern: {"String": "…"} or {"Regex": "…"}.
type pattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// matcher finds the pattern's non-overlapping matches as byte ranges.
type matcher struct {
	lit string
	re  *regexp.Regexp
}

func (p pattern) compile() (*matcher, error) {
	switch {
	case p.String != nil:
		if *p.String == "" {
			return nil, fmt.Errorf("empty string pattern")
		}
		return &matcher{lit: *p.String}, nil
	case p.Regex != nil:
		re, err := regexp.Compile(*p.Regex)
		if err != nil {
			return nil, fmt.Errorf("regex %q (Go RE2 syntax only): %w", *p.Regex, err)
		}
		return &matcher{re: re}, nil
	}
	return nil, fmt.Errorf("pattern has neither String nor Regex")
}

func (m *matcher) find(s string) [][2]int {
	if m.re != nil {
		var out [][2]int
		for _, loc := range m.re.FindAllStringIndex(s, -1) {
			if loc[1] > loc[0] {
				out = append(out, [2]int{loc[0], loc[1]})
			}
		}
		return out
	}
	var out [][2]int
	for i := 0; ; {
		j := strings.Index(s[i:], m.lit)
		if j < 0 {
			return out
		}
		out = append(out, [2]int{i + j, i + j + len(m.lit)})
		i += j + len(m.lit)
	}
}

func (m *matcher) replaceAll(s, with string) string {
	if m.re != nil {
		return m.re.ReplaceAllLiteralString(s, with)
	}
	return strings.ReplaceAll(s, m.lit, with)
}

// ---- normalizers ----

type normalizer interface{ normalize(string) string }

type normSeq []normalizer

func (n normSeq) normalize(s string) string {
	for _, x := range n {
		s = x.normalize(s)
	}
	return s
}

type normReplace struct {
	m    *matcher
	with string
}

func (n normReplace) normalize(s string) string { return n.m.replaceAll(s, n.with) }

type normPrepend string

func (n normPrepend) normalize(s string) string { return string(n) + s }

type normFunc func(string) string

func (n normFunc) normalize(s string) string { return n(s) }

type rawJSON map[string]json.RawMessage

func (r rawJSON) str(key string) string {
	var s string
	_ = json.Unmarshal(r[key], &s)
	return s
}

func (r rawJSON) typ() string { return r.str("type") }

func parseNormalizer(data json.RawMessage) (normalizer, error) {
	if isNull(data) {
		return nil, nil
	}
	var r rawJSON
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch r.typ() {
	case "Sequence":
		var parts []json.RawMessage
		if err := json.Unmarshal(r["normalizers"], &parts); err != nil {
			return nil, fmt.Errorf("normalizer Sequence: %w", err)
		}
		var seq normSeq
		for _, p := range parts {
			n, err := parseNormalizer(p)
			if err != nil {
				return nil, err
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return seq, nil
	case "Replace":
		var p pattern
		if err := json.Unmarshal(r["pattern"], &p); err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		m, err := p.compile()
		if err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		return normReplace{m: m, with: r.str("content")}, nil
	case "Prepend":
		return normPrepend(r.str("prepend")), nil
	case "NFC":
		return normFunc(norm.NFC.String), nil
	case "NFD":
		return normFunc(norm.NFD.String), nil
	case "NFKC":
		return normFunc(norm.NFKC.String), nil
	case "NFKD":
		return normFunc(norm.NFKD.String), nil
	case "Lowercase":
		return normFunc(strings.ToLower), nil
	case "Strip":
		var o struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}
		if err := json.Unmarshal(data, &o); err != nil {
			return nil, fmt.Errorf("normalizer Strip: %w", err)
		}
		return normFunc(func(s string) string {
			if o.Left {
				s = strings.TrimLeftFunc(s, isSpace)
			}
			if o.Right {
				s = strings.TrimRightFunc(s, isSpace)
			}
			return s
		}), nil
	}
	return nil, fmt.Errorf("normalizer type %q not supported", r.typ())
}

// ---- pre-tokenizers ----

type preTokenizer interface {
	// split refines a list of words into a finer list.
	split(words []string) []string
}

type preSeq []preTokenizer

func (p preSeq) split(words []string) []string {
	for _, x := range p {
		words = x.split(words)
	}
	return words
}

// preSplit is Hugging Face's Split pre-tokenizer.
type preSplit struct {
	m        *matcher
	behavior string // Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous
	invert   bool
}

func (p preSplit) split(words []string) []string {
	var out []string
	for _, w := range words {
		out = p.splitOne(out, w)
	}
	return out
}

func (p preSplit) splitOne(out []string, w string) []string {
	// Mark each range as (start, end, isMatch), covering w.
	type piece struct {
		a, b  int
		match bool
	}
	var pieces []piece
	prev := 0
	for _, loc := range p.m.find(w) {
		if loc[0] > prev {
			pieces = append(pieces, piece{prev, loc[0], false})
		}
		pieces = append(pieces, piece{loc[0], loc[1], true})
		prev = loc[1]
	}
	if prev < len(w) {
		pieces = append(pieces, piece{prev, len(w), false})
	}
	if p.invert {
		for i := range pieces {
			pieces[i].match = !pieces[i].match
		}
	}
	switch p.behavior {
	case "Removed":
		for _, pc := range pieces {
			if !pc.match {
				out = append(out, w[pc.a:pc.b])
			}
		}
	case "Isolated":
		for _, pc := range pieces {
			out = append(out, w[pc.a:pc.b])
		}
	case "MergedWithPrevious":
		start, have := 0, false
		for _, pc := range pieces {
			if pc.match && have {
				out = append(out, w[start:pc.b])
				have = false
				start = pc.b
				continue
			}
			if pc.match {
				out = append(out, w[pc.a:pc.b])
				start = pc.b
				continue
			}
			if have {
				out = append(out, w[start:pc.a])
			}
			start, have = pc.a, true
		}
		if have {
			out = append(out, w[start:])
		}
	case "MergedWithNext":
		start, have := 0, false
		for _, pc := range pieces {
			if pc.match {
				if have {
					out = append(out, w[start:pc.a])
				}
				start, have = pc.a, true
				continue
			}
			if have {
				out = append(out, w[start:pc.b])
				have = false
			} else {
				out = append(out, w[pc.a:pc.b])
			}
		}
		if have {
			out = append(out, w[start:])
		}
	case "Contiguous":
		for i := 0; i < len(pieces); {
			j := i + 1
			for pieces[i].match && j < len(pieces) && pieces[j].match {
				j++
			}
			out = append(out, w[pieces[i].a:pieces[j-1].b])
			i = j
		}
	}
	return out
}

// preMetaspace is the Metaspace pre-tokenizer (older Llama/Gemma files).
type preMetaspace struct {
	replacement string
	prepend     string // always, first, never
	splitWords  bool
}

func (p preMetaspace) split(words []string) []string {
	var out []string
	for i, w := range words {
		w = strings.ReplaceAll(w, " ", p.replacement)
		if (p.prepend == "always" || (p.prepend == "first" && i == 0)) && !strings.HasPrefix(w, p.replacement) {
			w = p.replacement + w
		}
		if !p.splitWords {
			out = append(out, w)
			continue
		}
		out = preSplit{m: &matcher{lit: p.replacement}, behavior: "MergedWithNext"}.splitOne(out, w)
	}
	return out
}

func parsePreTokenizer(data json.RawMessage) (preTokenizer, error) {
	if isNull(data) {
		return nil, nil
	}
	var r rawJSON
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch r.typ() {
	case "Sequence":
		var parts []json.RawMessage
		if err := json.Unmarshal(r["pretokenizers"], &parts); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Sequence: %w", err)
		}
		var seq preSeq
		for _, p := range parts {
			x, err := parsePreTokenizer(p)
			if err != nil {
				return nil, err
			}
			if x != nil {
				seq = append(seq, x)
			}
		}
		return seq, nil
	case "Split":
		var p pattern
		if err := json.Unmarshal(r["pattern"], &p); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		m, err := p.compile()
		if err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		var invert bool
		_ = json.Unmarshal(r["invert"], &invert)
		b := r.str("behavior")
		switch b {
		case "Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous":
		default:
			return nil, fmt.Errorf("pre_tokenizer Split: behavior %q not supported", b)
		}
		return preSplit{m: m, behavior: b, invert: invert}, nil
	case "Metaspace":
		rep := r.str("replacement")
		if rep == "" {
			rep = "▁"
		}
		scheme := r.str("prepend_scheme")
		if scheme == "" {
			scheme = "always"
			var add *bool
			_ = json.Unmarshal(r["add_prefix_space"], &add)
			if add != nil && !*add {
				scheme = "never"
			}
		}
		split := true
		_ = json.Unmarshal(r["split"], &split)
		return preMetaspace{replacement: rep, prepend: scheme, splitWords: split}, nil
	}
	return nil, fmt.Errorf("pre_tokenizer type %q not supported", r.typ())
}

// ---- decoders ----

type decoder interface {
	// decode maps token strings to text pieces. rawBytes keeps byte-fallback
	// bytes as they are instead of validating them as UTF-8.
	decode(toks []string, rawBytes bool) []string
}

type decSeq []decoder

func (d decSeq) decode(toks []string, raw bool) []string {
	for _, x := range d {
		toks = x.decode(toks, raw)
	}
	return toks
}

type decReplace struct {
	m    *matcher
	with string
}

func (d decReplace) decode(toks []string, _ bool) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = d.m.replaceAll(t, d.with)
	}
	return out
}

type decByteFallback struct{}

// parseByteToken returns the byte of a `<0xHH>` token.
func parseByteToken(t string) (byte, bool) {
	if len(t) != 6 || t[:3] != "<0x" || t[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(t[3:5], 16, 8)
	if err != nil {
		return 0, false
	}
	return byte(v), true
}

func (decByteFallback) decode(toks []string, raw bool) []string {
	out := make([]string, 0, len(toks))
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if raw || utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			// As Hugging Face: an invalid run becomes one U+FFFD per byte.
			out = append(out, strings.Repeat("\uFFFD", len(run)))
		}
		run = run[:0]
	}
	for _, t := range toks {
		if b, ok := parseByteToken(t); ok {
			run = append(run, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

type decFuse struct{}

func (decFuse) decode(toks []string, _ bool) []string { return []string{strings.Join(toks, "")} }

type decStrip struct {
	content     string
	start, stop int
}

func (d decStrip) decode(toks []string, _ bool) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		for k := 0; k < d.start && strings.HasPrefix(t, d.content); k++ {
			t = t[len(d.content):]
		}
		for k := 0; k < d.stop && strings.HasSuffix(t, d.content); k++ {
			t = t[:len(t)-len(d.content)]
		}
		out[i] = t
	}
	return out
}

type decMetaspace struct {
	replacement string
	prepend     bool
}

func (d decMetaspace) decode(toks []string, _ bool) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		t = strings.ReplaceAll(t, d.replacement, " ")
		if d.prepend && i == 0 {
			t = strings.TrimPrefix(t, " ")
		}
		out[i] = t
	}
	return out
}

func parseDecoder(data json.RawMessage) (decoder, error) {
	if isNull(data) {
		return nil, nil
	}
	var r rawJSON
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	switch r.typ() {
	case "Sequence":
		var parts []json.RawMessage
		if err := json.Unmarshal(r["decoders"], &parts); err != nil {
			return nil, fmt.Errorf("decoder Sequence: %w", err)
		}
		var seq decSeq
		for _, p := range parts {
			x, err := parseDecoder(p)
			if err != nil {
				return nil, err
			}
			if x != nil {
				seq = append(seq, x)
			}
		}
		return seq, nil
	case "Replace":
		var p pattern
		if err := json.Unmarshal(r["pattern"], &p); err != nil {
			return nil, fmt.Errorf("decoder Replace: %w", err)
		}
		m, err := p.compile()
		if err != nil {
			return nil, fmt.Errorf("decoder Replace: %w", err)
		}
		return decReplace{m: m, with: r.str("content")}, nil
	case "ByteFallback":
		return decByteFallback{}, nil
	case "Fuse":
		return decFuse{}, nil
	case "Strip":
		var o struct {
			Content string `json:"content"`
			Start   int    `json:"start"`
			Stop    int    `json:"stop"`
		}
		if err := json.Unmarshal(data, &o); err != nil {
			return nil, fmt.Errorf("decoder Strip: %w", err)
		}
		if o.Content == "" {
			return nil, fmt.Errorf("decoder Strip: empty content")
		}
		return decStrip{content: o.Content, start: o.Start, stop: o.Stop}, nil
	case "Metaspace":
		rep := r.str("replacement")
		if rep == "" {
			rep = "▁"
		}
		scheme := r.str("prepend_scheme")
		return decMetaspace{replacement: rep, prepend: scheme != "never"}, nil
	}
	return nil, fmt.Errorf("decoder type %q not supported", r.typ())
}

func isNull(data json.RawMessage) bool {
	s := strings.TrimSpace(string(data))
	return s == "" || s == "null"
}
