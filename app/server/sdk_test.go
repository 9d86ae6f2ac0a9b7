package server

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest/npmtest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// The official OpenAI Node SDK, as users drive the server with it. The test
// installs it with npmtest (as engine/tokenizer's conformance test installs its
// npm package), once, and reuses it across runs.
const (
	sdkPackage = "openai"
	sdkVersion = "6.30.1" // the newest release that supports Node 20
)

// installSDK makes sure the SDK is installed and returns its node_modules folder.
// loadMini loads the built-in Darkroom Mini on the CPU, closed when the test
// ends.
func loadMini(t *testing.T) *engine.Engine {
	t.Helper()
	fsys, err := assets.Mini()
	if err != nil {
		t.Skip("no built-in Darkroom Mini:", err)
	}
	e, err := engine.Load(context.Background(), engine.FS(fsys, "Darkroom Mini"), engine.Options{Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func installSDK(t *testing.T) string {
	t.Helper()
	return npmtest.Install(t, "SKIPPED OPENAI SDK TEST", "drive the server with the official openai client", sdkPackage, sdkVersion)
}

// sdkScript runs the SDK against the server: argv[2] base URL, argv[3] key,
// argv[4] model id; it prints one JSON object with what it saw.
const sdkScript = `
const mod = require("openai");
const OpenAI = mod.OpenAI || mod.default || mod;
const [baseURL, apiKey, model, page] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120000 });
const user = [{ role: "user", content: "What is Unix?" }];
(async () => {
  const out = {};
  out.models = (await client.models.list()).data.map((m) => m.id);

  const c = await client.chat.completions.create({ model, messages: user, max_tokens: 24, seed: 7 });
  out.completion = { content: c.choices[0].message.content, finish: c.choices[0].finish_reason, usage: c.usage,
    fingerprint: c.system_fingerprint, model: c.model };

  const s = await client.chat.completions.create({ model, messages: user, max_tokens: 24, seed: 7, stream: true,
    stream_options: { include_usage: true } });
  let text = "", usage = null, finish = null;
  for await (const ch of s) {
    for (const x of ch.choices) { text += x.delta.content || ""; finish = x.finish_reason || finish; }
    if (ch.usage) usage = ch.usage;
  }
  out.stream = { content: text, usage, finish };

  // A text completion (POST /v1/completions), whole and streamed, the prompt echoed.
  const tc = await client.completions.create({ model, prompt: "Unix is", max_tokens: 12, seed: 7, echo: true });
  out.text = { text: tc.choices[0].text, finish: tc.choices[0].finish_reason, object: tc.object, usage: tc.usage };
  const ts = await client.completions.create({ model, prompt: "Unix is", max_tokens: 12, seed: 7, echo: true, stream: true,
    stream_options: { include_usage: true } });
  let tt = "", tu = null, tf = null;
  for await (const ch of ts) {
    for (const x of ch.choices) { tt += x.text || ""; tf = x.finish_reason || tf; }
    if (ch.usage) tu = ch.usage;
  }
  out.textStream = { text: tt, usage: tu, finish: tf };

  // A JSON answer (response_format json_object).
  const js = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Describe Unix in JSON." }], max_tokens: 64,
    seed: 7, response_format: { type: "json_object" } });
  out.json = { content: js.choices[0].message.content, finish: js.choices[0].finish_reason };

  // Log probabilities of a chat answer's tokens, and their alternatives.
  const lp = await client.chat.completions.create({ model, messages: user, max_tokens: 8, seed: 7, logprobs: true, top_logprobs: 2 });
  out.logprobs = { content: lp.choices[0].message.content, fingerprint: lp.system_fingerprint, tokens: lp.usage.completion_tokens,
    entries: lp.choices[0].logprobs.content.map((x) => ({ token: x.token, logprob: x.logprob, bytes: x.bytes.length,
      top: x.top_logprobs.map((y) => y.logprob) })) };

  // Abort a long stream (an encyclopedia page) 100 ms after its first chunk
  // (the role, sent as the generation starts), while its canvas is being
  // denoised: the test paces each step to at least 10 ms, so the Mini's page
  // takes longer than that however fast this machine (it once waited 300 ms,
  // and the Mini now writes its whole page in less).
  const ac = new AbortController();
  const long = await client.chat.completions.create({ model, messages: [{ role: "user", content: page }], max_tokens: 2048,
    stream: true, seed: 3 }, { signal: ac.signal });
  out.abort = { chunks: 0 };
  try {
    for await (const ch of long) {
      if (out.abort.chunks++ === 0) { setTimeout(() => ac.abort(), 100); }
    }
  } catch (e) {
    out.abort.error = e.constructor.name; // (the SDK ends an aborted stream quietly)
  }
  out.abort.aborted = ac.signal.aborted;

  for (const [name, req] of [
    ["notFound", { model: "no-such-model", messages: user }],
    ["tooLong", { model, messages: user, max_tokens: 1000000000 }],
    ["tools", { model, messages: user, tools: [{ type: "function", function: { name: "get_weather",
      parameters: { type: "object", properties: {} } } }], tool_choice: { type: "function", function: { name: "get_time" } } }],
  ]) {
    try {
      await client.chat.completions.create(req);
      out[name] = { class: "none" };
    } catch (e) {
      out[name] = { class: e.constructor.name, status: e.status, code: e.code, param: e.param, message: e.message,
        notFound: e instanceof OpenAI.NotFoundError, badRequest: e instanceof OpenAI.BadRequestError };
    }
  }
  try {
    await new OpenAI({ baseURL, apiKey: "wrong-key-wrong-key", maxRetries: 0 }).models.list();
  } catch (e) {
    out.badKey = { class: e.constructor.name, auth: e instanceof OpenAI.AuthenticationError, status: e.status };
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`

// runScript runs a JavaScript script with node, the npm packages in modules
// on its path, and returns what it printed; a failure stops the test with
// what it wrote to stderr.
func runScript(t *testing.T, modules, script string, args ...string) []byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "script.js")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{file}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	return out
}

// stepProbe wraps a Generator and measures what a cancellation leaves: how
// many denoising steps run after the request's context ends, and how many
// forward passes the engine started without first finding the context live.
// TestOpenAISDK gives it a paced engine (tinyengine.Paced: each step at least
// 10 ms, as a bigger model's), so that a page is still being written when the
// client's abort arrives, however fast this machine.
//
// What happened is read from the context itself, as the engine reads it, not
// from the clock: the time from the cancellation to Generate's return, once
// checked against the longest step, ran past it by 800 ms on a loaded machine
// with nothing but the scheduler in between, and a context.AfterFunc noting
// the cancellation runs in a goroutine of its own that a loaded machine can
// start after Generate has returned (the run looked never cancelled).
type stepProbe struct {
	Generator
	mu   sync.Mutex
	runs []probeRun
}

type probeRun struct {
	cancelled       bool
	stepsAfter      int
	stepsBeforeStop int
	// liveChecks counts the engine's looks at the context that found it live;
	// each forward pass must follow one (engine.Generate checks before every
	// pass), so after a cancellation only the pass in progress runs.
	liveChecks    int
	forwardPasses int
	stopAfter     time.Duration // from the cancellation to Generate's return (reported, not judged)
	longestStep   time.Duration
	stopReason    string
}

// watchedContext counts the calls to Err that find the context live.
type watchedContext struct {
	context.Context
	live *int
	mu   *sync.Mutex
}

func (c watchedContext) Err() error {
	err := c.Context.Err()
	if err == nil {
		c.mu.Lock()
		*c.live++
		c.mu.Unlock()
	}
	return err
}

func (p *stepProbe) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	var mu sync.Mutex
	var cancelAt, last time.Time
	var run probeRun
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		cancelAt = time.Now()
		mu.Unlock()
	})
	defer stop()
	began := time.Now()
	last = began
	next := req.OnEvent
	req.OnEvent = func(ev engine.Event) {
		if ev.Kind == engine.EventStep {
			now := time.Now()
			mu.Lock()
			run.longestStep = max(run.longestStep, now.Sub(last))
			last = now
			if ctx.Err() != nil {
				run.stepsAfter++
			} else {
				run.stepsBeforeStop++
			}
			mu.Unlock()
		}
		if next != nil {
			next(ev)
		}
	}
	res, err := p.Generator.Generate(watchedContext{ctx, &run.liveChecks, &mu}, req)
	returned := time.Now()
	mu.Lock()
	if ctx.Err() != nil {
		run.cancelled = true
		if !cancelAt.IsZero() {
			run.stopAfter = returned.Sub(cancelAt)
		}
	}
	if res != nil {
		run.stopReason, run.forwardPasses = res.StopReason, res.ForwardPasses
	}
	mu.Unlock()
	p.mu.Lock()
	p.runs = append(p.runs, run)
	p.mu.Unlock()
	return res, err
}

