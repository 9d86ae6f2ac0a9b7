package convert

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	gctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// CompareOptions tune Compare.
type CompareOptions struct {
	Steps        int    // denoising steps compared per prompt (4)
	Seed         uint64 // initial canvases and generation seeds
	Backend      string // engine backend ("" = default)
	MaxNewTokens int    // tokens generated per prompt for the speed measurement (64; <0 skips it)
	SpeedPrompts int    // how many of the prompts the speed measurement uses (all when ≤ 0)
	// RefTokensS, when > 0, is the reference's speed measured before (by an earlier
	// Compare with the same prompts): it is reused instead of measured again.
	RefTokensS float64
}

// Comparison is a quantized model measured against its full-precision source.
type Comparison struct {
	Profile      string  `json:"profile"`
	SizeRatio    float64 `json:"size_ratio"` // weight files' bytes, quantized / reference
	RefBytes     int64   `json:"ref_bytes"`
	QuantBytes   int64   `json:"quant_bytes"`
	MeanKL       float64 `json:"mean_kl"`      // mean KL(ref ‖ quant) of the decoder's per-position distributions, nats
	ArgmaxAgree  float64 `json:"argmax_agree"` // share of positions whose argmax token is the same
	Positions    int     `json:"positions"`    // canvas positions compared (prompts × steps × canvas)
	RefTokensPS  float64 `json:"ref_tokens_s"` // generation speed, same prompts and seeds
	QuantTokensS float64 `json:"quant_tokens_s"`
}

// decoderModel is one loaded model for the step-by-step comparison.
type decoderModel struct {
	cfg *config.Model
	run *model.Runner
	be  *backend.Started
}

func loadDecoder(src engine.Source, spec string) (*decoderModel, error) {
	fsys := src.FS
	if fsys == nil {
		fsys = os.DirFS(src.Dir)
	}
	cfg, err := config.LoadFS(fsys, ".")
	if err != nil {
		return nil, err
	}
	var set *weights.Set
	if src.FS == nil {
		set, err = weights.Load(src.Dir, cfg)
	} else {
		set, err = weights.LoadFS(fsys, ".", cfg)
	}
	if err != nil {
		return nil, err
	}
	be, err := backend.New(spec)
	if err != nil {
		return nil, err
	}
	ctx := gctx.New()
	if err := model.LoadSet(ctx, set); err != nil {
		be.Finalize()
		return nil, err
	}
	run, err := model.NewRunner(be.Backend, &cfg.Text, ctx)
	if err != nil {
		be.Finalize()
		return nil, err
	}
	return &decoderModel{cfg: cfg, run: run, be: be}, nil
}

func (d *decoderModel) close() {
	d.run.Close()
	d.be.Finalize()
}

