package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/app/plural"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/sampler"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/hw"
	"github.com/darkroomlabs/darkroom/models/speed"
	"github.com/darkroomlabs/darkroom/models/store"
)

func init() {
	register(&Command{
		Name:    "generate",
		Summary: "generate text from a prompt (the mode Chat picks for the model, or --mode diffusion|ar)",
		Run:     runGenerate,
	})
}

// generateFlags are the flags generate and bench share.
type generateFlags struct {
	model, modelsDir           string
	backend, mode              string
	maxNew, maxSteps, stab     int
	tMin, tMax, bound, conf, t float64
	guide                      float64
	guideRounds                int
	guideInWord                float64
	repPenalty, freqPenalty    float64
	presPenalty, topP          float64
	topK                       int
	seed                       uint64
	graph                      bool
	gpuLayers                  int
}

func (g *generateFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
	Float64Var(*float64, string, float64, string)
	Uint64Var(*uint64, string, uint64, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&g.model, "model", "", "model: a directory in the Hugging Face layout, or a library name (default: the built-in Darkroom Mini)")
	fs.StringVar(&g.modelsDir, "models-dir", "", "models folder for library names (default $DARKROOM_MODELS_DIR, else the data folder)")
	fs.StringVar(&g.backend, "backend", "", backend.FlagUsage)
	fs.BoolVar(&g.graph, "graph", false, "run the model in GoMLX graphs even on the pure-Go backend (slower; the path XLA takes)")
	fs.IntVar(&g.gpuLayers, "gpu-layers", 0, "run only the model's first N layers on the GPU (with its embedding, head and sampler) and the rest on the CPU, "+
		"as llama.cpp's --n-gpu-layers (default: all on the GPU where they fit, else the most that fit)")
	fs.IntVar(&g.maxNew, "max-new-tokens", 0, "most tokens to generate (default: the model's generation_config)")
	fs.IntVar(&g.maxSteps, "max-steps", 0, "most denoising steps per canvas (default: the model's)")
	fs.Float64Var(&g.tMin, "t-min", 0, "temperature at the last denoising step (default: the model's)")
	fs.Float64Var(&g.tMax, "t-max", 0, "temperature at the first denoising step (default: the model's)")
	fs.Float64Var(&g.bound, "entropy-bound", 0, "entropy bound for accepting tokens per step (default: the model's)")
	fs.Float64Var(&g.conf, "confidence-threshold", 0, "mean entropy below which a stable canvas stops (default: the model's)")
	fs.IntVar(&g.stab, "stability", 0, "steps the argmax canvas must stay unchanged to stop (default: the model's)")
	fs.Float64Var(&g.t, "temperature", 0, "AR mode sampling temperature; 0 = greedy")
	fs.Float64Var(&g.guide, "guidance", 0, "weight of the model's causal head when it revises the words of a developed canvas (default: the model's; negative: off)")
	fs.Float64Var(&g.guideInWord, "guidance-in-word", 0, "the causal head's weight inside words, where it revises spelling (default: the model's; negative: the --guidance weight)")
	fs.IntVar(&g.guideRounds, "guidance-rounds", 0, "most guidance rounds per canvas, one encoder pass each (default: the model's)")
	fs.Float64Var(&g.repPenalty, "repetition-penalty", 0, "AR mode: Hugging Face's repetition_penalty θ — the logits of tokens already in the text divided by θ (multiplied where negative); 1 = off (default: the model's)")
	fs.Float64Var(&g.freqPenalty, "frequency-penalty", 0, "AR mode: OpenAI's frequency_penalty α — the logit of each token the answer holds lowered by α for every time it occurs (default: the model's; negative: off)")
	fs.Float64Var(&g.presPenalty, "presence-penalty", 0, "AR mode: OpenAI's presence_penalty β — the logit of each token the answer holds lowered by β, once (default: off)")
	fs.Float64Var(&g.topP, "top-p", 0, "AR mode with a --temperature: draw from the fewest likeliest tokens whose probability reaches p (default: all)")
	fs.IntVar(&g.topK, "top-k", 0, "AR mode with a --temperature: draw from the k likeliest tokens (default: all)")
	fs.Uint64Var(&g.seed, "seed", 0, "random seed; the same seed reproduces a run")
}