// TestOpenAISDK drives the server with the official openai npm client on the
// built-in Darkroom Mini: models, a chat completion and a stream with usage, a
// text completion whole and streamed, a JSON answer, a chat answer's
// logprobs, an aborted stream (whose generation must stop within one denoising step), and
// errors mapped to the SDK's classes.
func TestOpenAISDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the openai npm client and the Darkroom Mini")
	}
	modules := installSDK(t)
	e := loadMini(t)
	probe := &stepProbe{Generator: tinyengine.Paced{Engine: e, Step: 10 * time.Millisecond}}
	s := start(t, Options{Model: func(context.Context) (Model, error) {
		return Model{ID: "darkroom-mini", Engine: checkedProbe{probe, e}}, nil
	}})

	out := runScript(t, modules, sdkScript, s.APIBase(), s.Token(), "darkroom-mini", assets.EncyclopediaPrompt("Operating system"))
	var got struct {
		Models     []string
		Completion struct {
			Content, Finish, Fingerprint, Model string
			Usage                               struct{ PromptTokens, CompletionTokens, TotalTokens int }
		}
		Stream struct {
			Content, Finish string
			Usage           *struct{ PromptTokens, CompletionTokens, TotalTokens int }
		}
		Text struct {
			Text, Finish, Object string
			Usage                struct{ PromptTokens, CompletionTokens, TotalTokens int }
		}
		TextStream struct {
			Text, Finish string
			Usage        *struct{ PromptTokens, CompletionTokens, TotalTokens int }
		}
		Abort struct {
			Chunks  int
			Error   string
			Aborted bool
		}
		JSON struct {
			Content, Finish string
		}
		Logprobs struct {
			Content, Fingerprint string
			Tokens               int
			Entries              []struct {
				Token   string
				Logprob float64
				Bytes   int
				Top     []float64
			}
		}
		NotFound, TooLong, Tools struct {
			Class, Code          string
			Param, Message       string
			Status               int
			NotFound, BadRequest bool
		}
		BadKey struct {
			Class  string
			Auth   bool
			Status int
		}
	}
	dec := json.NewDecoder(strings.NewReader(snakeToCamel(string(out))))
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("sdk output %q: %v", out, err)
	}
	if len(got.Models) != 1 || got.Models[0] != "darkroom-mini" {
		t.Errorf("models %v", got.Models)
	}
	c := got.Completion
	if c.Content == "" || c.Model != "darkroom-mini" || c.Fingerprint != "darkroom-diffusion" || c.Usage.PromptTokens < 5 ||
		c.Usage.CompletionTokens < 1 || c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens {
		t.Errorf("completion %+v", c)
	}
	if st := got.Stream; st.Content != c.Content || st.Usage == nil || st.Usage.CompletionTokens != c.Usage.CompletionTokens || st.Finish != c.Finish {
		t.Errorf("stream %+v; the completion with the same seed: %+v", st, c)
	}
	if tc := got.Text; !strings.HasPrefix(tc.Text, "Unix is") || len(tc.Text) == len("Unix is") || tc.Object != "text_completion" ||
		tc.Usage.CompletionTokens < 1 || tc.Usage.CompletionTokens > 12 || tc.Usage.TotalTokens != tc.Usage.PromptTokens+tc.Usage.CompletionTokens {
		t.Errorf("text completion %+v", tc)
	}
	if ts := got.TextStream; ts.Text != got.Text.Text || ts.Finish != got.Text.Finish || ts.Usage == nil ||
		ts.Usage.CompletionTokens != got.Text.Usage.CompletionTokens {
		t.Errorf("streamed text completion %+v; the same request whole: %+v", ts, got.Text)
	}
	if a := got.Abort; !a.Aborted || a.Chunks < 1 || (a.Error != "" && a.Error != "APIUserAbortError") {
		t.Errorf("abort %+v: want the stream aborted by the client after its first chunk", a)
	}
	if n := got.NotFound; !n.NotFound || n.Status != 404 || n.Code != "model_not_found" {
		t.Errorf("unknown model: %+v", n)
	}
	if n := got.TooLong; !n.BadRequest || n.Status != 400 || n.Code != "context_length_exceeded" {
		t.Errorf("max_tokens 10^9: %+v", n)
	}
	if n := got.Tools; !n.BadRequest || n.Status != 400 || n.Param != "tool_choice" || !strings.Contains(n.Message, "not among the tools") {
		t.Errorf("tool_choice naming no tool: %+v", n)
	}
	if ok, closed := sampler.JSONPrefix(got.JSON.Content); !ok || closed != (got.JSON.Finish == "stop") || got.JSON.Content == "" {
		t.Errorf("json_object: %+v (a JSON prefix %v, closed %v)", got.JSON, ok, closed)
	}
	t.Logf("the Mini's JSON: %q (%s)", got.JSON.Content, got.JSON.Finish)
	if lp := got.Logprobs; lp.Content == "" || lp.Fingerprint != "darkroom-ar" || len(lp.Entries) != lp.Tokens {
		t.Errorf("logprobs: %+v; want one entry per token, the answer in AR mode", lp)
	} else {
		for i, e := range lp.Entries {
			if e.Logprob > 0 || e.Bytes != len(e.Token) && !strings.Contains(e.Token, "\uFFFD") || len(e.Top) != 2 || e.Top[0] < e.Top[1] || e.Top[0] < e.Logprob {
				t.Errorf("logprobs: token %d: %+v", i, e)
			}
		}
	}
	if b := got.BadKey; !b.Auth || b.Status != 401 {
		t.Errorf("wrong key: %+v", b)
	}

	// The aborted stream's generation stopped within one denoising step. (It
	// may still be in that step as the client exits: wait for its end.)
	waitFor(t, func() bool {
		probe.mu.Lock()
		defer probe.mu.Unlock()
		return len(probe.runs) == 7
	})
	probe.mu.Lock()
	defer probe.mu.Unlock()
	var aborted *probeRun
	for i := range probe.runs {
		if probe.runs[i].cancelled {
			aborted = &probe.runs[i]
		}
	}
	if aborted == nil {
		t.Fatalf("no generation saw the abort: %+v", probe.runs)
	}
	t.Logf("aborted stream: %d steps before the abort, %d after; stopped %v after it (longest step %v)",
		aborted.stepsBeforeStop, aborted.stepsAfter, aborted.stopAfter.Round(time.Millisecond), aborted.longestStep.Round(time.Millisecond))
	if aborted.stopReason != "cancelled" || aborted.stepsAfter > 1 || aborted.forwardPasses > aborted.liveChecks {
		t.Errorf("after the abort: %+v; want it stopped within one step (no forward pass begun once the context was done)", *aborted)
	}
}

