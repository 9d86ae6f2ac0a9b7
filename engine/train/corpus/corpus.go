// Package corpus builds Darkroom Mini's training corpus from Debian's
// dict-foldoc (the Free On-line Dictionary of Computing) and dict-jargon (the
// Jargon File) packages and from Debian package metadata, plus freely licensed
// extra sources (ExtraSources: WordNet, V.E.R.A., the Python documentation)
// turned into the same pages and chats, for training only.
//
// It owns the dictd reader (.index + dictzip .dict.dz), the clean-up of
// dictionary entries into pages (ParseEntry, ParseWordNet, ParseVERA,
// ParsePythonDocs, Catalog.Page), the chat and Desktop examples, the held-out
// split (made on the dictionaries' titles; no training example of any source
// has a held-out title or its prompt, in any case), and the BPE tokenizer run
// over the result (or one reused from an earlier corpus). Every prompt but the
// Python FAQ's questions (asked as written) comes from package assets, so the
// app sends exactly the text the model was trained on. Build writes into
// Options.OutDir:
//
//	train.jsonl, heldout.jsonl   one Example per line
//	titles.txt                   the titles of train.jsonl's pages, every source's, one per line (sorted)
//	heldout_titles.txt           held-out page titles (the dictionaries'; no page or chat of train.jsonl has
//	                             one as its title or prompt, in any case)
//	words.txt                    every word (Words) of the training answers, sorted
//	stats.json                   counts, sizes and length distributions (Stats)
//	SOURCES.txt                  where the text comes from, its licences, and each source's share
//	tokenizer/                   tokenizer.json + tokenizer_config.json (trained if VocabSize > 0, or
//	                             copied from Options.Tokenizer)
//
// Nothing of the Debian packages is kept outside OutDir.
package corpus

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/atomicfile"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
)

// Example is one training example: a single-turn chat (optional system turn,
// user prompt, model answer). The trainer applies the chat template.
type Example struct {
	Kind   string `json:"kind"`             // "page", "chat" or "desktop"
	Source string `json:"source,omitempty"` // the dictionary or ExtraSource it comes from, "debian" for Desktop screens
	Title  string `json:"title"`            // page/chat: the entry title; desktop: the app, or the screen for shared screens
	System string `json:"system"`
	Prompt string `json:"prompt"`
	Answer string `json:"answer"`
}

// Messages returns the example's prompt as chat messages (system turn, if
// any, then the user turn), as the app sends it.
func (ex Example) Messages() []chat.Message {
	var m []chat.Message
	if ex.System != "" {
		m = append(m, chat.Message{Role: "system", Content: ex.System})
	}
	return append(m, chat.Message{Role: "user", Content: ex.Prompt})
}

// Example kinds.
const (
	KindPage    = "page"
	KindChat    = "chat"
	KindDesktop = "desktop"
)

// Options controls Build. Zero values take the defaults noted.
type Options struct {
	OutDir string // required

	// DictDir holds foldoc.index, foldoc.dict.dz, jargon.index, jargon.dict.dz.
	// "" uses /usr/share/dictd when the packages are installed there, and
	// otherwise fetches them (apt-get download + dpkg-deb -x into a temporary
	// directory that is removed afterwards).
	DictDir string
	Fetch   bool     // always fetch the packages, even if installed
	Sources []string // dictionaries, in priority order; default {"foldoc", "jargon"}

	// Extra names ExtraSources to add (nil: none). Their dictionaries are read
	// from DictDir as well (wn, vera); the Python docs from DocDir.
	Extra []string
	// DocDir holds the Python documentation's HTML (glossary.html, tutorial/,
	// howto/, faq/); "" uses /usr/share/doc/python3.11/html when installed and
	// otherwise fetches python3.11-doc.
	DocDir string
	// ExtraMax caps an extra source's entries by name, overriding its Max; a
	// negative cap keeps all.
	ExtraMax map[string]int

	// PackagesFile holds Debian package records (control format) for the
	// Desktop apps; "" runs `apt-cache show` on DesktopPackages.
	PackagesFile string

	MaxPageChars    int     // page length cap in bytes of HTML; default 900
	MaxChatChars    int     // chat answer cap; default 320
	HeldOutFraction float64 // share of titles held out; default 0.03
	MinHeldOut      int     // at least this many held-out titles; default 200

	// VocabSize of the BPE tokenizer trained on train.jsonl; default 6144,
	// negative skips the tokenizer.
	VocabSize int
	// Tokenizer, if set, is a directory holding the tokenizer.json (and
	// tokenizer_config.json) of an earlier corpus: it is copied into
	// OutDir/tokenizer instead of training a new one (VocabSize is then
	// ignored), so a model trained on that corpus continues on this one with the
	// same ids.
	Tokenizer string
	// CanvasTokens is the canvas length the token statistics compare with; default 256.
	CanvasTokens int

	Log io.Writer // progress lines; nil discards
}