func (g *generateFlags) sampling() engine.Sampling {
	return engine.Sampling{MaxNewTokens: g.maxNew, MaxSteps: g.maxSteps, TMin: g.tMin, TMax: g.tMax,
		EntropyBound: g.bound, ConfidenceThreshold: g.conf, StabilityThreshold: g.stab, Temperature: g.t,
		Guidance: g.guide, GuidanceRounds: g.guideRounds, GuidanceInWord: g.guideInWord,
		RepetitionPenalty: g.repPenalty, FrequencyPenalty: g.freqPenalty, PresencePenalty: g.presPenalty, TopP: g.topP, TopK: g.topK}
}

// check reports flag values that are out of range before anything loads.
func (g *generateFlags) check() error {
	switch {
	case g.maxNew < 0:
		return fmt.Errorf("--max-new-tokens must be positive, got %d", g.maxNew)
	case g.maxSteps < 0:
		return fmt.Errorf("--max-steps must be positive, got %d", g.maxSteps)
	case g.stab < 0:
		return fmt.Errorf("--stability must be ≥ 0, got %d", g.stab)
	case g.guideRounds < 0:
		return fmt.Errorf("--guidance-rounds must be ≥ 0, got %d", g.guideRounds)
	case math.IsNaN(g.guide) || math.IsInf(g.guide, 0):
		return fmt.Errorf("--guidance must be a number, got %v", g.guide)
	case math.IsNaN(g.guideInWord) || math.IsInf(g.guideInWord, 0):
		return fmt.Errorf("--guidance-in-word must be a number, got %v", g.guideInWord)
	case g.tMin < 0 || g.tMax < 0:
		return errors.New("--t-min and --t-max must be positive")
	case g.bound < 0 || g.conf < 0:
		return errors.New("--entropy-bound and --confidence-threshold must be ≥ 0")
	case g.t < 0:
		return fmt.Errorf("--temperature must be ≥ 0, got %g", g.t)
	case g.repPenalty < 0 || math.IsNaN(g.repPenalty) || math.IsInf(g.repPenalty, 0):
		return fmt.Errorf("--repetition-penalty must be a number > 0 (1 is off, 1.1–1.3 is usual), got %v", g.repPenalty)
	case math.IsNaN(g.freqPenalty) || math.IsInf(g.freqPenalty, 0):
		return fmt.Errorf("--frequency-penalty must be a number (negative: off), got %v", g.freqPenalty)
	case !(g.presPenalty >= 0) || math.IsInf(g.presPenalty, 0):
		return fmt.Errorf("--presence-penalty must be a number ≥ 0 (0: off), got %v", g.presPenalty)
	case !(g.topP >= 0 && g.topP <= 1):
		return fmt.Errorf("--top-p must be between 0 and 1, got %v", g.topP)
	case g.topK < 0:
		return fmt.Errorf("--top-k must be ≥ 0, got %d", g.topK)
	case g.gpuLayers < 0:
		return fmt.Errorf("--gpu-layers must be ≥ 0, got %d", g.gpuLayers)
	}
	return nil
}

// builtin reports whether --model names the built-in Darkroom Mini.
func (g *generateFlags) builtin() bool { return builtinModel(g.model) }

// builtinModel reports whether a --model value names the built-in Darkroom Mini
// ("" or its catalog id).
func builtinModel(model string) bool {
	return model == "" || strings.EqualFold(model, catalog.MiniID)
}

// load resolves --model and --backend and loads the engine (see loadEngine).
func (g *generateFlags) load(ctx context.Context, env *Env) (*engine.Engine, error) {
	src, err := modelSource(g.model, g.modelsDir)
	if err != nil {
		return nil, err
	}
	return loadEngine(ctx, env, src, g.options())
}

// options are the engine options the flags give.
func (g *generateFlags) options() engine.Options {
	return engine.Options{Backend: g.backend, InGraph: g.graph, DeviceLayers: g.gpuLayers}
}

