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
	"github.com/darkroomlabs/darkroom/models/store"
)

// A GGUF repo holds one file per quantization ("diffusiongemma-26B-A4B-it-Q3_K_M.gguf",
// "…-UD-Q4_K_XL.gguf"); a user names one after the repo, as ollama names a Hugging
// Face GGUF (hf.co/{repo}:{quant}): "unsloth/diffusiongemma-26B-A4B-it-GGUF:Q3_K_M".
// The catalog lists Unsloth's four mixes; any other quantization of any repo is
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

// splitPart is the end of a part of a split GGUF (llama.cpp's gguf-split):
// "-00001-of-00003".
var splitPart = regexp.MustCompile(`-\d{5}-of-\d{5}$`)

// ggufQuantOf is the quantization a GGUF file's name ends with — its last part after
// a '-' or '.' ("Q4_K_M", "IQ4_XS", "BF16"; Unsloth's dynamic quants "UD-Q4_K_XL"), a
// split GGUF's part number aside — and false for a file that is no GGUF model file.
func ggufQuantOf(name string) (string, bool) {
	base := path.Base(name)
	stem, ok := strings.CutSuffix(strings.ToLower(base), ".gguf")
	if !ok || strings.HasPrefix(stem, "mmproj") {
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
}

// Quant is one quantization of a GGUF repo: its name and its file's size.
type Quant struct {
	Name string
	Size int64
}

func (e *QuantChoice) Error() string {
	var said []string
	for _, q := range e.Quants {
		said = append(said, fmt.Sprintf("%s (%s)", q.Name, store.FormatBytes(q.Size)))
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
			e.Quants = append(e.Quants, Quant{q, fs[0].Size})
		}
	}
	slices.SortFunc(e.Quants, func(a, b Quant) int { return cmp.Or(cmp.Compare(a.Size, b.Size), strings.Compare(a.Name, b.Name)) })
	return e
}

// layoutCache keeps the layouts of local GGUF files (weights.ReadGGUFLayout: the
// header of a real one holds its 262,144-token vocabulary), and the configurations
// their metadata give, read again where a file's size or time changes.
type layoutCache struct {
	mu      sync.Mutex
	seen    map[string]cachedLayout
	configs map[string]cachedConfig // the metadata's configurations of those without config.json
}

type cachedLayout struct {
	size   int64
	mod    time.Time
	layout weights.GGUFLayout
}

// of is the layout of the GGUF file at path, holding cfg; the zero layout where it
// cannot be read (the loader says why).
func (c *layoutCache) of(path string, cfg *config.Model) weights.GGUFLayout {
	st, err := os.Stat(path)
	if err != nil {
		return weights.GGUFLayout{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.seen[path]; ok && v.size == st.Size() && v.mod.Equal(st.ModTime()) {
		return v.layout
	}
	l, err := weights.ReadGGUFLayout(os.DirFS(filepath.Dir(path)), filepath.Base(path), cfg)
	if err != nil {
		return weights.GGUFLayout{}
	}
	if c.seen == nil {
		c.seen = map[string]cachedLayout{}
	}
	c.seen[path] = cachedLayout{st.Size(), st.ModTime(), l}
	return l
}

// config is the model configuration the metadata of the GGUF file at path gives (a
// GGUF downloaded without config.json: the engine reads it so too), read once while
// the file's size and time stay (one value for every caller: not to be changed).
func (c *layoutCache) config(path string) (*config.Model, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.configs[path]; ok && v.size == st.Size() && v.mod.Equal(st.ModTime()) {
		return v.cfg, nil
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	if c.configs == nil {
		c.configs = map[string]cachedConfig{}
	}
	c.configs[path] = cachedConfig{st.Size(), st.ModTime(), cfg}
	return cfg, nil
}

type cachedConfig struct {
	size int64
	mod  time.Time
	cfg  *config.Model
}

// remoteCheckTime bounds the reads of GGUF headers before a download.
var remoteCheckTime = 2 * time.Minute

// checkGGUF reads the header of GGUF file name (size bytes) from the Hub (by ranges,
// before any of its weights are downloaded: r) and refuses a file the engine cannot
// load — another architecture, a block type Darkroom does not read (the IQ types of
// grids: IQ2_XXS, IQ3_S, …), tensors that are not DiffusionGemma's, a configuration
// other than the config.json downloaded beside it (dir's) — as the loader would refuse
// it after the whole download (weights.GGUFLayoutOf plans it as the loader does). A
// read the Hub cannot answer by ranges refuses nothing: the loader checks the file
// then.
func checkGGUF(ctx context.Context, r *hub.RemoteFile, name string, size int64, dir string) error {
	var remote *hub.RangeError
	err := func() error {
		g, err := gguf.Parse(r, size, name)
		if err != nil {
			return err
		}
		cfg, err := config.Load(dir)
		if errors.Is(err, fs.ErrNotExist) {
			cfg, err = g.Config()
		}
		if err != nil {
			return err
		}
		_, err = weights.GGUFLayoutOf(g, cfg)
		return err
	}()
	if err == nil || errors.As(err, &remote) || ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("Darkroom cannot load %s (its header, read before downloading it, says so): %w", path.Base(name), err)
}

// ggufTokenizer is the companion (catalog.TokenizerFor) of a download that is one
// GGUF file without tokenizer.json — another publisher's GGUF of a model the catalog
// lists, its header read by ranges (remote) to know which — and nil for any other.
func ggufTokenizer(files []hub.File, remote func(hub.File) *hub.RemoteFile) *catalog.Companion {
	var only *hub.File
	for i, f := range files {
		if _, ok := ggufQuantOf(f.Name); ok {
			if only != nil {
				return nil // several: checkFormat says which
			}
			only = &files[i]
		}
	}
	if only == nil {
		return nil
	}
	g, err := gguf.Parse(remote(*only), only.Size, only.Name)
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
