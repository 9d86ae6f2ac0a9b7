package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// Source is where a model's files are, in the Hugging Face layout (config.json,
// generation_config.json, model.safetensors or shards, tokenizer.json): a
// directory (Dir) or a file system rooted at the model directory (FS, e.g. the
// embedded Darkroom Mini).
type Source struct {
	Dir  string
	FS   fs.FS
	Name string // for messages; Dir when empty
}

// Dir is the model in directory path.
func Dir(path string) Source { return Source{Dir: path, Name: path} }

// FS is the model at the root of fsys, called name in messages.
func FS(fsys fs.FS, name string) Source { return Source{FS: fsys, Name: name} }

// Files is the model folder's files: FS, or the directory Dir.
func (s Source) Files() (fs.FS, error) {
	if s.FS != nil {
		return s.FS, nil
	}
	if s.Dir == "" {
		return nil, fmt.Errorf("load: no model directory given")
	}
	st, err := os.Stat(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", s, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("load %s: not a directory", s)
	}
	return os.DirFS(s.Dir), nil
}

func (s Source) String() string {
	switch {
	case s.Name != "":
		return s.Name
	case s.Dir != "":
		return s.Dir
	}
	return "model"
}

// Options tune Load.
type Options struct {
	// Backend is "go" (pure Go), "xla", "xla:cpu", "xla:cuda", "xla:/abs/plugin.so"
	// or "auto"; empty means $GOMLX_BACKEND, else "go". An XLA backend that cannot
	// start falls back to "go" (see Engine.BackendFallback).
	Backend string
	// Progress, if set, is called as loading moves through its stages
	// ("config", "tokenizer", "weights", "backend", "model", "read", "ready").
	Progress func(stage string)
	// WeightsProgress, if set, hears the bytes of weights done so far of their total
	// in the stages that can take minutes for the 26B: "weights" where a safetensors
	// checkpoint's files are read rather than mapped (DARKROOM_NO_MMAP, a system that maps nothing:
	// weights.Map), "model" on the graph path (a mapped checkpoint copied out, a GGUF
	// file converted: weights.Mapped.Set, its stored bytes counted) and "read" on the
	// host path (a mapped checkpoint read into memory before the first pass instead of
	// during it, a GGUF's tensors read onto the heap: model.Runner.ReadWeights).
	WeightsProgress func(done, total int64)
	// InGraph runs generation in GoMLX graphs even on the pure-Go backend. By
	// default the pure-Go backend runs every model on the host (see engine/model's
	// HostDecoder), its weights multiplied in their stored format and, for a
	// safetensors directory, straight from the file's mapping: about 10× faster than
	// simplego's graphs, in no more memory than the weights take. XLA backends always
	// run the graphs. Both paths are held to the same float64 reference by
	// engine/model's tests.
	InGraph bool
	// DeviceLayers, where the model runs in graphs (an XLA backend, or the pure-Go
	// one with InGraph, as the tests run it) with 0 < DeviceLayers < the model's
	// layer count, splits the model between the device
	// and the CPU, as llama.cpp's --n-gpu-layers does: the embedding, the decoder's
	// self-conditioning MLP, the final norm and the first DeviceLayers layers (their
	// weights as stored and their KV cache) on the device, where the output head and
	// the sampler's step run too; the other layers on the CPU, multiplied in their
	// stored format straight from the mapped checkpoint, with their KV cache in RAM
	// (engine/model's Runner.DeviceLayers). Per denoising step only the canvas's
	// hidden state [C, D] crosses, each way once. For a GPU too small for the whole
	// model (models.Place says how many layers fit). 0, or the layer count or more:
	// the whole model on the device.
	DeviceLayers int
}