// checkedProbe is a stepProbe that keeps the engine's Check, so the server
// refuses a request too long for the context before streaming.
type checkedProbe struct {
	*stepProbe
	e *engine.Engine
}

func (c checkedProbe) Check(req engine.Request) (engine.Checked, error) { return c.e.Check(req) }

// snakeToCamel turns the SDK's snake_case keys into ones encoding/json matches
// case-insensitively ("prompt_tokens" → "prompttokens").
func snakeToCamel(s string) string {
	for _, k := range []string{"prompt_tokens", "completion_tokens", "total_tokens"} {
		s = strings.ReplaceAll(s, `"`+k+`"`, `"`+strings.ReplaceAll(k, "_", "")+`"`)
	}
	return s
}

// sdkToolsScript runs the SDK's own agent loop (chat.completions.runTools),
// whole and streamed: the model calls get_weather, the SDK runs it and sends
// its result back, the model answers. argv as sdkScript's.
const sdkToolsScript = `
const mod = require("openai");
const OpenAI = mod.OpenAI || mod.default || mod;
const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });
(async () => {
  const out = {};
  for (const stream of [false, true]) {
    const seen = [];
    const tools = [{ type: "function", function: { name: "get_weather", description: "Weather in a city.",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      parse: JSON.parse, function: async (args) => { seen.push(args); return "Sunny, 21 C"; } } }];
    const runner = client.chat.completions.runTools({ model, stream, tools,
      messages: [{ role: "user", content: "Weather in Paris?" }] });
    const content = await runner.finalContent();
    out[stream ? "streamed" : "whole"] = { content, seen, messages: runner.messages.length,
      roles: runner.messages.map((m) => m.role), calls: (runner.messages[1].tool_calls || []).length };
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`

