package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego"

	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/atomicfile"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
	"github.com/darkroomlabs/darkroom/engine/train"
	"github.com/darkroomlabs/darkroom/engine/train/corpus"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/store"
)

func init() {
	register(&Command{
		Name:    "train",
		Summary: "build the Darkroom Mini corpus, train, export and evaluate; random checkpoints of any config (train corpus|run|export|eval|init|grow…)",
		Run:     runTrain,
	})
}

// trainBackend is the default backend of training runs: the pure-Go backend with
// ops executed one after another (its parallel op scheduler can deadlock when
// every worker waits inside a parallel matmul; the matmuls still use all cores).
const trainBackend = "go:ops_sequential"

func runTrain(env *Env, args []string) error {
	usage := func() {
		fmt.Fprintln(env.Stdout, `Usage: darkroom train SUBCOMMAND [flags]

Subcommands:
  corpus   build the training corpus and tokenizer from Debian's dict-foldoc and dict-jargon,
           plus WordNet, V.E.R.A. and the Python documentation
  run      train (or --resume) a model on a corpus, with checkpoints in the run directory
  export   write a run's latest checkpoint as a Hugging Face model directory, plus the
           recipe and loss curve
  eval     generate held-out pages in diffusion and AR mode and score them
  distill  a corpus whose pages are the model's own printer's (AR) pages, for training its
           polaroid (sequence-level distillation)
  leads    write every entry a corpus trains on into a model folder (leads.jsonl.gz), as its
           page, cut to fit a canvas: the encyclopedia pages and chat answers it holds
  elsewhere  add off-topic chats (greetings, tasks) answered "a larger model from the Library
           will do better" to a corpus, and held-out ones for train eval --elsewhere
  init     write a randomly initialized checkpoint of any config, at a quantization
           profile, tensor by tensor (real-size models without a download)
  grow     a deeper copy of a trained model that computes what it does (progressive
           stacking: the added layers start switched off), for train run --init

Run "darkroom train SUBCOMMAND --help" for its flags.`)
	}
	return subcommands{
		name:  "train",
		usage: usage,
		none:  "no subcommand (corpus, run, export, eval, distill, leads, elsewhere, init or grow)",
		list:  "corpus, run, export, eval, distill, leads, elsewhere, init or grow",
		verbs: map[string]func(*Env, []string) error{
			"corpus":    runTrainCorpus,
			"run":       runTrainRun,
			"export":    runTrainExport,
			"eval":      runTrainEval,
			"distill":   runTrainDistill,
			"leads":     runTrainLeads,
			"elsewhere": runTrainElsewhere,
			"init":      runTrainInit,
			"grow":      runTrainGrow,
		},
	}.runSub(env, args)
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func runTrainCorpus(env *Env, args []string) error {
	fs := newFlagSet(env, "train corpus", "--out DIR [flags]")
	out := fs.String("out", "", "output directory (required)")
	vocab := fs.Int("vocab", 4096, "BPE vocabulary size of the trained tokenizer")
	dict := fs.String("dict", "", "directory with the dictionaries' .index and .dict.dz (foldoc, jargon, wn, vera; default: installed or fetched)")
	fetch := fs.Bool("fetch", false, "always fetch the Debian packages with apt-get download")
	tok := fs.String("tokenizer", "", "reuse the tokenizer in DIR (an earlier corpus's tokenizer/) instead of training one, so a run continues with the same ids")
	extra := fs.String("extra", strings.Join(corpus.ExtraNames(), ","), "freely licensed extra sources to add, comma-separated (\"\" for none): "+strings.Join(corpus.ExtraNames(), ", "))
	docs := fs.String("docs", "", "directory with the Python documentation's HTML (default: installed or fetched python3.11-doc)")
	extraMax := fs.String("extra-max", "", "caps on the extra sources' entries, NAME=N,... (default: each source's own; -1 keeps all)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("train corpus: --out DIR is required")
	}
	vocabSet := false
	fs.Visit(func(f *flag.Flag) { vocabSet = vocabSet || f.Name == "vocab" })
	if *tok != "" && vocabSet {
		return errors.New("train corpus: --vocab and --tokenizer exclude each other (a reused tokenizer keeps its own vocabulary)")
	}
	ctx, cancel := signalContext()
	defer cancel()
	var extras []string
	for _, name := range strings.Split(*extra, ",") {
		if name = strings.TrimSpace(name); name != "" {
			extras = append(extras, name)
		}
	}
	caps, err := parseCaps(*extraMax)
	if err != nil {
		return fmt.Errorf("train corpus: --extra-max: %w", err)
	}
	st, err := corpus.BuildStats(ctx, corpus.Options{OutDir: *out, VocabSize: *vocab, Tokenizer: *tok, DictDir: *dict, Fetch: *fetch,
		Extra: extras, DocDir: *docs, ExtraMax: caps, Log: env.Stderr})
	if err != nil {
		return fmt.Errorf("train corpus: %w", err)
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	fmt.Fprintln(env.Stdout, string(b))
	return nil
}

// parseKinds parses "page=1,chat=0.5".
func parseKinds(s string) (map[string]float64, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("kind weight %q: want KIND=WEIGHT", part)
		}
		w, err := strconv.ParseFloat(v, 64)
		if err != nil || w < 0 {
			return nil, fmt.Errorf("kind weight %q: bad weight", part)
		}
		out[strings.TrimSpace(k)] = w
	}
	return out, nil
}

