package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/app/plural"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/train"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/speed"
)

func init() {
	register(&Command{
		Name:    "wiki",
		Summary: "write the encyclopedia page for a topic (HTML), as the Encyclopedia screen does",
		Run:     runWiki,
	})
}

// wikiPage is `darkroom wiki --json` output.
type wikiPage struct {
	Title         string   `json:"title"`
	Prompt        string   `json:"prompt"`
	Opening       string   `json:"opening"` // what was held before the model wrote: the heading, and the entry where the model's folder holds it ("" with --free-heading)
	HTML          string   `json:"html"`
	Links         []string `json:"links"`             // topics of the page's /wiki/ links, in order
	Similar       []string `json:"similar,omitempty"` // where the model's folder holds no entry for the title, entries it may have meant (the app offers them over the page)
	Model         string   `json:"model"`
	Backend       string   `json:"backend"`
	Mode          string   `json:"mode"`
	Seed          uint64   `json:"seed"`
	Tokens        int      `json:"tokens"`
	ForwardPasses int      `json:"forward_passes"`
	ElapsedMS     float64  `json:"elapsed_ms"`
	TokensPerS    float64  `json:"tokens_per_s"`
	StopReason    string   `json:"stop_reason"`
}

func runWiki(env *Env, args []string) error {
	fs := newFlagSet(env, "wiki", `[--model DIR|NAME] [--seed N] [--mode diffusion|ar] [--max-new-tokens N] [--free-heading] [--no-lead] [--json] "TITLE"`)
	model := fs.String("model", "", "model: a directory in the Hugging Face layout, or a library name (default: the built-in Darkroom Mini)")
	modelsDir := fs.String("models-dir", "", "models folder for library names (default $DARKROOM_MODELS_DIR, else the data folder)")
	seed := fs.Uint64("seed", 1, "sampler seed; the same seed writes the same page")
	mode := fs.String("mode", "", `"diffusion" (canvas by canvas) or "ar" (one token per forward pass) (default: the model's, as the Encyclopedia's automatic mode: the printer for Darkroom Mini)`)
	backendName := fs.String("backend", "", backend.FlagUsage)
	maxNew := fs.Int("max-new-tokens", 0, "most tokens to write (default: the model's generation_config)")
	fs.IntVar(maxNew, "max-tokens", 0, "deprecated: the old name of --max-new-tokens")
	free := fs.Bool("free-heading", false, "let the model write the page's <h1> too (by default the title is held as the heading, as the Encyclopedia screen does)")
	noLead := fs.Bool("no-lead", false, "hold the heading only, not the entry where the model's folder holds it: the model writes the page alone (the Encyclopedia's “Let the model write it”)")
	asJSON := fs.Bool("json", false, "print the page and its generation statistics as JSON")
	template := fs.String("prompt", "", "the page prompt, with {{title}} where the title goes (default: the built-in \"Write the Darkroom encyclopedia page for: {{title}}\", the one Darkroom Mini was trained on)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := assets.CheckPageTemplate(*template); err != nil {
		return fmt.Errorf("wiki: --prompt: %w", err)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf(`wiki: want one TITLE argument, got %d (quote a title with spaces: darkroom wiki "bubble sort")`, fs.NArg())
	}
	title := assets.CleanLine(fs.Arg(0))
	if title == "" {
		return errors.New(`wiki: the title is empty; give a topic, as in: darkroom wiki Unix`)
	}
	if err := assets.ReadableTitle(title); err != nil {
		return fmt.Errorf("wiki: %q has no page: %v; give a topic in words", title, err)
	}
	var m engine.Mode
	switch *mode {
	case "": // the model's, once it is loaded
	case "diffusion":
		m = engine.Diffusion
	case "ar":
		m = engine.AR
	default:
		return fmt.Errorf("wiki: --mode %q: want diffusion or ar", *mode)
	}
	if *maxNew < 0 {
		return fmt.Errorf("wiki: --max-new-tokens %d: must not be negative", *maxNew)
	}

	ctx, stop := interruptContext()
	defer stop()
	src, err := modelSource(*model, *modelsDir)
	if err != nil {
		return fmt.Errorf("wiki: %w", err)
	}
	leads, err := models.Leads(src) // before the model: a damaged file is said at once
	if err != nil {
		return fmt.Errorf("wiki: %w", err)
	}
	eng, err := loadEngine(ctx, env, src, engine.Options{Backend: *backendName})
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("wiki: " + interruptedLoading)
		}
		return fmt.Errorf("wiki: %w", err)
	}
	defer eng.Close()
	if m == "" {
		choice, err := autoMode(ctx, env, *model, eng)
		if err != nil {
			return fmt.Errorf("wiki: %w", err)
		}
		m = choice.Mode
	}

	title = develop.PageTitle(title, leads)                               // "compilers": the entry for "compiler"
	req := develop.PageRequest(title, *template, leads, *noLead || *free) // the Encyclopedia's page: the entry, where the folder holds it
	if *free {
		req.Opening = ""
	}
	req.Mode, req.Seed, req.Sampling = m, *seed, engine.Sampling{MaxNewTokens: *maxNew}
	res, err := eng.Generate(ctx, req)
	if err != nil {
		return fmt.Errorf("wiki: %w", err)
	}
	prompt, opening := req.Prompt, req.Opening
	if res.LeadHeld {
		opening += req.Lead
	}
	shown := htmlsafe.Sanitize(htmlsafe.Relink(res.Text, leads.Has)) // the page as the app and the browser show it: safe, no tag fragments, links that open what they say
	page := wikiPage{Title: title, Prompt: prompt, Opening: opening, HTML: shown, Links: pageLinks(shown), Model: src.String(),
		Backend: eng.Backend(), Mode: string(m), Seed: *seed, Tokens: len(res.Tokens), ForwardPasses: res.ForwardPasses,
		ElapsedMS: res.ElapsedMS, TokensPerS: res.TokensPerS, StopReason: res.StopReason, Similar: leads.Similar(title, develop.SimilarMax)}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(page); err != nil || ctx.Err() == nil {
			return err
		}
		return interrupted("wiki", res, "the document above holds the page so far")
	}
	if _, err := fmt.Fprintln(env.Stdout, page.HTML); err != nil {
		return err
	}
	rate := develop.Rate(res)
	if rate != "" {
		rate += ", "
	}
	writer := ", the " + speed.Name(m)
	if develop.HeldWhole(res) {
		writer = "" // no mode wrote it, as the app's status line says
	}
	fmt.Fprintf(env.Stderr, "%s in %.2f s (%s%s, %s%s, stop: %s)%s\n",
		develop.TokenCount(res), page.ElapsedMS/1000, rate,
		plural.Count(page.ForwardPasses, "forward pass", "forward passes"), page.Backend, writer, page.StopReason, develop.LeadSuffix(res, leads.Len() > 0)) // as the app's status line says it
	if len(page.Similar) > 0 {
		fmt.Fprintf(env.Stderr, "no entry for %q; entries with a similar title: %s\n", title, strings.Join(page.Similar, ", "))
	}
	if ctx.Err() != nil {
		return interrupted("wiki", res, "the page so far is above")
	}
	return nil
}

// pageLinks returns the topics a page links to through /wiki/ hrefs, in order
// (train.LinkTopics; [] rather than null in the JSON when there are none).
func pageLinks(html string) []string {
	if links := train.LinkTopics(html); links != nil {
		return links
	}
	return []string{}
}
