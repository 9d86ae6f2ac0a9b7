package server

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
)

// messagesCall posts a Messages API request.
func messagesCall(t *testing.T, s *Server, body string) (int, api.AnthropicResponse, string) {
	t.Helper()
	return postAPI[api.AnthropicResponse](t, s, "/v1/messages", body)
}

// TestMessagesInput: a Messages API request reaches the engine as the chat
// request it asks for — system, the assistant's thinking, text and tool_use
// blocks as one model message, a user message's tool_result blocks as tool
// messages before its text — with its settings.
func TestMessagesInput(t *testing.T) {
	g := &fakeGen{final: "Noon. STOP here"}
	s := start(t, Options{Engine: g})
	code, r, raw := messagesCall(t, s, `{"model":"darkroom","max_tokens":40,"system":[{"type":"text","text":"Be brief."}],"temperature":0.5,"top_k":20,
		"stop_sequences":["STOP"],"thinking":{"type":"enabled","budget_tokens":2000},"tools":[{"name":"get_time","description":"The time.","input_schema":{"type":"object"},"strict":true}],
		"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"messages":[
		{"role":"user","content":"Time?"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"I need the clock.","signature":"x"},{"type":"text","text":"Checking."},
			{"type":"tool_use","id":"toolu_1","name":"get_time","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"12:00"}]},{"type":"text","text":"Thanks."}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"get_time","input":{"zone":"Mars"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"no such zone","is_error":true}]}]}`)
	if code != 200 || len(r.Content) != 1 || *r.Content[0].Text != "Noon." || *r.StopReason != "stop_sequence" || r.StopSequence == nil || *r.StopSequence != "STOP" {
		t.Fatalf("%d %s", code, raw)
	}
	req := g.lastRequest(t)
	want := []engine.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Time?"},
		{Role: "model", Content: "Checking.", Reasoning: "I need the clock.", ToolCalls: []chat.ToolCall{{ID: "toolu_1", Name: "get_time", Arguments: "{}"}}},
		{Role: "tool", Content: "12:00", ToolCallID: "toolu_1"},
		{Role: "user", Content: "Thanks."},
		{Role: "model", ToolCalls: []chat.ToolCall{{ID: "toolu_2", Name: "get_time", Arguments: `{"zone":"Mars"}`}}},
		{Role: "tool", Content: "Error: no such zone", ToolCallID: "toolu_2"},
	}
	if !reflect.DeepEqual(req.Messages, want) {
		t.Errorf("messages\n got %+v\nwant %+v", req.Messages, want)
	}
	if req.Sampling.MaxNewTokens != 40 || !req.Thinking || len(req.Tools) != 1 || req.Sampling.TopK != 20 {
		t.Errorf("request %+v", req)
	}
	if h := req.ToolCalls; req.Mode != engine.AR || h == nil || h.Only || !h.Single || h.Schemas["get_time"] == nil {
		t.Errorf("a strict tool, one call: mode %s, hold %+v; want the calls held in AR mode, one at most", req.Mode, h)
	}
	// Anthropic's clients may send the key as x-api-key.
	resp, body := do(t, nil, "POST", base(s)+"/v1/messages", `{"max_tokens":8,"messages":[{"role":"user","content":"Hi"}]}`,
		map[string]string{"X-Api-Key": s.Token(), "Content-Type": "application/json"})
	if resp.StatusCode != 200 {
		t.Errorf("x-api-key: %d %s", resp.StatusCode, body)
	}
	if resp, body = do(t, nil, "POST", base(s)+"/v1/messages", `{"max_tokens":8,"messages":[{"role":"user","content":"Hi"}]}`,
		map[string]string{"X-Api-Key": "wrong-key", "Content-Type": "application/json"}); resp.StatusCode != 401 {
		t.Errorf("a wrong x-api-key: %d %s", resp.StatusCode, body)
	}
}