// weatherAgent is a scripted model for an agent loop: asked a question it
// calls get_weather (streamed in three commits, the middle one ending inside
// the call), given the call's result it answers with it.
type weatherAgent struct{ fakeGen }

func (w *weatherAgent) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	const call = "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>"
	if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
		w.commits, w.final = nil, "It is "+strings.ToLower(last.Content[:1])+last.Content[1:]+" in Paris."
	} else {
		w.commits, w.final = []string{"<|tool", call[:30], call}, call
	}
	return w.fakeGen.Generate(ctx, req)
}

// TestOpenAISDKTools: the official client's agent loop (runTools), whole and
// streamed, reads the model's call, runs the function with its arguments,
// sends the result back as a tool message, and gets the model's answer — the
// round trip agents make.
func TestOpenAISDKTools(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the openai npm client")
	}
	modules := installSDK(t)
	g := &weatherAgent{}
	s := start(t, Options{Engine: g})
	out := runScript(t, modules, sdkToolsScript, s.APIBase(), s.Token(), "darkroom")
	type run struct {
		Content  string
		Seen     []map[string]string
		Messages int
		Roles    []string
		Calls    int
	}
	var got struct{ Whole, Streamed run }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("sdk output %q: %v", out, err)
	}
	for name, r := range map[string]run{"whole": got.Whole, "streamed": got.Streamed} {
		if r.Content != "It is sunny, 21 C in Paris." || len(r.Seen) != 1 || r.Seen[0]["city"] != "Paris" || r.Calls != 1 ||
			strings.Join(r.Roles, ",") != "user,assistant,tool,assistant" {
			t.Errorf("%s: %+v; want one call with city Paris, its result sent back, and the answer", name, r)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.requests) != 4 {
		t.Fatalf("%d generations, want 4 (a call and an answer, twice)", len(g.requests))
	}
	for _, req := range g.requests {
		if len(req.Tools) != 1 || req.Tools[0].Name != "get_weather" {
			t.Errorf("a generation without the tool declared: %+v", req.Tools)
		}
	}
	if m := g.requests[1].Messages; len(m) != 3 || len(m[1].ToolCalls) != 1 || m[1].ToolCalls[0].Arguments != `{"city":"Paris"}` ||
		m[2].Role != "tool" || m[2].ToolCallID != m[1].ToolCalls[0].ID || m[2].Content != "Sunny, 21 C" {
		t.Errorf("the result sent back: %+v", m)
	}
}