// Compare measures quant against ref on prompts (token ids, e.g. held-out
// encyclopedia prompts in the chat format): for each prompt both models encode the
// prompt, then run Steps denoising steps over the same canvases — a seeded random
// canvas first, then the reference's argmax canvas, each model with its own
// self-conditioning — and every position's next-canvas distribution is compared.
// It then generates MaxNewTokens per prompt with each model (same seeds) for tokens/s.
func Compare(ctx context.Context, ref, quant engine.Source, prompts [][]int, opt CompareOptions) (c *Comparison, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("compare: %v", r)
		}
	}()
	if opt.Steps <= 0 {
		opt.Steps = 4
	}
	if opt.MaxNewTokens == 0 {
		opt.MaxNewTokens = 64
	}
	if len(prompts) == 0 {
		return nil, fmt.Errorf("compare: no prompts")
	}
	c = &Comparison{}
	if c.RefBytes, err = weightBytes(ref); err != nil {
		return nil, err
	}
	if c.QuantBytes, err = weightBytes(quant); err != nil {
		return nil, err
	}
	c.SizeRatio = float64(c.QuantBytes) / float64(c.RefBytes)

	a, err := loadDecoder(ref, opt.Backend)
	if err != nil {
		return nil, fmt.Errorf("compare: reference: %w", err)
	}
	defer a.close()
	b, err := loadDecoder(quant, opt.Backend)
	if err != nil {
		return nil, fmt.Errorf("compare: quantized: %w", err)
	}
	defer b.close()
	if b.cfg.Quantization != nil {
		c.Profile = b.cfg.Quantization.StoredProfile()
	}
	if a.cfg.Text.VocabSize != b.cfg.Text.VocabSize || a.cfg.CanvasLength != b.cfg.CanvasLength {
		return nil, fmt.Errorf("compare: the models differ in vocabulary or canvas size")
	}
	vocab, clen := a.cfg.Text.VocabSize, a.cfg.CanvasLength
	gen := a.cfg.Generation
	rng := rand.New(rand.NewPCG(opt.Seed, 0x5eed))
	var klSum float64
	var agree, n int
	for _, p := range prompts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		a.run.Reset()
		b.run.Reset()
		if _, err := a.run.Encode(p); err != nil {
			return nil, fmt.Errorf("compare: reference encode: %w", err)
		}
		if _, err := b.run.Encode(p); err != nil {
			return nil, fmt.Errorf("compare: quantized encode: %w", err)
		}
		canvas := make([]int, clen)
		for i := range canvas {
			canvas[i] = rng.IntN(vocab)
		}
		var sa, sb *tensors.Tensor
		for step := 0; step < opt.Steps; step++ {
			temp := gen.TMax
			if opt.Steps > 1 {
				temp = gen.TMax + (gen.TMin-gen.TMax)*float64(step)/float64(opt.Steps-1)
			}
			la, na, err := a.run.Decode(canvas, sa, temp)
			if err != nil {
				return nil, fmt.Errorf("compare: reference decode: %w", err)
			}
			lb, nb, err := b.run.Decode(canvas, sb, temp)
			if err != nil {
				return nil, fmt.Errorf("compare: quantized decode: %w", err)
			}
			for _, t := range []*tensors.Tensor{sa, sb} {
				if t != nil {
					t.FinalizeAll()
				}
			}
			sa, sb = na, nb
			for i := 0; i < clen; i++ {
				kl, am, bm := klRow(la[i*vocab:(i+1)*vocab], lb[i*vocab:(i+1)*vocab])
				klSum += kl
				if am == bm {
					agree++
				}
				n++
				canvas[i] = am // the reference's argmax is the next canvas
			}
		}
		for _, t := range []*tensors.Tensor{sa, sb} {
			if t != nil {
				t.FinalizeAll()
			}
		}
	}
	c.MeanKL, c.ArgmaxAgree, c.Positions = klSum/float64(n), float64(agree)/float64(n), n
	if opt.MaxNewTokens > 0 {
		sp := prompts
		if opt.SpeedPrompts > 0 && opt.SpeedPrompts < len(sp) {
			sp = sp[:opt.SpeedPrompts]
		}
		c.RefTokensPS = opt.RefTokensS
		if c.RefTokensPS <= 0 {
			if c.RefTokensPS, err = speed(ctx, ref, sp, opt); err != nil {
				return nil, err
			}
		}
		if c.QuantTokensS, err = speed(ctx, quant, sp, opt); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// klRow is KL(softmax(a) ‖ softmax(b)) in float64 and both argmaxes.
func klRow(a, b []float32) (kl float64, am, bm int) {
	lseA, lseB := logSumExp(a), logSumExp(b)
	for i := range a {
		pa := float64(a[i]) - lseA
		pb := float64(b[i]) - lseB
		kl += math.Exp(pa) * (pa - pb)
		if a[i] > a[am] {
			am = i
		}
		if b[i] > b[bm] {
			bm = i
		}
	}
	return math.Max(kl, 0), am, bm
}

func logSumExp(x []float32) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}

// speed generates with the engine and returns output tokens per second.
func speed(ctx context.Context, src engine.Source, prompts [][]int, opt CompareOptions) (float64, error) {
	e, err := engine.Load(ctx, src, engine.Options{Backend: opt.Backend})
	if err != nil {
		return 0, err
	}
	defer e.Close()
	var tokens int
	var elapsed time.Duration
	for i, p := range prompts {
		res, err := e.Generate(ctx, engine.Request{PromptIDs: p, Seed: opt.Seed + uint64(i),
			Sampling: engine.Sampling{MaxNewTokens: opt.MaxNewTokens}})
		if err != nil {
			return 0, err
		}
		tokens += len(res.Tokens)
		elapsed += res.Elapsed
	}
	if elapsed <= 0 {
		return 0, nil
	}
	return float64(tokens) / elapsed.Seconds(), nil
}

// weightBytes sums the sizes of a model's .safetensors files.
func weightBytes(src engine.Source) (int64, error) {
	fsys := src.FS
	if fsys == nil {
		fsys = os.DirFS(src.Dir)
	}
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".safetensors") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return 0, err
		}
		n += info.Size()
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: no .safetensors files", src)
	}
	return n, nil
}