func (o *Options) defaults() {
	if len(o.Sources) == 0 {
		o.Sources = []string{"foldoc", "jargon"}
	}
	if o.MaxPageChars <= 0 {
		o.MaxPageChars = 900
	}
	if o.MaxChatChars <= 0 {
		o.MaxChatChars = assets.ChatLeadMax
	}
	if o.HeldOutFraction <= 0 {
		o.HeldOutFraction = 0.03
	}
	if o.MinHeldOut <= 0 {
		o.MinHeldOut = 200
	}
	if o.VocabSize == 0 {
		o.VocabSize = 6144
	}
	if o.CanvasTokens <= 0 {
		o.CanvasTokens = 256
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Split counts examples of one kind.
type Split struct {
	Train   int `json:"train"`
	HeldOut int `json:"heldout"`
}

// Dist summarizes a length distribution.
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  int     `json:"p50"`
	P90  int     `json:"p90"`
	P99  int     `json:"p99"`
	Max  int     `json:"max"`
	// OverCanvas is the share of values above the canvas length (token
	// distributions only: answer tokens + the closing tokens the trainer adds).
	OverCanvas float64 `json:"over_canvas,omitempty"`
}

// Stats describes a built corpus (stats.json).
type Stats struct {
	Dictionaries  []DictStats      `json:"dictionaries"`
	Sources       []SourceStats    `json:"sources"` // the training mix by source
	Entries       int              `json:"entries"`
	HeldOutTitles int              `json:"heldout_titles"`
	Examples      map[string]Split `json:"examples"`
	Apps          int              `json:"apps"`
	AppsMissing   []string         `json:"apps_missing,omitempty"`
	HeldOutApps   []string         `json:"heldout_apps"`
	LinksPerPage  float64          `json:"links_per_page"`
	Words         int              `json:"words"`
	Files         map[string]int64 `json:"files"` // bytes
	AnswerChars   map[string]Dist  `json:"answer_chars"`
	// AnswerTokens and PromptTokens are measured with the trained tokenizer:
	// answer = its tokens + the closing <turn|>; prompt = the chat-formatted
	// request as the app sends it (BOS, turns, generation prompt).
	AnswerTokens map[string]Dist `json:"answer_tokens,omitempty"`
	PromptTokens map[string]Dist `json:"prompt_tokens,omitempty"`
	VocabSize    int             `json:"vocab_size,omitempty"`
	Seconds      float64         `json:"seconds"`

	tokensBySource map[string]int64 // answer tokens, for Sources
	candidates     map[string]int   // usable entries read, for Sources
}

// Build builds the corpus into opts.OutDir (see the package doc); stats.json
// there describes the result.
func Build(ctx context.Context, opts Options) error {
	_, err := BuildStats(ctx, opts)
	return err
}

// BuildStats is Build, also returning the statistics it wrote to stats.json.
func BuildStats(ctx context.Context, opts Options) (*Stats, error) {
	start := time.Now()
	opts.defaults()
	if opts.OutDir == "" {
		return nil, fmt.Errorf("build corpus: no output directory")
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("build corpus: %w", err)
	}
	logf := func(format string, args ...any) { fmt.Fprintf(opts.Log, format+"\n", args...) }

	for _, name := range opts.Extra {
		if _, ok := extraSource(name); !ok {
			return nil, fmt.Errorf("build corpus: unknown extra source %q (known: %s)", name, strings.Join(ExtraNames(), ", "))
		}
	}
	for name := range opts.ExtraMax {
		if !slices.Contains(opts.Extra, name) {
			return nil, fmt.Errorf("build corpus: a cap for %q, which is not among the extra sources (%s)", name, strings.Join(opts.Extra, ", "))
		}
	}
	dictDir, docDir, cleanup, err := locateSources(ctx, opts, logf)
	if err != nil {
		return nil, fmt.Errorf("build corpus: %w", err)
	}
	defer cleanup()
	st := &Stats{Examples: map[string]Split{}, Files: map[string]int64{}, AnswerChars: map[string]Dist{}}
	cat := NewCatalog()
	for _, name := range opts.Sources {
		ds, err := cat.AddDictionaryFiles(dictDir, name)
		if err != nil {
			return nil, fmt.Errorf("build corpus: %w", err)
		}
		logf("%s: %d headwords, %d definitions, %d new entries", name, ds.Headwords, ds.Definitions, ds.Entries)
		st.Dictionaries = append(st.Dictionaries, ds)
	}
	st.Entries = len(cat.Entries)
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	apps, err := loadApps(ctx, opts.PackagesFile)
	if err != nil {
		return nil, fmt.Errorf("build corpus: %w", err)
	}
	have := map[string]bool{}
	for _, a := range apps {
		have[a.Name] = true
	}
	if opts.PackagesFile == "" {
		for _, n := range DesktopPackages {
			if !have[n] {
				st.AppsMissing = append(st.AppsMissing, n)
			}
		}
	}
	st.Apps = len(apps)

	titles := make([]string, len(cat.Entries))
	for i, e := range cat.Entries {
		titles[i] = e.Title
	}
	heldTitles := HeldOut(titles, opts.HeldOutFraction, opts.MinHeldOut)
	appNames := make([]string, len(apps))
	for i, a := range apps {
		appNames[i] = a.Name
	}
	heldApps := HeldOut(appNames, opts.HeldOutFraction, min(3, len(appNames)/2))
	st.HeldOutTitles = len(heldTitles)
	for n := range heldApps {
		st.HeldOutApps = append(st.HeldOutApps, n)
	}
	sort.Strings(st.HeldOutApps)

	// No training example of any source is about a held-out title in another
	// spelling ("ADA" beside a held-out "Ada") or asks for one.
	guard := newHeldOutGuard(heldTitles)
	dropped := map[string]int{}
	var train, held []Example
	add := func(heldOut bool, ex Example) {
		switch {
		case heldOut:
			held = append(held, ex)
		case guard.touches(ex):
			dropped[ex.Source]++
		default:
			train = append(train, ex)
		}
	}
	links, pages := 0, 0
	for _, e := range cat.Entries {
		h := heldTitles[e.Title]
		for _, ex := range entryExamples(cat, e, opts.MaxPageChars, opts) {
			if !h && ex.Kind == KindPage {
				links += strings.Count(ex.Answer, `<a href=`)
				pages++
			}
			add(h, ex)
		}
	}
	if pages > 0 {
		st.LinksPerPage = float64(links) / float64(pages)
	}
	// The extra sources, after the dictionaries' pages are written (so those do
	// not change with them): their entries join the catalog first, so their
	// cross references lead to each other's pages and to the dictionaries'.
	extras, err := addExtras(cat, opts, dictDir, docDir, pageUsage(train), st, logf)
	if err != nil {
		return nil, fmt.Errorf("build corpus: %w", err)
	}
	for _, ex := range extras {
		add(false, ex)
	}
	desk := &Desktop{Apps: apps}
	for _, c := range desk.Clicks() {
		title := c.App
		if title == "" {
			title = c.Click.ElementID
			if title == "" {
				title = "home"
			}
		}
		add(c.App != "" && heldApps[c.App],
			Example{Kind: KindDesktop, Source: "debian", Title: title, System: assets.DesktopSystem(), Prompt: assets.DesktopPrompt(c.Click), Answer: c.Screen})
	}
	shuffle(train)
	shuffle(held)
	for _, ex := range train {
		s := st.Examples[ex.Kind]
		s.Train++
		st.Examples[ex.Kind] = s
	}
	for _, ex := range held {
		s := st.Examples[ex.Kind]
		s.HeldOut++
		st.Examples[ex.Kind] = s
	}
	logf("examples: %d train, %d held out (%d held-out titles, %d held-out apps)", len(train), len(held), len(heldTitles), len(heldApps))

	if err := writeJSONL(filepath.Join(opts.OutDir, "train.jsonl"), train); err != nil {
		return nil, err
	}
	if err := writeJSONL(filepath.Join(opts.OutDir, "heldout.jsonl"), held); err != nil {
		return nil, err
	}
	var trainTitles, heldList []string
	for _, t := range titles {
		if heldTitles[t] {
			heldList = append(heldList, t)
		}
	}
	for _, ex := range train {
		if ex.Kind == KindPage {
			trainTitles = append(trainTitles, ex.Title)
		}
	}
	if err := writeLines(filepath.Join(opts.OutDir, "titles.txt"), sorted(trainTitles)); err != nil {
		return nil, err
	}
	if err := writeLines(filepath.Join(opts.OutDir, "heldout_titles.txt"), sorted(heldList)); err != nil {
		return nil, err
	}
	vocab := map[string]bool{}
	for _, ex := range train {
		for _, w := range Words(ex.Answer) {
			vocab[w] = true
		}
	}
	words := make([]string, 0, len(vocab))
	for w := range vocab {
		words = append(words, w)
	}
	st.Words = len(words)
	if err := writeLines(filepath.Join(opts.OutDir, "words.txt"), sorted(words)); err != nil {
		return nil, err
	}
	for _, kind := range []string{KindPage, KindChat, KindDesktop} {
		var n []int
		for _, ex := range train {
			if ex.Kind == kind {
				n = append(n, len(ex.Answer))
			}
		}
		st.AnswerChars[kind] = distribution(n, -1)
	}

	switch {
	case opts.Tokenizer != "":
		logf("reusing the tokenizer in %s", opts.Tokenizer)
		tok, err := copyTokenizer(opts.Tokenizer, filepath.Join(opts.OutDir, "tokenizer"))
		if err != nil {
			return nil, fmt.Errorf("build corpus: %w", err)
		}
		if err := measureTokens(opts, tok, train, st); err != nil {
			return nil, fmt.Errorf("build corpus: %w", err)
		}
	case opts.VocabSize > 0:
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		logf("training a %d-token BPE vocabulary", opts.VocabSize)
		tok, err := trainTokenizer(opts, train)
		if err != nil {
			return nil, fmt.Errorf("build corpus: %w", err)
		}
		if err := measureTokens(opts, tok, train, st); err != nil {
			return nil, fmt.Errorf("build corpus: %w", err)
		}
	}
	st.Sources = sourceStats(opts, st, train, dropped)
	if err := os.WriteFile(filepath.Join(opts.OutDir, "SOURCES.txt"), []byte(sourcesText(st.Sources)), 0o644); err != nil {
		return nil, fmt.Errorf("build corpus: %w", err)
	}
	st.Seconds = time.Since(start).Seconds()
	if err := filepath.Walk(opts.OutDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(opts.OutDir, p)
			st.Files[filepath.ToSlash(rel)] = info.Size()
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("build corpus: %w", err)
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	if err := os.WriteFile(filepath.Join(opts.OutDir, "stats.json"), append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("build corpus: %w", err)
	}
	return st, nil
}

// trainTokenizer trains the BPE vocabulary on the training examples as the
// model sees them (Gemma 4 chat format: user turn, model turn; each distinct
// system turn once) and saves it under OutDir/tokenizer.
func trainTokenizer(opts Options, train []Example) (*tokenizer.Tokenizer, error) {
	texts := func(yield func(string) bool) {
		seen := map[string]bool{}
		if !yield(chat.GenerationPrompt(false)) {
			return
		}
		for _, ex := range train {
			if ex.System != "" && !seen[ex.System] {
				seen[ex.System] = true
				s, _ := chat.Format([]chat.Message{{Role: "system", Content: ex.System}}, chat.Options{NoBOS: true, NoGenerationPrompt: true})
				if !yield(s) {
					return
				}
			}
			s, err := chat.Format([]chat.Message{{Role: "user", Content: ex.Prompt}, {Role: "model", Content: ex.Answer}},
				chat.Options{NoBOS: true, NoGenerationPrompt: true})
			if err == nil && !yield(s) {
				return
			}
		}
	}
	tr, err := tokenizer.Train(texts, tokenizer.TrainOptions{VocabSize: opts.VocabSize})
	if err != nil {
		return nil, fmt.Errorf("train tokenizer: %w", err)
	}
	if err := tr.Save(filepath.Join(opts.OutDir, "tokenizer")); err != nil {
		return nil, err
	}
	tok, err := tr.Tokenizer()
	if err != nil {
		return nil, fmt.Errorf("load trained tokenizer: %w", err)
	}
	return tok, nil
}

// tokenizerFiles are the files of a tokenizer directory; the first is required.
var tokenizerFiles = []string{"tokenizer.json", "tokenizer_config.json"}

// copyTokenizer loads the tokenizer in src (so a damaged one is refused before
// anything is written) and copies its files byte for byte into dst; src itself
// is only read.
func copyTokenizer(src, dst string) (*tokenizer.Tokenizer, error) {
	tok, err := tokenizer.Load(src)
	if err != nil {
		return nil, fmt.Errorf("reuse tokenizer: %w", err)
	}
	if a, b := absPath(src), absPath(dst); a == b {
		return tok, nil // the corpus is rebuilt in place: its tokenizer is already there
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, fmt.Errorf("reuse tokenizer: %w", err)
	}
	for i, name := range tokenizerFiles {
		b, err := os.ReadFile(filepath.Join(src, name))
		if errors.Is(err, fs.ErrNotExist) && i > 0 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reuse tokenizer: %w", err)
		}
		if err := atomicfile.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			return nil, fmt.Errorf("reuse tokenizer: %w", err)
		}
	}
	return tok, nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return filepath.Clean(a)
	}
	return filepath.Clean(p)
}

