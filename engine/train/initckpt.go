package train

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing/fstest"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/atomicfile"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// DefaultShardBytes is the largest safetensors file InitCheckpoint writes before it
// starts another, Hugging Face's default max_shard_size ("5GB").
const DefaultShardBytes = 5_000_000_000

// initChunk is how many values InitCheckpoint generates at a time (rounded to whole
// rows). Each chunk has its own random stream, so the values depend only on the seed,
// the tensor's name and its shape, not on how many goroutines generate them.
const initChunk = 1 << 20

// InitOptions controls InitCheckpoint.
type InitOptions struct {
	// Profile is bf16 (the default), int8 or int4 — or nvfp4, NVIDIA ModelOpt's export
	// layout (initmodelopt.go), which the NVFP4 download has.
	Profile quant.Profile
	// GGUF writes the weights as one GGUF file (InitGGUFFile) in this llama.cpp mix
	// (weights.GGUFType; "": safetensors) instead of safetensors, with the tokenizer
	// and no config.json, as a GGUF download comes (the loader reads the config from
	// the file's metadata). Profile must be unset.
	GGUF gguf.Mix
	Seed uint64
	// Tokenizer is a directory holding tokenizer.json (and tokenizer_config.json),
	// copied into the checkpoint; nil is the built-in Darkroom Mini's. Its ids must fit
	// in the config's vocab_size.
	Tokenizer fs.FS
	// MaxShardBytes is the size above which the tensors are split over
	// model-0000k-of-0000n.safetensors files listed by model.safetensors.index.json, as
	// Hugging Face does (a tensor larger than it gets a file of its own); 0 means
	// DefaultShardBytes.
	MaxShardBytes int64
	// Progress, if set, is called after each tensor with the bytes written so far and
	// the checkpoint's total.
	Progress func(done, total int64)
}

// InitResult describes the checkpoint InitCheckpoint wrote.
type InitResult struct {
	Dir     string   `json:"dir"`
	Profile string   `json:"profile"`
	Files   []string `json:"files"`   // the safetensors files
	Tensors int      `json:"tensors"` // stored tensors (a quantized weight is two)
	Params  int64    `json:"params"`
	Bytes   int64    `json:"bytes"` // tensor data in the safetensors files
}

// initTensor is one weight of the table and how the profile stores it.
type initTensor struct {
	spec    weights.Spec
	q       *quant.Spec          // nil: stored as BF16
	headers []safetensors.Header // the weight, or its .qweight and .qscale, or its modules' tensors
	bytes   int64                // data bytes of headers
	// modules are the ModelOpt modules of an NVFP4 profile's quantized weight
	// (writeInitModelOpt); q is nil then.
	modules []weights.ModelOptModule
}