// parseCaps parses "wordnet=2000,vera=-1".
func parseCaps(s string) (map[string]int, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]int{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if !ok || err != nil {
			return nil, fmt.Errorf("%q: want NAME=N", part)
		}
		out[strings.TrimSpace(k)] = n
	}
	return out, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// runRecipe is what a run directory records beside options.json, so that
// --resume and export need nothing but the run directory.
type runRecipe struct {
	Corpus  string             `json:"corpus"`
	Kinds   map[string]float64 `json:"kinds,omitempty"`
	Command []string           `json:"command"`
	Size    train.MiniSize     `json:"size"`
}

func runTrainRun(env *Env, args []string) error {
	fs := newFlagSet(env, "train run", "--corpus DIR --run DIR [flags]")
	def := train.DefaultOptions()
	corpusDir := fs.String("corpus", "", "corpus directory that darkroom train corpus wrote (required unless --resume)")
	runDir := fs.String("run", "", "run directory: options, checkpoints, metrics (required)")
	resume := fs.Bool("resume", false, "continue the run in --run from its latest checkpoint (its recorded options and corpus are used)")
	steps := fs.Int("steps", def.Steps, "training steps")
	batch := fs.Int("batch", def.Batch, "examples per step")
	lr := fs.Float64("lr", def.LR, "peak learning rate")
	minLR := fs.Float64("min-lr", def.MinLR, "final learning rate of the cosine decay")
	warmup := fs.Int("warmup", def.Warmup, "linear warm-up steps")
	buckets := fs.String("buckets", "32,64", "prefix length buckets (comma-separated)")
	kinds := fs.String("kinds", "", `training mix: copies per example of each kind, e.g. "page=1,chat=0.5,desktop=0.2"`)
	seed := fs.Uint64("seed", def.Seed, "data order and noise seed")
	titleWeight := fs.Float64("title-weight", 1, "loss weight of the answer tokens that repeat the prompt's title (the page's <h1>); 1 = plain objective")
	evalEvery := fs.Int("eval-every", def.EvalEvery, "steps between held-out evaluations")
	ckptEvery := fs.Int("checkpoint-every", def.CheckpointEvery, "steps between checkpoints")
	ckptMins := fs.Float64("checkpoint-minutes", def.CheckpointMins, "minutes between checkpoints")
	backendCfg := fs.String("backend", trainBackend, "GoMLX backend")
	initDir := fs.String("init", "", "start from the weights of this model directory (e.g. assets/mini) instead of random ones; its config sets the size")
	s := train.DefaultMiniSize
	fs.IntVar(&s.Hidden, "hidden", s.Hidden, "hidden size")
	fs.IntVar(&s.Layers, "layers", s.Layers, "layers (the last is full attention, the others sliding)")
	fs.IntVar(&s.Heads, "heads", s.Heads, "attention heads")
	fs.IntVar(&s.KVHeads, "kv-heads", s.KVHeads, "key/value heads of every layer (sliding and full); must divide --heads")
	fs.IntVar(&s.HeadDim, "head-dim", s.HeadDim, "sliding layers' head size (the full layer's is twice it)")
	fs.IntVar(&s.Experts, "experts", s.Experts, "experts per layer")
	fs.IntVar(&s.TopK, "top-k", s.TopK, "experts per token")
	fs.IntVar(&s.Intermediate, "intermediate", s.Intermediate, "dense MLP (and self-conditioning) size")
	fs.IntVar(&s.MoEIntermediate, "moe-intermediate", s.MoEIntermediate, "expert MLP size")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s.GlobalKVHeads, s.GlobalHeadDim = s.KVHeads, 2*s.HeadDim
	if s.KVHeads < 1 || s.Heads%s.KVHeads != 0 {
		return fmt.Errorf("train run: --kv-heads %d must divide --heads %d", s.KVHeads, s.Heads)
	}
	if *runDir == "" {
		return errors.New("train run: --run DIR is required")
	}
	opts := def
	var rec runRecipe
	var cfg *config.Model
	if *resume {
		if err := readJSONFile(filepath.Join(*runDir, "options.json"), &opts); err != nil {
			return fmt.Errorf("train run: --resume: %w", err)
		}
		if err := readJSONFile(filepath.Join(*runDir, "recipe.json"), &rec); err != nil {
			return fmt.Errorf("train run: --resume: %w", err)
		}
		var err error
		if cfg, err = config.Load(filepath.Join(*runDir, "model")); err != nil {
			return fmt.Errorf("train run: --resume: %w", err)
		}
	} else {
		if *corpusDir == "" {
			return errors.New("train run: --corpus DIR is required")
		}
		b, err := parseInts(*buckets)
		if err != nil {
			return fmt.Errorf("train run: --buckets: %w", err)
		}
		k, err := parseKinds(*kinds)
		if err != nil {
			return fmt.Errorf("train run: --kinds: %w", err)
		}
		opts.Steps, opts.Batch, opts.LR, opts.MinLR, opts.Warmup = *steps, *batch, *lr, *minLR, *warmup
		opts.PrefixBuckets, opts.Seed, opts.EvalEvery = b, *seed, *evalEvery
		opts.CheckpointEvery, opts.CheckpointMins = *ckptEvery, *ckptMins
		opts.InitFrom = *initDir
		opts.TitleWeight = *titleWeight
		if *initDir != "" {
			c, err := config.Load(*initDir)
			if err != nil {
				return fmt.Errorf("train run: --init: %w", err)
			}
			cfg = c
		}
		abs, _ := filepath.Abs(*corpusDir)
		rec = runRecipe{Corpus: abs, Kinds: k, Command: append([]string{"darkroom", "train", "run"}, args...), Size: s}
	}
	tok, err := tokenizer.Load(filepath.Join(rec.Corpus, "tokenizer"))
	if err != nil {
		return fmt.Errorf("train run: %w", err)
	}
	if cfg == nil {
		if cfg, err = miniConfigFor(s, tok); err != nil {
			return fmt.Errorf("train run: %w", err)
		}
	}
	data, err := train.LoadCorpus(rec.Corpus, tok)
	if err != nil {
		return fmt.Errorf("train run: %w", err)
	}
	data.Train = train.SelectKinds(data.Train, rec.Kinds, opts.Seed)
	data.Heldout = train.SelectKinds(data.Heldout, map[string]float64{"page": 1, "chat": 0, "desktop": 0}, 1)
	ls := train.Lengths(data.Train, cfg.CanvasLength)
	fmt.Fprintf(env.Stderr, "corpus: %d training examples (after the mix), %d held-out pages; prompt tokens p99 %d max %d; answer tokens p50 %d p90 %d p99 %d max %d; %d answers span more than one canvas\n",
		len(data.Train), len(data.Heldout), ls.PromptP99, ls.PromptMax, ls.AnswerP50, ls.AnswerP90, ls.AnswerP99, ls.AnswerMax, ls.MultiCanvas)
	be, err := backends.NewWithConfig(*backendCfg)
	if err != nil {
		return fmt.Errorf("train run: backend %q: %w", *backendCfg, err)
	}
	if err := os.MkdirAll(*runDir, 0o755); err != nil {
		return fmt.Errorf("train run: %w", err)
	}
	if !*resume {
		if err := writeJSONFile(filepath.Join(*runDir, "recipe.json"), rec); err != nil {
			return fmt.Errorf("train run: %w", err)
		}
	}
	tr, err := train.NewTrainer(be, cfg, data, opts, *runDir, *resume, env.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "model: hidden %d, %d layers, %d experts top-%d, vocab %d, canvas %d; %d steps of %d from step %d\n",
		cfg.Text.HiddenSize, cfg.Text.NumHiddenLayers, cfg.Text.NumExperts, cfg.Text.TopKExperts, cfg.Text.VocabSize,
		cfg.CanvasLength, opts.Steps, opts.Batch, tr.State().Step)
	ctx, cancel := signalContext()
	defer cancel()
	if err := tr.Run(ctx); err != nil {
		if errors.Is(err, context.Canceled) {
			return errors.New("train run: interrupted (checkpoint saved; continue with --resume)")
		}
		return err
	}
	fmt.Fprintf(env.Stderr, "done: %d steps in %.0fs\n", tr.State().Step, tr.State().Elapsed)
	return nil
}