// loadEngine loads src, saying so on stderr when that takes a moment (a big
// model read from disk), and telling the user (one line) when XLA could not
// start and the CPU runs instead, or auto's GPU is too small for the model and
// the CPU runs it, all of it or the layers a split leaves it (models.BackendFor).
func loadEngine(ctx context.Context, env *Env, src engine.Source, opts engine.Options) (*engine.Engine, error) {
	var e *engine.Engine
	var err error
	// Too big for the GPU: split between it and the CPU, or the CPU (models.BackendFor),
	// unless --gpu-layers chose the split.
	var choice models.BackendChoice
	if opts.DeviceLayers == 0 {
		choice = models.BackendFor(opts.Backend, src, func() hw.Info {
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			return hw.Detect(dctx, "")
		})
		opts.Backend, opts.DeviceLayers = choice.Backend, choice.DeviceLayers
	}
	notes := io.Writer(env.Stderr)
	if opts.WeightsProgress == nil && opts.Progress == nil {
		r := newWeightNotes(env.Stderr) // its lines and whileNoting's, from two goroutines, one at a time
		defer r.end()
		notes, opts.Progress, opts.WeightsProgress = r, r.stage, r.report
	}
	whileNoting(notes, "Loading "+src.String()+"…", func() { e, err = engine.Load(ctx, src, opts) })
	if err != nil {
		return nil, err
	}
	if f := cmp.Or(choice.Why, e.BackendFallback()); f != "" {
		fmt.Fprintln(env.Stderr, "darkroom:", strings.TrimSuffix(f, ".")+".")
	}
	if f := e.FromDisk(); f != "" {
		fmt.Fprintln(env.Stderr, "darkroom:", f+".")
	}
	return e, nil
}

// weightNotes says how far a load has got with the model's weights
// (engine.Options.WeightsProgress: a GGUF converted for the GPU, a mapped checkpoint
// read into memory — from a hard disk the 26B's take minutes) on w, under the load's
// own note (whileNoting writes it through Write): a line redrawn in place on a
// terminal, a line every few seconds otherwise (logs), nothing for a load done within
// noteAfter (the built-in model, a model in the page cache).
type weightNotes struct {
	mu      sync.Mutex // the writes: report's, and Write's from whileNoting's goroutine
	line    statusLine
	start   time.Time
	doing   string   // what the stage does with the weights (weightStages), "" for none
	noted   bool     // the load's note is written: the counts follow it
	pending []string // the last count of each stage so far, held until the note is written
	heldFor string   // the stage (doing) of pending's last count
}

// weightStages are the load's stages that count the weights (engine.Options), as the
// counts say them.
var weightStages = map[string]string{"weights": "Reading the weight files", "model": "Putting the weights in place",
	"read": "Reading the weights into memory"}

func newWeightNotes(w io.Writer) *weightNotes {
	return &weightNotes{line: newStatusLine(w), start: time.Now()}
}

// Write writes the load's note (p), then the count held for it.
func (r *weightNotes) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.line.clear()
	n, err := r.line.w.Write(p)
	r.noted = true
	for _, line := range r.pending {
		r.show(line)
	}
	r.pending = nil
	return n, err
}

// stage is the load's stage reporter (engine.Options.Progress): the counts that
// follow are that stage's.
func (r *weightNotes) stage(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.doing, r.line.last = weightStages[s], time.Time{}
}

func (r *weightNotes) report(done, total int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.doing == "" || time.Since(r.start) < noteAfter || !r.line.due(done >= total) {
		return
	}
	line := fmt.Sprintf("%s: %s of %s", r.doing, store.FormatBytes(done), store.FormatBytes(total))
	if !r.noted { // a stage's last count replaces its earlier ones, not another stage's
		if len(r.pending) > 0 && r.heldFor == r.doing {
			r.pending = r.pending[:len(r.pending)-1]
		}
		r.pending, r.heldFor = append(r.pending, line), r.doing
		return
	}
	r.show(line)
}

// show writes a count: in place on a terminal, as a line otherwise.
func (r *weightNotes) show(line string) {
	if r.line.tty {
		r.line.draw(line)
		return
	}
	fmt.Fprintln(r.line.w, line)
}

// end erases the last count drawn in place, once the load is over.
func (r *weightNotes) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.line.clear()
}

