package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// messagesEngine is testEngine with a chat template of its own: each message
// is a turn marker (2 system, 3 user, 4 model) and its words' ids (wordCodec),
// so a prompt's length is what the test says, and MaxPositionEmbeddings 64.
func messagesEngine(f *scriptRunner) *Engine {
	e := testEngine(f)
	e.cfg.Text.MaxPositionEmbeddings = 64
	e.prompt = func(r *Request) ([]int, error) {
		if len(r.Messages) == 0 {
			return r.PromptIDs, nil
		}
		ids := []int{2}
		for _, m := range r.Messages {
			ids = append(ids, map[string]int{"system": 5, "user": 6, "model": 7}[m.Role])
			ids = append(ids, wordCodec{}.Encode(m.Content)...)
		}
		return ids, nil
	}
	return e
}

// turn is a message of n words (ids from first on).
func turn(role string, first, n int) Message {
	var b []int
	for i := range n {
		b = append(b, first+i)
	}
	return Message{Role: role, Content: wordCodec{}.Decode(b)}
}

// TestFitContext: a conversation past the context goes on, with
// Request.FitContext, from the latest turns that fit — whole turns, from a user
// message, the system turn kept — and the result says how many messages were
// left out; without it, or where the last message alone does not fit, it is a
// *ContextError as before.
func TestFitContext(t *testing.T) {
	f := newScript(body)
	e := messagesEngine(f)
	sys := turn("system", 300, 3)
	// Prompt lengths: BOS 1, the system turn 1+3, each turn 1+10: three
	// exchanges and a question, 82 tokens. 48 are left beside one 16-token
	// canvas: from the second question on, 60, does not fit; from the third, 38.
	msgs := []Message{sys}
	for i := range 3 {
		msgs = append(msgs, turn("user", 20+20*i, 10), turn("model", 30+20*i, 10))
	}
	msgs = append(msgs, turn("user", 200, 10))
	req := Request{Messages: msgs, Seed: 1, Sampling: Sampling{MaxNewTokens: 16}}

	_, err := e.Generate(context.Background(), req)
	var ce *ContextError
	if !errors.As(err, &ce) || ce.Prompt != 82 {
		t.Fatalf("without FitContext: %v, want a *ContextError for an 82-token prompt", err)
	}

	req.FitContext = true
	ck, err := e.Check(req)
	if err != nil {
		t.Fatal(err)
	}
	f.encodes = nil
	res, err := e.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dropped != 4 || res.PromptTokens != 38 {
		t.Errorf("left out %d messages, prompt %d tokens; want 4 and 38 (the last exchange and the question)", res.Dropped, res.PromptTokens)
	}
	if ck.Dropped != res.Dropped || ck.PromptTokens != res.PromptTokens {
		t.Errorf("Check said %+v, Generate did %d messages, %d tokens", ck, res.Dropped, res.PromptTokens)
	}
	want, _ := e.prompt(&Request{Messages: append([]Message{sys}, msgs[5:]...)})
	if len(f.encodes) == 0 || !slices.Equal(f.encodes[0], want) {
		t.Errorf("the model read %v, want the system turn, the last exchange and the question: %v", f.encodes[:min(1, len(f.encodes))], want)
	}

	// A prompt that fits is read whole.
	short := Request{Messages: []Message{sys, turn("user", 20, 10)}, Seed: 1, Sampling: Sampling{MaxNewTokens: 16}, FitContext: true}
	if res, err := e.Generate(context.Background(), short); err != nil || res.Dropped != 0 || res.PromptTokens != 16 {
		t.Errorf("a short chat: dropped %v, %v", res, err)
	}

	// The last question alone past the context: still refused, with its own length.
	long := append(slices.Clone(msgs[:5]), turn("user", 100, 60))
	_, err = e.Generate(context.Background(), Request{Messages: long, Seed: 1, Sampling: Sampling{MaxNewTokens: 16}, FitContext: true})
	if !errors.As(err, &ce) || ce.Prompt != 1+4+61 {
		t.Errorf("a question longer than the context: %v, want a *ContextError for its 66 tokens", err)
	}
}