// miniConfigFor is Darkroom Mini's config for the corpus tokenizer: its
// vocabulary and its own end-of-generation ids (<eos> and <turn|>).
func miniConfigFor(s train.MiniSize, tok *tokenizer.Tokenizer) (*config.Model, error) {
	sp := tok.Specials()
	eos := []int{sp.EOS}
	if sp.TurnEnd >= 0 {
		eos = append(eos, sp.TurnEnd)
	}
	return train.MiniConfig(s, tok.VocabSize(), eos, sp.Pad, sp.EOS, sp.BOS)
}

func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o644)
}

func runTrainExport(env *Env, args []string) error {
	fs := newFlagSet(env, "train export", "--run DIR [--out DIR] [--recipe DIR] [--dtype f32|bf16]")
	runDir := fs.String("run", "", "run directory that darkroom train run wrote into (required)")
	out := fs.String("out", "assets/mini", "model output directory (Hugging Face layout)")
	recipeDir := fs.String("recipe", "assets/training", "where the recipe, config and loss curve go (empty: skip)")
	dtype := fs.String("dtype", "f32", "weight dtype: f32 or bf16")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *runDir == "" {
		return errors.New("train export: --run DIR is required")
	}
	var rec runRecipe
	if err := readJSONFile(filepath.Join(*runDir, "recipe.json"), &rec); err != nil {
		return fmt.Errorf("train export: %w", err)
	}
	cfg, err := config.Load(filepath.Join(*runDir, "model"))
	if err != nil {
		return fmt.Errorf("train export: %w", err)
	}
	st, err := train.ExportRun(*runDir, cfg, *out, train.ExportOptions{DType: *dtype, TokenizerDir: filepath.Join(rec.Corpus, "tokenizer")})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "exported step %d of %s to %s\n", st.Step, *runDir, *out)
	if *recipeDir == "" {
		return nil
	}
	if err := os.MkdirAll(*recipeDir, 0o755); err != nil {
		return fmt.Errorf("train export: %w", err)
	}
	ms, err := train.ReadMetrics(filepath.Join(*runDir, "metrics.jsonl"))
	if err != nil {
		return fmt.Errorf("train export: %w", err)
	}
	png, err := train.LossCurvesPNG(ms, fmt.Sprintf("Darkroom Mini training (%d steps)", st.Step))
	if err != nil {
		return fmt.Errorf("train export: %w", err)
	}
	if err := os.WriteFile(filepath.Join(*recipeDir, "loss.png"), png, 0o644); err != nil {
		return fmt.Errorf("train export: %w", err)
	}
	var opts train.Options
	if err := readJSONFile(filepath.Join(*runDir, "options.json"), &opts); err != nil {
		return fmt.Errorf("train export: %w", err)
	}
	raw, _ := cfg.MarshalConfig()
	recipe := map[string]any{
		"commands": []string{
			"darkroom train corpus --out train-runs/corpus --vocab " + strconv.Itoa(cfg.Text.VocabSize),
			strings.Join(quoteArgs(rec.Command), " "),
			"darkroom train export --run " + *runDir + " --out " + *out + " --recipe " + *recipeDir,
			"darkroom train eval --model " + *out + " --corpus train-runs/corpus --json",
		},
		"options":        opts,
		"training_mix":   rec.Kinds,
		"model_config":   json.RawMessage(raw),
		"steps_done":     st.Step,
		"train_seconds":  st.Elapsed,
		"positions_seen": st.Tokens,
	}
	if err := writeJSONFile(filepath.Join(*recipeDir, "recipe.json"), recipe); err != nil {
		return fmt.Errorf("train export: %w", err)
	}
	if err := copyPlain(filepath.Join(*runDir, "metrics.jsonl"), filepath.Join(*recipeDir, "metrics.jsonl")); err != nil {
		return fmt.Errorf("train export: %w", err)
	}
	fmt.Fprintf(env.Stderr, "wrote %s/recipe.json, loss.png, metrics.jsonl\n", *recipeDir)
	return nil
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \t\"'$") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return out
}

