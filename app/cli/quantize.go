package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/darkroomlabs/darkroom/app/plural"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/convert"
	"github.com/darkroomlabs/darkroom/models/store"
)

func init() {
	register(&Command{
		Name:    "quantize",
		Summary: "convert a model into the int8 or int4 profile (streams tensor by tensor)",
		Run:     runQuantize,
	})
}

// quantizeResult is `darkroom quantize --json` output.
type quantizeResult struct {
	Model     string  `json:"model"`
	Dir       string  `json:"dir"`
	Profile   string  `json:"profile"`
	Bytes     int64   `json:"bytes"`
	SizeRatio float64 `json:"size_ratio"` // output / input tensor bytes
	Seconds   float64 `json:"seconds"`
}

func runQuantize(env *Env, args []string) error {
	fs := newFlagSet(env, "quantize", "--model NAME|DIR --profile int8|int4 [flags]")
	var lib libraryFlags
	lib.register(fs, false)
	model := fs.String("model", "", "model to convert: a catalog name (darkroom-mini, diffusiongemma-26b), a local model or a folder")
	profile := fs.String("profile", "", "int8 (per-channel) or int4 (experts int4 group 32, the rest int8)")
	out := fs.String("out", "", "output folder (default: into the models folder as NAME-PROFILE)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	compare := fs.Bool("compare", false, "measure the int8 and int4 profiles of --model against it (size, KL, argmax agreement, tokens/s) instead of converting")
	prompts := fs.String("prompts", "", "with --compare: file of held-out encyclopedia titles, one per line (the corpus's heldout_titles.txt)")
	nPrompts := fs.Int("n", 16, "with --compare: how many prompts to use")
	steps := fs.Int("steps", 4, "with --compare: denoising steps compared per prompt")
	maxNew := fs.Int("max-new-tokens", 64, "with --compare: tokens generated per prompt for tokens/s (0 skips the speed runs)")
	speedN := fs.Int("speed-prompts", 4, "with --compare: how many of the prompts the tokens/s runs use")
	backendSpec := fs.String("backend", "", "with --compare: "+backend.FlagUsage)
	seed := fs.Uint64("seed", 1, "with --compare: seed for canvases and generation")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *compare {
		return runQuantizeCompare(env, lib, compareArgs{model: *model, profile: *profile, prompts: *prompts, n: *nPrompts,
			steps: *steps, maxNew: *maxNew, speedN: *speedN, backend: *backendSpec, seed: *seed, json: *asJSON})
	}
	if *model == "" || *profile == "" || fs.NArg() != 0 {
		return errors.New("quantize: give --model and --profile (int8 or int4)")
	}
	p, err := quant.ParseProfile(*profile)
	if err != nil {
		return err
	}
	if p == quant.BF16Profile {
		return errors.New("quantize: --profile must be int8 or int4 (bf16 is the downloaded model itself)")
	}
	m, err := lib.open()
	if err != nil {
		return err
	}
	ctx, stop := interruptContext()
	defer stop()
	start := time.Now()
	var last convert.Progress
	var lastPrint time.Time
	name, dir, err := m.Quantize(ctx, *model, models.QuantizeOptions{Profile: p, Out: *out, Progress: func(pr convert.Progress) {
		last = pr
		if time.Since(lastPrint) > 2*time.Second || pr.Index == pr.Count {
			lastPrint = time.Now()
			fmt.Fprintf(env.Stderr, "quantize: %d/%d tensors, %s of %s read (%s)\n", pr.Index, pr.Count,
				store.FormatBytes(pr.InBytes), store.FormatBytes(pr.TotalIn), pr.Tensor)
		}
	}})
	if err != nil && ctx.Err() != nil {
		return errors.New("quantize: " + quantizeInterrupted)
	}
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w (--out FOLDER, or --models-dir FOLDER)", err)
	}
	if err != nil {
		return err
	}
	res := quantizeResult{Model: name, Dir: dir, Profile: string(p), Bytes: last.OutBytes, Seconds: time.Since(start).Seconds()}
	if last.InBytes > 0 {
		res.SizeRatio = float64(last.OutBytes) / float64(last.InBytes)
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(env.Stdout, "%s: %s of weights (%.2f× the original) in %s\n", name, store.FormatBytes(res.Bytes), res.SizeRatio, dir)
	return nil
}

// quantizeInterrupted is quantize's reason when Ctrl-C stops a conversion.
const quantizeInterrupted = "interrupted (Ctrl-C); the unfinished conversion was removed — run the same command again to convert from the start"

type compareArgs struct {
	model, profile, prompts, backend string
	n, steps, maxNew, speedN         int
	seed                             uint64
	json                             bool
}

// compareReport is `darkroom quantize --compare --json` output.
type compareReport struct {
	Model   string                `json:"model"`
	Prompts int                   `json:"prompts"`
	Source  string                `json:"prompt_source"`
	Rows    []*convert.Comparison `json:"profiles"`
}

// defaultTitles are used when no held-out list is given; they may appear in the
// training data, which the report says.
var defaultTitles = []string{"Unix", "compiler", "TCP/IP", "bit", "kernel", "Lisp", "byte", "hacker",
	"recursion", "pipeline", "cache", "Ethernet", "regular expression", "stack", "garbage collection", "RFC"}

// runQuantizeCompare quantizes --model into int8 and int4 in temporary folders and
// measures each against the full-precision weights.
func runQuantizeCompare(env *Env, lib libraryFlags, a compareArgs) error {
	if a.model == "" {
		a.model = "darkroom-mini"
	}
	profiles := []quant.Profile{quant.Int8Profile, quant.Int4Profile}
	if a.profile != "" {
		p, err := quant.ParseProfile(a.profile)
		if err != nil || p == quant.BF16Profile {
			return fmt.Errorf("quantize --compare: --profile must be int8 or int4")
		}
		profiles = []quant.Profile{p}
	}
	if a.n < 1 || a.steps < 1 {
		return errors.New("quantize --compare: --n and --steps must be positive")
	}
	maxNew := a.maxNew
	if maxNew == 0 {
		maxNew = -1
	}
	m, err := lib.open()
	if err != nil {
		return err
	}
	ref, err := m.Source(a.model)
	if err != nil {
		return err
	}
	titles, source := defaultTitles, "built-in titles (may be in the training data)"
	if a.prompts != "" {
		if titles, err = readLines(a.prompts); err != nil {
			return err
		}
		source = a.prompts
	}
	if len(titles) > a.n {
		titles = titles[:a.n]
	}
	fsys := ref.FS
	if fsys == nil {
		fsys = os.DirFS(ref.Dir)
	}
	tok, err := tokenizer.LoadFS(fsys, "tokenizer.json")
	if err != nil {
		return err
	}
	var ids [][]int
	for _, t := range titles {
		p, err := chat.Encode(tok, []chat.Message{{Role: "user", Content: assets.EncyclopediaPrompt(t)}}, chat.Options{})
		if err != nil {
			return err
		}
		ids = append(ids, p)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	tmp, err := os.MkdirTemp("", "darkroom-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	src := convert.Source{Dir: ref.Dir, FS: ref.FS}
	report := compareReport{Model: a.model, Prompts: len(ids), Source: source}
	for _, p := range profiles {
		out := filepath.Join(tmp, string(p))
		fmt.Fprintf(env.Stderr, "quantize --compare: converting to %s…\n", p)
		if _, err := convert.Quantize(ctx, src, out, convert.Options{Profile: p}); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "quantize --compare: measuring %s on %s…\n", p, plural.Count(len(ids), "prompt", "prompts"))
		var refSpeed float64
		if len(report.Rows) > 0 {
			refSpeed = report.Rows[0].RefTokensPS // measured once
		}
		c, err := convert.Compare(ctx, ref, engine.Dir(out), ids, convert.CompareOptions{Steps: a.steps, Seed: a.seed,
			Backend: a.backend, MaxNewTokens: maxNew, SpeedPrompts: a.speedN, RefTokensS: refSpeed})
		if err != nil {
			return err
		}
		report.Rows = append(report.Rows, c)
	}
	if a.json {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	fmt.Fprintf(env.Stdout, "%s vs its full-precision weights, %s from %s:\n", a.model, plural.Count(len(ids), "prompt", "prompts"), source)
	tw := tabwriter.NewWriter(env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tSIZE RATIO\tMEAN KL (nats)\tSAME ARGMAX\tTOKENS/S (full → quantized)")
	for _, c := range report.Rows {
		speed := "-"
		if c.RefTokensPS > 0 {
			speed = fmt.Sprintf("%.1f → %.1f", c.RefTokensPS, c.QuantTokensS)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.4f\t%.1f%%\t%s\n", c.Profile, c.SizeRatio, c.MeanKL, 100*c.ArgmaxAgree, speed)
	}
	return tw.Flush()
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no prompts", path)
	}
	return out, nil
}
