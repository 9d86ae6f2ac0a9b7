package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/engine"
)

// POST /v1/completions, OpenAI's text completion (the "legacy" endpoint that
// tools written for plain language models still call: evaluation harnesses,
// completion plugins, LangChain's OpenAI LLM): the model goes on from the
// prompt as written — its tokens with a BOS before them, or the token ids as
// sent — with no chat template, no system turn and no entry's lead. The fields
// it shares with chat completions (api.Options: max_tokens, temperature,
// frequency_penalty, seed, stop, n, stream, stream_options and Darkroom's
// mode) mean what they mean there, but for max_tokens' default, which is
// OpenAI's 16 here. echo puts the prompt's text before the completion's (a
// ids' text for a prompt of ids). logprobs N (0 to 20) returns each token's
// log probability and the N most likely tokens at its position, as chat's
// logprobs do (OpenAI's parallel lists: tokens, token_logprobs, top_logprobs,
// text_offset); with echo the prompt's tokens come first, as the model read
// them (a BOS before a text prompt included), the first with null, so that an
// evaluation harness scores a continuation by them (engine.Request.
// PromptLogprobs; not streamed). suffix and best_of above 1 are
// refused: Darkroom writes after the prompt only, and one answer. The
// "darkroom" extension's opening and steps work as in chat, and so does n. A stream's chunks
// are text_completion objects, the last with the finish reason, then the
// usage where stream_options asks.

// completionMaxTokens is OpenAI's default max_tokens for a text completion.
const completionMaxTokens = 16

func (s *Server) handleCompletion(w http.ResponseWriter, r *http.Request) {
	var cr api.CompletionRequest
	m, ok := s.modelFor(w, r, &cr, func() string { return cr.Model })
	if !ok {
		return
	}
	req, stops, err := completionRequest(&cr, m)
	if err != nil {
		answerBadRequest(w, err)
		return
	}
	var echo string
	if cr.Echo {
		echo = req.Prompt
		for _, id := range req.PromptIDs { // a prompt of ids: their text
			echo += m.tokenText(id)
		}
	}
	s.answer(w, r, &m, apiRun{req: req, stops: stops, opts: &cr.Options, steps: cr.Darkroom != nil && cr.Darkroom.Steps,
		echo: echo, input: "prompt", shape: textShape{}})
}

// completionRequest checks a text completion request and turns it into an
// engine request for m.
func completionRequest(cr *api.CompletionRequest, m Model) (engine.Request, []string, error) {
	var req engine.Request
	if cr.Suffix != nil && *cr.Suffix != "" {
		return req, nil, &badRequest{"suffix", "suffix is not supported: this server writes after the prompt only; " +
			"leave suffix out, or ask for the text in the prompt"}
	}
	if n := cr.Logprobs; n != nil {
		if *n < 0 || *n > engine.MaxTopLogprobs {
			return req, nil, &badRequest{"logprobs", fmt.Sprintf("logprobs must be 0 to %d (the most likely tokens listed at each position), got %d", engine.MaxTopLogprobs, *n)}
		}
		req.Logprobs, req.TopLogprobs = true, *n
		if cr.Echo {
			if cr.Stream {
				return req, nil, &badRequest{"stream", "echo with logprobs is answered whole (the prompt's logprobs come with the answer): leave out stream"}
			}
			req.PromptLogprobs = true
		}
	}
	if cr.BestOf != nil && *cr.BestOf != 1 {
		return req, nil, &badRequest{"best_of", "best_of must be 1: this server does not rank answers; ask for several with n and choose among them"}
	}
	text, ids, err := promptOf(cr.Prompt)
	if err != nil {
		return req, nil, &badRequest{"prompt", err.Error()}
	}
	if ids != nil {
		req.PromptIDs = ids
	} else {
		req.Prompt, req.Raw = text, true
	}
	stops, err := generation(&req, &cr.Options, cr.MaxTokens, completionMaxTokens, m)
	if err != nil {
		return req, nil, err
	}
	if err := opening(&req, cr.Darkroom); err != nil {
		return req, nil, err
	}
	return req, stops, nil
}

// promptOf reads a text completion's prompt: a string, an array of one
// string, an array of token ids, or an array of one such array. It returns the
// text or the ids (ids nil for text).
func promptOf(raw json.RawMessage) (string, []int, error) {
	const want = `prompt must be a string (or an array of one string, or of token ids), e.g. "prompt": "Unix is"`
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, errors.New(want)
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if text == "" {
			return "", nil, errors.New(`prompt is empty: give the text to go on from, e.g. "prompt": "Unix is"`)
		}
		return text, nil, nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		if len(ids) == 0 {
			return "", nil, errors.New("prompt is an empty array: give the text to go on from, or its token ids")
		}
		return "", ids, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return "", nil, errors.New(want)
	}
	switch len(list) {
	case 0:
		return "", nil, errors.New("prompt is an empty array: give the text to go on from, or its token ids")
	case 1:
		if bytes.HasPrefix(bytes.TrimSpace(list[0]), []byte("[[")) {
			return "", nil, errors.New(want)
		}
		return promptOf(list[0])
	}
	return "", nil, fmt.Errorf("prompt holds %d prompts; this server reads one prompt per request: send one prompt in each", len(list))
}

