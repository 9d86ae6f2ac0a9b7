package models

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/hub"
	"github.com/darkroomlabs/darkroom/models/hw"
	"github.com/darkroomlabs/darkroom/models/store"
)

// A GGUF repo holds one file per quantization ("diffusiongemma-26B-A4B-it-Q3_K_M.gguf",
// "…-UD-Q4_K_XL.gguf"); a user names one after the repo, as ollama names a Hugging
// Face GGUF (hf.co/{repo}:{quant}): "unsloth/diffusiongemma-26B-A4B-it-GGUF:Q3_K_M".
// The catalog lists five of Unsloth's mixes (gguf.Mixes); any other quantization of any repo is
// found by its name among the repo's files, and downloaded as a model of its own
// ("repo:QUANT", store.DirName).

// splitQuant splits "owner/name:QUANT" into the repo and the quantization's name;
// quant is "" where name names none.
func splitQuant(name string) (repo, quant string) {
	i := strings.LastIndex(name, ":")
	if i < 0 || strings.Contains(name[i:], "/") {
		return name, ""
	}
	return name[:i], name[i+1:]
}

// quantName is the store's name of a quantization of a GGUF repo as a user may type
// it ("owner/name:q3_k_m"): its quantization in capitals, as Pull names the download;
// "" for a name that names none.
func quantName(name string) string {
	repo, q := splitQuant(name)
	if q == "" {
		return ""
	}
	return repo + ":" + strings.ToUpper(q)
}

// ggufQuants are the repo's GGUF model files (mmproj-*.gguf, a vision projector, is
// none) by the quantization each names (ggufQuantOf): one file, or a split GGUF's
// parts.
func ggufQuants(files []hub.File) map[string][]hub.File {
	out := map[string][]hub.File{}
	for _, f := range files {
		if q, ok := ggufQuantOf(f.Name); ok {
			out[q] = append(out[q], f)
		}
	}
	return out
}

// modelGGUFs is every file of a repo's GGUF files by quantization (ggufQuants).
func modelGGUFs(qs map[string][]hub.File) []hub.File {
	var out []hub.File
	for _, fs := range qs {
		out = append(out, fs...)
	}
	return out
}

// splitPart is the end of a part of a split GGUF (llama.cpp's gguf-split):
// "-00001-of-00003".
var splitPart = regexp.MustCompile(`-\d{5}-of-\d{5}$`)

// ggufQuantOf is the quantization a GGUF file's name ends with — its last part after
// a '-' or '.' ("Q4_K_M", "IQ4_XS", "BF16"; Unsloth's dynamic quants "UD-Q4_K_XL"), a
// split GGUF's part number aside — and false for a file that is no GGUF model file.
func ggufQuantOf(name string) (string, bool) {
	base := path.Base(name)
	stem, ok := strings.CutSuffix(strings.ToLower(base), ".gguf")
	if !ok || weights.IsProjectorGGUF(base) {
		return "", false
	}
	stem = splitPart.ReplaceAllString(base[:len(stem)], "")
	parts := strings.FieldsFunc(stem, func(r rune) bool { return r == '-' || r == '.' })
	if len(parts) == 0 {
		return "", false
	}
	q := parts[len(parts)-1]
	if len(parts) >= 2 && strings.EqualFold(parts[len(parts)-2], "UD") {
		q = parts[len(parts)-2] + "-" + q
	}
	return strings.ToUpper(q), true
}

// ggufForQuant picks the file of quantization quant (any case) among a repo's
// files: the one named by it, or where quant is a dynamic quant's plain part
// ("Q4_K_XL" for "UD-Q4_K_XL") and the repo has no plain one, that. None is a
// *QuantChoice error that lists the quantizations the repo has; a GGUF split in
// parts, which Darkroom does not read, is an error too.
func ggufForQuant(repo, quant string, files []hub.File) (hub.File, error) {
	qs := ggufQuants(files)
	quant = strings.ToUpper(quant)
	fs, ok := qs[quant]
	if !ok {
		fs, ok = qs["UD-"+quant]
	}
	switch {
	case len(qs) == 0:
		return hub.File{}, fmt.Errorf("%s holds no GGUF file to choose %s from", repo, quant)
	case !ok:
		return hub.File{}, quantChoice(repo, quant, qs)
	case len(fs) > 1:
		return hub.File{}, fmt.Errorf("%s's %s GGUF comes in %d parts (llama.cpp's gguf-split), and Darkroom reads a GGUF in one file: "+
			"choose another quantization, or merge the parts (llama-gguf-split --merge) and load the folder", repo, quant, len(fs))
	}
	return fs[0], nil
}