// modelSource turns --model into an engine source: empty means the built-in
// Darkroom Mini; otherwise a model directory, a catalog name or a local model's
// name, resolved by the models library, which refuses any model whose files
// failed verification. modelsDir overrides the store folder ("" = default).
func modelSource(model, modelsDir string) (engine.Source, error) {
	if model == "" {
		fsys, err := assets.Mini()
		if err != nil {
			return engine.Source{}, fmt.Errorf("no --model given and %w", err)
		}
		return engine.FS(fsys, "Darkroom Mini (built in)"), nil
	}
	src, err := librarySource(model, modelsDir)
	if err != nil {
		return engine.Source{}, fmt.Errorf("--model: %w", err)
	}
	return src, nil
}

// librarySource resolves a model directory, catalog name or local model's name
// through the models library in modelsDir ("" = default).
func librarySource(model, modelsDir string) (engine.Source, error) {
	m, err := models.New(models.Options{Dir: modelsDir})
	if err != nil {
		return engine.Source{}, err
	}
	return m.Source(model)
}

func runGenerate(env *Env, args []string) error {
	fs := newFlagSet(env, "generate", "[flags] [PROMPT]")
	var g generateFlags
	g.register(fs)
	fs.Lookup("max-new-tokens").Usage = "most tokens to generate (default: the model's generation_config; an answer to a question, as in the app's Chat: 2048 for DiffusionGemma, whose config says 256, one canvas)"
	fs.StringVar(&g.mode, "mode", "auto", "diffusion (canvas by canvas), ar (one token per forward pass), or auto: the mode the app's Chat and the API pick for this model here (said on stderr)")
	raw := fs.Bool("raw", false, "tokenize PROMPT as is (BOS prepended), without the chat template")
	promptIDs := fs.String("prompt-ids", "", "comma-separated prompt token ids, fed exactly as given (implies --raw)")
	canvasIDs := fs.String("canvas-ids", "", "comma-separated initial tokens of the first canvas (warm start)")
	opening := fs.String("opening", "", "text the answer starts with, held fixed while the rest develops (e.g. \"<h1>Unix</h1>\")")
	noLead := fs.Bool("no-lead", false, "the model alone: do not open the answer to a question about a topic with the topic as its heading and, where the model's folder holds the entry, the entry's opening sentences (as the app's Chat does)")
	thinking := fs.Bool("thinking", false, "enable the model's thinking channel")
	trace := fs.Bool("trace", false, "print each denoising step's draft and accepted count (and each guidance round's changes) on stderr")
	asJSON := fs.Bool("json", false, "print the result as JSON (text, tokens, canvases, forward_passes, elapsed_ms, tokens_per_s, …)")
	jsonObject := fs.Bool("json-object", false, "AR mode: the answer is one JSON object, each token held to JSON as it is picked (the API's response_format json_object)")
	jsonSchema := fs.String("json-schema", "", "AR mode: the answer is one JSON object that is an instance of the JSON Schema in `FILE` (the API's response_format json_schema)")
	logprobs := fs.Int("logprobs", -1, "AR mode, with --json: each token's log probability and this many of the likeliest tokens at its position (0 to 20)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := g.check(); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	mode := engine.Mode(g.mode)
	if mode != engine.Diffusion && mode != engine.AR && g.mode != "auto" {
		return fmt.Errorf("generate: --mode must be auto, diffusion or ar, got %q", g.mode)
	}
	req := engine.Request{Mode: mode, Sampling: g.sampling(), Seed: g.seed, Raw: *raw, Thinking: *thinking, Opening: *opening,
		JSON: *jsonObject}
	if *jsonSchema != "" {
		raw, err := os.ReadFile(*jsonSchema)
		if err != nil {
			return fmt.Errorf("generate: --json-schema: %w", err)
		}
		if req.JSONSchema, err = sampler.CompileSchema(raw); err != nil {
			return fmt.Errorf("generate: --json-schema %s: %w", *jsonSchema, err)
		}
		req.JSON = true
	}
	if *logprobs >= 0 {
		if !*asJSON {
			return errors.New("generate: --logprobs prints with --json (the result's \"logprobs\"): add --json")
		}
		req.Logprobs, req.TopLogprobs = true, *logprobs
	}
	prompt := strings.Join(fs.Args(), " ")
	switch {
	case *promptIDs != "" && prompt != "":
		return errors.New("generate: give either PROMPT or --prompt-ids, not both")
	case *promptIDs != "":
		ids, err := parseTokenIDs(*promptIDs)
		if err != nil {
			return fmt.Errorf("generate: --prompt-ids: %w", err)
		}
		req.PromptIDs, req.Raw = ids, true
	case prompt == "":
		return errors.New("generate: no PROMPT given (or use --prompt-ids)")
	case !*raw && g.builtin():
		// The built-in Mini answers in the system turn it was trained with, as
		// in the app's Chat and the API; without it, it writes a page.
		req.Messages = []engine.Message{{Role: "system", Content: catalog.System(catalog.MiniID)}, {Role: "user", Content: prompt}}
	default:
		req.Prompt = prompt
	}
	// A flag only one mode reads asks for that mode, and is refused with the
	// other: it would be silently ignored.
	byMode := map[engine.Mode][]string{}
	fs.Visit(func(f *flag.Flag) {
		if m, ok := modeFlags[f.Name]; ok {
			byMode[m] = append(byMode[m], "--"+f.Name)
		}
	})
	if g.mode == "auto" {
		d, a := byMode[engine.Diffusion], byMode[engine.AR]
		switch {
		case len(d) > 0 && len(a) > 0:
			return fmt.Errorf("generate: %s %s for --mode diffusion; %s %s for --mode ar: give one mode's flags",
				andList(d), plural.Word(len(d), "is", "are"), andList(a), plural.Word(len(a), "is", "are"))
		case len(d) > 0:
			g.mode, mode, req.Mode = string(engine.Diffusion), engine.Diffusion, engine.Diffusion
		case len(a) > 0:
			g.mode, mode, req.Mode = string(engine.AR), engine.AR, engine.AR
		}
	} else if other := byMode[otherMode(mode)]; len(other) > 0 {
		msg := fmt.Sprintf("generate: %s only %s to --mode %s (the %s), not to --mode %s: leave %s out, or use --mode %[3]s",
			andList(other), plural.Word(len(other), "applies", "apply"), otherMode(mode), speed.Name(otherMode(mode)), mode,
			plural.Word(len(other), "it", "them"))
		if slices.Contains(other, "--temperature") {
			msg += " (the polaroid's temperatures are --t-max and --t-min)"
		}
		return errors.New(msg)
	}
	if *canvasIDs != "" {
		ids, err := parseTokenIDs(*canvasIDs)
		if err != nil {
			return fmt.Errorf("generate: --canvas-ids: %w", err)
		}
		req.CanvasIDs = ids
	}

	ctx, stop := interruptContext()
	defer stop()
	src, err := modelSource(g.model, g.modelsDir)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	// A question about a topic opens with the topic as its heading and, where
	// the model's folder holds the entry, the entry's opening sentences where
	// they fit, as in the app's Chat and the API (assets.Leads.ChatStart).
	entries := false     // the model's folder holds entries: the summary says when the answer is not one
	var similar []string // entries a question about a topic with none may have meant
	if req.Opening == "" && !*noLead && !*thinking && !req.JSON && !req.Logprobs && len(req.Messages) > 0 {
		leads, err := models.Leads(src) // before the model: a damaged file is said at once
		if err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		entries = leads.Len() > 0
		start := leads.ChatStart(prompt)
		similar = leads.ChatSimilar(prompt, develop.SimilarMax)
		req.Opening, req.Lead, req.OpeningTentative, req.Reply = start.Opening, start.Lead, start.OpeningTentative, start.Reply
		req.LeadEnds = req.Lead != "" // the entry's answer, as trained: it ends there
	}
	if *thinking && g.builtin() { // said before the Mini loads
		return errors.New("generate: " + noThinking(catalog.NoThinking(true, true)))
	}
	e, err := loadEngine(ctx, env, src, g.options())
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("generate: " + interruptedLoading)
		}
		return fmt.Errorf("generate: %w", err)
	}
	defer e.Close()

	tok := e.Tokenizer()
	if _, ok := tok.ID(chat.Think); *thinking {
		if why := catalog.NoThinking(g.builtin(), ok); why != "" {
			return errors.New("generate: " + noThinking(why))
		}
	}
	if req.Sampling.MaxNewTokens == 0 && len(req.Messages) > 0 && !g.builtin() { // a question: an answer's length, not one canvas
		req.Sampling.MaxNewTokens = catalog.AnswerTokens(g.model, e.Config())
	}
	if g.mode == "auto" {
		choice, err := g.autoMode(ctx, env, e)
		if err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		mode, req.Mode = choice.Mode, choice.Mode
		if choice.Reason != "" {
			fmt.Fprintf(env.Stderr, "mode: %s (--mode %s for the %s)\n", choice.Reason, otherMode(mode), speed.Name(otherMode(mode)))
		}
	}
	printed := "" // the committed text already on stdout
	req.OnEvent = func(ev engine.Event) {
		switch ev.Kind {
		case engine.EventStep:
			if *trace {
				n := 0
				for _, a := range ev.Accepted {
					if a {
						n++
					}
				}
				if ev.Guidance { // the causal head revising the canvas's words: n positions changed
					fmt.Fprintf(env.Stderr, "canvas %d guidance round %d: changed %d/%d, draft %q\n",
						ev.Canvas, ev.Round, n, len(ev.Accepted), tok.Decode(ev.Draft))
					break
				}
				fmt.Fprintf(env.Stderr, "canvas %d step %d: accepted %d/%d, draft %q\n",
					ev.Canvas, ev.Step, n, len(ev.Accepted), tok.Decode(ev.Draft))
			}
		case engine.EventPrompt: // a long prompt, read a piece at a time
			if ev.PromptRead < ev.PromptTokens {
				fmt.Fprintf(env.Stderr, "reading the prompt: %d of %d tokens\n", ev.PromptRead, ev.PromptTokens)
			}
		case engine.EventCommit, engine.EventToken:
			// Stream the committed text as it grows (not with --json: stdout is the document).
			if !*asJSON && strings.HasPrefix(ev.Text, printed) {
				fmt.Fprint(env.Stdout, ev.Text[len(printed):])
				printed = ev.Text
			}
		}
	}
	res, err := e.Generate(ctx, req)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := writeGenerateJSON(env, res, mode, e.Backend()); err != nil || ctx.Err() == nil {
			return err
		}
		return interrupted("generate", res, "the document above holds the text so far")
	}
	if strings.HasPrefix(res.Text, printed) {
		fmt.Fprintln(env.Stdout, res.Text[len(printed):])
	} else { // decoding shifted at a canvas boundary: print the final text whole
		fmt.Fprintln(env.Stdout, "\n"+res.Text)
	}
	rate := develop.Rate(res)
	if rate != "" {
		rate = " (" + rate + ")"
	}
	fmt.Fprintf(env.Stderr, "%s in %.2f s%s, %s, %s, stop: %s, backend %s%s\n",
		develop.TokenCount(res), res.ElapsedMS/1000, rate, canvasSummary(res, mode),
		plural.Count(res.ForwardPasses, "forward pass", "forward passes"), res.StopReason, e.Backend(), develop.LeadSuffix(res, entries)) // as the app's status line says it
	if len(similar) > 0 && !res.LeadHeld {
		fmt.Fprintf(env.Stderr, "no entry for this; entries with a similar title: %s\n", strings.Join(similar, ", "))
	}
	if ctx.Err() != nil {
		return interrupted("generate", res, "the text so far is above")
	}
	return nil
}