// sdkResponsesScript drives POST /v1/responses with the official client:
// responses.create (text; a function call; the call's output sent back) and
// responses.stream (text with its thought; a call), printing what it read.
const sdkResponsesScript = `
const mod = require("openai");
const OpenAI = mod.OpenAI || mod.default || mod;
const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });
const tools = [{ type: "function", name: "get_weather", description: "Weather in a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
(async () => {
  const out = {};
  const r = await client.responses.create({ model, instructions: "Be brief.", input: "Time?", max_output_tokens: 32 });
  out.text = { outputText: r.output_text, status: r.status, types: r.output.map((o) => o.type), usage: r.usage, object: r.object };

  const call = await client.responses.create({ model, input: "Weather in Paris?", tools });
  const fc = call.output.find((o) => o.type === "function_call");
  out.call = { types: call.output.map((o) => o.type), name: fc && fc.name, args: fc && JSON.parse(fc.arguments), callId: fc && fc.call_id };
  const answer = await client.responses.create({ model, tools,
    input: [{ role: "user", content: "Weather in Paris?" }, ...call.output, { type: "function_call_output", call_id: fc.call_id, output: "Sunny, 21 C" }] });
  out.answer = answer.output_text;
  // The same, going on from the stored response instead of sending it back.
  const after = await client.responses.create({ model, tools, previous_response_id: call.id,
    input: [{ type: "function_call_output", call_id: fc.call_id, output: "Sunny, 21 C" }] });
  out.afterStored = after.output_text;
  out.retrieved = (await client.responses.retrieve(call.id)).output.map((o) => o.type);

  const s = client.responses.stream({ model, input: "Time?", reasoning: { effort: "high" } });
  const events = [];
  let deltas = "";
  s.on("response.output_text.delta", (e) => { deltas += e.delta; });
  for await (const e of s) events.push(e.type);
  const fr = await s.finalResponse();
  // (the client sets output_text on a created response, not on a stream's final one)
  const frText = fr.output.filter((o) => o.type === "message").flatMap((o) => o.content).map((c) => c.text).join("");
  out.stream = { events, deltas, outputText: frText, types: fr.output.map((o) => o.type),
    thought: (fr.output.find((o) => o.type === "reasoning") || {}).content };

  const cs = client.responses.stream({ model, input: "Weather in Paris?", tools });
  let argDeltas = "";
  cs.on("response.function_call_arguments.delta", (e) => { argDeltas += e.delta; });
  const cf = await cs.finalResponse();
  const sfc = cf.output.find((o) => o.type === "function_call");
  out.streamCall = { argDeltas, name: sfc && sfc.name, args: sfc && sfc.arguments, status: cf.status };

  // (the client's accumulator reads response.completed, not response.incomplete: read the events)
  const xs = client.responses.stream({ model, input: "Forecast for Paris?", tools });
  let xArgs = "", xLast = "", xItem = {}, xResp = { output: [] };
  xs.on("response.function_call_arguments.delta", (e) => { xArgs += e.delta; });
  for await (const e of xs) {
    xLast = e.type;
    if (e.type === "response.output_item.done") xItem = e.item;
    if (e.type === "response.incomplete") xResp = e.response;
  }
  const xfc = xResp.output.find((o) => o.type === "function_call") || {};
  out.cutCall = { argDeltas: xArgs, last: xLast, itemArgs: xItem.arguments, itemStatus: xItem.status, status: xResp.status,
    args: xfc.arguments, outputStatus: xfc.status };

  try {
    await client.responses.create({ model, input: "x", previous_response_id: "resp_123" });
    out.previous = { class: "none" };
  } catch (e) {
    out.previous = { status: e.status, param: e.param, message: e.message };
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`

// responder is a scripted model for the Responses API test: it calls
// get_weather when asked about the weather (and answers with the call's
// result once it has it), thinks aloud when thinking is on, and tells the
// time otherwise.
type responder struct{ fakeGen }

func (g *responder) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	const call = "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>"
	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role == "tool":
		g.commits, g.final = nil, "It is "+last.Content+" in Paris."
	case strings.Contains(last.Content, "Weather"):
		g.commits, g.final = []string{"<|tool_", call[:25], call[:41], call}, call
	case strings.Contains(last.Content, "Forecast"): // a call max_tokens cuts
		const cut = `<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2,unit:<|"|>cel`
		g.commits, g.final = []string{cut[:41], cut}, cut
		res, err := g.fakeGen.Generate(ctx, req)
		if res != nil {
			res.StopReason = engine.StopMaxTokens
		}
		return res, err
	case req.Thinking:
		text := "<|channel>thought\nThe user asks the time.\n<channel|>It is noon."
		g.commits, g.final = []string{text[:12], text[:40], text[:60], text}, text
	default:
		g.commits, g.final = []string{"It is", "It is noon."}, "It is noon."
	}
	return g.fakeGen.Generate(ctx, req)
}

