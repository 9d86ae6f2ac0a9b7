package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
)

// TestTokenizerEndpoints: /tokenizer_info, /tokenize and /detokenize answer
// as vLLM's do, with the model's own tokenizer — what lm-eval's remote
// tokenizer checks for and then tokenizes with — and refuse in the API's
// shape; a model without a tokenizer here says so.
func TestTokenizerEndpoints(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e, ModelID: "tiny"})
	tok := e.Tokenizer()
	call := func(method, path, body string) (int, map[string]any, string) {
		t.Helper()
		resp, raw := do(t, nil, method, base(s)+path, body, map[string]string{"Authorization": "Bearer " + s.Token(), "Content-Type": "application/json"})
		var out map[string]any
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			t.Fatalf("%s %s: %d %q is not JSON", method, path, resp.StatusCode, raw)
		}
		return resp.StatusCode, out, raw
	}
	ints := func(v any) []int {
		var out []int
		for _, x := range v.([]any) {
			out = append(out, int(x.(float64)))
		}
		return out
	}
	eos, _ := tok.Token(tok.EOS())
	code, info, raw := call("GET", "/tokenizer_info", "")
	if code != 200 || info["eos_token"] != eos || info["model_max_length"] != float64(e.Config().Text.MaxPositionEmbeddings) {
		t.Errorf("tokenizer_info: %d %s", code, raw)
	}
	text := "Unix is an operating system."
	for _, c := range []struct {
		body string
		want []int
	}{
		{`{"prompt":"` + text + `"}`, append([]int{tok.BOS()}, tok.Encode(text)...)},
		{`{"prompt":"` + text + `","add_special_tokens":false}`, tok.Encode(text)},
		{`{"content":"` + text + `","add_special_tokens":false}`, tok.Encode(text)},
		{`{"prompt":"` + eos + `","add_special_tokens":false}`, []int{tok.EOS()}}, // lm-eval's eos_token_id
	} {
		code, out, raw := call("POST", "/tokenize", c.body)
		if code != 200 || !slices.Equal(ints(out["tokens"]), c.want) || out["count"] != float64(len(c.want)) {
			t.Errorf("tokenize %s: %d %s, want %v", c.body, code, raw, c.want)
		}
	}
	// A chat: the prompt the chat endpoint sends for it, as its usage counts.
	const chat = `"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is Unix?"}]`
	_, r, _ := callAPI(t, s, "POST", "/v1/chat/completions", `{`+chat+`,"max_tokens":1,"mode":"ar"}`)
	if code, out, raw := call("POST", "/tokenize", `{`+chat+`}`); code != 200 || r.Usage == nil || out["count"] != float64(r.Usage.PromptTokens) {
		t.Errorf("tokenize a chat: %d %s; the chat endpoint counts %+v", code, raw, r.Usage)
	}
	ids, _ := json.Marshal(tok.Encode(text))
	if code, out, raw := call("POST", "/detokenize", `{"tokens":`+string(ids)+`}`); code != 200 || out["prompt"] != text || out["content"] != text {
		t.Errorf("detokenize: %d %s", code, raw)
	}
	for _, c := range []struct{ method, path, body, code, says string }{
		{"POST", "/detokenize", `{"tokens":[1,999999]}`, "invalid_value", "outside the vocabulary"},
		{"POST", "/detokenize", `{}`, "invalid_value", "tokens must be"},
		{"POST", "/tokenize", `{"add_special_tokens":false}`, "invalid_value", "prompt must be"},
		{"POST", "/tokenize", `{"prompt":5}`, "invalid_type", "prompt must be a string"},
		{"POST", "/tokenize", `{"messages":[]}`, "invalid_value", "messages must hold"},
		{"POST", "/tokenize", `{"messages":[{"role":"robot","content":"x"}]}`, "invalid_value", "role \"robot\""},
		{"GET", "/tokenize", ``, "method_not_allowed", "use POST"},
		{"POST", "/tokenizer_info", `{}`, "method_not_allowed", "use GET"},
	} {
		_, out, raw := call(c.method, c.path, c.body)
		if e, _ := out["error"].(map[string]any); e == nil || e["code"] != c.code || !strings.Contains(e["message"].(string), c.says) {
			t.Errorf("%s %s %s: %s; want %s saying %q", c.method, c.path, c.body, raw, c.code, c.says)
		}
	}
	resp, raw := do(t, nil, "POST", base(s)+"/tokenize", `{"prompt":"x"}`, nil)
	if resp.StatusCode != 401 || !strings.Contains(raw, `"code":"missing_api_key"`) {
		t.Errorf("without the key: %d %s", resp.StatusCode, raw)
	}

	fake := start(t, Options{Engine: &fakeGen{final: "x"}})
	resp, raw = do(t, nil, "POST", base(fake)+"/tokenize", `{"prompt":"x"}`, map[string]string{"Authorization": "Bearer " + fake.Token()})
	if resp.StatusCode != 501 || !strings.Contains(raw, `"code":"no_tokenizer"`) {
		t.Errorf("a model without a tokenizer: %d %s", resp.StatusCode, raw)
	}
}