// measureTokens fills the token statistics of st with tok.
func measureTokens(opts Options, tok *tokenizer.Tokenizer, train []Example, st *Stats) error {
	st.VocabSize = tok.VocabSize()
	st.AnswerTokens, st.PromptTokens = map[string]Dist{}, map[string]Dist{}
	st.tokensBySource = map[string]int64{}
	for _, kind := range []string{KindPage, KindChat, KindDesktop} {
		var ans, prompt []int
		for _, ex := range train {
			if ex.Kind != kind {
				continue
			}
			// +1: the turn close that ends the answer inside the canvas.
			n := len(tok.Encode(ex.Answer)) + 1
			ans = append(ans, n)
			st.tokensBySource[ex.Source] += int64(n)
			ids, err := chat.Encode(tok, ex.Messages(), chat.Options{})
			if err != nil {
				return fmt.Errorf("measure prompt of %q: %w", ex.Title, err)
			}
			prompt = append(prompt, len(ids))
		}
		st.AnswerTokens[kind] = distribution(ans, opts.CanvasTokens)
		st.PromptTokens[kind] = distribution(prompt, -1)
	}
	return nil
}

func distribution(v []int, canvas int) Dist {
	if len(v) == 0 {
		return Dist{}
	}
	s := append([]int(nil), v...)
	sort.Ints(s)
	sum, over := 0, 0
	for _, x := range s {
		sum += x
		if canvas > 0 && x > canvas {
			over++
		}
	}
	q := func(p float64) int { return s[min(len(s)-1, int(p*float64(len(s))))] }
	d := Dist{N: len(s), Mean: float64(sum) / float64(len(s)), P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: s[len(s)-1]}
	if canvas > 0 {
		d.OverCanvas = float64(over) / float64(len(s))
	}
	return d
}

