package server

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
)

// responsesCall posts a Responses API request.
func responsesCall(t *testing.T, s *Server, body string) (int, api.Response, string) {
	t.Helper()
	return postAPI[api.Response](t, s, "/v1/responses", body)
}

// TestResponsesInput: a Responses API input reaches the engine as the chat
// request it asks for — instructions as the system message, an assistant's
// reasoning, message and function calls as one model message, each
// function_call_output as the result of its call — with its settings.
func TestResponsesInput(t *testing.T) {
	g := &fakeGen{final: "Noon."}
	s := start(t, Options{Engine: g})
	code, r, raw := responsesCall(t, s, `{"model":"darkroom","instructions":"Be brief.","max_output_tokens":40,"temperature":0.5,"seed":9,
		"reasoning":{"effort":"high"},"tools":[{"type":"function","name":"get_time","description":"The time.","strict":true}],"input":[
		{"role":"user","content":[{"type":"input_text","text":"Time?"}]},
		{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"I need the clock."}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},
		{"type":"function_call","call_id":"call_a","name":"get_time","arguments":"{}"},
		{"type":"function_call_output","call_id":"call_a","output":"12:00"}]}`)
	if code != 200 || r.Status != "completed" || len(r.Output) != 1 || r.Output[0].Type != "message" || (*r.Output[0].Content)[0].Text != "Noon." {
		t.Fatalf("%d %s", code, raw)
	}
	req := g.lastRequest(t)
	want := []engine.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Time?"},
		{Role: "model", Content: "Checking.", Reasoning: "I need the clock.", ToolCalls: []chat.ToolCall{{ID: "call_a", Name: "get_time", Arguments: "{}"}}},
		{Role: "tool", Content: "12:00", ToolCallID: "call_a"},
	}
	if !reflect.DeepEqual(req.Messages, want) {
		t.Errorf("messages\n got %+v\nwant %+v", req.Messages, want)
	}
	if req.Sampling.MaxNewTokens != 40 || req.Seed != 9 || !req.Thinking || len(req.Tools) != 1 || req.ToolCalls == nil || req.Mode != engine.AR {
		t.Errorf("request %+v", req)
	}
	if *r.Instructions != "Be brief." || *r.MaxOutputTokens != 40 || string(r.ToolChoice) != `"auto"` || len(r.Tools) != 1 || !r.ParallelToolCalls ||
		r.Usage == nil || r.Usage.InputTokens != 7 {
		t.Errorf("response settings %s", raw)
	}
}

// TestResponsesIncompleteAndJSON: an answer max_output_tokens cut is
// "incomplete" with the reason; text.format json_object asks the engine for
// JSON; a named tool_choice in the Responses API's flat form holds the
// answer to a call of it.
func TestResponsesIncompleteAndJSON(t *testing.T) {
	g := &fakeGen{final: `{"a":1}`}
	s := start(t, Options{Engine: g})
	lengthGen := &lengthCut{fakeGen: fakeGen{final: "It is"}}
	ls := start(t, Options{Engine: lengthGen})
	if _, r, raw := responsesCall(t, ls, `{"input":"Time?","max_output_tokens":2}`); r.Status != "incomplete" || r.IncompleteDetails == nil ||
		r.IncompleteDetails.Reason != "max_output_tokens" {
		t.Errorf("cut: %s", raw)
	}
	if code, _, raw := responsesCall(t, s, `{"input":"JSON please","text":{"format":{"type":"json_object"}}}`); code != 200 || !g.lastRequest(t).JSON {
		t.Errorf("json_object: %d %s", code, raw)
	}
	g.final = callsOnly
	code, r, raw := responsesCall(t, s, `{"input":"Weather?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}],
		"tool_choice":{"type":"function","name":"get_weather"}}`)
	if h := g.lastRequest(t).ToolCalls; code != 200 || h == nil || !h.Only || h.Function != "get_weather" || len(r.Output) != 1 || r.Output[0].Type != "function_call" ||
		*r.Output[0].Arguments != `{"city":"Paris","days":2}` || !strings.HasPrefix(r.Output[0].ID, "fc_") {
		t.Errorf("named tool_choice: %d %s", code, raw)
	}
}

// lengthCut is a fake whose answers max new tokens cut.
type lengthCut struct{ fakeGen }

func (l *lengthCut) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	res, err := l.fakeGen.Generate(ctx, req)
	if res != nil {
		res.StopReason = engine.StopMaxTokens
	}
	return res, err
}

