package weights

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/atomicfile"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
)

// QuantizeCheckpoint converts the checkpoint in src into dst under profile p, streaming
// one tensor at a time (the source is memory-mapped; at most one tensor and its
// quantized form are in memory): the same shard layout, each weight the profile selects
// stored as NAME.qweight + NAME.qscale, everything else (norms, vision tensors, …)
// copied byte for byte. config.json gets a quantization_config; the other files of src
// (generation_config.json, tokenizer files) are copied. config.json is written last,
// so an interrupted conversion never looks like a loadable model. progress, if set, is
// called after each tensor with the source bytes processed and the total.
func QuantizeCheckpoint(ctx context.Context, src, dst string, p quant.Profile, progress func(done, total int64)) error {
	cfg, err := config.Load(src)
	if err != nil {
		return fmt.Errorf("quantize %s: %w", src, err)
	}
	if cfg.Quantization != nil {
		return fmt.Errorf("quantize %s: already quantized (profile %s)", src, cfg.Quantization.StoredProfile())
	}
	if p == quant.BF16Profile {
		return fmt.Errorf("quantize %s: profile bf16 is the source format; nothing to do", src)
	}
	ck, err := safetensors.OpenCheckpoint(src)
	if err != nil {
		return fmt.Errorf("quantize %s: %w", src, err)
	}
	defer ck.Close()
	if _, err := planCheckpoint(ck, cfg); err != nil {
		return fmt.Errorf("quantize %s: %w", src, err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	specs := map[string]Spec{}
	for _, sp := range Specs(cfg) {
		specs[sp.Name] = sp
	}
	var total, done int64
	for _, f := range ck.Files {
		for _, n := range f.Names() {
			info, _ := f.Info(n)
			total += info.End - info.Begin
		}
	}
	idx := safetensors.Index{Metadata: map[string]any{}, WeightMap: map[string]string{}}
	var outTotal int64
	for _, f := range ck.Files {
		// Decide every tensor's fate first: the header must be written up front.
		type job struct {
			name string
			info safetensors.Info
			q    *quant.Spec
		}
		var jobs []job
		var headers []safetensors.Header
		for _, n := range f.Names() {
			info, _ := f.Info(n)
			j := job{name: n, info: info}
			canon, ignored, ok := Classify(cfg, n)
			if sp, known := specs[canon]; ok && !ignored && known && info.DType != safetensors.I8 && info.DType != safetensors.U8 {
				if qs, yes := p.SpecFor(sp.Name, sp.Shape, sp.Quantizable); yes {
					j.q = &qs
				}
			}
			jobs = append(jobs, j)
			if j.q == nil {
				headers = append(headers, safetensors.Header{Name: n, DType: info.DType, Shape: info.Shape})
				continue
			}
			ws, ss := j.q.Shapes(info.Shape)
			wdt, _ := safetensors.FromGoMLX(j.q.DType())
			sdt, _ := safetensors.FromGoMLX(j.q.ScaleDType()) // F32, or BF16 for the int4 profile's experts
			headers = append(headers,
				safetensors.Header{Name: n + quant.WeightSuffix, DType: wdt, Shape: ws},
				safetensors.Header{Name: n + quant.ScaleSuffix, DType: sdt, Shape: ss})
		}
		for _, h := range headers {
			idx.WeightMap[h.Name] = f.Name
			n := int64(h.DType.Size())
			for _, d := range h.Shape {
				n *= int64(d)
			}
			outTotal += n
		}
		w, err := safetensors.Create(filepath.Join(dst, f.Name), f.Metadata, headers)
		if err != nil {
			return fmt.Errorf("quantize: %w", err)
		}
		for _, j := range jobs {
			if err := ctx.Err(); err != nil {
				w.Abort()
				return fmt.Errorf("quantize: %w", err)
			}
			if j.q == nil {
				raw, err := f.Raw(j.name)
				if err == nil {
					err = w.Write(j.name, raw)
				}
				if err != nil {
					w.Abort()
					return fmt.Errorf("quantize: %w", err)
				}
			} else {
				t, err := f.Tensor(j.name)
				if err != nil {
					w.Abort()
					return fmt.Errorf("quantize: %w", err)
				}
				qw, qs, err := quant.Quantize(t, *j.q)
				t = nil
				if err == nil {
					err = w.WriteTensor(j.name+quant.WeightSuffix, qw)
				}
				if err == nil {
					err = w.WriteTensor(j.name+quant.ScaleSuffix, qs)
				}
				if err != nil {
					w.Abort()
					return fmt.Errorf("quantize: %s: tensor %s: %w", f.Name, j.name, err)
				}
			}
			done += j.info.End - j.info.Begin
			if progress != nil {
				progress(done, total)
			}
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("quantize: %w", err)
		}
	}
	if ck.Name == safetensors.IndexFile {
		idx.Metadata["total_size"] = outTotal
		if err := safetensors.WriteIndex(dst, idx); err != nil {
			return fmt.Errorf("quantize: %w", err)
		}
	}
	// Copy the other files (tokenizer, generation config, chat template, …).
	ents, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(n, ".") || strings.HasSuffix(n, ".safetensors") ||
			n == safetensors.IndexFile || n == config.ConfigFile || strings.HasSuffix(n, ".part") {
			continue
		}
		if err := copyFile(filepath.Join(src, n), filepath.Join(dst, n)); err != nil {
			return fmt.Errorf("quantize: %w", err)
		}
	}
	cfg.Quantization = &config.Quantization{QuantMethod: config.QuantMethod, Profile: string(p), GroupSize: p.GroupSize()}
	cb, err := cfg.MarshalConfig()
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dst, config.ConfigFile), cb, 0o644); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	return nil
}

// copyFile copies from to to (atomicfile: whole or not at all), rw-r--r-- as model
// files are.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := atomicfile.Create(to, 0o644)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copy %s: %w", filepath.Base(from), err)
	}
	return out.Commit()
}