// InitCheckpoint writes a randomly initialized checkpoint of cfg into dir, in the
// Hugging Face layout the loader reads: config.json and generation_config.json, the
// tokenizer, and the weights of weights.Specs under their HF names in the profile's
// formats (the bf16 profile stores every weight as BF16; int8 and int4 quantize the
// ones quant.Profile.SpecFor selects and keep the rest BF16, as `darkroom quantize`
// does; nvfp4 writes NVIDIA ModelOpt's export layout, initmodelopt.go) — or, with
// opts.GGUF, the tokenizer and one GGUF file in llama.cpp's layout
// (writeInitGGUF). Initialization follows the table: ones for norms, scales and
// layer scalars, N(0, 1/fan_in) for projections, experts and the embedding, from the
// seed alone (the same seed writes the same bytes, and the same values in every
// format).
//
// The model is never whole in memory: each tensor is generated a chunk of rows at a
// time, quantized and streamed to its file, so a 25B-parameter model takes a few
// chunks of memory. Everything is written into a temporary directory beside dir and
// renamed to dir at the end: on any error (a full disk, a cancelled ctx) nothing is
// left that a loader would take for a model. dir must not exist or be empty.
func InitCheckpoint(ctx context.Context, cfg *config.Model, dir string, opts InitOptions) (res InitResult, err error) {
	fail := func(err error) (InitResult, error) { return InitResult{}, fmt.Errorf("train init: %w", err) }
	if dir == "" {
		return fail(errors.New("no output directory"))
	}
	if err := cfg.Validate(); err != nil {
		return fail(err)
	}
	p, err := initProfile(opts)
	if err != nil {
		return fail(err)
	}
	tokFS := opts.Tokenizer
	if tokFS == nil {
		if tokFS, err = assets.Mini(); err != nil {
			return fail(fmt.Errorf("the built-in tokenizer: %w", err))
		}
	}
	tok, err := tokenizer.LoadFS(tokFS, "tokenizer.json")
	if err != nil {
		return fail(err)
	}
	if tok.VocabSize() > cfg.Text.VocabSize {
		return fail(fmt.Errorf("the tokenizer has %d ids but the config's vocab_size is %d: give a tokenizer of at most %d ids (--tokenizer DIR)",
			tok.VocabSize(), cfg.Text.VocabSize, cfg.Text.VocabSize))
	}
	if err := checkEmptyOrMissing(dir); err != nil {
		return fail(err)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fail(err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(filepath.Clean(dir))+".init-*")
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()

	if opts.GGUF != "" {
		plan, res, err := planGGUF(cfg, opts.GGUF)
		if err != nil {
			return fail(err)
		}
		res.Dir = dir
		if err := writeInitGGUF(ctx, cfg, filepath.Join(tmp, InitGGUFFile(opts.GGUF)), plan, opts, res.Bytes); err != nil {
			return fail(err)
		}
		if err := copyTokenizer(tokFS, tmp); err != nil {
			return fail(err)
		}
		if err := finishInit(tmp, dir); err != nil {
			return InitResult{}, err
		}
		return res, nil
	}
	shards, res, err := planInit(cfg, p, opts.MaxShardBytes)
	if err != nil {
		return fail(err)
	}
	res.Dir = dir
	var done int64
	idx := safetensors.Index{Metadata: map[string]any{"total_size": res.Bytes}, WeightMap: map[string]string{}}
	for k, shard := range shards {
		name := res.Files[k]
		var hs []safetensors.Header
		for _, t := range shard {
			hs = append(hs, t.headers...)
			for _, h := range t.headers {
				idx.WeightMap[h.Name] = name
			}
		}
		w, err := safetensors.Create(filepath.Join(tmp, name), map[string]string{"format": "pt"}, hs)
		if err != nil {
			return fail(err)
		}
		for _, t := range shard {
			if err := ctx.Err(); err != nil {
				w.Abort()
				return fail(err)
			}
			if err := writeInitTensor(w, t, opts.Seed); err != nil {
				w.Abort()
				return fail(fmt.Errorf("%s: %w", name, err))
			}
			done += t.bytes
			if opts.Progress != nil {
				opts.Progress(done, res.Bytes)
			}
		}
		if err := w.Close(); err != nil {
			return fail(err)
		}
	}
	if len(shards) > 1 {
		if err := safetensors.WriteIndex(tmp, idx); err != nil {
			return fail(err)
		}
	}
	if err := copyTokenizer(tokFS, tmp); err != nil {
		return fail(err)
	}
	c := *cfg
	c.DType, c.Text.DType = "bfloat16", "bfloat16"
	c.Quantization = nil
	switch p {
	case quant.BF16Profile:
	case quant.NVFP4Profile: // described by hf_quant_config.json, as ModelOpt's export is
		if err := writeModelOptQuantConfig(tmp); err != nil {
			return fail(err)
		}
	default:
		c.Quantization = &config.Quantization{QuantMethod: config.QuantMethod, Profile: string(p), GroupSize: p.GroupSize()}
	}
	if err := c.Save(tmp); err != nil { // last: until here the directory is no model
		return fail(err)
	}
	if err := finishInit(tmp, dir); err != nil {
		return InitResult{}, err
	}
	return res, nil
}

// finishInit puts the written checkpoint tmp in dir's place (dir is missing or empty).
func finishInit(tmp, dir string) error {
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp's 0700 → a model directory's usual mode
		return fmt.Errorf("train init: %w", err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) { // empty (checked): os.Rename will not replace a directory
		return fmt.Errorf("train init: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("train init: %w", err)
	}
	return nil
}

// checkEmptyOrMissing refuses an output directory that holds something (or is a file).
func checkEmptyOrMissing(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s exists and is not a directory", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%s is not empty: remove it or choose another output directory", dir)
	}
	return nil
}

