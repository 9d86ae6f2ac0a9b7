package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
	"github.com/darkroomlabs/darkroom/engine/sampler"
)

const (
	weatherTool = `{"type":"function","function":{"name":"get_weather","description":"Weather in a city.",` +
		`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`
	timeTool  = `{"type":"function","function":{"name":"get_time","description":"The time now."}}`
	askParis  = `"messages":[{"role":"user","content":"Weather and time in Paris?"}]`
	twoCalls  = `Let me check.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|><|tool_call>call:get_time{}<tool_call|>`
	callsOnly = `<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2}<tool_call|>`
)

// postAPI posts body to the API's path with its key, and decodes the answer
// as a T (the API's own type), with the raw body.
func postAPI[T any](t *testing.T, s *Server, path, body string) (int, T, string) {
	t.Helper()
	resp, raw := do(t, nil, "POST", base(s)+path, body, map[string]string{"Authorization": "Bearer " + s.Token(), "Content-Type": "application/json"})
	var r T
	_ = json.Unmarshal([]byte(raw), &r)
	return resp.StatusCode, r, raw
}

// chatWire posts a chat completion request.
func chatWire(t *testing.T, s *Server, body string) (int, api.ChatCompletion, string) {
	t.Helper()
	return postAPI[api.ChatCompletion](t, s, "/v1/chat/completions", body)
}

// TestToolCallsWhole: with tools declared, the calls the model writes come
// back as the message's tool_calls (each with an id, its name and its
// arguments as a JSON object), the text before them as its content, and the
// finish reason "tool_calls"; the engine was asked with the tools and no lead.
func TestToolCallsWhole(t *testing.T) {
	g := &fakeGen{final: twoCalls}
	s := start(t, Options{Engine: g})
	code, r, raw := chatWire(t, s, `{`+askParis+`,"tools":[`+weatherTool+`,`+timeTool+`]}`)
	if code != 200 || len(r.Choices) != 1 {
		t.Fatalf("%d %s", code, raw)
	}
	c := r.Choices[0]
	if c.Message.Content == nil || *c.Message.Content != "Let me check." || *c.FinishReason != api.FinishToolCalls || len(c.Message.ToolCalls) != 2 {
		t.Fatalf("choice %s", raw)
	}
	want := []api.FunctionCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}, {Name: "get_time", Arguments: `{}`}}
	for i, call := range c.Message.ToolCalls {
		if call.Function != want[i] || call.Type != "function" || !strings.HasPrefix(call.ID, "call_") || len(call.ID) != 29 || call.Index != nil {
			t.Errorf("call %d: %+v, want %+v with an id", i, call, want[i])
		}
	}
	if c.Message.ToolCalls[0].ID == c.Message.ToolCalls[1].ID {
		t.Errorf("two calls share the id %s", c.Message.ToolCalls[0].ID)
	}
	req := g.lastRequest(t)
	if len(req.Tools) != 2 || req.Tools[0].Name != "get_weather" || req.Tools[0].Description != "Weather in a city." ||
		!json.Valid(req.Tools[0].Parameters) || req.Tools[1].Name != "get_time" || req.Opening != "" || req.Lead != "" {
		t.Errorf("engine request tools %+v, opening %q, lead %q", req.Tools, req.Opening, req.Lead)
	}

	// Calls alone: the content is null; parallel_tool_calls false keeps the first call.
	g.final = callsOnly + `<|tool_call>call:get_time{}<tool_call|>`
	_, r, raw = chatWire(t, s, `{`+askParis+`,"tools":[`+weatherTool+`,`+timeTool+`],"parallel_tool_calls":false}`)
	if c := r.Choices[0]; c.Message.Content != nil || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Arguments != `{"city":"Paris","days":2}` {
		t.Errorf("one call, no text: %s", raw)
	}

	// No call: an ordinary answer; without tools the same text is not read for calls.
	g.final = "It is sunny."
	if _, r, raw = chatWire(t, s, `{`+askParis+`,"tools":[`+weatherTool+`]}`); *r.Choices[0].Message.Content != "It is sunny." ||
		*r.Choices[0].FinishReason != "stop" || r.Choices[0].Message.ToolCalls != nil {
		t.Errorf("no call: %s", raw)
	}
	g.final = twoCalls
	if _, r, raw = chatWire(t, s, `{`+askParis+`,"tools":[`+weatherTool+`],"tool_choice":"none"}`); *r.Choices[0].Message.Content != twoCalls ||
		len(g.lastRequest(t).Tools) != 0 {
		t.Errorf(`tool_choice "none": %s (engine tools %v), want no tool declared and the text as written`, raw, g.lastRequest(t).Tools)
	}
}