// shuffle orders examples by a hash of their content: deterministic, and mixed
// so a sequential reader sees all kinds throughout.
func shuffle(ex []Example) {
	keys := make([]uint64, len(ex))
	for i, e := range ex {
		keys[i] = titleHash(e.Kind + "\x00" + e.Title + "\x00" + e.Prompt)
	}
	idx := make([]int, len(ex))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
	out := make([]Example, len(ex))
	for i, j := range idx {
		out[i] = ex[j]
	}
	copy(ex, out)
}

func loadApps(ctx context.Context, packagesFile string) ([]App, error) {
	if packagesFile == "" {
		apps, err := LoadPackages(ctx)
		if err == nil && len(apps) == 0 {
			err = errNoApps
		}
		return apps, err
	}
	f, err := os.Open(packagesFile)
	if err != nil {
		return nil, fmt.Errorf("package records: %w", err)
	}
	defer f.Close()
	apps, err := ParsePackages(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", packagesFile, err)
	}
	if len(apps) == 0 {
		return nil, fmt.Errorf("%s: no package records", packagesFile)
	}
	return apps, nil
}

// ReadExamples reads a .jsonl file written by Build.
func ReadExamples(path string) ([]Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read examples: %w", err)
	}
	defer f.Close()
	var out []Example
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1024*1024), 64*1024*1024)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var ex Example
		if err := json.Unmarshal(sc.Bytes(), &ex); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, ex)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read examples %s: %w", path, err)
	}
	return out, nil
}

func writeJSONL(path string, ex []Example) error {
	return writeAtomic(path, func(w *bufio.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, e := range ex {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	})
}

func writeLines(path string, lines []string) error {
	return writeAtomic(path, func(w *bufio.Writer) error {
		for _, l := range lines {
			if _, err := w.WriteString(l + "\n"); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeAtomic writes a file through atomicfile, so a killed build never leaves a
// truncated file under the final name.
func writeAtomic(path string, fill func(*bufio.Writer) error) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	w := bufio.NewWriterSize(f, 1<<20)
	err = fill(w)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}