// TestResponsesErrors: errors name the Responses API's fields, not the chat
// request's it is read into.
func TestResponsesErrors(t *testing.T) {
	g := &fakeGen{final: "x"}
	s := start(t, Options{Engine: g})
	for _, c := range []struct{ body, param, says string }{
		{`{}`, "input", "text or a list of items"},
		{`{"input":[]}`, "input", "text or a list of items"},
		{`{"input":[{"type":"item_reference","id":"x"}]}`, "input[0].type", "not supported"},
		{`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`, "input[0].content[0].type", "text only"},
		{`{"input":"x","tools":[{"type":"web_search"}]}`, "tools[0].type", "only function tools"},
		{`{"input":"x","tools":[{"type":"function","name":"a b"}]}`, "tools[0].name", "letters, digits"},
		{`{"input":"x","text":{"format":{"type":"json_schema"}}}`, "text.format", "json_schema"},
		{`{"input":"x","reasoning":{"effort":"max"}}`, "reasoning.effort", "reasoning.effort"},
		{`{"input":"x","max_output_tokens":-1}`, "max_output_tokens", "max_output_tokens"},
		{`{"input":[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"c9","output":"x"}]}`, "input[1].role", "must follow"},
		{`{"instructions":"Be brief.","input":[{"role":"user","content":"hi"},{"role":"system","content":"late"}]}`, "input[1].role", "system message"},
	} {
		code, r, raw := callAPI(t, s, "POST", "/v1/responses", c.body)
		if code != 400 || r.Error == nil || r.Error.Param == nil || *r.Error.Param != c.param || !strings.Contains(r.Error.Message, c.says) ||
			strings.Contains(r.Error.Message, "messages") {
			t.Errorf("%s:\n got %d %s\nwant 400 about %s saying %q", c.body, code, raw, c.param, c.says)
		}
	}
}

// TestResponsesRealModel: on a real (tiny, random) model a response is the
// chat completion of the same request — the same text, the same usage.
func TestResponsesRealModel(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e, ModelID: "tiny"})
	_, c, raw := chatWire(t, s, `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is Unix?"}],"mode":"ar","max_tokens":10,"temperature":1,"seed":4}`)
	code, r, rraw := responsesCall(t, s, `{"instructions":"Be brief.","input":"What is Unix?","mode":"ar","max_output_tokens":10,"temperature":1,"seed":4}`)
	if code != 200 || len(r.Output) != 1 || (*r.Output[0].Content)[0].Text != *c.Choices[0].Message.Content ||
		r.Usage.InputTokens != c.Usage.PromptTokens || r.Usage.OutputTokens != c.Usage.CompletionTokens {
		t.Errorf("response %s\nchat %s", rraw, raw)
	}
}

// TestResponsesStored: a response is kept (store, the default) while the
// server runs: previous_response_id goes on from its conversation (its
// instructions not carried over, as the API has it), GET returns it, DELETE
// forgets it; store false keeps nothing; only the newest maxStored are kept.
func TestResponsesStored(t *testing.T) {
	g := &fakeGen{final: "It is noon."}
	s := start(t, Options{Engine: g})
	_, first, raw := responsesCall(t, s, `{"instructions":"Be brief.","input":"Time?"}`)
	if !first.Store {
		t.Fatalf("first: %s", raw)
	}
	g.final = "Also noon."
	code, _, raw := responsesCall(t, s, `{"input":"And in Paris?","previous_response_id":"`+first.ID+`"}`)
	want := []engine.Message{{Role: "user", Content: "Time?"}, {Role: "model", Content: "It is noon."}, {Role: "user", Content: "And in Paris?"}}
	if got := g.lastRequest(t).Messages; code != 200 || !reflect.DeepEqual(got, want) {
		t.Errorf("going on: %d %s\n got %+v\nwant %+v", code, raw, got, want)
	}
	get := func(id string) (int, string) {
		resp, body := do(t, nil, "GET", base(s)+"/v1/responses/"+id, "", map[string]string{"Authorization": "Bearer " + s.Token()})
		return resp.StatusCode, body
	}
	if code, body := get(first.ID); code != 200 || !strings.Contains(body, `"id":"`+first.ID+`"`) || !strings.Contains(body, "It is noon.") {
		t.Errorf("GET: %d %s", code, body)
	}
	resp, body := do(t, nil, "DELETE", base(s)+"/v1/responses/"+first.ID, "", map[string]string{"Authorization": "Bearer " + s.Token()})
	if resp.StatusCode != 200 || !strings.Contains(body, `"deleted":true`) {
		t.Errorf("DELETE: %d %s", resp.StatusCode, body)
	}
	if code, body := get(first.ID); code != 404 || !strings.Contains(body, `"param":"response_id"`) {
		t.Errorf("GET after DELETE: %d %s", code, body)
	}
	if code, _, raw := callAPI(t, s, "POST", "/v1/responses", `{"input":"x","previous_response_id":"`+first.ID+`"}`); code != 404 ||
		!strings.Contains(raw, `"param":"previous_response_id"`) {
		t.Errorf("a forgotten previous_response_id: %d %s", code, raw)
	}
	_, unstored, _ := responsesCall(t, s, `{"input":"x","store":false}`)
	if code, _ := get(unstored.ID); unstored.Store || code != 404 {
		t.Errorf("store false: kept (%v, GET %d)", unstored.Store, code)
	}
	var ids []string
	for range maxStored + 1 {
		_, r, _ := responsesCall(t, s, `{"input":"x"}`)
		ids = append(ids, r.ID)
	}
	if code, _ := get(ids[0]); code != 404 {
		t.Errorf("the oldest of %d responses is still kept", maxStored+1)
	}
	if code, _ := get(ids[maxStored]); code != 200 {
		t.Errorf("the newest response is not kept: %d", code)
	}
}