// TestToolCallsStream: a stream sends the text before the first call as it is
// written (never a piece of the call's markup, even where a commit ends inside
// "<|tool_call>"), then each call as it is written — its index, id, type and
// name in its first piece, then its arguments in pieces, none of which the
// whole answer takes back (a key with its value's start, a bare value once
// it ends, a string less what may be its end quote) — and the chunk that
// finishes the choice, with no calls of its own. The pieces add up to the
// whole answer's calls.
func TestToolCallsStream(t *testing.T) {
	const weather = `Let me check.<|tool_call>call:get_weather{city:<|"|>`
	const final = weather + `Paris<|"|>,days:2}<tool_call|><|tool_call>call:get_time{}<tool_call|>`
	gate := make(chan struct{})
	g := &fakeGen{commits: []string{"Let me ", "Let me check.<|tool", weather + "Par", weather + `Paris<|"|>,days:2`,
		weather + `Paris<|"|>,days:2}<tool_call|><|tool_call>call:get_ti`, final}, final: final, gate: gate}
	s := start(t, Options{Engine: g})
	chunks, _ := rawChunks(t, s, `{`+askParis+`,"tools":[`+weatherTool+`,`+timeTool+`],"stream":true}`)
	next(t, chunks) // the role
	type piece struct {
		content    string
		index      int
		name, args string
	}
	var ids []string
	for i, want := range []piece{
		{content: "Let me "}, {content: "check."}, {name: "get_weather", args: `{"city":"Par`}, {args: `is"`}, {args: `,"days":2}`},
		{index: 1, name: "get_time", args: `{}`},
	} {
		gate <- struct{}{}
		raw := next(t, chunks)
		var ch api.ChatCompletion
		if err := json.Unmarshal([]byte(raw), &ch); err != nil || len(ch.Choices) != 1 || ch.Choices[0].FinishReason != nil {
			t.Fatalf("chunk %d %s: %v", i, raw, err)
		}
		d := ch.Choices[0].Delta
		if want.content != "" {
			if d.Content == nil || *d.Content != want.content || d.ToolCalls != nil {
				t.Fatalf("chunk %d %s, want the content %q", i, raw, want.content)
			}
			continue
		}
		if d.Content != nil || len(d.ToolCalls) != 1 {
			t.Fatalf("chunk %d %s, want a piece of call %d and no content", i, raw, want.index)
		}
		c := d.ToolCalls[0]
		if c.Index == nil || *c.Index != want.index || c.Function.Name != want.name || c.Function.Arguments != want.args ||
			(want.name != "") != (c.ID != "" && c.Type == "function") {
			t.Fatalf("chunk %d %s, want call %d's piece %+v", i, raw, want.index, want)
		}
		if c.ID != "" {
			ids = append(ids, c.ID)
		}
	}
	gate <- struct{}{}
	raw := next(t, chunks)
	var fin api.ChatCompletion
	if err := json.Unmarshal([]byte(raw), &fin); err != nil || len(fin.Choices) != 1 || fin.Choices[0].FinishReason == nil ||
		*fin.Choices[0].FinishReason != api.FinishToolCalls || fin.Choices[0].Delta.ToolCalls != nil {
		t.Fatalf("finish chunk %s: %v", raw, err)
	}
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Errorf("call ids %v", ids)
	}
}