// QuantChoice is the error of a GGUF repo named with no quantization, or one it does
// not hold: the quantizations it holds in one file each, which Darkroom can download
// (a split GGUF's are left out), for the user to choose one — by name after the repo
// (Repo + ":" + Name), or from buttons the Library shows.
type QuantChoice struct {
	Repo   string
	Asked  string  // the quantization asked for; "" where none was named
	Quants []Quant // smallest first
	// Config is the model's configuration as its smallest quantization's header
	// says it (read by ranges before the choice is offered: withChoiceConfig), where
	// the catalog does not know the repo; nil where it does, or the header could not
	// be read in choiceConfigTime.
	Config *config.Model
}

// choiceConfigTime bounds the read of a choice's header (withChoiceConfig): a Hub
// that stalls leaves the choice unjudged, not the user waiting.
var choiceConfigTime = 20 * time.Second

// withChoiceConfig returns err, and where it is a *QuantChoice of a repo the catalog
// does not know, first sets its Config from the header of its smallest quantization
// among files (at commit), read by ranges (a few MB: the vocabulary), so that
// JudgeQuants can say where each would run.
func (m *Manager) withChoiceConfig(ctx context.Context, repo, commit string, files []hub.File, err error) error {
	var c *QuantChoice
	if !errors.As(err, &c) || len(c.Quants) == 0 {
		return err
	}
	if _, known := catalog.Find(c.Repo); known {
		return err
	}
	fs := ggufQuants(files)[c.Quants[0].Name]
	if len(fs) != 1 {
		return err
	}
	hctx, stop := context.WithTimeout(ctx, choiceConfigTime)
	defer stop()
	g, perr := gguf.Parse(m.hub.OpenRemote(hctx, m.hub.ResolveURL(repo, commit, fs[0].Name), fs[0].Size), fs[0].Size, fs[0].Name)
	if perr != nil {
		return err
	}
	if cfg, cerr := g.Config(); cerr == nil {
		c.Config = cfg
	}
	return err
}

// Quant is one quantization of a GGUF repo: its name and its file's size, and where
// it would run on this PC (JudgeQuants).
type Quant struct {
	Name string
	Size int64
	// Fit is its placement on this PC by its file's size (PlaceFile), where the
	// model's dimensions are known (JudgeQuants); nil where unjudged.
	Fit *Placement
}

// JudgeQuants places each quantization c offers on the PC info describes, by its
// file's size (PlaceFile: a GPU holds a GGUF's blocks as stored, so its memory there
// is the file's and the model's KV cache, activations and runtime), with the
// dimensions of c's repo as the catalog knows them (Unsloth's GGUF of the 26B) or as
// its smallest quantization's header says them (c.Config); a repo of unknown
// dimensions is left unjudged.
func JudgeQuants(c *QuantChoice, info hw.Info) {
	cfg := c.Config
	if e, ok := catalog.Find(c.Repo); ok && e.Config != nil {
		cfg, _ = e.Config()
	}
	if cfg == nil {
		return
	}
	for i, q := range c.Quants {
		if pl, err := PlaceFile(cfg, q.Size, info); err == nil {
			c.Quants[i].Fit = &pl
		}
	}
}

func (e *QuantChoice) Error() string {
	var said []string
	for _, q := range e.Quants {
		where := ""
		if q.Fit != nil { // judged: where it would run here (JudgeQuants)
			where = ", " + q.Fit.Where()
		}
		said = append(said, fmt.Sprintf("%s (%s%s)", q.Name, store.FormatBytes(q.Size), where))
	}
	has := strings.Join(said, ", ")
	if len(said) == 0 {
		has = "none in one file, which Darkroom reads"
	} else {
		has += "; name one after the repo, as " + e.Repo + ":" + e.Quants[0].Name
	}
	if e.Asked == "" {
		return "the repo holds a GGUF file per quantization: " + has
	}
	return fmt.Sprintf("%s has no %s GGUF; it has %s", e.Repo, e.Asked, has)
}

// quantChoice is the QuantChoice of a repo's GGUF files qs, quant asked ("": none).
func quantChoice(repo, quant string, qs map[string][]hub.File) *QuantChoice {
	e := &QuantChoice{Repo: repo, Asked: quant}
	for q, fs := range qs {
		if len(fs) == 1 {
			e.Quants = append(e.Quants, Quant{Name: q, Size: fs[0].Size})
		}
	}
	slices.SortFunc(e.Quants, func(a, b Quant) int { return cmp.Or(cmp.Compare(a.Size, b.Size), strings.Compare(a.Name, b.Name)) })
	return e
}

// ggufCache keeps what the headers of local GGUF files give (the header of a real one
// holds its 262,144-token vocabulary; the Library lists the models on every refresh),
// read again where a file's size or time changes.
type ggufCache struct {
	mu   sync.Mutex
	seen map[string]localGGUF
}

