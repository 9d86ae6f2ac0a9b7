package cli

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/clock"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/weights"
	gctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// logitsInput is `gpu logits --ids`: the token ids both engines are fed.
type logitsInput struct {
	Prompt []int `json:"prompt"`
	Canvas []int `json:"canvas"`
}

// logitsReport is `gpu logits` output (stdout, JSON).
type logitsReport struct {
	Backend      string  `json:"backend"`
	Vocab        int     `json:"vocab"`
	PromptTokens int     `json:"prompt_tokens"`
	CanvasLength int     `json:"canvas_length"`
	LoadMS       float64 `json:"load_ms"`
	ScoreMS      float64 `json:"score_ms"`  // first call: includes compiling
	EncodeMS     float64 `json:"encode_ms"` // first call: includes compiling
	DecodeMS     float64 `json:"decode_ms"` // first call: includes compiling
	CacheBytes   int64   `json:"cache_bytes"`
	Encoder      string  `json:"encoder_logits"` // file: [prompt_tokens, vocab] float32, little-endian
	Decoder      string  `json:"decoder_logits"` // file: [canvas_length, vocab] float32, little-endian
}

// runGPULogits is `darkroom gpu logits`: the encoder's logits over a prompt and
// the first decoder step's over a canvas after it (no self-conditioning), written
// as raw float32 files, for packaging/gpu-check.sh to hold against transformers.
func runGPULogits(env *Env, args []string) error {
	fs := newFlagSet(env, "gpu logits", "--model DIR --ids FILE --out DIR")
	dir := fs.String("model", "", "model directory (Hugging Face layout)")
	idsPath := fs.String("ids", "", `JSON file {"prompt": [ids…], "canvas": [canvas_length ids]}`)
	out := fs.String("out", "", "folder for encoder.f32 and decoder.f32")
	spec := fs.String("backend", "", backend.FlagUsage)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || *idsPath == "" || *out == "" {
		return errors.New("gpu logits: --model, --ids and --out are required")
	}
	b, err := os.ReadFile(*idsPath)
	if err != nil {
		return err
	}
	var in logitsInput
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("gpu logits: %s: %w", *idsPath, err)
	}
	t0 := clock.Now()
	cfg, err := config.Load(*dir)
	if err != nil {
		return err
	}
	if len(in.Prompt) == 0 || len(in.Canvas) != cfg.CanvasLength {
		return fmt.Errorf("gpu logits: want a prompt and a canvas of %d ids, got %d and %d", cfg.CanvasLength, len(in.Prompt), len(in.Canvas))
	}
	set, err := weights.Load(*dir, cfg)
	if err != nil {
		return err
	}
	be, err := backend.New(*spec)
	if err != nil {
		return err
	}
	defer be.Finalize()
	if be.Fallback != "" {
		fmt.Fprintln(env.Stderr, be.Fallback)
	}
	ctx := gctx.New()
	if err := model.LoadSet(ctx, set); err != nil {
		return err
	}
	run, err := model.NewRunner(be.Backend, &cfg.Text, ctx)
	if err != nil {
		return err
	}
	defer run.Close()
	rep := logitsReport{Backend: be.Spec, Vocab: cfg.Text.VocabSize, PromptTokens: len(in.Prompt), CanvasLength: cfg.CanvasLength,
		LoadMS: msSince(t0), Encoder: filepath.Join(*out, "encoder.f32"), Decoder: filepath.Join(*out, "decoder.f32")}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	t := clock.Now()
	enc, err := run.Score(in.Prompt, 0)
	if err != nil {
		return err
	}
	enc = slices.Clone(enc) // Score's buffer is the runner's, valid until its next Encode
	rep.ScoreMS = msSince(t)
	t = clock.Now()
	if _, err := run.Encode(in.Prompt); err != nil {
		return err
	}
	rep.EncodeMS = msSince(t)
	t = clock.Now()
	dec, soft, err := run.Decode(in.Canvas, nil, 1)
	if err != nil {
		return err
	}
	if soft != nil {
		soft.FinalizeAll()
	}
	rep.DecodeMS, rep.CacheBytes = msSince(t), run.CacheBytes()
	for path, v := range map[string][]float32{rep.Encoder: enc, rep.Decoder: dec} {
		if err := writeFloat32s(path, v); err != nil {
			return err
		}
	}
	return printJSON(env, rep)
}

func writeFloat32s(path string, v []float32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var buf [4]byte
	for _, x := range v {
		binary.LittleEndian.PutUint32(buf[:], math.Float32bits(x))
		w.Write(buf[:])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