// TestOpenAISDKResponses: the official client reads POST /v1/responses —
// text (output_text), a function call and the answer after its output is sent
// back, streamed text with its thought (the client's own event accumulator
// builds the final response) and a streamed call — and its errors.
func TestOpenAISDKResponses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the openai npm client")
	}
	modules := installSDK(t)
	g := &responder{}
	s := start(t, Options{Engine: g})
	out := runScript(t, modules, sdkResponsesScript, s.APIBase(), s.Token(), "darkroom")
	var got struct {
		Text struct {
			OutputText, Status, Object string
			Types                      []string
			Usage                      struct{ InputTokens, OutputTokens, TotalTokens int }
		}
		Call struct {
			Types        []string
			Name, CallID string
			Args         map[string]string
		}
		Answer, AfterStored string
		Retrieved           []string
		Stream              struct {
			Events             []string
			Deltas, OutputText string
			Types              []string
			Thought            []struct{ Type, Text string }
		}
		StreamCall struct{ ArgDeltas, Name, Args, Status string }
		CutCall    struct{ ArgDeltas, Last, ItemArgs, ItemStatus, Status, Args, OutputStatus string }
		Previous   struct {
			Status         int
			Param, Message string
		}
	}
	if err := json.Unmarshal([]byte(strings.NewReplacer(`"input_tokens"`, `"inputtokens"`, `"output_tokens"`, `"outputtokens"`,
		`"total_tokens"`, `"totaltokens"`, `"call_id"`, `"callid"`).Replace(string(out))), &got); err != nil {
		t.Fatalf("sdk output %q: %v", out, err)
	}
	if tx := got.Text; tx.OutputText != "It is noon." || tx.Status != "completed" || tx.Object != "response" || strings.Join(tx.Types, ",") != "message" ||
		tx.Usage.InputTokens != 7 || tx.Usage.TotalTokens != tx.Usage.InputTokens+tx.Usage.OutputTokens {
		t.Errorf("text: %+v", tx)
	}
	if c := got.Call; strings.Join(c.Types, ",") != "function_call" || c.Name != "get_weather" || c.Args["city"] != "Paris" || !strings.HasPrefix(c.CallID, "call_") {
		t.Errorf("call: %+v", c)
	}
	if got.Answer != "It is Sunny, 21 C in Paris." || got.AfterStored != got.Answer {
		t.Errorf("answer after the call's output: %q; going on from the stored response: %q", got.Answer, got.AfterStored)
	}
	if strings.Join(got.Retrieved, ",") != "function_call" {
		t.Errorf("retrieved response: %v", got.Retrieved)
	}
	st := got.Stream
	if st.Deltas != "It is noon." || st.OutputText != "It is noon." || strings.Join(st.Types, ",") != "reasoning,message" ||
		len(st.Thought) != 1 || st.Thought[0].Text != "The user asks the time." || st.Thought[0].Type != "reasoning_text" {
		t.Errorf("stream: %+v", st)
	}
	if first, last := st.Events[0], st.Events[len(st.Events)-1]; first != "response.created" || last != "response.completed" {
		t.Errorf("stream events %v", st.Events)
	}
	if sc := got.StreamCall; sc.Name != "get_weather" || sc.Args != `{"city":"Paris"}` || sc.ArgDeltas != sc.Args || sc.Status != "completed" {
		t.Errorf("streamed call: %+v", sc)
	}
	const cutArgs = `{"city":"Paris","days":2,"unit":"cel`
	if cc := got.CutCall; cc.ArgDeltas != cutArgs || cc.ItemArgs != cutArgs || cc.Args != cutArgs || cc.Last != "response.incomplete" ||
		cc.ItemStatus != "incomplete" || cc.OutputStatus != "incomplete" || cc.Status != "incomplete" {
		t.Errorf("streamed call max_output_tokens cut: %+v", cc)
	}
	if p := got.Previous; p.Status != 404 || p.Param != "previous_response_id" || !strings.Contains(p.Message, `no stored response "resp_123"`) {
		t.Errorf("previous_response_id: %+v", p)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.requests[2].Messages; len(m) != 3 || len(m[1].ToolCalls) != 1 || m[2].Role != "tool" || m[2].ToolCallID != m[1].ToolCalls[0].ID {
		t.Errorf("the call and its output sent back: %+v", m)
	}
	if m := g.requests[0].Messages; len(m) != 2 || m[0].Role != "system" || m[0].Content != "Be brief." {
		t.Errorf("instructions: %+v", m)
	}
}

// The official Anthropic client, for POST /v1/messages.
const (
	anthropicPackage = "@anthropic-ai/sdk"
	anthropicVersion = "1.17.0"
)

