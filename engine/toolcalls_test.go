package engine

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// TestToolCallsHeldRealModel: on a real (tiny, random) model with its
// tokenizer, a forced call held to tools whose arguments are a finite
// language (an enum and a boolean; none) is always whole: the answer ends where the
// call does, and engine/chat's parser reads it back as a call of that tool
// with an instance of its schema — greedy and sampled, on the host path and
// in graphs alike. Unheld, the same model writes no call.
func TestToolCallsHeldRealModel(t *testing.T) {
	dir := writeTinyModel(t)
	host, graph := loadGo(t, dir, false), loadGo(t, dir, true)
	raw := `{"type":"object","properties":{"unit":{"enum":["celsius","fahrenheit"]},"now":{"type":"boolean"}},"required":["unit","now"],"additionalProperties":false}`
	schema, err := sampler.CompileSchema([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	none := noArguments(t)
	tools := []Tool{{Name: "get_weather", Description: "The weather now.", Parameters: json.RawMessage(raw)}, {Name: "get_time"}}
	named := map[string]bool{}
	for run := range 8 {
		temp := min(float64(run), 1.5) // greedy, then sampled with seeds 1 to 7
		req := Request{Prompt: "What is the weather?", Tools: tools, Mode: AR, Seed: uint64(run), Opening: chat.ToolCallStart + "call:",
			ToolCalls: &CallHold{Only: true, Single: true, Schemas: map[string]*sampler.Schema{"get_weather": schema, "get_time": none}},
			Sampling:  Sampling{MaxNewTokens: 64, Temperature: temp}}
		h, g := bothPaths(t, host, graph, req)
		if !slices.Equal(h.Tokens, g.Tokens) {
			t.Errorf("T=%g: graph path %v, host path %v", temp, g.Tokens, h.Tokens)
		}
		t.Logf("T=%g: %q", temp, h.Text)
		content, calls := chat.ParseToolCalls(h.Text)
		if h.StopReason != StopEOS || content != "" || len(calls) != 1 || !strings.HasSuffix(h.Text, chat.ToolCallEnd) {
			t.Fatalf("T=%g: %q (%s) is not one whole call: content %q, calls %+v", temp, h.Text, h.StopReason, content, calls)
		}
		named[calls[0].Name] = true
		switch c := calls[0]; c.Name {
		case "get_weather":
			if ok, closed := sampler.SchemaPrefix(schema, c.Arguments); !ok || !closed {
				t.Errorf("T=%g: %q: arguments %s are not an instance of the schema", temp, h.Text, c.Arguments)
			}
		case "get_time":
			if c.Arguments != "{}" {
				t.Errorf("T=%g: %q: arguments %s, want none", temp, h.Text, c.Arguments)
			}
		default:
			t.Errorf("T=%g: %q calls %q, not a declared tool", temp, h.Text, c.Name)
		}
	}
	if !named["get_weather"] {
		t.Error("no run called get_weather: the schema's hold was not tried")
	}
	// A named function: every run calls it.
	for seed := range 4 {
		res, err := host.Generate(context.Background(), Request{Prompt: "What is the weather?", Tools: tools, Mode: AR, Seed: uint64(seed),
			ToolCalls: &CallHold{Only: true, Single: true, Function: "get_time", Schemas: map[string]*sampler.Schema{"get_weather": schema, "get_time": none}},
			Sampling:  Sampling{MaxNewTokens: 64, Temperature: 1.5}})
		if err != nil {
			t.Fatal(err)
		}
		if _, calls := chat.ParseToolCalls(res.Text); len(calls) != 1 || calls[0].Name != "get_time" {
			t.Errorf("seed %d, held to get_time: %q", seed, res.Text)
		}
	}
	free, err := host.Generate(context.Background(), Request{Prompt: "What is the weather?", Tools: tools, Mode: AR, Seed: 5,
		Opening: chat.ToolCallStart + "call:", Sampling: Sampling{MaxNewTokens: 64}})
	if err != nil {
		t.Fatal(err)
	}
	if _, calls := chat.ParseToolCalls(free.Text); len(calls) > 0 {
		t.Errorf("unheld, the random model wrote a call (%q): the test proves nothing", free.Text)
	}
}

// callCodec's ids 10 to 20 are the tool call format's pieces and a thought's
// markers.
var callCodec = piecesCodec{chat.ToolCallStart, "call:", "get", "{", "}", chat.ToolCallEnd, chat.Quote, "g", "et", chat.ChannelStart, chat.ChannelEnd}

// noArguments is the schema of a tool that takes none: {} alone.
func noArguments(t *testing.T) *sampler.Schema {
	t.Helper()
	s, err := sampler.CompileSchema([]byte(`{"type":"object","properties":{},"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestToolCallsHeldWords: a hold that is not Only leaves the model's words
// before a call as it writes them; once it begins a call, the call is held
// whole, however the model would go on (here: words), and a Single call ends
// the answer with no pass after it. Only, the same model's first pick is held
// to the call's start.
func TestToolCallsHeldWords(t *testing.T) {
	script := newScript(func(p int) int {
		switch i := p - promptLen; {
		case i == 2:
			return 10 // <|tool_call>
		default:
			return 300 + i // words
		}
	})
	none := noArguments(t)
	tools := []Tool{{Name: "get"}}
	for _, only := range []bool{false, true} {
		e := testEngine(script)
		e.tok = callCodec
		res, err := e.Generate(context.Background(), Request{PromptIDs: prompt(), Tools: tools, Mode: AR, Sampling: Sampling{MaxNewTokens: 40},
			ToolCalls: &CallHold{Only: only, Single: true, Schemas: map[string]*sampler.Schema{"get": none}}})
		if err != nil {
			t.Fatal(err)
		}
		content, calls := chat.ParseToolCalls(res.Text)
		wantContent := "w300w301"
		if only {
			wantContent = ""
		}
		if content != wantContent || len(calls) != 1 || calls[0].Name != "get" || calls[0].Arguments != "{}" ||
			!strings.HasSuffix(res.Text, chat.ToolCallEnd) || res.StopReason != StopEOS || res.ForwardPasses != len(res.Tokens) {
			t.Errorf("only %v: %q (%s, %d passes for %d tokens): content %q, calls %+v; want %q and the call get{}",
				only, res.Text, res.StopReason, res.ForwardPasses, len(res.Tokens), content, calls, wantContent)
		}
	}
}

// TestToolCallsHeldThought: a call's start inside a thought is the thought's
// text, left as the model writes it; after the thought a call is held. A
// forced call lets a thinking model think first, and no other.
func TestToolCallsHeldThought(t *testing.T) {
	script := newScript(func(p int) int {
		switch i := p - promptLen; i {
		case 0:
			return 19 // <|channel>
		case 1, 4:
			return 10 // <|tool_call>
		case 3:
			return 20 // <channel|>
		default:
			return 300 + i // words
		}
	})
	none := noArguments(t)
	e := testEngine(script)
	e.tok = callCodec
	res, err := e.Generate(context.Background(), Request{PromptIDs: prompt(), Tools: []Tool{{Name: "get"}}, Mode: AR,
		Sampling: Sampling{MaxNewTokens: 40}, ToolCalls: &CallHold{Single: true, Schemas: map[string]*sampler.Schema{"get": none}}})
	if err != nil {
		t.Fatal(err)
	}
	thought := chat.ChannelStart + chat.ToolCallStart + "w302" + chat.ChannelEnd
	if !strings.HasPrefix(res.Text, thought+chat.ToolCallStart+"call:") || !strings.HasSuffix(res.Text, chat.ToolCallEnd) || res.StopReason != StopEOS {
		t.Errorf("%q (%s): want the thought %q as written, then one held call", res.Text, res.StopReason, thought)
	}
	// A forced call (Only) of a thinking model: the thought first, then the call.
	for _, thinking := range []bool{true, false} {
		e = testEngine(script)
		e.tok = callCodec
		res, err = e.Generate(context.Background(), Request{PromptIDs: prompt(), Tools: []Tool{{Name: "get"}}, Mode: AR, Thinking: thinking,
			Sampling: Sampling{MaxNewTokens: 40}, ToolCalls: &CallHold{Only: true, Single: true, Schemas: map[string]*sampler.Schema{"get": none}}})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: thought, false: ""}[thinking] + chat.ToolCallStart + "call:"; !strings.HasPrefix(res.Text, want) ||
			!strings.HasSuffix(res.Text, chat.ToolCallEnd) {
			t.Errorf("forced, thinking %v: %q, want it to begin %q and end with the call", thinking, res.Text, want)
		}
	}
}

// TestToolCallsHeldRefused: what a hold cannot be is refused before anything
// runs, in words that name it.
func TestToolCallsHeldRefused(t *testing.T) {
	e := loadGo(t, writeTinyModel(t), false)
	tools := []Tool{{Name: "get_time"}}
	hold := &CallHold{Only: true}
	for _, c := range []struct {
		name string
		req  Request
		want string
	}{
		{"diffusion", Request{Prompt: "x", Tools: tools, ToolCalls: hold}, "AR mode"},
		{"no tools", Request{Prompt: "x", Mode: AR, ToolCalls: hold}, "tools declared"},
		{"with JSON", Request{Prompt: "x", Mode: AR, Tools: tools, JSON: true, ToolCalls: hold}, "not both"},
		{"a lead", Request{Prompt: "x", Mode: AR, Tools: tools, Lead: "y", ToolCalls: hold}, "no lead"},
		{"a schema for no tool", Request{Prompt: "x", Mode: AR, Tools: tools, ToolCalls: &CallHold{Schemas: map[string]*sampler.Schema{"f": nil}}}, `"f"`},
		{"words opening a call-only answer", Request{Prompt: "x", Mode: AR, Tools: tools, Opening: "Sure", ToolCalls: hold}, "opening"},
		{"a tool's name twice", Request{Prompt: "x", Mode: AR, Tools: append(tools, tools...), ToolCalls: hold}, "two tools"},
		{"a function not among the tools", Request{Prompt: "x", Mode: AR, Tools: tools, ToolCalls: &CallHold{Only: true, Function: "f"}}, `"f"`},
	} {
		if _, err := e.Generate(context.Background(), c.req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one naming %q", c.name, err, c.want)
		}
	}
}
