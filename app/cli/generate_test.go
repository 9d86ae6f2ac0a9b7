package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/sampler"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/speed"
)

// tinyModelDir writes a random-weight checkpoint of config.Tiny with a small
// trained tokenizer: a complete model directory in the Hugging Face layout.
func tinyModelDir(t *testing.T) string {
	t.Helper()
	dir := trainedTokenizerDir(t)
	cfg := config.Tiny()
	cfg.EOSTokenIDs = tokenizer.MiniEndOfGeneration()
	cfg.Generation.EOSTokenIDs = tokenizer.MiniEndOfGeneration()
	cfg.Generation.MaxNewTokens = 32
	cfg.Generation.MaxDenoisingSteps = 5
	if err := weights.Save(weights.Random(cfg, 3), cfg, dir, weights.SaveOptions{Shards: 2, DType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestGenerateBothModesJSON(t *testing.T) {
	dir := tinyModelDir(t)
	for _, mode := range []string{"diffusion", "ar"} {
		t.Run(mode, func(t *testing.T) {
			code, out, errOut := runCLI("generate", "--model", dir, "--mode", mode, "--seed", "7", "--json",
				"--max-new-tokens", "20", "What is Unix?")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var doc map[string]any
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			for _, k := range []string{"text", "tokens", "canvases", "forward_passes", "elapsed_ms", "tokens_per_s",
				"stop_reason", "prompt_tokens", "first_canvas_ms", "mode", "backend", "tokens_per_forward"} {
				if _, ok := doc[k]; !ok {
					t.Errorf("--json lacks %q: %s", k, out)
				}
			}
			toks := doc["tokens"].([]any)
			if len(toks) > 20 || doc["forward_passes"].(float64) < 1 || doc["mode"] != mode || doc["backend"] != "go" {
				t.Errorf("document %s", out)
			}
			canv := doc["canvases"].([]any)
			if mode == "diffusion" {
				if len(canv) == 0 {
					t.Fatalf("no canvases: %s", out)
				}
				c := canv[0].(map[string]any)
				if steps := c["steps"].(float64); steps < 1 || steps > 5 || len(c["accepted"].([]any)) != int(steps) {
					t.Errorf("canvas %v", c)
				}
			} else if len(canv) != 0 {
				t.Errorf("AR run reports canvases: %s", out)
			}
			// The same seed reproduces the run.
			_, out2, _ := runCLI("generate", "--model", dir, "--mode", mode, "--seed", "7", "--json",
				"--max-new-tokens", "20", "What is Unix?")
			var doc2 map[string]any
			_ = json.Unmarshal([]byte(out2), &doc2)
			if a, b := jsonOf(doc["tokens"]), jsonOf(doc2["tokens"]); a != b {
				t.Errorf("same seed, different tokens: %s vs %s", a, b)
			}
		})
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestGenerateTextTraceAndIDs(t *testing.T) {
	dir := tinyModelDir(t)
	code, out, errOut := runCLI("generate", "--model", dir, "--prompt-ids", "2,5,40,41,6", "--canvas-ids", "30,31",
		"--trace", "--max-new-tokens", "16", "--max-steps", "3", "--t-min", "0.5", "--t-max", "0.9",
		"--entropy-bound", "0.2", "--confidence-threshold", "0.01", "--stability", "1", "--backend", "go")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "canvas 0 step 1: accepted ") || !strings.Contains(errOut, "tokens in") {
		t.Errorf("stderr lacks the trace or the summary:\n%s", errOut)
	}
	if strings.Count(errOut, "canvas 0 step ") > 3 {
		t.Errorf("more steps than --max-steps 3:\n%s", errOut)
	}
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("stdout %q", out)
	}
	// --opening: the answer starts with the held text in both modes.
	for _, mode := range []string{"diffusion", "ar"} {
		args := []string{"generate", "--model", dir, "--mode", mode, "--opening", "<h1>Unix</h1>", "--max-new-tokens", "16", "--backend", "go"}
		if mode == "diffusion" {
			args = append(args, "--max-steps", "3")
		}
		code, out, errOut = runCLI(append(args, "What is Unix?")...)
		if code != 0 || !strings.HasPrefix(out, "<h1>Unix</h1>") {
			t.Errorf("--mode %s --opening: exit %d, stdout %q, stderr %s", mode, code, out, errOut)
		}
	}
	// XLA requested where it cannot start: one plain line, as wiki and serve
	// give it, then the run on Go.
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", t.TempDir())
	code, _, errOut = runCLI("generate", "--model", dir, "--backend", "xla:cuda", "--mode", "ar",
		"--max-new-tokens", "2", "--raw", "Unix")
	if code != 0 {
		t.Fatalf("xla fallback run failed: %s", errOut)
	}
	if first := strings.SplitN(errOut, "\n", 2)[0]; !strings.HasPrefix(first, "darkroom: XLA backend unavailable (") {
		t.Errorf("first stderr line %q", first)
	}
}

func TestGenerateErrors(t *testing.T) {
	dir := tinyModelDir(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"generate", "--model", filepath.Join(dir, "missing"), "hi"}, "--model"},
		{[]string{"generate", "--model", dir}, "no PROMPT"},
		{[]string{"generate", "--model", dir, "--mode", "printer", "hi"}, "--mode"},
		{[]string{"generate", "--model", dir, "--prompt-ids", "2,x", "hi"}, "PROMPT or --prompt-ids"},
		{[]string{"generate", "--model", dir, "--prompt-ids", "2,x"}, "--prompt-ids"},
		{[]string{"generate", "--model", dir, "--prompt-ids", "2,99999"}, "outside the vocabulary"},
		{[]string{"generate", "--model", dir, "--temperature", "-1", "hi"}, "--temperature"},
		{[]string{"generate", "--model", dir, "--mode", "ar", "--canvas-ids", "3", "hi"}, "--canvas-ids"},
		{[]string{"generate", "--model", dir, "--backend", "tpu", "hi"}, "unknown backend"},
		{[]string{"generate", "--model", dir, "--guidance-rounds", "-2", "hi"}, "--guidance-rounds"},
		{[]string{"generate", "--model", dir, "--guidance-in-word", "NaN", "hi"}, "--guidance-in-word"},
		{[]string{"generate", "--model", dir, "--repetition-penalty", "-1", "hi"}, "--repetition-penalty"},
		{[]string{"generate", "--model", dir, "--repetition-penalty", "NaN", "hi"}, "--repetition-penalty"},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(c.args...)
		if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and one line mentioning %q",
				c.args[1:], code, out, errOut, c.want)
		}
	}
}