func copyPlain(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

func runTrainInit(env *Env, args []string) error {
	fs := newFlagSet(env, "train init", "--config CONFIG.json --profile bf16|int8|int4|nvfp4|q3_k_m|q4_k_m|q5_k_m|q6_k|q8_0 --out DIR [--seed N]")
	cfgPath := fs.String("config", "", "config.json (or a model directory, or a Library model's name: diffusiongemma-26b) of the model to create (required)")
	layers := fs.Int("layers", 0, "keep only the config's first N layers (the 26B's first 6: 5 sliding and 1 full), for a model at real width that fits here")
	profile := fs.String("profile", "bf16", "weight format: bf16, int8 or int4 (as darkroom quantize writes them), nvfp4 (NVIDIA ModelOpt's export, as the NVFP4 download comes), or q3_k_m, q4_k_m, q5_k_m, q6_k or q8_0 (one GGUF file in that llama.cpp mix, as a GGUF download comes)")
	out := fs.String("out", "", "output directory, which must not exist or be empty (required)")
	seed := fs.Uint64("seed", 1, "initialization seed: the same seed writes the same bytes")
	tokDir := fs.String("tokenizer", "", "directory with tokenizer.json to copy (default: the built-in Darkroom Mini's, 4096 ids)")
	shardGB := fs.Float64("shard-gb", float64(train.DefaultShardBytes)/1e9, "split the weights into files of at most this many GB")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *cfgPath == "" || *out == "" || fs.NArg() != 0 {
		return errors.New("train init: give --config CONFIG.json and --out DIR")
	}
	opts := train.InitOptions{Seed: *seed, MaxShardBytes: int64(*shardGB * 1e9)}
	if mix, ok := gguf.ParseMix(*profile); ok {
		opts.GGUF = mix
	} else {
		p, err := train.ParseInitProfile(*profile)
		if err != nil {
			return fmt.Errorf("train init: --profile: %w (or nvfp4 for ModelOpt's NVFP4 export, q3_k_m, q4_k_m, q5_k_m, q6_k or q8_0 for a GGUF file)", err)
		}
		opts.Profile = p
	}
	cfg, err := initConfig(*cfgPath, *layers)
	if err != nil {
		return fmt.Errorf("train init: %w", err)
	}
	if *tokDir != "" {
		opts.Tokenizer = os.DirFS(*tokDir)
	}
	var lastPrint time.Time
	opts.Progress = func(done, total int64) {
		if time.Since(lastPrint) > 5*time.Second || done == total {
			lastPrint = time.Now()
			fmt.Fprintf(env.Stderr, "train init: %s of %s written\n", store.FormatBytes(done), store.FormatBytes(total))
		}
	}
	plan, err := train.PlanInit(cfg, opts)
	if err != nil {
		return err
	}
	if free, err := store.FreeSpace(*out); err == nil && free < plan.Bytes {
		return fmt.Errorf("train init: the checkpoint needs %s and %s is free where %s goes: free space or choose another --out",
			store.FormatBytes(plan.Bytes), store.FormatBytes(free), *out)
	}
	ctx, cancel := signalContext()
	defer cancel()
	start := time.Now()
	res, err := train.InitCheckpoint(ctx, cfg, *out, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintln(env.Stdout, string(b))
		return nil
	}
	fmt.Fprintf(env.Stdout, "%s: %.2fB parameters at %s, %d tensors, %s in %d file(s), in %s\n", res.Dir, float64(res.Params)/1e9,
		res.Profile, res.Tensors, store.FormatBytes(res.Bytes), len(res.Files), time.Since(start).Round(time.Second))
	return nil
}

// initConfig is the config `train init --config NAME --layers N` names: a config.json
// or a model directory (train.LoadInitConfig), else, for a name that is no path, a
// Library model's published config (catalog.Find); with layers > 0 only its first layers, in its own order of sliding
// and full ones.
func initConfig(name string, layers int) (*config.Model, error) {
	cfg, err := train.LoadInitConfig(name)
	if errors.Is(err, os.ErrNotExist) && !strings.ContainsAny(name, `/\`) && !strings.HasSuffix(name, ".json") {
		e, ok := catalog.Find(name)
		if !ok || e.Config == nil {
			return nil, fmt.Errorf("--config %s: no such file or directory, and no Library model of that name with a published config (darkroom hw lists them)", name)
		}
		if cfg, err = e.Config(); err != nil {
			return nil, fmt.Errorf("--config %s: %w", name, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	if layers == 0 {
		return cfg, nil
	}
	t := &cfg.Text
	if layers < 0 || layers > t.NumHiddenLayers {
		return nil, fmt.Errorf("--layers %d: the config has %d layers; give 1 to %d", layers, t.NumHiddenLayers, t.NumHiddenLayers)
	}
	t.NumHiddenLayers = layers
	if len(t.LayerTypes) > layers {
		t.LayerTypes = t.LayerTypes[:layers]
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("--layers %d: %w", layers, err)
	}
	return cfg, nil
}

func runTrainGrow(env *Env, args []string) error {
	fs := newFlagSet(env, "train grow", "--model DIR --layers N --out DIR")
	src := fs.String("model", "assets/mini", "the trained model to grow (a model folder, bf16 or float32)")
	layers := fs.Int("layers", 0, "layers of the grown model, more than the model has (required)")
	out := fs.String("out", "", "output directory, which must not exist or be empty (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *layers == 0 || *out == "" || fs.NArg() != 0 {
		return errors.New("train grow: give --layers N and --out DIR")
	}
	cfg, err := train.Grow(*src, *out, *layers)
	if err != nil {
		return fmt.Errorf("train grow: %w", err)
	}
	full := 0
	for i := range cfg.Text.NumHiddenLayers {
		if !cfg.Text.IsSliding(i) {
			full++
		}
	}
	fmt.Fprintf(env.Stdout, "%s: %d layers (%d sliding, %d full) grown from %s, the added ones switched off; train it with darkroom train run --init %s\n",
		*out, cfg.Text.NumHiddenLayers, cfg.Text.NumHiddenLayers-full, full, *src, *out)
	return nil
}

func runTrainEval(env *Env, args []string) error {
	fs := newFlagSet(env, "train eval", "[--model DIR] --corpus DIR [--pages N] [--seen N] [--chats N] [--json]")
	modelDir := fs.String("model", "assets/mini", "model directory (Hugging Face layout)")
	corpusDir := fs.String("corpus", "train-runs/corpus", "corpus directory (heldout.jsonl, train.jsonl, words.txt)")
	pages := fs.Int("pages", 50, "held-out titles to generate in each mode")
	seenN := fs.Int("seen", 50, "titles seen in training to generate in each mode too, compared with their entries (ROUGE-L); 0: none")
	elsewhereN := fs.Int("elsewhere", 0, "held-out off-topic messages (greetings, tasks: train elsewhere) to answer in both modes too, counting those sent to the Library (0: none)")
	desktopsN := fs.Int("desktops", 0, "held-out Desktop clicks to draw in both modes too, scored against the training desktop's screens (0: none)")
	chatsN := fs.Int("chats", 0, "held-out chat questions to answer in diffusion and AR too, each with its system turn: which mode chat and the API should run in (0: none)")
	seed := fs.Uint64("seed", 1, "sampling seed of the first page (page i uses seed+i)")
	arTemp := fs.Float64("ar-temperature", 0, "AR mode sampling temperature (0 = greedy)")
	arPenalty := fs.Float64("ar-repetition-penalty", 0, "AR mode repetition penalty θ (Hugging Face's repetition_penalty; 1 = off; default: the model's)")
	backendName := fs.String("backend", "", "backend for the engine (default: the engine's)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	first := fs.Int("first", 0, "first held-out page (the report's pages are 0…pages−1; choose sampling settings on later ones)")
	modesFlag := fs.String("modes", "diffusion,unguided,ar", `generation modes to score: "diffusion", "unguided" (diffusion with the model's AR guidance off, when it has it on) and "ar"`)
	noLoss := fs.Bool("no-loss", false, "skip the held-out loss")
	samples := fs.Int("samples", 3, "generated pages each mode keeps in the report, for reading")
	freeHeading := fs.Bool("free-heading", false, "let the model write each page's <h1> too (default: the title is held as the heading, as the app does)")
	noLeads := fs.Bool("no-leads", false, "hold the heading alone, not the entry where the model's folder holds it (default: as the app does)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	entries, err := models.Leads(engine.Dir(*modelDir))
	if err != nil {
		return fmt.Errorf("train eval: %w", err)
	}
	leads := entries
	if *noLeads {
		leads = nil
	}
	// The pages as the app shows them: links that open what they say, then safe.
	render := func(page string) string { return htmlsafe.Sanitize(htmlsafe.Relink(page, entries.Has)) }
	var modes []engine.Mode
	unguided := false
	for _, m := range strings.Split(*modesFlag, ",") {
		switch strings.TrimSpace(m) {
		case "diffusion":
			modes = append(modes, engine.Diffusion)
		case "unguided":
			unguided = true
		case "ar":
			modes = append(modes, engine.AR)
		default:
			return fmt.Errorf("train eval: --modes: unknown mode %q (diffusion, unguided, ar)", m)
		}
	}
	if unguided && !slices.Contains(modes, engine.Diffusion) {
		return errors.New(`train eval: --modes: "unguided" is scored beside "diffusion"; add it`)
	}
	ctx, cancel := signalContext()
	defer cancel()
	rep, err := train.Evaluate(ctx, train.EvalOptions{ModelDir: *modelDir, CorpusDir: *corpusDir, Pages: *pages,
		Seed: *seed, ARTemperature: *arTemp, ARRepetitionPenalty: *arPenalty, Backend: *backendName, First: *first, Modes: modes, Unguided: unguided, NoLoss: *noLoss, FreeHeading: *freeHeading, Samples: *samples,
		Seen: *seenN, Chats: *chatsN, Elsewhere: *elsewhereN, Desktops: *desktopsN, Leads: leads, Entries: entries, Render: render, Log: env.Stderr})
	if err != nil {
		return err
	}
	if *asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(env.Stdout, string(b))
		return nil
	}
	l := rep.Loss
	fmt.Fprintf(env.Stdout, "held-out loss: AR %.3f, diffusion %.3f nats/token (unigram baseline %.3f) over %d tokens\n",
		l.AR, l.Diffusion, l.Unigram, l.Tokens)
	if l.TitleTokens > 0 {
		fmt.Fprintf(env.Stdout, "  on the %d tokens that repeat the title: AR %.3f, diffusion %.3f nats/token\n",
			l.TitleTokens, l.TitleAR, l.TitleDiffusion)
	}
	fmt.Fprintf(env.Stdout, "pages: the <h1> heading %s\n", rep.Settings["heading"])
	type row struct {
		name string
		r    train.ModeReport
	}
	rows := []row{{"diffusion", rep.Diffusion}}
	if u := rep.DiffusionUnguided; u != nil {
		rows = append(rows, row{"unguided", *u})
	}
	rows = append(rows, row{"ar", rep.AR}, row{"reference", rep.Reference})
	if s := rep.Seen; s != nil {
		rows = append(rows, row{"seen: diffusion", s.Diffusion})
		if u := s.DiffusionUnguided; u != nil {
			rows = append(rows, row{"seen: unguided", *u})
		}
		rows = append(rows, row{"seen: ar", s.AR}, row{"seen: reference", s.Reference})
	}
	for _, m := range rows {
		fmt.Fprintf(env.Stdout, "%-9s pages %d: format %.0f%% (h1 %.0f%%, long paragraph %.0f%%), known words %.1f%%, links/page %.2f, distinct-2 %.3f, median %.0f ms\n",
			m.name, m.r.Pages, 100*m.r.PageFormat, 100*m.r.TitleH1, 100*m.r.LongParagraph, 100*m.r.KnownWords,
			m.r.LinksPerPage, m.r.Distinct2, m.r.MedianMS)
		fmt.Fprintf(env.Stdout, "          markup fragments/page %.2f shown (%.2f as written), English bigrams %.1f%%",
			m.r.Fragments, m.r.FragmentsUnrepaired, 100*m.r.English)
		if m.r.EnglishShuffled > 0 {
			fmt.Fprintf(env.Stdout, " (words shuffled %.1f%%)", 100*m.r.EnglishShuffled)
		}
		fmt.Fprintf(env.Stdout, ", Kneser-Ney %.2f bits/word (order gain %.2f over the words shuffled)",
			m.r.BitsPerWord, m.r.OrderGain)
		if m.r.RougeL > 0 && strings.HasSuffix(m.name, "reference") {
			fmt.Fprintf(env.Stdout, ", ROUGE-L of another title's entry (chance) %.3f", m.r.RougeL)
		} else if m.r.RougeL > 0 {
			fmt.Fprintf(env.Stdout, ", ROUGE-L vs the entry %.3f", m.r.RougeL)
		}
		fmt.Fprintln(env.Stdout)
	}
	for _, cs := range []struct {
		c    *train.ChatReport
		what string
	}{{rep.Chats, "held-out questions"}, {rep.Elsewhere, "held-out off-topic messages"}} {
		c := cs.c
		if c == nil {
			continue
		}
		fmt.Fprintf(env.Stdout, "chats: %d %s, each with its system turn\n", c.Questions, cs.what)
		for _, m := range []row{{"diffusion", c.Diffusion}, {"ar", c.AR}, {"reference", c.Reference}} {
			fmt.Fprintf(env.Stdout, "  %-9s known words %.1f%%, English bigrams %.1f%%", m.name, 100*m.r.KnownWords, 100*m.r.English)
			if m.r.EnglishShuffled > 0 {
				fmt.Fprintf(env.Stdout, " (words shuffled %.1f%%)", 100*m.r.EnglishShuffled)
			}
			fmt.Fprintf(env.Stdout, ", Kneser-Ney %.2f bits/word (order gain %.2f), distinct-2 %.3f, heading names the topic %.0f%%, sent to the Library %.0f%%",
				m.r.BitsPerWord, m.r.OrderGain, m.r.Distinct2, 100*m.r.Named, 100*m.r.Declined)
			if m.r.MedianMS > 0 {
				fmt.Fprintf(env.Stdout, ", %.0f tokens in %.0f ms median", m.r.MeanTokens, m.r.MedianMS)
			}
			fmt.Fprintln(env.Stdout)
		}
	}
	fmt.Fprintf(env.Stdout, "canvas speed: median %.0f ms for a 256-token canvas (goal ≤ 2000 ms)\n", rep.CanvasMedianMS)
	return nil
}