// Load reads a model and prepares it to generate. Either the whole model loads
// or an error names the file (and tensor) that is wrong; nothing is left half
// loaded. ctx cancels loading between stages.
func Load(ctx context.Context, src Source, opts Options) (e *Engine, err error) {
	defer func() {
		if r := recover(); r != nil { // GoMLX panics on graph errors; never let them out
			e, err = nil, fmt.Errorf("load %s: %v", src, r)
		}
	}()
	fsys, err := src.Files()
	if err != nil {
		return nil, err
	}
	stage := func(s string) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("load %s: %w", src, err)
		}
		if opts.Progress != nil {
			opts.Progress(s)
		}
		return nil
	}

	if err := stage("config"); err != nil {
		return nil, err
	}
	cfg, err := config.LoadFS(fsys, ".")
	if err != nil && src.FS == nil && errors.Is(err, fs.ErrNotExist) {
		// No config.json: a GGUF model file carries the config in its metadata.
		if gcfg, ok, gerr := weights.GGUFConfig(src.Dir); gerr != nil {
			err = gerr
		} else if ok {
			cfg, err = gcfg, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", src, err)
	}
	if cfg.CanvasLength < 1 {
		return nil, fmt.Errorf("load %s: %s: canvas_length must be positive, got %d", src, config.ConfigFile, cfg.CanvasLength)
	}

	if err := stage("tokenizer"); err != nil {
		return nil, err
	}
	tok, err := tokenizer.LoadFS(fsys, "tokenizer.json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load %s: the folder has no tokenizer.json, which the model needs to read and write text: "+
			"download the model again, or copy the tokenizer.json of the repository it came from into the folder", src)
	}
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", src, err)
	}
	if tok.VocabSize() > cfg.Text.VocabSize {
		return nil, fmt.Errorf("load %s: tokenizer.json has %d ids but the model's vocab_size is %d",
			src, tok.VocabSize(), cfg.Text.VocabSize)
	}

	if err := stage("weights"); err != nil {
		return nil, err
	}
	// A model directory — safetensors, a ModelOpt export, a GGUF file — is mapped in
	// place (weights.Map: the host path multiplies the weights as stored, and a graph
	// path copies them out at the "model" stage); what Map declines (F16 tensors, GGUF
	// experts of mixed types) and an embedded model are read into a Set.
	var w loadedWeights
	var layout weights.GGUFLayout
	if src.FS == nil {
		// Map and Load read the GGUF file where there is one; its layout prices it
		// (the mapped file's header; a file Map declines is read again for it).
		var ok bool
		if w.mapped, ok, err = weights.Map(src.Dir, cfg, opts.WeightsProgress); err == nil && !ok {
			w.set, err = weights.Load(src.Dir, cfg)
			if path, found, _ := weights.FindGGUF(src.Dir); err == nil && found {
				layout, _ = weights.ReadGGUFLayout(os.DirFS(src.Dir), filepath.Base(path), cfg) // Load read it: no error left
			}
		} else if err == nil {
			layout = w.mapped.GGUFLayout()
		}
	} else {
		w.set, err = weights.LoadFS(fsys, ".", cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", src, err)
	}

	if err := stage("backend"); err != nil {
		w.close()
		return nil, err
	}
	be, err := backend.New(opts.Backend)
	if err != nil {
		w.close()
		return nil, fmt.Errorf("load %s: %w", src, err)
	}

	if err := stage("model"); err != nil {
		w.close()
		be.Finalize()
		return nil, err
	}
	run, path, release, err := newModelRunner(be, cfg, w, opts, opts.WeightsProgress)
	if err != nil {
		be.Finalize()
		return nil, fmt.Errorf("load %s: %w", src, err)
	}
	e = &Engine{cfg: cfg, tokenizer: tok, tok: tok, run: run, backend: be.Spec, be: be.Backend, fallback: be.Fallback, path: path, gguf: layout, dir: src.Dir,
		release: func() {
			release()
			be.Finalize()
		}}
	e.prompt = e.promptIDs
	if mr, ok := run.(modelRunner); ok {
		mr.r.OnCompile = e.onCompile
		if err := stage("read"); err != nil {
			e.Close()
			return nil, err
		}
		mr.r.ReadWeights(func() bool { return ctx.Err() != nil }, opts.WeightsProgress)
	}
	if err := stage("ready"); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// FromDisk is one plain sentence where the model's weights, mapped from its files
// on the CPU, did not all fit in the memory available as it loaded — they are then
// read from the disk as they are needed, and it writes slower — and "" otherwise.
func (e *Engine) FromDisk() string {
	mr, ok := e.run.(modelRunner)
	if !ok {
		return ""
	}
	mapped, avail, _, ok := mr.r.FromDisk()
	if !ok {
		return ""
	}
	have := ""
	if avail > 0 {
		have = " (" + formatBytes(avail) + ")"
	}
	return fmt.Sprintf("Its weights (%s) and what it needs to run do not all fit in the memory available%s: the weights are read from the disk as they are needed, so it writes slower",
		formatBytes(mapped), have)
}

// WeightsFromDisk reports whether the model's weights are read from the disk as
// they are needed (FromDisk says so in words), with their bytes and the memory the
// system had for them as it loaded (models/speed prices the reads), and the
// model's folder ("" for a model not in one).
func (e *Engine) WeightsFromDisk() (mapped, room int64, dir string, ok bool) {
	mr, isModel := e.run.(modelRunner)
	if !isModel {
		return 0, 0, "", false
	}
	mapped, _, room, ok = mr.r.FromDisk()
	return mapped, room, e.dir, ok
}

// formatBytes is n bytes in GB, or MB below a GB, one decimal.
func formatBytes(n int64) string {
	if n < 1e9 {
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}

// Tokenizer returns the model's tokenizer.
func (e *Engine) Tokenizer() *tokenizer.Tokenizer { return e.tokenizer }

// BackendFallback is the one plain line saying why XLA was asked for but the
// pure-Go backend runs instead ("" when the requested backend runs).
func (e *Engine) BackendFallback() string { return e.fallback }

// promptIDs turns a request into the encoder's input: PromptIDs as given; Raw
// text as BOS + its ids; Prompt as a single user turn and Messages as a
// conversation, both in the Gemma 4 chat format with the model turn opened.
func (e *Engine) promptIDs(req *Request) ([]int, error) {
	switch {
	case len(req.Messages) > 0:
		return chat.Encode(e.tokenizer, req.Messages, chat.Options{Thinking: req.Thinking, Tools: req.Tools})
	case req.Prompt != "" && !req.Raw:
		return chat.Encode(e.tokenizer, []chat.Message{{Role: "user", Content: req.Prompt}},
			chat.Options{Thinking: req.Thinking, Tools: req.Tools})
	case req.Prompt != "":
		ids := e.tokenizer.Encode(req.Prompt)
		if bos := e.tokenizer.BOS(); bos >= 0 {
			ids = append([]int{bos}, ids...)
		}
		return ids, nil
	}
	return req.PromptIDs, nil
}