// PlanInit is what InitCheckpoint would write for cfg and opts — its files, tensors,
// parameters and bytes — without writing anything, for a check of the free space
// first.
func PlanInit(cfg *config.Model, opts InitOptions) (InitResult, error) {
	if err := cfg.Validate(); err != nil {
		return InitResult{}, fmt.Errorf("train init: %w", err)
	}
	p, err := initProfile(opts)
	if err != nil {
		return InitResult{}, fmt.Errorf("train init: %w", err)
	}
	if opts.GGUF != "" {
		_, res, err := planGGUF(cfg, opts.GGUF)
		if err != nil {
			return InitResult{}, fmt.Errorf("train init: %w", err)
		}
		return res, nil
	}
	_, res, err := planInit(cfg, p, opts.MaxShardBytes)
	if err != nil {
		return InitResult{}, fmt.Errorf("train init: %w", err)
	}
	return res, nil
}

// initProfile is opts.Profile, bf16 when unset (and none with GGUF).
func initProfile(opts InitOptions) (quant.Profile, error) {
	if opts.GGUF != "" && opts.Profile != "" {
		return "", fmt.Errorf("a GGUF checkpoint is in llama.cpp's %s mix, not profile %s", opts.GGUF, opts.Profile)
	}
	if opts.Profile == "" {
		return quant.BF16Profile, nil
	}
	return ParseInitProfile(string(opts.Profile))
}

// ParseInitProfile checks a profile name InitCheckpoint takes: quant.ParseProfile's
// (bf16, int8, int4), or nvfp4, ModelOpt's export layout, which `darkroom quantize`
// does not make.
func ParseInitProfile(s string) (quant.Profile, error) {
	if strings.EqualFold(s, string(quant.NVFP4Profile)) {
		return quant.NVFP4Profile, nil
	}
	return quant.ParseProfile(s)
}

// planInit decides every tensor's stored form and groups them into shards of at most
// maxShard bytes (a weight's .qweight and .qscale stay together), named as Hugging
// Face names them.
func planInit(cfg *config.Model, p quant.Profile, maxShard int64) ([][]initTensor, InitResult, error) {
	if maxShard <= 0 {
		maxShard = DefaultShardBytes
	}
	res := InitResult{Profile: string(p)}
	var shards [][]initTensor
	var cur []initTensor
	var curBytes int64
	for _, sp := range weights.Specs(cfg) {
		t := initTensor{spec: sp}
		n := sp.Elements()
		res.Params += n
		qs, ok := p.SpecFor(sp.Name, sp.Shape, sp.Quantizable)
		switch {
		case ok && p == quant.NVFP4Profile:
			t.modules, t.headers, t.bytes = modelOptHeaders(sp)
		case ok:
			t.q = &qs
			ws, ss := qs.Shapes(sp.Shape)
			wdt, err := safetensors.FromGoMLX(qs.DType())
			if err != nil {
				return nil, res, err
			}
			sdt, err := safetensors.FromGoMLX(qs.ScaleDType())
			if err != nil {
				return nil, res, err
			}
			t.headers = []safetensors.Header{{Name: sp.HF + quant.WeightSuffix, DType: wdt, Shape: ws},
				{Name: sp.HF + quant.ScaleSuffix, DType: sdt, Shape: ss}}
			t.bytes = qs.Bytes(sp.Shape)
		default:
			t.headers = []safetensors.Header{{Name: sp.HF, DType: safetensors.BF16, Shape: sp.Shape}}
			t.bytes = 2 * n
		}
		if len(cur) > 0 && curBytes+t.bytes > maxShard {
			shards = append(shards, cur)
			cur, curBytes = nil, 0
		}
		cur = append(cur, t)
		curBytes += t.bytes
		res.Tensors += len(t.headers)
		res.Bytes += t.bytes
	}
	shards = append(shards, cur)
	for k := range shards {
		name := safetensors.SingleFile
		if len(shards) > 1 {
			name = fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, len(shards))
		}
		res.Files = append(res.Files, name)
	}
	return shards, res, nil
}

// initOut is one generated chunk in its stored form (or, for writeInitModelOpt, its
// values).
type initOut struct {
	data, scales []byte
	vals         []float32
	err          error
}