type localGGUF struct {
	size   int64
	mod    time.Time
	cfg    *config.Model
	layout weights.GGUFLayout
	err    error
}

// read is the configuration of the local GGUF file at path (planGGUFIn: its folder's
// config.json, else its metadata's) and its layout; the zero layout where the file
// cannot be planned (the loader says why). One configuration for every caller: not to
// be changed.
func (c *ggufCache) read(path string) (*config.Model, weights.GGUFLayout, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, weights.GGUFLayout{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.seen[path]
	if !ok || v.size != st.Size() || !v.mod.Equal(st.ModTime()) {
		v = localGGUF{size: st.Size(), mod: st.ModTime()}
		v.cfg, v.layout, v.err = readLocalGGUF(path)
		if c.seen == nil {
			c.seen = map[string]localGGUF{}
		}
		c.seen[path] = v
	}
	return v.cfg, v.layout, v.err
}

// readLocalGGUF opens the GGUF file at path and plans it (planGGUFIn); a file that
// does not open or plan still has its folder's config.json, if any.
func readLocalGGUF(path string) (*config.Model, weights.GGUFLayout, error) {
	dir := filepath.Dir(path)
	f, err := gguf.Open(path)
	if err != nil {
		if cfg, cerr := config.Load(dir); cerr == nil {
			return cfg, weights.GGUFLayout{}, nil
		}
		return nil, weights.GGUFLayout{}, err
	}
	defer f.Close()
	cfg, l, err := planGGUFIn(f, dir)
	if cfg != nil {
		err = nil // the layout unreadable: priced as its profile
	}
	return cfg, l, err
}

// planGGUFIn is the configuration of GGUF file g in folder dir — dir's config.json
// (a download's, or its companion's), else g's metadata (as the engine reads one
// without it) — and g planned by it as the loader plans it (weights.GGUFLayoutOf). A
// configuration with no layout comes with the planning's error.
func planGGUFIn(g *gguf.File, dir string) (*config.Model, weights.GGUFLayout, error) {
	cfg, err := config.Load(dir)
	if errors.Is(err, fs.ErrNotExist) {
		cfg, err = g.Config()
	}
	if err != nil {
		return nil, weights.GGUFLayout{}, err
	}
	l, err := weights.GGUFLayoutOf(g, cfg)
	return cfg, l, err
}

// remoteHeaders parses the headers of a download's GGUF files, read from the Hub by
// ranges (open: hub.RemoteFile), each once, for ggufTokenizer and checkGGUF.
type remoteHeaders struct {
	open func(hub.File) *hub.RemoteFile
	seen map[string]remoteHeader
}

type remoteHeader struct {
	g   *gguf.File
	err error
}

func (h *remoteHeaders) parse(f hub.File) (*gguf.File, error) {
	v, ok := h.seen[f.Name]
	if !ok {
		v.g, v.err = gguf.Parse(h.open(f), f.Size, f.Name)
		if h.seen == nil {
			h.seen = map[string]remoteHeader{}
		}
		h.seen[f.Name] = v
	}
	return v.g, v.err
}

// remoteCheckTime bounds the reads of GGUF headers before a download.
var remoteCheckTime = 2 * time.Minute

// checkGGUF reads the header of GGUF file f from the Hub (by ranges, before any of
// its weights are downloaded: h) and refuses a file the engine cannot load — another
// architecture, a block type Darkroom does not read (the IQ types of grids: IQ2_XXS,
// IQ3_S, …), tensors that are not DiffusionGemma's, a configuration other than the
// config.json downloaded beside it (dir's) — as the loader would refuse it after the
// whole download (planGGUFIn). A read the Hub cannot answer by ranges refuses
// nothing: the loader checks the file then.
func checkGGUF(ctx context.Context, h *remoteHeaders, f hub.File, dir string) error {
	g, err := h.parse(f)
	if err == nil {
		_, _, err = planGGUFIn(g, dir)
	}
	var remote *hub.RangeError
	if err == nil || errors.As(err, &remote) || ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("Darkroom cannot load %s (its header, read before downloading it, says so): %w", path.Base(f.Name), err)
}

// ggufTokenizer is the companion (catalog.TokenizerFor) of a download that is one
// GGUF file without tokenizer.json — another publisher's GGUF of a model the catalog
// lists, its header read by ranges (h) to know which — and nil for any other.
func ggufTokenizer(files []hub.File, h *remoteHeaders) *catalog.Companion {
	ggufs := modelGGUFs(ggufQuants(files))
	if len(ggufs) != 1 {
		return nil // none, or several: checkFormat says which
	}
	g, err := h.parse(ggufs[0])
	if err != nil {
		return nil // checkGGUF says why
	}
	cfg, err := g.Config()
	if err != nil {
		return nil
	}
	c, _ := catalog.TokenizerFor(cfg)
	return c
}