func TestBenchJSON(t *testing.T) {
	dir := tinyModelDir(t)
	benchRates(t) // the bounds' calibration, in the test's own cache
	code, out, errOut := runCLI("bench", "--model", dir, "--runs", "1", "--max-new-tokens", "16", "--max-steps", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	d, a := rep.Diffusion, rep.AR
	if rep.Backend != "go" || rep.CanvasLength != 16 || d.Runs != 1 || a.Runs != 1 || d.Mode != "diffusion" || a.Mode != "ar" {
		t.Errorf("report %+v", rep)
	}
	if d.ForwardPasses < 2 || a.ForwardPasses < 1 || d.StepsPerCanvas < 1 || d.StepsPerCanvas > 3 || a.StepsPerCanvas != 0 {
		t.Errorf("per-mode numbers: %+v / %+v", d, a)
	}
	if !(rep.MatMulGFLOPS > 0) || rep.MatMul.M != 16 || rep.MatMul.N != 512 || rep.PeakHeapBytes == 0 {
		t.Errorf("matmul %+v, heap %d", rep.MatMul, rep.PeakHeapBytes)
	}
	if rep.ForwardFLOPs == nil || !(rep.ForwardGFLOPS > 0) || !(rep.ForwardVsMatMul > 0) || !(rep.SpeedupVsAR > 0) {
		t.Errorf("forward FLOPs %+v, %v GFLOP/s, vs matmul %v, speedup %v", rep.ForwardFLOPs, rep.ForwardGFLOPS,
			rep.ForwardVsMatMul, rep.SpeedupVsAR)
	}
	// The human-readable report carries the same numbers.
	code, out, errOut = runCLI("bench", "--model", dir, "--runs", "1", "--max-new-tokens", "16", "--max-steps", "2")
	if code != 0 || !strings.Contains(out, "diffusion vs AR:") || !strings.Contains(out, "GFLOP/s") ||
		!strings.Contains(out, "peak memory:") || !strings.Contains(errOut, "diffusion run 1:") ||
		!strings.Contains(out, "(median over 1 run;") {
		t.Errorf("text report (exit %d):\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := runCLI("bench", "--model", dir, "--runs", "0"); code != 1 || !strings.Contains(errOut, "--runs") {
		t.Errorf("--runs 0: exit %d, %q", code, errOut)
	}
}

func TestGenerateBuiltInModel(t *testing.T) {
	code, out, errOut := runCLI("generate", "--max-new-tokens", "8", "--json", "What is Unix?")
	if _, err := assets.Mini(); err != nil {
		// Not built into this binary yet: a plain one-line error, exit 1.
		if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "no --model given") {
			t.Errorf("without the embedded model: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		return
	}
	if code != 0 || !strings.Contains(out, `"tokens_per_s"`) {
		t.Errorf("embedded model: exit %d\n%s\n%s", code, out, errOut)
	}
	// The question goes in the system turn the Mini's chats were trained with,
	// as the app's Chat sends it: without it the Mini answered with an
	// encyclopedia page ("<h1>bu a compiler</h1>…").
	fsys, _ := assets.Mini()
	tok, err := tokenizer.LoadFS(fsys, "tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := chat.Encode(tok, []chat.Message{{Role: "system", Content: assets.ChatSystem()}, {Role: "user", Content: "What is Unix?"}}, chat.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		PromptTokens int         `json:"prompt_tokens"`
		Mode         engine.Mode `json:"mode"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.PromptTokens != len(want) {
		t.Errorf("the built-in model's prompt: %d tokens, want %d (the system turn and the question; %v)", doc.PromptTokens, len(want), err)
	}
	// Without --mode it answers in the mode Chat and the API pick for it (its
	// card's: the printer), and says so; it ran the polaroid, whose answers
	// read worse, while the app's Chat answered the same question with the printer.
	entry, _ := catalog.Find(catalog.MiniID)
	chats := speed.Choose(entry, nil)
	if doc.Mode != chats.Mode || !strings.Contains(errOut, "mode: "+chats.Reason) {
		t.Errorf("generate without --mode ran %q, Chat runs %q (%s); stderr %q", doc.Mode, chats.Mode, chats.Reason, errOut)
	}
	if code, out, _ := runCLI("generate", "--max-new-tokens", "8", "--max-steps", "2", "--json", "--mode", "diffusion", "What is Unix?"); code != 0 ||
		!strings.Contains(out, `"mode": "diffusion"`) {
		t.Errorf("--mode diffusion: exit %d\n%s", code, out)
	}
	// A flag only the polaroid reads asks for it.
	if code, out, errOut := runCLI("generate", "--max-new-tokens", "8", "--max-steps", "2", "--json", "What is Unix?"); code != 0 ||
		!strings.Contains(out, `"mode": "diffusion"`) || strings.Contains(errOut, "mode:") {
		t.Errorf("--max-steps without --mode: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestGenerateOpensWithTheEntrysLead: asked about an entry the built-in
// model's folder holds, generate answers as the app's Chat does — with the
// entry's opening sentences, which end it — and says so on stderr; --no-lead asks the
// model alone; a topic the folder does not hold heads the answer.
func TestGenerateOpensWithTheEntrysLead(t *testing.T) {
	fsys, err := assets.Mini()
	if err != nil {
		t.Skip("the built-in model is not in this binary")
	}
	leads, err := assets.ReadLeads(fsys)
	if err != nil || leads.Len() == 0 {
		t.Skipf("the built-in model holds no leads (%v)", err)
	}
	start := leads.ChatStart("What is Unix?")
	lead := start.Opening + start.Lead
	code, out, errOut := runCLI("generate", "--mode", "ar", "--max-new-tokens", "160", "What is Unix?")
	if code != 0 || strings.TrimSpace(out) != lead || !strings.Contains(errOut, develop.LeadNote) {
		t.Errorf("exit %d, stdout %q, stderr %q; want the answer to be %q, said so", code, out, errOut, lead)
	}
	code, out, errOut = runCLI("generate", "--mode", "ar", "--max-new-tokens", "160", "--no-lead", "What is Unix?")
	if code != 0 || strings.HasPrefix(out, lead) || strings.Contains(errOut, develop.LeadNote) {
		t.Errorf("--no-lead: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// A topic the folder does not hold: the answer is headed with it, and
	// nothing claims the entry's sentence.
	code, out, errOut = runCLI("generate", "--mode", "ar", "--max-new-tokens", "60", "What is a server room?")
	if code != 0 || !strings.HasPrefix(out, "**server room") || strings.Contains(errOut, develop.LeadNote) {
		t.Errorf("a topic not held: exit %d, stdout %q, stderr %q; want the answer headed **server room…", code, out, errOut)
	}
	// A typo of an entry's title: the model's answer, and the entry named.
	code, _, errOut = runCLI("generate", "--mode", "ar", "--max-new-tokens", "60", "What is a compilr?")
	if code != 0 || !strings.Contains(errOut, "entries with a similar title: compile, compiler") {
		t.Errorf("a typo: exit %d, stderr %q; want compile and compiler named", code, errOut)
	}
	// A term asked alone: its entry; a typo of one: the Library answer (the
	// built-in Mini begins it), the entries named under it.
	code, out, errOut = runCLI("generate", "--mode", "ar", "unix?")
	if code != 0 || strings.TrimSpace(out) != lead || !strings.Contains(errOut, develop.LeadNote) {
		t.Errorf("\"unix?\": exit %d, stdout %q, stderr %q; want the entry's answer %q", code, out, errOut, lead)
	}
	code, out, errOut = runCLI("generate", "--mode", "ar", "compilr?")
	if code != 0 || strings.TrimSpace(out) != assets.ChatElsewhere() || !strings.Contains(errOut, "entries with a similar title: compile, compiler") {
		t.Errorf("\"compilr?\": exit %d, stdout %q, stderr %q; want the Library answer, compile and compiler named", code, out, errOut)
	}
	// A greeting, and a question the Mini turns away: the Library answer,
	// begun by the model and held whole, said so; not a made-up definition of
	// "good recipe for pancakes" under a held heading.
	for _, msg := range []string{"Hello!", "What is a good recipe for pancakes?"} {
		code, out, errOut = runCLI("generate", "--mode", "ar", msg)
		if code != 0 || strings.TrimSpace(out) != assets.ChatElsewhere() || !strings.Contains(errOut, develop.ReplyNote) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want the Library answer, said to be held", msg, code, out, errOut)
		}
	}
}

// TestGenerateSaysItIsLoading: a model that takes a moment to load (the 26B
// read from disk: tens of seconds) is named on stderr while it loads, with the
// weights read into memory counted; generate and wiki were silent until the first
// canvas. (noteAfter is shortened so that the tiny model's load counts as slow.)
func TestGenerateSaysItIsLoading(t *testing.T) {
	dir := tinyModelDir(t)
	old := noteAfter
	noteAfter = time.Nanosecond
	defer func() { noteAfter = old }()
	for _, cmd := range [][]string{
		{"generate", "--model", dir, "--max-new-tokens", "4", "--max-steps", "2", "hi"},
		{"wiki", "--model", dir, "--max-new-tokens", "12", "Unix"},
	} {
		code, _, errOut := runCLI(cmd...)
		if want := "Loading " + dir + "…\n"; code != 0 || !strings.HasPrefix(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want it to start %q", cmd[0], code, errOut, want)
		}
		// and how much of its weights it has read into memory, up to all of them
		if !regexp.MustCompile(`\nReading the weights into memory: ([0-9.]+ [kMG]?B) of ([0-9.]+ [kMG]?B)\n`).MatchString(errOut) {
			t.Errorf("%s: stderr %q; want the weights read counted", cmd[0], errOut)
		}
	}
	// Where the files are read rather than mapped (Windows; DARKROOM_NO_MMAP), their
	// reading is counted too.
	t.Setenv("DARKROOM_NO_MMAP", "1")
	code, _, errOut := runCLI("generate", "--model", dir, "--max-new-tokens", "4", "--max-steps", "2", "hi")
	if code != 0 || !regexp.MustCompile(`\nReading the weight files: ([0-9.]+ [kMG]?B) of ([0-9.]+ [kMG]?B)\n`).MatchString(errOut) {
		t.Errorf("unmapped: exit %d, stderr %q; want the files' reading counted", code, errOut)
	}
}

// TestGenerateRefusesQuarantinedModel: a model folder holding a file that failed
// its checksum (quarantined as NAME.corrupt by the downloader) is never loaded.
func TestGenerateRefusesQuarantinedModel(t *testing.T) {
	dir := tinyModelDir(t)
	if err := os.WriteFile(filepath.Join(dir, "model-00002-of-00002.safetensors.corrupt"), []byte("bad"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Run([]string{"generate", "--model", dir, "hi"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "model-00002-of-00002.safetensors") {
		t.Fatalf("exit %d, stderr %q; want exit 1 naming the quarantined file", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("generated from a quarantined model: %q", stdout.String())
	}
}

// TestGenerateGuidanceFlags: --guidance turns AR guidance on for a model without
// it, a negative weight turns the built-in Mini's off (canvas stats say so), and
// --guidance-in-word changes the Mini's default spelling weight.
func TestGenerateGuidanceFlags(t *testing.T) {
	// generate returns the page and the first canvas's guidance rounds.
	generate := func(args ...string) (text string, rounds float64) {
		t.Helper()
		// --no-lead: the model writes the whole answer (a held entry would
		// leave it nothing to write, and guidance nothing to change).
		code, out, errOut := runCLI(append([]string{"generate", "--mode", "diffusion", "--seed", "3", "--json", "--max-new-tokens", "64", "--no-lead"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var doc struct {
			Text     string `json:"text"`
			Canvases []struct {
				GuidanceRounds float64 `json:"guidance_rounds"`
			} `json:"canvases"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Canvases) == 0 {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return doc.Text, doc.Canvases[0].GuidanceRounds
	}
	dir := tinyModelDir(t)
	if _, r := generate("--model", dir, "What is Unix?"); r != 0 {
		t.Errorf("a model without guidance ran %v rounds", r)
	}
	if _, r := generate("--model", dir, "--guidance", "2", "--guidance-rounds", "3", "What is Unix?"); r < 1 || r > 3 {
		t.Errorf("--guidance 2 --guidance-rounds 3: %v rounds", r)
	}
	if _, r := generate("--guidance", "-1", "What is Unix?"); r != 0 {
		t.Errorf("the built-in Mini with --guidance -1 ran %v rounds", r)
	}
	def, r := generate("What is a compiler?")
	if r < 1 {
		t.Errorf("the built-in Mini ran no guidance rounds by default")
	}
	// The Mini weighs spelling apart (in-word weight 5); -1 puts λ inside words too.
	if same, _ := generate("--guidance-in-word", "-1", "What is a compiler?"); same == def {
		t.Errorf("--guidance-in-word -1 wrote the same page as the Mini's default: %q", def)
	}
	if again, _ := generate("--guidance-in-word", "5", "What is a compiler?"); again != def {
		t.Errorf("--guidance-in-word 5 (the Mini's default) wrote\n%q\nthe default wrote\n%q", again, def)
	}
}

// TestGenerateRepetitionPenaltyFlag: --repetition-penalty reaches AR mode. The tiny
// random model loops greedily (one id over and over); θ = 1.3 writes more distinct
// bigrams, θ = 1 is the model's default (off) exactly; --mode diffusion refuses
// it (TestGenerateRefusesTheOtherModesFlags).
func TestGenerateRepetitionPenaltyFlag(t *testing.T) {
	dir := tinyModelDir(t)
	tokens := func(args ...string) []int {
		t.Helper()
		code, out, errOut := runCLI(append([]string{"generate", "--model", dir, "--json", "--max-new-tokens", "48"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var doc struct {
			Tokens []int `json:"tokens"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return doc.Tokens
	}
	distinct2 := func(ids []int) int {
		seen := map[[2]int]bool{}
		for i := 1; i < len(ids); i++ {
			seen[[2]int{ids[i-1], ids[i]}] = true
		}
		return len(seen)
	}
	def := tokens("--mode", "ar", "What is Unix?")
	off := tokens("--mode", "ar", "--repetition-penalty", "1", "What is Unix?")
	on := tokens("--mode", "ar", "--repetition-penalty", "1.3", "What is Unix?")
	if !slices.Equal(def, off) {
		t.Errorf("--repetition-penalty 1 changed the tiny model's tokens (its default is off):\n%v\n%v", def, off)
	}
	if distinct2(on) <= distinct2(off) {
		t.Errorf("θ = 1.3: %d distinct bigrams, θ = 1: %d; want more with the penalty\n%v\n%v", distinct2(on), distinct2(off), on, off)
	}
}

// TestGenerateThinkingWhereThereIsNone: --thinking with a model that has no
// thinking channel says so — the built-in Mini was never trained to think (the
// app greys its Thinking box); it was taken, and the Mini, given a think token
// it never saw in training, wrote worse.
func TestGenerateThinkingWhereThereIsNone(t *testing.T) {
	code, _, errOut := runCLI("generate", "--thinking", "--max-new-tokens", "4", "What is Unix?")
	if want := "darkroom generate: --thinking: Darkroom Mini was not trained to think; leave --thinking out\n"; code != 1 || errOut != want {
		t.Errorf("--thinking with the Mini: exit %d, %q; want 1, %q", code, errOut, want)
	}
}

// TestGenerateRefusesTheOtherModesFlags: a flag only one mode reads, given with
// the other mode, is refused in words that say which mode reads it — '--mode
// diffusion --temperature 0.7' (a temperature, as every other LLM tool takes)
// ran with the flag silently ignored, as did '--mode ar --max-steps 4' and
// --trace; and without --mode, one mode's flags with the other's cannot choose
// a mode (the first in the alphabet chose, the rest were ignored).
func TestGenerateRefusesTheOtherModesFlags(t *testing.T) {
	dir := tinyModelDir(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--mode", "diffusion", "--temperature", "0.7"},
			[]string{"--temperature only applies to --mode ar", "--t-max and --t-min"}},
		{[]string{"--mode", "diffusion", "--repetition-penalty", "1.3"}, []string{"--repetition-penalty only applies to --mode ar"}},
		{[]string{"--mode", "ar", "--max-steps", "4", "--guidance", "1"}, []string{"--guidance and --max-steps only apply to --mode diffusion"}},
		{[]string{"--mode", "ar", "--trace"}, []string{"--trace only applies to --mode diffusion"}},
		{[]string{"--max-steps", "4", "--temperature", "0.7"},
			[]string{"--max-steps is for --mode diffusion; --temperature is for --mode ar: give one mode's flags"}},
	} {
		args := append(append([]string{"generate", "--model", dir, "--max-new-tokens", "8"}, c.args...), "What is Unix?")
		code, out, errOut := runCLI(args...)
		ok := code == 1 && out == "" && strings.Count(errOut, "\n") == 1
		for _, w := range c.want {
			ok = ok && strings.Contains(errOut, w)
		}
		if !ok {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and one line saying %q", c.args, code, out, errOut, c.want)
		}
	}
	// Each mode's own flags run, with --mode or without.
	for _, args := range [][]string{{"--mode", "ar", "--temperature", "0.7"}, {"--temperature", "0.7"},
		{"--mode", "diffusion", "--max-steps", "2", "--t-max", "0.9"}, {"--max-steps", "2"}} {
		if code, _, errOut := runCLI(append(append([]string{"generate", "--model", dir, "--max-new-tokens", "8"}, args...), "What is Unix?")...); code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
}

// TestTraceSaysGuidanceRounds: --trace names a canvas's guidance rounds as
// rounds — they were traced as more steps ('canvas 0 step 8 … step 13' after a
// canvas the summary then gave as 'steps 7').
func TestTraceSaysGuidanceRounds(t *testing.T) {
	code, _, errOut := runCLI("generate", "--mode", "diffusion", "--trace", "--seed", "1", "--max-new-tokens", "64", "What is Unix?")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var steps []int
	last, want := 0, 0
	if i := strings.LastIndex(errOut, "(steps "); i < 0 {
		t.Fatalf("no summary of steps in %s", errOut)
	} else if _, err := fmt.Sscanf(errOut[i:], "(steps %d", &want); err != nil {
		t.Fatalf("summary of steps: %v in %s", err, errOut)
	}
	for _, line := range strings.Split(errOut, "\n") {
		var c, s int
		if n, _ := fmt.Sscanf(line, "canvas %d step %d:", &c, &s); n == 2 && c == 0 {
			steps = append(steps, s)
			last = s
		}
	}
	if last != want || !strings.Contains(errOut, "canvas 0 guidance round 1: changed ") {
		t.Errorf("traced steps %v, the summary says %d steps; want its steps traced as steps and its rounds as rounds:\n%s", steps, want, errOut)
	}
}

// TestWeightNotesHoldEachStage: counts that come before the load's note is written
// (a fast first stage) are held, the last of each stage, and written after the note in
// order; the weight files' count was lost to the read stage's when both came first.
func TestWeightNotesHoldEachStage(t *testing.T) {
	old := noteAfter
	noteAfter = 0
	defer func() { noteAfter = old }()
	var b strings.Builder
	r := newWeightNotes(&b)
	r.stage("weights")
	r.report(1<<20, 2<<20)
	r.report(2<<20, 2<<20)
	r.stage("read")
	r.report(3<<20, 3<<20)
	fmt.Fprint(r, "Loading m…\n")
	want := "Loading m…\nReading the weight files: 2.1 MB of 2.1 MB\nReading the weights into memory: 3.1 MB of 3.1 MB\n"
	if b.String() != want {
		t.Errorf("notes %q, want %q", b.String(), want)
	}
}

// TestGenerateAPISamplingFlags: generate takes what the API's requests take —
// --json-object (an answer held to a JSON object), --logprobs with --json,
// --top-k/--top-p and --presence-penalty — each asking for the printer, and
// refuses them out of range.
func TestGenerateAPISamplingFlags(t *testing.T) {
	dir := tinyModelDir(t)
	run := func(args ...string) (engine.Result, string) {
		t.Helper()
		code, out, errOut := runCLI(append([]string{"generate", "--model", dir, "--json", "--max-new-tokens", "24", "--seed", "3"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var res engine.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return res, out
	}
	res, out := run("--json-object", "What is Unix?")
	if ok, closed := sampler.JSONPrefix(res.Text); !ok || closed != (res.StopReason == engine.StopEOS) || !strings.Contains(strings.ReplaceAll(out, " ", ""), `"mode":"ar"`) {
		t.Errorf("--json-object: %q (%s) in %s", res.Text, res.StopReason, out)
	}
	schemaFile := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(schemaFile, []byte(`{"type":"object","properties":{"os":{"enum":["Unix","Linux"]},"year":{"type":"integer"}},"required":["os"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	schema, _ := sampler.CompileSchema([]byte(`{"type":"object","properties":{"os":{"enum":["Unix","Linux"]},"year":{"type":"integer"}},"required":["os"]}`))
	if res, out := run("--json-schema", schemaFile, "What is Unix?"); !strings.Contains(strings.ReplaceAll(out, " ", ""), `"mode":"ar"`) {
		t.Errorf("--json-schema did not ask for the printer: %s", out)
	} else if ok, closed := sampler.SchemaPrefix(schema, res.Text); !ok || closed != (res.StopReason == engine.StopEOS) {
		t.Errorf("--json-schema: %q (%s) is not the beginning of an instance", res.Text, res.StopReason)
	}
	res, _ = run("--logprobs", "2", "What is Unix?")
	if len(res.Logprobs) != len(res.Tokens) || len(res.Tokens) == 0 || len(res.Logprobs[0].Top) != 2 {
		t.Errorf("--logprobs 2: %d logprobs for %d tokens: %+v", len(res.Logprobs), len(res.Tokens), res.Logprobs)
	}
	greedy, _ := run("--mode", "ar", "What is Unix?")
	if top1, _ := run("--temperature", "3", "--top-k", "1", "What is Unix?"); !slices.Equal(top1.Tokens, greedy.Tokens) {
		t.Errorf("--top-k 1 at T 3: %v, want the greedy %v", top1.Tokens, greedy.Tokens)
	}
	if _, out := run("--presence-penalty", "0.5", "What is Unix?"); !strings.Contains(strings.ReplaceAll(out, " ", ""), `"mode":"ar"`) {
		t.Errorf("--presence-penalty did not ask for the printer: %s", out)
	}
	for _, bad := range [][]string{{"--logprobs", "2"}, {"--top-p", "2"}, {"--top-k", "-1"}, {"--presence-penalty", "-1"},
		{"--json-object", "--mode", "diffusion"}} {
		args := append([]string{"generate", "--model", dir, "--max-new-tokens", "8"}, bad...)
		if code, _, errOut := runCLI(append(args, "What is Unix?")...); code == 0 || errOut == "" {
			t.Errorf("%v: exit %d, %q; want a refusal", bad, code, errOut)
		}
	}
}