// writeInitTensor streams t to w: the BF16 values, or the .qweight codes followed by
// the .qscale scales, which are kept until the codes are written (1/8 of the codes'
// bytes for int4 g32 with BF16 scales, 4/n of them for int8 rows of n).
func writeInitTensor(w *safetensors.Writer, t initTensor, seed uint64) error {
	if t.modules != nil {
		return writeInitModelOpt(w, t, seed)
	}
	out, err := w.Next(t.headers[0].Name)
	if err != nil {
		return err
	}
	var scales []byte
	err = eachInitChunk(t.spec, seed, func(vals []float32, r, n int) initOut { return encodeInitChunk(vals, r, n, t.q) },
		func(o initOut) error {
			scales = append(scales, o.scales...)
			_, err := out.Write(o.data)
			return err
		})
	if err != nil || t.q == nil {
		return err
	}
	return w.Write(t.headers[1].Name, scales)
}

// eachInitChunk generates sp's values a chunk of rows at a time (GOMAXPROCS chunks
// at once), encodes each with enc and hands them to emit in order.
func eachInitChunk(sp weights.Spec, seed uint64, enc func(vals []float32, r, n int) initOut, emit func(initOut) error) error {
	n := sp.Shape[len(sp.Shape)-1]
	rows := 1
	for _, d := range sp.Shape[:len(sp.Shape)-1] {
		rows *= d
	}
	chunkRows := max(1, initChunk/n)
	chunks := (rows + chunkRows - 1) / chunkRows
	workers := runtime.GOMAXPROCS(0)
	for first := 0; first < chunks; first += workers {
		batch := make([]initOut, min(workers, chunks-first))
		var wg sync.WaitGroup
		for b := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := first + b
				r := min(chunkRows, rows-c*chunkRows)
				vals, err := initChunkValues(sp, seed, c, r*n)
				if err != nil {
					batch[b] = initOut{err: err}
					return
				}
				batch[b] = enc(vals, r, n)
			}()
		}
		wg.Wait()
		for _, o := range batch {
			if o.err != nil {
				return fmt.Errorf("tensor %s: %w", sp.HF, o.err)
			}
			if err := emit(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// initChunkValues draws chunk c (count values) of sp from the chunk's own stream.
func initChunkValues(sp weights.Spec, seed uint64, c, count int) ([]float32, error) {
	vals := make([]float32, count)
	h := fnv.New64a()
	io.WriteString(h, sp.Name)
	binary.Write(h, binary.LittleEndian, uint64(c))
	if err := sp.Fill(vals, rand.New(rand.NewPCG(seed, h.Sum64()))); err != nil {
		return nil, err
	}
	return vals, nil
}

// encodeInitChunk encodes r rows of n values: as BF16, or with q as the quantized
// codes and their scales.
func encodeInitChunk(vals []float32, r, n int, q *quant.Spec) initOut {
	if q == nil {
		b := make([]byte, 2*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(quant.RoundBF16(v)))
		}
		return initOut{data: b}
	}
	qw, qs, err := quant.Quantize(tensors.FromFlatDataAndDimensions(vals, r, n), *q)
	if err != nil {
		return initOut{err: err}
	}
	var o initOut
	if _, _, o.data, o.err = safetensors.Encode(qw); o.err == nil {
		_, _, o.scales, o.err = safetensors.Encode(qs)
	}
	return o
}

// copyTokenizer copies tokenizer.json (required) and tokenizer_config.json (when
// there is one) from fsys into dir.
func copyTokenizer(fsys fs.FS, dir string) error {
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := fs.ReadFile(fsys, name)
		if errors.Is(err, fs.ErrNotExist) && name != "tokenizer.json" {
			continue
		}
		if err != nil {
			return fmt.Errorf("copy tokenizer: %w", err)
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("copy tokenizer: %w", err)
		}
	}
	return nil
}

// LoadInitConfig reads the configuration `darkroom train init --config` names: a
// model directory or its config.json (with the generation_config.json beside it,
// when there is one), or a JSON file of any other name holding a config.json's
// contents (generation settings are then the defaults).
func LoadInitConfig(path string) (*config.Model, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return config.Load(path)
	}
	if filepath.Base(path) == config.ConfigFile {
		return config.Load(filepath.Dir(path))
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// A directory holding only this file as config.json: config.LoadFS fills in the
	// generation defaults the one way it always does.
	m, err := config.LoadFS(fstest.MapFS{config.ConfigFile: {Data: raw}}, ".")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
