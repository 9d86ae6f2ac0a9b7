// Package convert turns a float (BF16/F32) DiffusionGemma checkpoint into one of the
// engine's quantization profiles (engine/quant: int8 per-channel, or int4 g32 for the
// experts with int8 elsewhere), streaming tensor by tensor: one tensor is decoded,
// quantized and written at a time, so converting the 52 GB 26B model needs a few GB
// of RAM, not the model's size. Tensors a profile keeps in float are copied byte for
// byte. The output is a Hugging Face folder the engine loads like any other
// (config.json with quantization_config, model*.safetensors with NAME.qweight and
// NAME.qscale, the tokenizer files copied over).
package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// Source is the input model: a folder (Dir) or a file system rooted at the model
// (FS, e.g. the embedded Darkroom Mini).
type Source struct {
	Dir string
	FS  fs.FS
}

// Progress reports one tensor written.
type Progress struct {
	Tensor       string // canonical name
	Index, Count int    // tensors done, of Count
	InBytes      int64  // source bytes processed so far
	TotalIn      int64  // source bytes of all tensors
	OutBytes     int64  // bytes written so far
}

// Options tune Quantize.
type Options struct {
	Profile    quant.Profile
	ShardBytes int64 // split output files at about this size (4 GiB)
	Progress   func(Progress)
}

// Result describes a finished conversion.
type Result struct {
	Dir      string
	Files    []string // written files, relative to Dir
	InBytes  int64    // tensor bytes read
	OutBytes int64    // tensor bytes written
	Tensors  int
}

// item is one output tensor: where it comes from and how it is stored.
type item struct {
	spec   weights.Spec
	src    string // HF name in the source checkpoint
	info   safetensors.Info
	q      *quant.Spec
	out    []safetensors.Header // 1 (float) or 2 (qweight, qscale)
	bytes  int64                // output bytes
	inSize int64
}

