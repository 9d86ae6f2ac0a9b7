package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
)

// TestWireShapes pins the bytes both sides agree on: what OpenAI clients
// expect of a chunk (null logprobs and finish_reason, an empty choices array
// rather than none), and a request that leaves out every field it does not set
// (strict servers refuse "n": null and the like).
func TestWireShapes(t *testing.T) {
	text := "Hi"
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"delta chunk", ChatCompletion{ID: "c", Object: ObjectChunk, Created: 1, Model: "m", SystemFingerprint: "darkroom-diffusion",
			Choices: []Choice{{Delta: &Reply{Content: &text}}}},
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"darkroom-diffusion",` +
				`"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}`},
		{"step chunk", ChatCompletion{ID: "c", Object: ObjectChunk, Model: "m", Choices: []Choice{},
			Darkroom: &Step{Canvas: 1, Step: 2, Draft: []*string{&text, nil}, Accepted: []bool{true, false}, Committed: 3}},
			`{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","system_fingerprint":"","choices":[],` +
				`"darkroom":{"canvas":1,"step":2,"draft":["Hi",null],"accepted":[true,false],"committed":3,"forward_passes":0,"elapsed_ms":0}}`},
		{"bare request", ChatRequest{Model: "m", Messages: []Message{TextMessage("user", "x")}},
			`{"model":"m","messages":[{"role":"user","content":"x"}],"stream":false}`},
		{"darkroom request", ChatRequest{Model: "m", Messages: []Message{}, Options: Options{Stream: true, StreamOptions: &StreamOptions{IncludeUsage: true},
			Mode: engine.AR}, Darkroom: &Extension{Steps: true}},
			`{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true},"mode":"ar","darkroom":{"steps":true}}`},
		{"error", ErrorResponse{Error: ErrorBody{Message: "no", Type: "server_error", Code: "generation_failed"}},
			`{"error":{"message":"no","type":"server_error","param":null,"code":"generation_failed"}}`},
		{"models", ModelList{Object: ObjectList, Data: []Model{{ID: "tiny", Object: ObjectModel, Created: 5, OwnedBy: OwnedBy}}},
			`{"object":"list","data":[{"id":"tiny","object":"model","created":5,"owned_by":"darkroom"}],"has_more":false}`},
		{"models, Anthropic's fields too", ModelList{Object: ObjectList, Data: []Model{{ID: "tiny", Object: ObjectModel, Created: 5, OwnedBy: OwnedBy,
			Type: "model", DisplayName: "tiny", CreatedAt: "1970-01-01T00:00:05Z"}}, FirstID: "tiny", LastID: "tiny"},
			`{"object":"list","data":[{"id":"tiny","object":"model","created":5,"owned_by":"darkroom","type":"model","display_name":"tiny",` +
				`"created_at":"1970-01-01T00:00:05Z"}],"has_more":false,"first_id":"tiny","last_id":"tiny"}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", c.name, b, err, c.want)
		}
	}
	var m Model
	if err := json.Unmarshal([]byte(`{"id":"x","owned_by":"vllm"}`), &m); err != nil || m.Darkroom() {
		t.Errorf("a vLLM model read as Darkroom's: %+v %v", m, err)
	}
}

// TestMessageText reads every content shape OpenAI allows, and refuses parts
// that are not text.
func TestMessageText(t *testing.T) {
	cases := []struct {
		content string // raw JSON; "" for none
		want    string
		err     string
	}{
		{``, "", ""},
		{`null`, "", ""},
		{` "What is Unix?" `, "What is Unix?", ""},
		{`[{"type":"text","text":"An "},{"type":"text","text":"OS."}]`, "An OS.", ""},
		{`[{"type":"image_url","image_url":{"url":"http://x"}}]`, "", `"image_url" is not supported`},
		{`42`, "", "want a string or an array of text parts"},
	}
	for _, c := range cases {
		got, err := Message{Role: "user", Content: json.RawMessage(c.content)}.Text()
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("content %s: %q, %v; want %q, error %q", c.content, got, err, c.want, c.err)
		}
	}
	for _, s := range []string{"", `a "quoted" <b>word</b>`, "tab\there\nnew line", "naïve ☃", "\x00"} {
		if got, err := TextMessage("user", s).Text(); got != s || err != nil {
			t.Errorf("TextMessage(%q).Text() = %q, %v", s, got, err)
		}
	}
}