// TestToolCallCut: an answer that ends inside a call (max_tokens, a stop
// string) has that call as its last, its arguments as far as written — what
// the stream sent of them, not a JSON object, as OpenAI's API gives a call
// max_tokens cut — and finishes with the reason it ended, not tool_calls;
// Anthropic's tool_use input is its values written whole (an unfinished
// string left out, as Anthropic's clients read a stream cut there), its
// stop_reason max_tokens; the Responses API's call item is incomplete.
func TestToolCallCut(t *testing.T) {
	cut := `I'll look.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2}<tool_call|><|tool_call>call:get_weather{city:<|"|>Lyo`
	s := start(t, Options{Engine: &lengthCut{fakeGen{commits: []string{cut}, final: cut}}})
	tools := `"tools":[` + weatherTool + `]`
	_, r, raw := chatWire(t, s, `{`+askParis+`,`+tools+`}`)
	if c := r.Choices[0]; *c.FinishReason != api.FinishLength || len(c.Message.ToolCalls) != 2 || *c.Message.Content != "I'll look." ||
		c.Message.ToolCalls[0].Function.Arguments != `{"city":"Paris","days":2}` || c.Message.ToolCalls[1].Function.Arguments != `{"city":"Lyo` {
		t.Errorf("whole answer cut in its second call: %s", raw)
	}
	var args [2]strings.Builder
	var finish string
	for _, raw := range streamRaw(t, s, `{`+askParis+`,`+tools+`,"stream":true}`) {
		var ch api.ChatCompletion
		if err := json.Unmarshal([]byte(raw), &ch); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			for _, call := range c.Delta.ToolCalls {
				args[*call.Index].WriteString(call.Function.Arguments)
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	if args[0].String() != `{"city":"Paris","days":2}` || args[1].String() != `{"city":"Lyo` || finish != api.FinishLength {
		t.Errorf("streamed arguments %q %q, finish %q", args[0].String(), args[1].String(), finish)
	}

	code, msg, body := messagesCall(t, s, `{"max_tokens":64,"messages":[{"role":"user","content":"Weather in Paris?"}],`+
		`"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}`)
	if code != 200 || len(msg.Content) != 3 || msg.StopReason == nil || *msg.StopReason != api.StopMaxTokens ||
		string(msg.Content[1].Input) != `{"city":"Paris","days":2}` || string(msg.Content[2].Input) != `{}` {
		t.Errorf("Anthropic message cut in its second call: %d %s", code, body)
	}

	code, resp, body := responsesCall(t, s, `{"input":"Weather in Paris?","tools":[{"type":"function","name":"get_weather",`+
		`"parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`)
	if code != 200 || resp.Status != api.StatusIncomplete || len(resp.Output) != 3 || resp.Output[1].Status != api.StatusCompleted ||
		resp.Output[2].Status != api.StatusIncomplete || *resp.Output[2].Arguments != `{"city":"Lyo` {
		t.Errorf("response cut in its second call: %d %s", code, body)
	}
}

// rawChunks is a chat stream's chunks as they arrive, up to "[DONE]"; done
// says whether it came (read it once the channel closes).
func rawChunks(t *testing.T, s *Server, body string) (chunks <-chan string, done *bool) {
	t.Helper()
	req, _ := http.NewRequest("POST", base(s)+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	ch, done := make(chan string, 64), new(bool)
	go func() {
		defer close(ch)
		for ev := range readSSE(resp.Body) {
			if ev.data == api.Done {
				*done = true
				return
			}
			ch <- ev.data
		}
	}()
	return ch, done
}

// streamRaw is a chat stream's chunks as sent, up to "[DONE]".
func streamRaw(t *testing.T, s *Server, body string) []string {
	t.Helper()
	ch, done := rawChunks(t, s, body)
	var chunks []string
	for c := range ch {
		chunks = append(chunks, c)
	}
	if !*done {
		t.Fatalf("stream ended with no [DONE] after %q", chunks)
	}
	return chunks
}

// TestToolChoice: "required" holds the answer to calls and a named function
// to calls of it, from the answer's first token (no opening); "auto" holds
// none where the answer is the polaroid's.
func TestToolChoice(t *testing.T) {
	g := &fakeGen{final: callsOnly}
	s := start(t, Options{Engine: g, APIMode: engine.Diffusion})
	for choice, want := range map[string]*engine.CallHold{
		`"auto"`:     nil,
		`"required"`: {Only: true},
		`{"type":"function","function":{"name":"get_weather"}}`: {Only: true, Function: "get_weather"},
	} {
		code, r, raw := chatWire(t, s, `{`+askParis+`,"tools":[`+weatherTool+`,`+timeTool+`],"tool_choice":`+choice+`}`)
		req := g.lastRequest(t)
		if h := req.ToolCalls; code != 200 || req.Opening != "" || len(req.Tools) != 2 || (h == nil) != (want == nil) ||
			h != nil && (h.Only != want.Only || h.Function != want.Function) {
			t.Errorf("tool_choice %s: %d, opening %q, hold %+v; want %+v", choice, code, req.Opening, h, want)
		}
		if len(r.Choices) != 1 || len(r.Choices[0].Message.ToolCalls) != 1 {
			t.Errorf("tool_choice %s: %s", choice, raw)
		}
	}
	// Every token of a forced call is the model's pick: it has logprobs.
	if code, _, raw := chatWire(t, s, `{`+askParis+`,"tools":[`+weatherTool+`],"tool_choice":"required","logprobs":true}`); code != 200 {
		t.Errorf("forced call with logprobs: %d %s", code, raw)
	}
}

// TestToolCallsHeld: a forced call or a strict tool asks for the calls to be
// held — the answer is written in AR mode where no mode is named (the header
// says why), with each tool's compiled parameters — and where the printer
// writes anyway the calls of any request with tools are held too; a plain
// request with tools in diffusion mode is not held. A strict tool whose
// parameters cannot be held to is refused; another's are held to any object.
func TestToolCallsHeld(t *testing.T) {
	g := &fakeGen{final: callsOnly}
	s := start(t, Options{Engine: g, APIMode: engine.Diffusion})
	strictWeather := strings.Replace(weatherTool, `"name":"get_weather",`, `"name":"get_weather","strict":true,`, 1)
	allOf := `{"type":"function","function":{"name":"pick","parameters":{"type":"object","allOf":[{"type":"object"}]}}}`
	for _, c := range []struct {
		name, body       string
		mode             engine.Mode
		held, only, once bool
		reason           string
	}{
		{"required", `"tools":[` + weatherTool + `,` + timeTool + `],"tool_choice":"required"`, engine.AR, true, true, false, toolsMode},
		{"a function, one call", `"tools":[` + weatherTool + `],"tool_choice":{"type":"function","function":{"name":"get_weather"}},"parallel_tool_calls":false`,
			engine.AR, true, true, true, toolsMode},
		{"a strict tool", `"tools":[` + strictWeather + `]`, engine.AR, true, false, false, toolsMode},
		{"auto", `"tools":[` + weatherTool + `]`, engine.Diffusion, false, false, false, ""},
		{"auto, ar named", `"tools":[` + weatherTool + `],"mode":"ar"`, engine.AR, true, false, false, ""},
		{"a schema the hold cannot read, not strict", `"tools":[` + allOf + `,` + weatherTool + `],"tool_choice":"required"`, engine.AR, true, true, false, toolsMode},
	} {
		resp, raw := do(t, nil, "POST", base(s)+"/v1/chat/completions", `{`+askParis+`,`+c.body+`}`,
			map[string]string{"Authorization": "Bearer " + s.Token(), "Content-Type": "application/json"})
		req := g.lastRequest(t)
		if resp.StatusCode != 200 || req.Mode != c.mode || (req.ToolCalls != nil) != c.held {
			t.Errorf("%s: %d %s: mode %s, held %v; want %s, %v", c.name, resp.StatusCode, raw, req.Mode, req.ToolCalls != nil, c.mode, c.held)
			continue
		}
		if got := resp.Header.Get("X-Darkroom-Mode-Reason"); c.reason != "" && got != c.reason {
			t.Errorf("%s: mode reason %q, want %q", c.name, got, c.reason)
		}
		if h := req.ToolCalls; h != nil {
			if h.Only != c.only || h.Single != c.once || h.Schemas["get_weather"] == nil || h.Schemas["pick"] != nil || len(h.Schemas) != 1 {
				t.Errorf("%s: hold %+v, want only %v, single %v, get_weather's schema alone", c.name, h, c.only, c.once)
			}
		}
	}
}

// TestToolRequestErrors: what cannot be declared, chosen or sent back is a
// 400 naming the field, in words that say what to send; nothing is generated.
func TestToolRequestErrors(t *testing.T) {
	g := &fakeGen{final: "x"}
	s := start(t, Options{Engine: g})
	tools := `"tools":[` + weatherTool + `]`
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`
	many := strings.Repeat(timeTool+",", maxTools) + timeTool
	for _, c := range []struct{ body, param, says string }{
		{askParis + `,"functions":[{"name":"get_weather","parameters":{}}]`, "functions", `"tools"`},
		{askParis + `,"function_call":"auto"`, "function_call", "deprecated"},
		{askParis + `,"tools":[{"type":"retrieval"}]`, "tools[0].type", `want "function"`},
		{askParis + `,"tools":[{"type":"function","function":{"name":"get weather"}}]`, "tools[0].function.name", "letters, digits"},
		{askParis + `,"tools":[` + weatherTool + `,` + weatherTool + `]`, "tools[1].function.name", "a second tool"},
		{askParis + `,"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]`, "tools[0].function.parameters", "JSON Schema object"},
		{askParis + `,"tools":[` + many + `]`, "tools", "at most"},
		{askParis + `,"tool_choice":"required"`, "tool_choice", "needs tools"},
		{askParis + `,` + tools + `,"tool_choice":"always"`, "tool_choice", `"required"`},
		{askParis + `,` + tools + `,"tool_choice":{"type":"function","function":{"name":"get_time"}}`, "tool_choice", "not among the tools"},
		{askParis + `,` + tools + `,"tool_choice":"required","response_format":{"type":"json_object"}`, "response_format", "not a JSON object"},
		{askParis + `,` + tools + `,"tool_choice":"required","darkroom":{"opening":"Sure"}`, "darkroom.opening", "makes the answer a call"},
		{askParis + `,` + tools + `,"tool_choice":"required","mode":"diffusion"`, "tool_choice", `"mode": "ar"`},
		{askParis + `,"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object","not":{}}}}]`,
			"tools[0].function.parameters", `"not" is not supported`},
		{askParis + `,"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object","properties":{"a b":{}}}}}]`,
			"tools[0].function.parameters", `"a b"`},
		{`"messages":[{"role":"tool","tool_call_id":"x","content":"sunny"}]`, "messages[0].role", "must follow the assistant message"},
		{`"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"x","content":"sunny"}]`, "messages[1].role", "must follow"},
		{`"messages":[{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"call_9","content":"sunny"}]`, "messages[2].tool_call_id", "not the id of a call"},
		{`"messages":[{"role":"user","content":"hi"},` + call + `]`, "messages", "have no results"},
		{`"messages":[{"role":"user","content":"hi","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}]`, "messages[0].tool_calls", "only assistant"},
		{`"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f{","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"x"}]`,
			"messages[1].tool_calls[0].function.name", "letters, digits"},
	} {
		code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{`+c.body+`}`)
		if code != 400 || r.Error == nil || r.Error.Param == nil || *r.Error.Param != c.param || !strings.Contains(r.Error.Message, c.says) {
			t.Errorf("%s:\n got %d %s\nwant 400 about %s saying %q", c.body, code, raw, c.param, c.says)
		}
	}
	g.mu.Lock()
	n := len(g.requests)
	g.mu.Unlock()
	if n != 0 {
		t.Errorf("%d generations for refused requests", n)
	}
	// Asking for no function is asking for nothing (as before tools were read).
	for _, none := range []string{`"functions":[]`, `"function_call":"none"`, `"functions":null,"function_call":null`, `"tools":[],"tool_choice":"none"`} {
		if code, _, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{`+askParis+`,`+none+`}`); code != 200 {
			t.Errorf("%s: %d %s", none, code, raw)
		}
	}
}

// TestToolResultsSentBack: a conversation that carries the model's calls and
// their results (OpenAI's assistant tool_calls and tool messages) reaches the
// engine as the chat template's messages, each result naming its call.
func TestToolResultsSentBack(t *testing.T) {
	g := &fakeGen{final: "Sunny, 21 C, at noon."}
	s := start(t, Options{Engine: g})
	body := `{"messages":[{"role":"user","content":"Weather and time in Paris?"},
		{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
			{"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"Sunny, 21 C"},
		{"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"12:00"}]}],
		"tools":[` + weatherTool + `,` + timeTool + `]}`
	code, r, raw := chatWire(t, s, body)
	if code != 200 || *r.Choices[0].Message.Content != "Sunny, 21 C, at noon." || *r.Choices[0].FinishReason != "stop" {
		t.Fatalf("%d %s", code, raw)
	}
	want := []engine.Message{
		{Role: "user", Content: "Weather and time in Paris?"},
		{Role: "model", ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}, {ID: "call_2", Name: "get_time", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "call_1", Content: "Sunny, 21 C"},
		{Role: "tool", ToolCallID: "call_2", Content: "12:00"},
	}
	if got := g.lastRequest(t).Messages; !reflect.DeepEqual(got, want) {
		t.Errorf("engine messages\n got %+v\nwant %+v", got, want)
	}
}

// TestToolsRealModel: on a real (tiny, random) model, the tools reach the
// prompt (POST /tokenize with them counts what the chat endpoint reads) and a
// named tool_choice is the engine's run with the answer held to calls of the
// tool: the server answers what engine.Generate writes for
// the same request, its calls read from that text. A forced call is written in
// AR mode, and refused with diffusion named.
func TestToolsRealModel(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e, ModelID: "tiny"})
	msgs := []engine.Message{{Role: "user", Content: "Weather in Paris?"}}
	tools := []engine.Tool{{Name: "get_weather", Description: "Weather in a city.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}
	schema, err := sampler.CompileSchema(tools[0].Parameters)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Generate(context.Background(), engine.Request{Messages: msgs, Tools: tools, Mode: engine.AR, Seed: 5,
		Sampling:  engine.Sampling{MaxNewTokens: 24, Temperature: 1},
		ToolCalls: &engine.CallHold{Only: true, Function: "get_weather", Schemas: map[string]*sampler.Schema{"get_weather": schema}}})
	if err != nil {
		t.Fatal(err)
	}
	if start, ok := e.Tokenizer().ID(chat.ToolCallStart); !strings.HasPrefix(res.Text, "<|tool_call>call:get_weather{") || !ok || res.Tokens[0] != start {
		t.Fatalf("engine text %q (tokens %v) does not begin with a call of get_weather, its first token <|tool_call> (id %d)", res.Text, res.Tokens, start)
	}
	content, calls, _ := answerCalls(res.Text, true, nil)
	code, r, raw := chatWire(t, s, `{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[`+weatherTool+`],`+
		`"tool_choice":{"type":"function","function":{"name":"get_weather"}},"mode":"ar","max_tokens":24,"temperature":1,"seed":5}`)
	if code != 200 || len(r.Choices) != 1 {
		t.Fatalf("%d %s", code, raw)
	}
	m := r.Choices[0].Message
	if got := m.Content; (got == nil) != (content == "" && len(calls) > 0) || got != nil && *got != content || len(m.ToolCalls) != len(calls) ||
		r.Usage.PromptTokens != res.PromptTokens || r.Usage.CompletionTokens != len(res.Tokens) {
		t.Errorf("server answer %s\nwant the engine's %q read as content %q and %d calls, %d prompt tokens", raw, res.Text, content, len(calls), res.PromptTokens)
	}
	for i := range calls {
		if m.ToolCalls[i].Function != calls[i].Function {
			t.Errorf("call %d: %+v, want %+v", i, m.ToolCalls[i].Function, calls[i].Function)
		}
	}

	// A JSON answer with tools declared is held to its object, its calls not
	// held (the two holds met in the engine and failed the request).
	code, r, raw = chatWire(t, s, `{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[`+weatherTool+`],`+
		`"response_format":{"type":"json_object"},"mode":"ar","max_tokens":8,"seed":5}`)
	if code != 200 || len(r.Choices) != 1 {
		t.Errorf("json_object with tools: %d %s", code, raw)
	}

	// A forced call is the printer's; diffusion cannot hold it.
	code, r, raw = chatWire(t, s, `{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[`+weatherTool+`],`+
		`"tool_choice":"required","max_tokens":12,"seed":5}`)
	if code != 200 || r.SystemFingerprint != "darkroom-ar" || len(r.Choices[0].Message.ToolCalls) > 1 {
		t.Errorf("tool_choice required, no mode named: %d %s", code, raw)
	}
	code, _, raw = chatWire(t, s, `{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[`+weatherTool+`],`+
		`"tool_choice":"required","mode":"diffusion","max_tokens":12,"seed":5}`)
	if code != 400 || !strings.Contains(raw, `"param":"tool_choice"`) || !strings.Contains(raw, `\"mode\": \"ar\"`) {
		t.Errorf("diffusion, tool_choice required: %d %s", code, raw)
	}

	// The declaration is in the prompt: /tokenize with the tools counts it.
	var plain, declared struct{ Count int }
	for _, c := range []struct {
		body string
		out  *struct{ Count int }
	}{{`{"messages":[{"role":"user","content":"Weather in Paris?"}]}`, &plain}, {`{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[` + weatherTool + `]}`, &declared}} {
		resp, body := do(t, nil, "POST", base(s)+"/tokenize", c.body, map[string]string{"Authorization": "Bearer " + s.Token()})
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), c.out) != nil {
			t.Fatalf("tokenize: %d %s", resp.StatusCode, body)
		}
	}
	if declared.Count != res.PromptTokens || plain.Count >= declared.Count {
		t.Errorf("tokenize: %d tokens with the tools, %d without; the engine read %d", declared.Count, plain.Count, res.PromptTokens)
	}
}