// sdkMessagesScript drives POST /v1/messages with the official Anthropic
// client: text, a tool_use and the answer after its tool_result, a streamed
// answer with its thinking, a streamed tool_use, and an error.
const sdkMessagesScript = `
const mod = require("@anthropic-ai/sdk");
const Anthropic = mod.Anthropic || mod.default || mod;
const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });
const tools = [{ name: "get_weather", description: "Weather in a city.",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
(async () => {
  const out = {};
  const models = [];
  for await (const m of client.models.list()) models.push({ id: m.id, type: m.type, name: m.display_name, created: m.created_at });
  out.models = models;
  out.model = await client.models.retrieve(model);
  const r = await client.messages.create({ model, max_tokens: 64, system: "Be brief.", messages: [{ role: "user", content: "Time?" }] });
  out.text = { types: r.content.map((b) => b.type), text: r.content[0].text, stop: r.stop_reason, usage: r.usage, type: r.type, role: r.role };

  const ask = { role: "user", content: "Weather in Paris?" };
  const call = await client.messages.create({ model, max_tokens: 64, tools, messages: [ask] });
  const tu = call.content.find((b) => b.type === "tool_use");
  out.call = { types: call.content.map((b) => b.type), stop: call.stop_reason, name: tu && tu.name, input: tu && tu.input, id: tu && tu.id };
  const answer = await client.messages.create({ model, max_tokens: 64, tools, messages: [ask, { role: "assistant", content: call.content },
    { role: "user", content: [{ type: "tool_result", tool_use_id: tu.id, content: "Sunny, 21 C" }] }] });
  out.answer = { text: answer.content[0].text, stop: answer.stop_reason };

  const s = client.messages.stream({ model, max_tokens: 64, thinking: { type: "enabled", budget_tokens: 1024 },
    messages: [{ role: "user", content: "Time?" }] });
  let streamed = "";
  s.on("text", (t) => { streamed += t; });
  const fm = await s.finalMessage();
  out.stream = { streamed, types: fm.content.map((b) => b.type), thinking: (fm.content.find((b) => b.type === "thinking") || {}).thinking,
    text: (fm.content.find((b) => b.type === "text") || {}).text, stop: fm.stop_reason };

  const cs = client.messages.stream({ model, max_tokens: 64, tools, messages: [ask] });
  const cm = await cs.finalMessage();
  const stu = cm.content.find((b) => b.type === "tool_use");
  out.streamCall = { types: cm.content.map((b) => b.type), input: stu && stu.input, stop: cm.stop_reason };

  const cut = { role: "user", content: "Forecast for Paris?" };
  const xm = await client.messages.stream({ model, max_tokens: 64, tools, messages: [cut] }).finalMessage();
  const xw = await client.messages.create({ model, max_tokens: 64, tools, messages: [cut] });
  out.cutCall = { streamed: xm.content.find((b) => b.type === "tool_use").input, whole: xw.content.find((b) => b.type === "tool_use").input,
    stop: xm.stop_reason, wholeStop: xw.stop_reason };

  try {
    await client.messages.create({ model, max_tokens: 64, tools, tool_choice: { type: "tool", name: "get_time" }, messages: [ask] });
    out.error = { class: "none" };
  } catch (e) {
    out.error = { status: e.status, message: e.message, badRequest: e instanceof Anthropic.BadRequestError };
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`

// TestAnthropicSDK: the official Anthropic client reads POST /v1/messages —
// text, a tool_use and the answer after its tool_result, a streamed answer
// with its thinking block (the client's own accumulator builds the final
// message) and a streamed tool_use — and its errors.
func TestAnthropicSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the anthropic npm client")
	}
	modules := npmtest.Install(t, "SKIPPED ANTHROPIC SDK TEST", "drive the server with the official anthropic client", anthropicPackage, anthropicVersion)
	g := &responder{}
	s := start(t, Options{Engine: g})
	out := runScript(t, modules, sdkMessagesScript, strings.TrimSuffix(s.APIBase(), "/v1"), s.Token(), "darkroom")
	var got struct {
		Models []struct{ ID, Type, Name, Created string }
		Model  struct {
			ID, Type, DisplayName string
		}
		Text struct {
			Types            []string
			Text, Stop, Type string
			Role             string
			Usage            struct{ InputTokens, OutputTokens int }
		}
		Call struct {
			Types          []string
			Stop, Name, ID string
			Input          map[string]string
		}
		Answer struct{ Text, Stop string }
		Stream struct {
			Streamed, Thinking, Text, Stop string
			Types                          []string
		}
		StreamCall struct {
			Types []string
			Input map[string]string
			Stop  string
		}
		CutCall struct {
			Streamed, Whole map[string]any
			Stop, WholeStop string
		}
		Error struct {
			Status     int
			Message    string
			BadRequest bool
		}
	}
	if err := json.Unmarshal([]byte(strings.NewReplacer(`"input_tokens"`, `"inputtokens"`, `"output_tokens"`, `"outputtokens"`).Replace(string(out))), &got); err != nil {
		t.Fatalf("sdk output %q: %v", out, err)
	}
	if ms := got.Models; len(ms) != 1 || ms[0].ID != "darkroom" || ms[0].Type != "model" || ms[0].Name != "darkroom" {
		t.Errorf("models.list: %+v", ms)
	} else if _, err := time.Parse(time.RFC3339, ms[0].Created); err != nil {
		t.Errorf("models.list: created_at %q: %v", ms[0].Created, err)
	}
	if m := got.Model; m.ID != "darkroom" || m.Type != "model" {
		t.Errorf("models.retrieve: %+v", m)
	}
	if tx := got.Text; tx.Text != "It is noon." || tx.Stop != "end_turn" || tx.Type != "message" || tx.Role != "assistant" ||
		strings.Join(tx.Types, ",") != "text" || tx.Usage.InputTokens != 7 || tx.Usage.OutputTokens < 1 {
		t.Errorf("text: %+v", tx)
	}
	if c := got.Call; strings.Join(c.Types, ",") != "tool_use" || c.Stop != "tool_use" || c.Name != "get_weather" || c.Input["city"] != "Paris" ||
		!strings.HasPrefix(c.ID, "toolu_") {
		t.Errorf("tool_use: %+v", c)
	}
	if a := got.Answer; a.Text != "It is Sunny, 21 C in Paris." || a.Stop != "end_turn" {
		t.Errorf("answer after the tool_result: %+v", a)
	}
	if st := got.Stream; st.Streamed != "It is noon." || st.Text != "It is noon." || st.Thinking != "The user asks the time." ||
		strings.Join(st.Types, ",") != "thinking,text" || st.Stop != "end_turn" {
		t.Errorf("stream: %+v", st)
	}
	if sc := got.StreamCall; strings.Join(sc.Types, ",") != "tool_use" || sc.Input["city"] != "Paris" || sc.Stop != "tool_use" {
		t.Errorf("streamed tool_use: %+v", sc)
	}
	// A tool_use max_tokens cut: the client's accumulator reads the partial
	// input the stream sent as the whole message's input.
	if cc := got.CutCall; !reflect.DeepEqual(cc.Streamed, map[string]any{"city": "Paris", "days": 2.0}) || !reflect.DeepEqual(cc.Whole, cc.Streamed) ||
		cc.Stop != "max_tokens" || cc.WholeStop != "max_tokens" {
		t.Errorf("tool_use max_tokens cut: %+v", cc)
	}
	if e := got.Error; e.Status != 400 || !e.BadRequest || !strings.Contains(e.Message, `"get_time", which is not among the tools`) {
		t.Errorf("tool_choice naming no tool: %+v", e)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.requests[2].Messages; len(m) != 3 || len(m[1].ToolCalls) != 1 || m[2].Role != "tool" || m[2].ToolCallID != m[1].ToolCalls[0].ID ||
		m[1].ToolCalls[0].Arguments != `{"city":"Paris"}` {
		t.Errorf("the tool_use and its tool_result sent back: %+v", m)
	}
}