// Quantize converts src into profile opt.Profile in out, which must not exist: it
// is written as out+".incomplete" and renamed when everything is in place.
func Quantize(ctx context.Context, src Source, out string, opt Options) (*Result, error) {
	if opt.Profile != quant.Int8Profile && opt.Profile != quant.Int4Profile {
		return nil, fmt.Errorf("quantize: profile %q: want int8 or int4", opt.Profile)
	}
	if opt.ShardBytes <= 0 {
		opt.ShardBytes = 4 << 30
	}
	if _, err := os.Stat(out); err == nil {
		return nil, fmt.Errorf("quantize: %s already exists (delete it first)", out)
	}
	var cfg *config.Model
	var ck *safetensors.Checkpoint
	var err error
	if src.FS != nil {
		if cfg, err = config.LoadFS(src.FS, "."); err == nil {
			ck, err = safetensors.OpenCheckpointFS(src.FS, ".")
		}
	} else {
		if cfg, err = config.Load(src.Dir); err == nil {
			ck, err = safetensors.OpenCheckpoint(src.Dir)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	defer ck.Close()
	if cfg.Quantization != nil {
		return nil, fmt.Errorf("quantize: the model is already quantized (%s); start from its BF16 version", cfg.Quantization.StoredProfile())
	}

	items, err := plan(ck, cfg, opt.Profile)
	if err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	tmp := out + ".incomplete"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, outputFolderErr(out, err)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, outputFolderErr(out, err)
	}
	res, err := write(ctx, ck, items, tmp, opt)
	if err == nil {
		err = finishDir(src, cfg, opt.Profile, tmp, res)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("quantize: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("quantize: %w", err)
	}
	res.Dir = out
	return res, nil
}

// outputFolderErr says why the output folder out could not be made, naming the
// folder in the way and what to do, where the system's words would name
// out+".incomplete" and a syscall ('unlinkat …: not a directory').
func outputFolderErr(out string, err error) error {
	parent := filepath.Dir(out)
	for { // the nearest part of the path that exists
		if _, serr := os.Stat(parent); serr == nil || filepath.Dir(parent) == parent {
			break
		}
		parent = filepath.Dir(parent)
	}
	if st, serr := os.Stat(parent); serr == nil && !st.IsDir() {
		return fmt.Errorf("quantize: cannot make the folder %s: %s is a file, not a folder", out, parent)
	}
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("quantize: cannot write in %s (%w): choose a folder you can write to", parent, fs.ErrPermission)
	}
	return fmt.Errorf("quantize: %w", err)
}

// plan lists the output tensors in weights.Specs order with their stored formats.
func plan(ck *safetensors.Checkpoint, cfg *config.Model, p quant.Profile) ([]item, error) {
	var items []item
	for _, sp := range weights.Specs(cfg) {
		it := item{spec: sp}
		for _, hf := range []string{sp.HF, sp.Alt} {
			if hf == "" {
				continue
			}
			if _, info, ok := ck.Lookup(hf); ok {
				it.src, it.info = hf, info
				break
			}
		}
		if it.src == "" {
			return nil, fmt.Errorf("%s: missing tensor %s", ck.Name, sp.HF)
		}
		if !slices.Equal(it.info.Shape, sp.Shape) {
			return nil, fmt.Errorf("%s: tensor %s has shape %v, want %v", ck.Name, it.src, it.info.Shape, sp.Shape)
		}
		switch it.info.DType {
		case safetensors.F32, safetensors.BF16, safetensors.F16:
		default:
			return nil, fmt.Errorf("%s: tensor %s has dtype %s, want F32, BF16 or F16", ck.Name, it.src, it.info.DType)
		}
		it.inSize = it.info.End - it.info.Begin
		if qs, ok := p.SpecFor(sp.Name, sp.Shape, sp.Quantizable); ok {
			q := qs
			it.q = &q
			wShape, sShape := qs.Shapes(sp.Shape)
			wdt, _ := safetensors.FromGoMLX(qs.DType())
			sdt, _ := safetensors.FromGoMLX(qs.ScaleDType()) // F32, or BF16 for the int4 profile's experts
			it.out = []safetensors.Header{
				{Name: sp.HF + quant.WeightSuffix, DType: wdt, Shape: wShape},
				{Name: sp.HF + quant.ScaleSuffix, DType: sdt, Shape: sShape},
			}
			it.bytes = qs.Bytes(sp.Shape)
		} else {
			it.out = []safetensors.Header{{Name: sp.HF, DType: it.info.DType, Shape: sp.Shape}}
			it.bytes = it.inSize
		}
		items = append(items, it)
	}
	return items, nil
}

// write streams the items into shards of about opt.ShardBytes.
func write(ctx context.Context, ck *safetensors.Checkpoint, items []item, dir string, opt Options) (*Result, error) {
	// Group items into shards.
	var shards [][]item
	var cur []item
	var size int64
	for _, it := range items {
		if len(cur) > 0 && size+it.bytes > opt.ShardBytes {
			shards = append(shards, cur)
			cur, size = nil, 0
		}
		cur = append(cur, it)
		size += it.bytes
	}
	if len(cur) > 0 {
		shards = append(shards, cur)
	}
	res := &Result{}
	var totalIn int64
	for _, it := range items {
		totalIn += it.inSize
	}
	idx := safetensors.Index{Metadata: map[string]any{}, WeightMap: map[string]string{}}
	done := 0
	meta := map[string]string{"format": "pt", "quantization": string(opt.Profile)}
	for k, sh := range shards {
		name := safetensors.SingleFile
		if len(shards) > 1 {
			name = fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, len(shards))
		}
		var headers []safetensors.Header
		for _, it := range sh {
			headers = append(headers, it.out...)
			for _, h := range it.out {
				idx.WeightMap[h.Name] = name
			}
		}
		w, err := safetensors.Create(filepath.Join(dir, name), meta, headers)
		if err != nil {
			return nil, err
		}
		for _, it := range sh {
			if err := ctx.Err(); err != nil {
				w.Abort()
				return nil, err
			}
			if err := writeItem(ck, w, it); err != nil {
				w.Abort()
				return nil, err
			}
			done++
			res.InBytes += it.inSize
			res.OutBytes += it.bytes
			if opt.Progress != nil {
				opt.Progress(Progress{Tensor: it.spec.Name, Index: done, Count: len(items), InBytes: res.InBytes,
					TotalIn: totalIn, OutBytes: res.OutBytes})
			}
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		res.Files = append(res.Files, name)
	}
	if len(shards) > 1 {
		idx.Metadata["total_size"] = res.OutBytes
		if err := safetensors.WriteIndex(dir, idx); err != nil {
			return nil, err
		}
		res.Files = append(res.Files, safetensors.IndexFile)
	}
	res.Tensors = len(items)
	return res, nil
}

func writeItem(ck *safetensors.Checkpoint, w *safetensors.Writer, it item) error {
	f, _, _ := ck.Lookup(it.src)
	if it.q == nil {
		raw, err := f.Raw(it.src)
		if err != nil {
			return err
		}
		return w.Write(it.out[0].Name, raw)
	}
	t, err := f.Tensor(it.src)
	if err != nil {
		return err
	}
	qw, qs, err := quant.Quantize(t, *it.q)
	if err != nil {
		return fmt.Errorf("tensor %s: %w", it.src, err)
	}
	if err := w.WriteTensor(it.out[0].Name, qw); err != nil {
		return err
	}
	return w.WriteTensor(it.out[1].Name, qs)
}

// finishDir writes config.json (with quantization_config) and
// generation_config.json, and copies the tokenizer and other small files.
func finishDir(src Source, cfg *config.Model, p quant.Profile, dir string, res *Result) error {
	c := *cfg
	c.Quantization = &config.Quantization{QuantMethod: config.QuantMethod, Profile: string(p), GroupSize: p.GroupSize()}
	if err := c.Save(dir); err != nil {
		return err
	}
	res.Files = append(res.Files, config.ConfigFile, config.GenerationConfigFile)
	var fsys fs.FS
	if src.FS != nil {
		fsys = src.FS
	} else {
		fsys = os.DirFS(src.Dir)
	}
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return err
	}
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || n == config.ConfigFile || n == config.GenerationConfigFile || n == safetensors.IndexFile ||
			strings.HasSuffix(n, ".safetensors") || strings.HasSuffix(n, ".part") || strings.HasSuffix(n, ".json.tmp") ||
			strings.HasSuffix(n, ".corrupt") || strings.HasPrefix(n, ".") || n == "darkroom-manifest.json" {
			continue
		}
		if err := copyFile(fsys, n, filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("copy %s: %w", n, err)
		}
		res.Files = append(res.Files, n)
	}
	return nil
}

func copyFile(fsys fs.FS, name, to string) error {
	in, err := fsys.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