// TestHeldCallMini: the built-in Mini, which never learned to call a tool,
// answers a forced call of a strict tool whose arguments are an enum and a
// date with one whole call, the date a date — for each seed. (A date's
// pattern once let it write a lead byte no character it could take begins,
// and the call ended cut, with no tool_calls.)
func TestHeldCallMini(t *testing.T) {
	s := start(t, Options{Model: func(context.Context) (Model, error) { return Model{ID: "darkroom-mini", Engine: loadMini(t)}, nil }})
	tool := `{"type":"function","function":{"name":"get_weather","strict":true,"parameters":{"type":"object","properties":{` +
		`"unit":{"enum":["celsius","fahrenheit"]},"when":{"type":"string","format":"date"}},"required":["unit","when"],"additionalProperties":false}}}`
	for seed := range 6 {
		code, r, raw := chatWire(t, s, fmt.Sprintf(`{"messages":[{"role":"user","content":"Weather in Oslo?"}],"tools":[%s],`+
			`"tool_choice":"required","max_tokens":60,"temperature":1,"seed":%d}`, tool, seed))
		if code != 200 || len(r.Choices) != 1 || len(r.Choices[0].Message.ToolCalls) != 1 {
			t.Fatalf("seed %d: %d %s", seed, code, raw)
		}
		var args struct{ Unit, When string }
		if err := json.Unmarshal([]byte(r.Choices[0].Message.ToolCalls[0].Function.Arguments), &args); err != nil ||
			args.Unit != "celsius" && args.Unit != "fahrenheit" || !regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`).MatchString(args.When) {
			t.Errorf("seed %d: arguments %s", seed, r.Choices[0].Message.ToolCalls[0].Function.Arguments)
		}
	}
}

// TestToolCallInThought: a thought that writes a call's start token is
// thought (as chat.Parse reads it); the stream sends the whole thought, then
// the answer's call — it stopped at the token before, inside the thought,
// and sent neither.
func TestToolCallInThought(t *testing.T) {
	const text = "<|channel>thought\nI could write <|tool_call> here.<channel|>" + callsOnly
	s := start(t, Options{Engine: &fakeGen{commits: []string{text[:40], text[:70], text}, final: text}})
	var thought strings.Builder
	var calls []api.ToolCall
	for _, raw := range streamRaw(t, s, `{`+askParis+`,"tools":[`+weatherTool+`],"reasoning_effort":"high","stream":true}`) {
		var ch api.ChatCompletion
		if err := json.Unmarshal([]byte(raw), &ch); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			if c.Delta.ReasoningContent != nil {
				thought.WriteString(*c.Delta.ReasoningContent)
			}
			calls = append(calls, c.Delta.ToolCalls...)
		}
	}
	if thought.String() != "I could write <|tool_call> here." || len(calls) != 1 || calls[0].Function.Arguments != `{"city":"Paris","days":2}` {
		t.Errorf("streamed thought %q, calls %+v", thought.String(), calls)
	}
}

// BenchmarkCallStream: a stream's cost of reading calls as they come, 4
// bytes a feed: a long call (16 KB of file text as a string argument), whose
// arguments each feed reads again, and a model looping on "[" (3 KB of them),
// which each level of nesting scanned again (2.6 s before the depth was
// bounded and the content and closed calls were left behind).
func BenchmarkCallStream(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"file", `I'll write it.<|tool_call>call:write_file{path:<|"|>main.go<|"|>,content:<|"|>` +
			strings.Repeat("func f() { return \"x\" }\n", 16<<10/25) + `<|"|>}<tool_call|>`},
		{"nested", "<|tool_call>call:f{a:" + strings.Repeat("[", 3<<10)},
		{"text", strings.Repeat("Plain words, no call at all. ", 16<<10/29)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				cs := &callStream{parallel: true}
				for i := 0; i < len(c.text); i += 4 {
					cs.feed(c.text[i:min(i+4, len(c.text))], false)
				}
				cs.feed("", true)
			}
		})
	}
}