// textShape is POST /v1/completions' shape: text, and chunks that add to it.
type textShape struct{}

func (textShape) idPrefix() string { return "cmpl-" }

func (t textShape) whole(h head, answers []*completion, u api.Usage) any {
	choices := make([]api.TextChoice, len(answers))
	for i, c := range answers {
		lp := t.logprobs(h, c.marks)
		if lp != nil && c.res != nil && c.res.Prompt != nil {
			lp = t.withPrompt(h, lp, c.res)
		}
		choices[i] = api.TextChoice{Index: i, Text: c.text, Logprobs: lp, FinishReason: &c.finish}
	}
	body := t.body(h, choices)
	body.Usage = &u
	return body
}

// withPrompt puts the echoed prompt's tokens before the answer's in lp: the
// first with no log probability (nothing comes before it), each at its offset
// in the echoed text (a BOS the engine put before a text prompt at 0, taking
// no room).
func (t textShape) withPrompt(h head, lp *api.TextLogprobs, res *engine.Result) *api.TextLogprobs {
	out := &api.TextLogprobs{}
	pos := 0
	for i, id := range res.Prompt {
		tok := h.m.tokenText(id)
		out.Tokens = append(out.Tokens, tok)
		if i == 0 && !strings.HasPrefix(h.echo, tok) {
			out.TextOffset = append(out.TextOffset, 0)
		} else {
			out.TextOffset = append(out.TextOffset, pos)
			pos += len(tok)
		}
		if i == 0 || i-1 >= len(res.PromptLogprobs) {
			out.TokenLogprobs, out.TopLogprobs = append(out.TokenLogprobs, nil), append(out.TopLogprobs, nil)
			continue
		}
		p := res.PromptLogprobs[i-1]
		out.TokenLogprobs = append(out.TokenLogprobs, &p.Logprob)
		out.TopLogprobs = append(out.TopLogprobs, t.top(h, p.Top))
	}
	out.Tokens = append(out.Tokens, lp.Tokens...)
	out.TokenLogprobs = append(out.TokenLogprobs, lp.TokenLogprobs...)
	out.TopLogprobs = append(out.TopLogprobs, lp.TopLogprobs...)
	out.TextOffset = append(out.TextOffset, lp.TextOffset...)
	return out
}

func (textShape) first(head) any { return nil }

func (t textShape) delta(h head, p piece) any {
	return t.body(h, []api.TextChoice{{Index: h.index, Text: p.text, Logprobs: t.logprobs(h, p.marks)}})
}

// logprobs is a choice's logprobs, OpenAI's parallel lists, the offsets in the
// choice's text (after an echo); nil where the request asks for none.
func (t textShape) logprobs(h head, marks []tokenMark) *api.TextLogprobs {
	if !h.logprobs {
		return nil
	}
	lp := &api.TextLogprobs{Tokens: make([]string, len(marks)), TokenLogprobs: make([]*float32, len(marks)),
		TopLogprobs: make([]map[string]float32, len(marks)), TextOffset: make([]int, len(marks))}
	for i, mk := range marks {
		lp.Tokens[i], lp.TokenLogprobs[i], lp.TextOffset[i] = h.m.tokenText(mk.ID), &mk.Logprob, len(h.echo)+mk.start
		lp.TopLogprobs[i] = t.top(h, mk.Top)
	}
	return lp
}

// top is a position's likeliest tokens as the lists show them: text → log
// probability (of two ids with one text, the likelier, listed first).
func (textShape) top(h head, alts []engine.TopLogprob) map[string]float32 {
	top := make(map[string]float32, len(alts))
	for _, alt := range alts {
		tok := h.m.tokenText(alt.ID)
		if _, seen := top[tok]; !seen {
			top[tok] = alt.Logprob
		}
	}
	return top
}

func (t textShape) finish(h head, c *completion, totals *api.Step) any {
	b := t.body(h, []api.TextChoice{{Index: h.index, FinishReason: &c.finish}})
	b.Darkroom = totals
	return b
}

func (t textShape) bare(h head, u *api.Usage, st *api.Step) any {
	c := t.body(h, []api.TextChoice{})
	c.Usage, c.Darkroom = u, st
	return c
}

func (textShape) body(h head, choices []api.TextChoice) api.TextCompletion {
	return api.TextCompletion{ID: h.id, Object: api.ObjectText, Created: h.created, Model: h.m.ID, SystemFingerprint: h.fingerprint,
		Choices: choices}
}
