package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// piecesCodec's ids 10 on are its pieces, the others words ("w7").
type piecesCodec []string

func (c piecesCodec) text(id int) string {
	if id >= 10 && id < 10+len(c) {
		return c[id-10]
	}
	return fmt.Sprintf("w%d", id)
}
func (piecesCodec) Encode(string) []int { return nil }
func (c piecesCodec) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(c.text(id))
	}
	return b.String()
}

// jsonCodec's ids 10 to 19 are pieces of JSON.
var jsonCodec = piecesCodec{`{`, `"a"`, `:`, ` 1`, `}`, `,`, `[`, `]`, `"`, ` `}

// TestJSONMode: with Request.JSON each AR pick keeps the answer the beginning
// of a JSON object, and the answer ends where the object closes, with no pass
// after it; where the model would write words, it writes the likeliest text the
// object allows; without it the same model writes the words.
func TestJSONMode(t *testing.T) {
	want := []int{10, 11, 12, 13, 14} // {"a": 1}
	object := newScript(func(p int) int {
		if i := p - promptLen; i >= 0 && i < len(want) {
			return want[i]
		}
		return 300 + p%50 // words
	})
	e := testEngine(object)
	e.tok = jsonCodec
	res, err := e.Generate(context.Background(), Request{PromptIDs: prompt(), Mode: AR, JSON: true, Sampling: Sampling{MaxNewTokens: 40}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, want) || res.Text != `{"a": 1}` || res.StopReason != StopEOS || res.ForwardPasses != len(want) {
		t.Errorf("the scripted object: %v %q %s, %d passes; want %v, eos after %d passes", res.Tokens, res.Text, res.StopReason, res.ForwardPasses, want, len(want))
	}

	words := newScript(func(p int) int { return 300 + p%50 })
	for _, temp := range []float64{0, 2} {
		e := testEngine(words)
		e.tok = jsonCodec
		res, err := e.Generate(context.Background(), Request{PromptIDs: prompt(), Mode: AR, JSON: true, Seed: 9, Sampling: Sampling{MaxNewTokens: 60, Temperature: temp}})
		if err != nil {
			t.Fatal(err)
		}
		ok, closed := sampler.JSONPrefix(res.Text)
		if !ok || closed != (res.StopReason == StopEOS) || closed && !json.Valid([]byte(res.Text)) || len(res.Tokens) < 2 {
			t.Errorf("T=%g over words: %q (%s): prefix %v, closed %v", temp, res.Text, res.StopReason, ok, closed)
		}
		e = testEngine(words)
		e.tok = jsonCodec
		free, err := e.Generate(context.Background(), Request{PromptIDs: prompt(), Mode: AR, Seed: 9, Sampling: Sampling{MaxNewTokens: 6, Temperature: temp}})
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := sampler.JSONPrefix(free.Text); ok {
			t.Errorf("T=%g without JSON the words model wrote %q, a JSON prefix: the test proves nothing", temp, free.Text)
		}
	}

	for _, c := range []struct {
		name string
		req  Request
		want string
	}{
		{"diffusion", Request{PromptIDs: prompt(), JSON: true}, "AR mode"},
		{"opening", Request{PromptIDs: prompt(), Mode: AR, JSON: true, Opening: "t12"}, "no opening"},
	} {
		if _, err := testEngine(newScript(body)).Generate(context.Background(), c.req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

// TestJSONModeRealModel: on a real (tiny, random) model with its tokenizer,
// JSON mode's answers are JSON prefixes in whole characters (the tokenizer's
// special ids never written), greedy and sampled, and the graph path — whose
// device picks the token with the constraint's bans as an input — writes the
// host path's tokens.
func TestJSONModeRealModel(t *testing.T) {
	dir := writeTinyModel(t)
	host, graph := loadGo(t, dir, false), loadGo(t, dir, true)
	for _, temp := range []float64{0, 1} {
		req := Request{Prompt: "Write a JSON object.", Mode: AR, JSON: true, Seed: 3, Sampling: Sampling{MaxNewTokens: 48, Temperature: temp}}
		h, g := bothPaths(t, host, graph, req)
		if !slices.Equal(h.Tokens, g.Tokens) {
			t.Errorf("T=%g: graph path %v, host path %v", temp, g.Tokens, h.Tokens)
		}
		ok, closed := sampler.JSONPrefix(h.Text)
		if !ok || closed != (h.StopReason == StopEOS) || !strings.HasPrefix(h.Text, "{") {
			t.Errorf("T=%g: %q (%s) is no JSON object's beginning", temp, h.Text, h.StopReason)
		}
		for _, id := range h.Tokens {
			if host.tokenizer.IsSpecial(id) {
				t.Errorf("T=%g: special id %d written", temp, id)
			}
		}
	}
}

// TestJSONModeThinks: with Thinking a JSON answer may begin with the model's
// thought, left as it writes it (a brace in it included), and the object is
// held from the thought's end; the answer's text is then the object.
func TestJSONModeThinks(t *testing.T) {
	codec := append(slices.Clone(jsonCodec), chat.ChannelStart, chat.ChannelEnd) // ids 20 and 21
	script := newScript(func(p int) int {
		switch i := p - promptLen; i {
		case 0:
			return 20 // <|channel>
		case 2:
			return 10 // { (in the thought)
		case 3:
			return 21 // <channel|>
		default:
			return 300 + i // words
		}
	})
	e := testEngine(script)
	e.tok = codec
	res, err := e.Generate(context.Background(), Request{PromptIDs: prompt(), Mode: AR, JSON: true, Thinking: true, Sampling: Sampling{MaxNewTokens: 40}})
	if err != nil {
		t.Fatal(err)
	}
	a := chat.Parse(res.Text)
	ok, closed := sampler.JSONPrefix(a.Text)
	if a.Thought != "w301{" || !ok || !closed || res.StopReason != StopEOS {
		t.Errorf("%q (%s): thought %q, answer %q; want the thought as written, then a whole object", res.Text, res.StopReason, a.Thought, a.Text)
	}
	e = testEngine(script)
	e.tok = codec
	res, err = e.Generate(context.Background(), Request{PromptIDs: prompt(), Mode: AR, JSON: true, Sampling: Sampling{MaxNewTokens: 40}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Text, chat.ChannelStart) || !strings.HasPrefix(res.Text, "{") {
		t.Errorf("no thinking asked: %q, want the object from the start", res.Text)
	}
}