// modeFlags are generate's flags that only one mode reads: given without --mode,
// they choose it.
var modeFlags = map[string]engine.Mode{
	"canvas-ids": engine.Diffusion, "max-steps": engine.Diffusion, "t-min": engine.Diffusion, "t-max": engine.Diffusion,
	"entropy-bound": engine.Diffusion, "confidence-threshold": engine.Diffusion, "stability": engine.Diffusion,
	"guidance": engine.Diffusion, "guidance-in-word": engine.Diffusion, "guidance-rounds": engine.Diffusion, "trace": engine.Diffusion,
	"temperature": engine.AR, "repetition-penalty": engine.AR, "frequency-penalty": engine.AR,
	"presence-penalty": engine.AR, "top-p": engine.AR, "top-k": engine.AR, "json-object": engine.AR, "json-schema": engine.AR, "logprobs": engine.AR,
}

// autoMode is the mode of a generate without --mode: the one the app's Chat and
// the API pick for the loaded model on this machine (speed.ForLoaded, as
// `darkroom serve` does) — Darkroom Mini 2's card says the printer, DiffusionGemma
// takes the faster mode here. Only a model whose modes write equally well needs
// this machine's rates, measured once and cached.
func (g *generateFlags) autoMode(ctx context.Context, env *Env, e *engine.Engine) (speed.Choice, error) {
	return autoMode(ctx, env, g.model, e)
}