// TestMessagesErrors: errors name the Messages API's fields.
func TestMessagesErrors(t *testing.T) {
	g := &fakeGen{final: "x"}
	s := start(t, Options{Engine: g})
	ask := `"messages":[{"role":"user","content":"Hi"}]`
	for _, c := range []struct{ body, param, says string }{
		{`{"messages":[]}`, "messages", "at least one message"},
		{`{"messages":[{"role":"system","content":"x"}]}`, "messages[0].role", `"system"`},
		{`{"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`, "messages[0].content[0].type", "text and tool_result only"},
		{`{"messages":[{"role":"user","content":"Hi"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"x"}]}]}`,
			"messages[1].role", "must follow"},
		{`{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"x"}]}]}`, "messages[2].tool_use_id", "not the id of a call"},
		{`{` + ask + `,"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, "tools[0].type", "server tool"},
		{`{` + ask + `,"tools":[{"name":"a b","input_schema":{}}]}`, "tools[0].name", "letters, digits"},
		{`{` + ask + `,"tools":[{"name":"f","input_schema":[1]}]}`, "tools[0].input_schema", "JSON Schema object"},
		{`{` + ask + `,"tool_choice":{"type":"some"}}`, "tool_choice.type", `"any"`},
		{`{` + ask + `,"thinking":{"type":"maybe"}}`, "thinking.type", `"enabled"`},
		{`{` + ask + `,"stop_sequences":["a","b","c","d","e"]}`, "stop_sequences", "stop_sequences holds 5"},
		{`{` + ask + `,"max_tokens":-1}`, "max_tokens", "max_tokens"},
	} {
		code, r, raw := callAPI(t, s, "POST", "/v1/messages", c.body)
		if code != 400 || r.Error == nil || r.Error.Param == nil || *r.Error.Param != c.param || !strings.Contains(r.Error.Message, c.says) ||
			strings.Contains(r.Error.Message, "tool_call_id") || strings.Contains(r.Error.Message, "reasoning_effort") {
			t.Errorf("%s:\n got %d %s\nwant 400 about %s saying %q", c.body, code, raw, c.param, c.says)
		}
	}
}

// TestMessagesStreamEvents: a stream's events are named as the API names
// them, in its order, the text never holding the channel's markup.
func TestMessagesStreamEvents(t *testing.T) {
	g := &fakeGen{commits: []string{"<|channel>thought\nHm", "<|channel>thought\nHm.<channel|>It is", thoughtful}, final: thoughtful}
	s := start(t, Options{Engine: g})
	req, _ := http.NewRequest("POST", base(s)+"/v1/messages", strings.NewReader(`{"max_tokens":64,"stream":true,"thinking":{"type":"enabled"},"messages":[{"role":"user","content":"Time?"}]}`))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var names []string
	for ev := range readSSE(resp.Body) {
		var e api.AnthropicEvent
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil || e.Type != ev.name {
			t.Fatalf("event %q: data %s", ev.name, ev.data)
		}
		if n := len(names); n == 0 || names[n-1] != ev.name || ev.name != "content_block_delta" { // (how many deltas depends on the timing)
			names = append(names, ev.name)
		}
	}
	want := "message_start content_block_start content_block_delta content_block_stop content_block_start content_block_delta " +
		"content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
}

// TestMessagesRealModel: on a real (tiny, random) model a message is the chat
// completion of the same request, and count_tokens counts its prompt.
func TestMessagesRealModel(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e, ModelID: "tiny"})
	_, c, raw := chatWire(t, s, `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is Unix?"}],"mode":"ar","max_tokens":10,"temperature":1,"seed":4}`)
	code, m, mraw := messagesCall(t, s, `{"system":"Be brief.","messages":[{"role":"user","content":"What is Unix?"}],"mode":"ar","max_tokens":10,"temperature":1,"seed":4}`)
	text := ""
	if len(m.Content) == 1 && m.Content[0].Text != nil {
		text = *m.Content[0].Text
	}
	if code != 200 || text != *c.Choices[0].Message.Content || m.Usage.InputTokens != c.Usage.PromptTokens || m.Usage.OutputTokens != c.Usage.CompletionTokens {
		t.Errorf("message %s\nchat %s", mraw, raw)
	}
	resp, body := do(t, nil, "POST", base(s)+"/v1/messages/count_tokens", `{"system":"Be brief.","messages":[{"role":"user","content":"What is Unix?"}]}`,
		map[string]string{"Authorization": "Bearer " + s.Token()})
	var n struct {
		InputTokens int `json:"input_tokens"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &n) != nil || n.InputTokens != c.Usage.PromptTokens {
		t.Errorf("count_tokens: %d %s, want %d", resp.StatusCode, body, c.Usage.PromptTokens)
	}
}