// sdkParseScript asks for structured outputs the way the SDK's parse helper
// does — a strict json_schema answer, then a strict tool's forced call —
// and prints what the helper parsed: argv[2] base URL, argv[3] key, argv[4]
// model id.
const sdkParseScript = `
const mod = require("openai");
const OpenAI = mod.OpenAI || mod.default || mod;
const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120000 });
const messages = [{ role: "user", content: "What is the weather in Oslo this week?" }];
const schema = { type: "object", additionalProperties: false, required: ["unit", "days", "windy"], properties: {
  unit: { type: "string", enum: ["celsius", "fahrenheit"] }, days: { type: "integer", minimum: 1, maximum: 7 }, windy: { type: "boolean" } } };
(async () => {
  const out = {};
  const a = await client.chat.completions.parse({ model, messages, max_tokens: 400, seed: 3,
    response_format: { type: "json_schema", json_schema: { name: "forecast", schema, strict: true } } });
  out.answer = { parsed: a.choices[0].message.parsed, finish: a.choices[0].finish_reason };
  const tools = [{ type: "function", function: { name: "get_forecast", description: "The forecast for a week.", parameters: schema, strict: true } }];
  const c = await client.chat.completions.parse({ model, messages, tools, tool_choice: "required", max_tokens: 64, seed: 3 });
  const m = c.choices[0].message;
  out.call = { finish: c.choices[0].finish_reason, content: m.content,
    calls: (m.tool_calls || []).map((t) => ({ name: t.function.name, args: t.function.parsed_arguments })) };
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`

// TestOpenAISDKParse: the official client's parse helper, which throws where
// an answer is not JSON or a strict tool's arguments are not, reads the
// built-in Mini's held answers: a strict json_schema answer and a forced call
// of a strict tool, each an instance of the schema (an enum, a bounded
// integer, a boolean: what the hold leaves the Mini, which never learned
// JSON or calls, can only close). Unheld, the Mini wrote word salad where a
// call was forced.
func TestOpenAISDKParse(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the openai npm client and the Darkroom Mini")
	}
	modules := installSDK(t)
	e := loadMini(t)
	s := start(t, Options{Model: func(context.Context) (Model, error) { return Model{ID: "darkroom-mini", Engine: e}, nil }})
	out := runScript(t, modules, sdkParseScript, s.APIBase(), s.Token(), "darkroom-mini")
	type forecast struct {
		Unit  string
		Days  int
		Windy *bool
	}
	var got struct {
		Answer struct {
			Parsed *forecast
			Finish string
		}
		Call struct {
			Finish  string
			Content *string
			Calls   []struct {
				Name string
				Args *forecast
			}
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("sdk output %q: %v", out, err)
	}
	instance := func(f *forecast) bool {
		return f != nil && (f.Unit == "celsius" || f.Unit == "fahrenheit") && f.Days >= 1 && f.Days <= 7 && f.Windy != nil
	}
	if a := got.Answer; a.Finish != "stop" || !instance(a.Parsed) {
		t.Errorf("json_schema answer: %s, parsed %+v; want an instance of the schema", a.Finish, a.Parsed)
	}
	if c := got.Call; c.Finish != "tool_calls" || c.Content != nil || len(c.Calls) != 1 || c.Calls[0].Name != "get_forecast" || !instance(c.Calls[0].Args) {
		t.Errorf("forced strict call: %s", out)
	}
	t.Logf("%s", out)
}