// autoMode is the mode the app picks for model (a --model value, "" for the
// built-in Mini) loaded as e, when the user picks none: Chat's and the API's, and
// the Encyclopedia's automatic page mode (`darkroom wiki` without --mode).
func autoMode(ctx context.Context, env *Env, model string, e *engine.Engine) (speed.Choice, error) {
	name := model
	if builtinModel(model) {
		name = catalog.MiniID
	}
	entry, _ := catalog.ForModel(name, e.Config())
	if !entry.ModesEqual && entry.ChatMode == "" {
		return speed.Choice{Mode: engine.Diffusion}, nil // no choice to speak of: the mode Darkroom's models are made for
	}
	device := speed.Device(e.Backend())
	var rates *speed.Rates
	if entry.ModesEqual {
		var err error
		if rates, err = ratesNoted(ctx, env.Stderr, device, false); err != nil {
			if ctx.Err() != nil {
				return speed.Choice{}, errors.New(interruptedLoading)
			}
			fmt.Fprintln(env.Stderr, "darkroom:", err) // the choice says the speed is unknown
		}
	}
	choice, _ := speed.ForLoaded(name, e.Config(), e.GGUFLayout(), device, rates, speed.LoadedFromDisk(ctx, e))
	return choice, nil
}

// andList joins names as "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// otherMode is the mode mode is not.
func otherMode(mode engine.Mode) engine.Mode {
	if mode == engine.AR {
		return engine.Diffusion
	}
	return engine.AR
}