// TestCallStreamMatchesAnswer: however a text is cut into deltas, the
// content and calls a stream gives out (through the thought splitter, then
// the call stream) add up to what apiRun.read reads from the whole text — the
// calls' names, ids and arguments, the content less its whitespace around.
func TestCallStreamMatchesAnswer(t *testing.T) {
	pieces := []string{"<|channel>thought\n", "<channel|>", "<|tool_call>", "call:", "get_weather", "{", "}", "<tool_call|>", chat.Quote,
		"city:", "Paris", ",", "days:", "2", "[", "]", " ", "é", "<|", "tool", "_call>", "x:y", "<|\"", "|>", "\n",
		"<|tool_call>call:get_weather{", "}<tool_call|>", "<|tool_call>call:f{", "}<tool_call|>"}
	rng := rand.New(rand.NewPCG(3, 4))
	texts := []string{twoCalls, callsOnly, "<|channel>thought\nI could write <|tool_call> here.<channel|>" + callsOnly,
		`Sure.<|tool_call>call:f{a:<|"|>x<|"|>,a:2,b:[1,{c:<|"|>d}<|"|>}]}<tool_call|> after`}
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(16) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		texts = append(texts, b.String())
	}
	called := 0 // texts with a call
	for _, text := range texts {
		if _, calls := chat.ReadCalls(text, true); len(calls) > 0 {
			called++
		}
		for _, thinking := range []bool{false, true} {
			for _, parallel := range []bool{false, true} {
				a := &apiRun{req: engine.Request{Thinking: thinking, Tools: []engine.Tool{{Name: "get_weather"}}}, parallel: parallel}
				split, cs := splitterFor(&a.req), a.newCallStream()
				var content strings.Builder
				var calls []api.ToolCall
				feed := func(delta string, final bool) {
					_, an := split.feed(delta, final)
					an, parts := cs.feed(an, final)
					content.WriteString(an)
					for _, p := range parts {
						if p.begin != (p.index == len(calls)) {
							t.Fatalf("%q: part %+v with %d calls begun", text, p, len(calls))
						}
						if p.begin {
							calls = append(calls, api.ToolCall{ID: p.call.ID, Function: api.FunctionCall{Name: p.call.Function.Name}})
						}
						calls[p.index].Function.Arguments += p.args
					}
				}
				for rest := text; rest != ""; {
					n := 1 + rng.IntN(min(len(rest), 9))
					feed(rest[:n], false)
					rest = rest[n:]
				}
				feed("", true)
				c := completion{text: text}
				a.read(&c, cs)
				if strings.TrimSpace(content.String()) != c.text || len(calls) != len(c.calls) {
					t.Fatalf("%q (thinking %v): streamed %q and %+v; whole %q and %+v", text, thinking, content.String(), calls, c.text, c.calls)
				}
				for k := range calls {
					if w := c.calls[k]; calls[k].ID != w.ID || calls[k].Function != w.Function {
						t.Fatalf("%q (thinking %v): streamed call %+v; whole %+v", text, thinking, calls[k], w)
					}
				}
			}
		}
	}
	if called < len(texts)/4 {
		t.Errorf("only %d of %d texts hold a call", called, len(texts))
	}
}