// noThinking is generate's reason for --thinking with a model that does not
// think (why: catalog.NoThinking's).
func noThinking(why string) string {
	return "--thinking: " + why + "; leave --thinking out"
}

// interruptedLoading is a command's reason when Ctrl-C stops it before the model
// has loaded (the engine's own words would be 'load DIR: context canceled').
const interruptedLoading = "interrupted (Ctrl-C) while loading the model"

// interrupted is the error of command cmd when Ctrl-C stopped its generation:
// exit 1, not 0 as for a whole answer, saying how far it got and where that is.
func interrupted(cmd string, res *engine.Result, where string) error {
	if len(res.Tokens) == 0 {
		return errors.New(cmd + ": interrupted (Ctrl-C) before any text was written")
	}
	return fmt.Errorf("%s: interrupted (Ctrl-C) after %s; %s", cmd, plural.Count(len(res.Tokens), "token", "tokens"), where)
}

func canvasSummary(res *engine.Result, mode engine.Mode) string {
	if mode == engine.AR {
		return "AR"
	}
	if len(res.Canvases) == 0 { // stopped before its first canvas was done
		return "0 canvases"
	}
	steps := make([]string, len(res.Canvases))
	for i, c := range res.Canvases {
		steps[i] = fmt.Sprint(c.Steps)
	}
	return fmt.Sprintf("%s (steps %s)", plural.Count(len(res.Canvases), "canvas", "canvases"), strings.Join(steps, ","))
}

// generateJSON is the --json document: the engine's Result plus what ran.
type generateJSON struct {
	*engine.Result
	Mode             engine.Mode `json:"mode"`
	Backend          string      `json:"backend"`
	TokensPerForward float64     `json:"tokens_per_forward"`
}

func writeGenerateJSON(env *Env, res *engine.Result, mode engine.Mode, backend string) error {
	doc := generateJSON{Result: res, Mode: mode, Backend: backend}
	if res.ForwardPasses > 0 {
		doc.TokensPerForward = float64(len(res.Tokens)) / float64(res.ForwardPasses)
	}
	enc := json.NewEncoder(env.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
