package server

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// The OpenAI-compatible API: GET /v1/models, GET /v1/models/{id}, POST
// /v1/chat/completions, POST /v1/completions (completions.go) and POST
// /v1/responses (responses.go, read into a chat request; Anthropic's POST
// /v1/messages likewise, messages.go), non-streaming
// or streaming (SSE "data: {chunk}" lines ending with "data: [DONE]"), with
// app/api's types as the bodies. The API key is the server's token. What
// follows is chat's; a text completion shares its generation fields.
//
// Mapping: roles system/developer, user and assistant become the chat
// template's system, user and model turns (system turns only at the start),
// tool messages the results of the calls before them;
// their text is encoded as plain text, so it cannot write the template's
// control tokens. model must be the id /v1/models lists (or left out).
// max_tokens (or max_completion_tokens) caps the new tokens; with the prompt it
// must fit the model's context. temperature scales the model's denoising
// temperature schedule (1 = the model's defaults, 0 ≈ greedy); in AR mode it
// is the sampling temperature (0 = greedy). frequency_penalty (0 to 2; AR mode:
// each token's logit lowered by it for every time the model wrote the token)
// replaces the model's own (the Mini's is 0.1), 0 turning it off;
// presence_penalty (0 to 2; AR mode: each token's logit lowered by it once the
// model has written the token) has no default; diffusion ignores both, and
// top_p and vLLM's top_k, which truncate the printer's draw (after the
// temperature, as Hugging Face's warpers; a greedy pick ignores them), and
// logit_bias (token ids to -100…100, added to the printer's logits). seed
// makes a run reproducible;
// without it every request draws a fresh seed. n (1 to 8) asks for that many
// answers, written one after another (choice i with seed+i), each choice's
// chunks streamed in turn, the usage counting the prompt once. stop (a string or up to 4) cuts
// the answer at the first occurrence. Extensions: "mode": "ar" decodes one token
// per forward pass instead of block diffusion, "diffusion" develops canvases;
// without it the model's APIMode runs (the faster mode on this machine for a
// model that writes equally well both ways, else diffusion); system_fingerprint
// ("darkroom-ar", "darkroom-diffusion") and the X-Darkroom-Mode header name the
// mode that ran, and X-Darkroom-Mode-Reason why when the request named none.
// "darkroom": {"opening": text} fixes the start of the answer
// (engine.Request.Opening: the Encyclopedia's heading). Without one, a last
// user message that asks about a topic, to a model whose folder holds leads,
// opens the answer with the topic as its bold heading and, where the folder
// holds the entry ("What is Unix?"), the entry's opening sentences, as the app's
// Chat does (assets.Leads.ChatStart: a heading the folder does not hold is
// held only where the model begins a heading itself, and the Library answer,
// where it begins that, is held whole); the X-Darkroom-Lead header says when
// the entry's text is held;
// "darkroom": {"no_lead": true} asks for the model alone. With "steps": true
// a stream also carries the developing canvas: chunks with no choices and a
// "darkroom" object (api.Step), at most one per FrameInterval, after the
// text of the canvases committed before it; the finish chunk's "darkroom"
// holds the run's forward passes and canvases. Other clients see none of it.
//
// logprobs true returns each answer token's log probability — natural log,
// under the model's own distribution at its position, before temperature and
// penalties (vLLM's raw logprobs) — and top_logprobs (0 to 20) the most likely
// tokens there, in OpenAI's shape (choices[].logprobs.content), each streamed
// chunk with its tokens'. They come with the printer: a request that names no
// mode runs in AR mode (X-Darkroom-Mode-Reason says why), "mode": "diffusion"
// with logprobs is a 400, and the answer is the model's alone (no entry's lead;
// an opening with logprobs is a 400). Where a stop string cuts the answer, the
// tokens after the cut are left out.
//
// response_format {"type": "json_object"} holds the answer to one JSON object
// (engine.Request.JSON: each AR pick may take only a token that keeps the
// answer the beginning of one, and the answer ends where it closes); it too
// comes with the printer, as logprobs do, with no lead or opening.
// {"type": "json_schema", "json_schema": {"schema": …}} holds it to an
// instance of the schema as well (engine.Request.JSONSchema,
// sampler.CompileSchema's subset; a keyword it cannot hold the answer to is a
// 400 naming it).
//
// tools (tools.go) declares functions in the prompt's system turn, as the Gemma
// 4 template does (engine/chat); the calls the model writes
// (<|tool_call>call:name{…}<tool_call|>) come back as the message's tool_calls,
// each with a fresh id and its arguments as a JSON object, the text before
// them as its content (null where there is none), and finish_reason
// "tool_calls"; a stream sends the text before the first call as it is written
// and each call whole in the chunk that ends the choice. tool_choice "auto"
// (the default) lets the model choose, "none" declares no tool, "required" and
// {"type": "function", "function": {"name": …}} make the answer calls (of that
// function), after the model's thought where it thinks. The calls are held
// (engine.Request.ToolCalls): each names a declared tool and its arguments are
// an instance of the tool's parameters, byte by byte as the printer picks them
// — for a forced call or a strict tool (in AR mode where no mode is named,
// X-Darkroom-Mode-Reason saying why; a 400 with "mode": "diffusion"; a strict
// tool's parameters that cannot be held to are a 400), and for any request
// with tools that the printer writes anyway (but a JSON answer, held to its
// object). parallel_tool_calls false keeps the first call, and a held answer
// ends there. An assistant
// message's tool_calls and the tool messages after it (one per call, named by
// tool_call_id) are written back as the template writes them: the calls and
// their results in the model's turn, which the answer goes on. No lead opens
// an answer that may call a tool. The deprecated functions and function_call
// are a 400 naming tools.
//
// reasoning_effort "low", "medium" or "high" (OpenAI's), or
// chat_template_kwargs {"enable_thinking": true} (vLLM's), turns the model's
// thinking on (thinking.go; engine.Request.Thinking: the template's <|think|>);
// the thought comes back as the message's reasoning_content, apart from its
// content (as vLLM and DeepSeek send it), a stream's as reasoning_content
// deltas, none of the channel's markup sent; no lead opens a thinking answer.
// An assistant message's reasoning_content (or reasoning) sent back with its
// tool calls is written back where the template keeps it.
//
// Errors are OpenAI's shape, {"error": {message, type, param, code}}, with a
// 4xx for everything the client can fix: 400 (context_length_exceeded names
// the numbers), 401, 404 model_not_found, 405, 413, 415 for a body that is not
// JSON, 429 with Retry-After when the queue is full. A stream's status is
// decided before its 200: only a failure of the engine itself arrives inside
// the stream. Every response carries an x-request-id.
//
// API requests do not cancel each other or the browser's pages: the engine runs
// them one at a time, in turn.

// describe is m as GET /v1/models lists it, for OpenAI's clients and
// Anthropic's alike.
func describe(m Model) api.Model {
	return api.Model{ID: m.ID, Object: api.ObjectModel, Created: startTime.Unix(), OwnedBy: api.OwnedBy,
		Type: "model", DisplayName: m.ID, CreatedAt: startTime.UTC().Format(time.RFC3339)}
}

var startTime = time.Now()

// apiModelOr writes the "model unavailable" error and returns false when no
// model can be had.
func (s *Server) apiModelOr(w http.ResponseWriter, r *http.Request) (Model, bool) {
	m, err := s.model(r.Context())
	if err != nil {
		s.logf("server: no model: %v", err)
		w.Header().Set("Retry-After", "5")
		apiError(w, http.StatusServiceUnavailable, "server_error", "model_unavailable", "no model is available: "+err.Error())
		return Model{}, false
	}
	return m, true
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if m, ok := s.apiModelOr(w, r); ok {
		writeJSON(w, http.StatusOK, api.ModelList{Object: api.ObjectList, Data: []api.Model{describe(m)}, FirstID: m.ID, LastID: m.ID})
	}
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	m, ok := s.apiModelOr(w, r)
	if !ok {
		return
	}
	if id := r.PathValue("id"); id != m.ID {
		modelNotFound(w, id, m.ID)
		return
	}
	writeJSON(w, http.StatusOK, describe(m))
}

func modelNotFound(w http.ResponseWriter, id, have string) {
	apiErrorParam(w, http.StatusNotFound, "invalid_request_error", "model_not_found", "model",
		fmt.Sprintf("the model %q does not exist; this server runs %q", id, have))
}

// newStepChunk describes a step event with v's token texts.
func newStepChunk(ev engine.Event, v Vocabulary) api.Step {
	texts := func(ids []int) []*string {
		out := make([]*string, len(ids))
		for i, id := range ids {
			if !v.IsEnd(id) {
				t := v.TokenText(id)
				out[i] = &t
			}
		}
		return out
	}
	return api.Step{Canvas: ev.Canvas, Step: ev.Step, Round: ev.Round, Steps: ev.Steps, Draft: texts(ev.Draft), Argmax: texts(ev.Argmax),
		Accepted: append([]bool(nil), ev.Accepted...), Committed: len(ev.Committed),
		ForwardPasses: ev.ForwardPasses, ElapsedMS: float64(ev.Elapsed.Microseconds()) / 1000}
}

// badRequest is a client error with the parameter it is about.
type badRequest struct{ param, msg string }

func (e *badRequest) Error() string { return e.msg }

// defaultsProvider is implemented by *engine.Engine.
type defaultsProvider interface {
	GenerationDefaults() engine.Sampling
}

// engineRequest checks a chat request and turns it into an engine request for
// m, with its stop strings and whether its answer may hold more than one tool
// call.
func engineRequest(cr *api.ChatRequest, m Model) (req engine.Request, stops []string, parallel bool, err error) {
	if f := cr.ResponseFormat; f != nil {
		switch f.Type {
		case "", "text":
		case "json_object":
			req.JSON = true
		case "json_schema":
			if f.JSONSchema == nil || len(bytes.TrimSpace(f.JSONSchema.Schema)) == 0 {
				return req, nil, false, &badRequest{"response_format.json_schema", `response_format "json_schema" needs its schema: ` +
					`{"type": "json_schema", "json_schema": {"name": …, "schema": {"type": "object", "properties": {…}}}}`}
			}
			schema, err := sampler.CompileSchema(f.JSONSchema.Schema)
			if err != nil {
				return req, nil, false, &badRequest{"response_format.json_schema.schema", "response_format.json_schema." + err.Error()}
			}
			req.JSON, req.JSONSchema = true, schema
		default:
			return req, nil, false, &badRequest{"response_format", fmt.Sprintf(`response_format %q: want "text", "json_object" or "json_schema"`, f.Type)}
		}
	}
	req.Logprobs = cr.Logprobs != nil && *cr.Logprobs
	if top := cr.TopLogprobs; top != nil {
		switch {
		case *top < 0 || *top > engine.MaxTopLogprobs:
			return req, nil, false, &badRequest{"top_logprobs", fmt.Sprintf("top_logprobs must be 0 to %d, got %d", engine.MaxTopLogprobs, *top)}
		case *top > 0 && !req.Logprobs:
			return req, nil, false, &badRequest{"top_logprobs", `top_logprobs needs "logprobs": true`}
		}
		req.TopLogprobs = *top
	}
	msgs, err := chatMessages(cr.Messages, m.System)
	if err != nil {
		return req, nil, false, err
	}
	req.Messages = msgs

	maxTok := cr.MaxCompletionTokens
	if maxTok == nil {
		maxTok = cr.MaxTokens
	}
	// OpenAI's clients leave max_tokens out for a whole answer: not one canvas
	// (DiffusionGemma's generation config says 256).
	tp, err := toolUse(cr, &req)
	if err != nil {
		return req, nil, false, err
	}
	if tp.asked { // before the mode is chosen: it is written in AR mode
		req.ToolCalls = tp.hold
	}
	if stops, err = generation(&req, &cr.Options, maxTok, m.AnswerTokens, m); err != nil {
		return req, nil, false, err
	}
	if tp.hold != nil && req.Mode == engine.AR { // held wherever the printer writes
		req.ToolCalls = tp.hold
	}
	parallel = tp.parallel
	if req.Thinking, err = thinkingAsked(cr, m); err != nil {
		return req, nil, false, err
	}
	if err := opening(&req, cr.Darkroom); err != nil {
		return req, nil, false, err
	}
	// An answer with logprobs is the model's alone, every token its pick, a
	// JSON answer begins with its object, one that may call a tool with the
	// call, and a thinking one with its thought.
	if req.Opening == "" && (cr.Darkroom == nil || !cr.Darkroom.NoLead) && !req.Logprobs && !req.JSON && len(req.Tools) == 0 && !req.Thinking {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "user" {
			start := m.Leads.ChatStart(last.Content) // as the app's Chat opens it
			req.Opening, req.Lead, req.OpeningTentative, req.Reply = start.Opening, start.Lead, start.OpeningTentative, start.Reply
			req.LeadEnds = req.Lead != "" // the entry's answer, as trained: it ends there
		}
	}
	return req, stops, parallel, nil
}

// chatMessages turns a chat's messages into the chat template's turns: system
// and developer messages (at the start only) joined into one system turn, the
// model's own (system; "": none) where there is none; user; assistant as the
// model's, with its tool calls; tool messages, each the result of a call of
// the assistant message before them. It is a badRequest naming the message at
// fault.
func chatMessages(in []api.Message, system string) ([]engine.Message, error) {
	if len(in) == 0 {
		return nil, &badRequest{"messages", `messages must hold at least one message, e.g. "messages": [{"role": "user", "content": "What is Unix?"}]`}
	}
	var out []engine.Message
	var sys []string
	for i, m := range in {
		text, err := m.Text()
		if err != nil {
			return nil, &badRequest{fmt.Sprintf("messages[%d].content", i), fmt.Sprintf("messages[%d].content: %v", i, err)}
		}
		var role string
		switch m.Role {
		case "system", "developer":
			if len(out) > 0 {
				return nil, &badRequest{fmt.Sprintf("messages[%d].role", i),
					fmt.Sprintf("messages[%d]: a system message may only come before the conversation", i)}
			}
			sys = append(sys, text)
			continue
		case "user":
			role = "user"
		case "assistant":
			role = "model"
		case "tool":
			role = "tool"
			if err := toolResult(out, m, i); err != nil {
				return nil, err
			}
		default:
			return nil, &badRequest{fmt.Sprintf("messages[%d].role", i),
				fmt.Sprintf("messages[%d]: role %q is not supported (want system, developer, user, assistant or tool)", i, m.Role)}
		}
		if len(m.ToolCalls) > 0 && role != "model" {
			return nil, &badRequest{fmt.Sprintf("messages[%d].tool_calls", i), fmt.Sprintf("messages[%d]: only assistant messages hold tool calls", i)}
		}
		calls, err := toolCalls(m.ToolCalls, fmt.Sprintf("messages[%d]", i))
		if err != nil {
			return nil, err
		}
		reasoning := m.ReasoningContent
		if reasoning == "" {
			reasoning = m.Reasoning
		}
		out = append(out, engine.Message{Role: role, Content: text, ToolCalls: calls, ToolCallID: m.ToolCallID, Name: m.Name, Reasoning: reasoning})
	}
	if len(sys) == 0 && system != "" {
		sys = []string{system}
	}
	if len(sys) > 0 {
		out = append([]engine.Message{{Role: "system", Content: strings.Join(sys, "\n\n")}}, out...)
	}
	if len(out) == 0 || out[len(out)-1].Role == "system" {
		return nil, &badRequest{"messages", "messages must hold a user message after the system message"}
	}
	if last := out[len(out)-1]; len(last.ToolCalls) > 0 {
		return nil, &badRequest{"messages", fmt.Sprintf("messages[%d]: the assistant's tool calls have no results: "+
			`after it, send a {"role": "tool", "tool_call_id": …, "content": …} message with each call's result`, len(in)-1)}
	}
	return out, nil
}

// opening sets req's Opening from the request's "darkroom" extension, which a
// request for logprobs (its tokens would not be the model's picks) or for JSON
// (the answer begins with its object) may not have.
func opening(req *engine.Request, ext *api.Extension) error {
	if ext == nil || ext.Opening == "" {
		return nil
	}
	switch {
	case req.Logprobs:
		return &badRequest{"darkroom.opening", "an opening's tokens are not the model's picks, so they have no logprobs: leave out the opening or logprobs"}
	case req.JSON:
		return &badRequest{"darkroom.opening", "a JSON answer begins with its object, not an opening: leave out the opening or response_format"}
	}
	req.Opening = ext.Opening
	return nil
}

// maxChoices is the most answers (n) one request may ask for: they are
// written one after another, so n is n times the wait.
const maxChoices = 8

// Why a request that names no mode runs in AR mode (X-Darkroom-Mode-Reason):
// what it asks for comes with the printer.
const (
	logprobsMode = "logprobs come with the printer (AR mode), which picks one token after another"
	jsonMode     = "a JSON answer is written by the printer (AR mode), each token held to JSON as it is picked"
	toolsMode    = "a tool call is written by the printer (AR mode), each token held to the declared tools as it is picked"
)

// printerOnly is why req can only be written in AR mode ("" where it can be
// written either way).
func printerOnly(req *engine.Request) string {
	switch {
	case req.Logprobs:
		return logprobsMode
	case req.JSON:
		return jsonMode
	case req.ToolCalls != nil:
		return toolsMode
	}
	return ""
}

// generation reads the fields both endpoints share (api.Options) into req: n,
// the mode (AR where none is named and req asks for what only it writes:
// printerOnly), max new tokens (maxTok, the endpoint's field for it; without
// one defaultMax, 0 leaving the model's), temperature, frequency_penalty,
// presence_penalty, top_p, top_k, logit_bias and seed; it returns the stop
// strings.
func generation(req *engine.Request, o *api.Options, maxTok *int, defaultMax int, m Model) ([]string, error) {
	if o.N != nil && (*o.N < 1 || *o.N > maxChoices) {
		return nil, &badRequest{"n", fmt.Sprintf("n must be 1 to %d: the answers are written one after another, each a generation", maxChoices)}
	}
	switch o.Mode {
	case "":
		req.Mode = m.APIMode
		if req.Mode == "" {
			req.Mode = engine.Diffusion
		}
		if printerOnly(req) != "" {
			req.Mode = engine.AR
		}
	case engine.Diffusion:
		if req.Logprobs {
			return nil, &badRequest{"logprobs", `logprobs come with "mode": "ar" (the printer, which picks one token after another); ` +
				`a diffusion canvas's tokens are not picked in order: ask for "ar", or leave mode out`}
		}
		if req.JSON {
			return nil, &badRequest{"response_format", `a JSON answer is written with "mode": "ar" (the printer, whose picks are held to JSON ` +
				`one by one); a diffusion canvas is not written in order: ask for "ar", or leave mode out`}
		}
		if req.ToolCalls != nil {
			return nil, &badRequest{"tool_choice", `a forced tool call (tool_choice "required" or a function) or a strict tool's call is written ` +
				`with "mode": "ar" (the printer, whose picks are held to the tools one by one); a diffusion canvas is not written in order: ` +
				`ask for "ar", or leave mode out`}
		}
		req.Mode = o.Mode
	case engine.AR:
		req.Mode = o.Mode
	default:
		return nil, &badRequest{"mode", fmt.Sprintf("mode %q: want \"diffusion\" or \"ar\"", o.Mode)}
	}
	switch {
	case maxTok != nil:
		if *maxTok < 1 {
			return nil, &badRequest{"max_tokens", fmt.Sprintf("max_tokens must be at least 1, got %d", *maxTok)}
		}
		req.Sampling.MaxNewTokens = *maxTok
	case req.Sampling.MaxNewTokens == 0 && defaultMax > 0:
		req.Sampling.MaxNewTokens = defaultMax
	}
	if t := o.Temperature; t != nil {
		if math.IsNaN(*t) || *t < 0 || *t > 2 {
			return nil, &badRequest{"temperature", fmt.Sprintf("temperature must be between 0 and 2, got %g", *t)}
		}
		if req.Mode == engine.AR {
			req.Sampling.Temperature = *t
		} else {
			// Diffusion needs a positive temperature at every step: scale the
			// model's schedule, with 0 meaning "as sharp as possible".
			scale := max(*t, 0.01)
			tMin, tMax := 1.0, 1.0
			if d, ok := m.Engine.(defaultsProvider); ok {
				def := d.GenerationDefaults()
				if def.TMin > 0 && def.TMax > 0 {
					tMin, tMax = def.TMin, def.TMax
				}
			}
			req.Sampling.TMin, req.Sampling.TMax = tMin*scale, tMax*scale
		}
	}
	if f := o.FrequencyPenalty; f != nil {
		switch {
		case math.IsNaN(*f) || *f < -2 || *f > 2:
			return nil, &badRequest{"frequency_penalty", fmt.Sprintf("frequency_penalty must be between -2 and 2, got %g", *f)}
		case *f < 0:
			return nil, &badRequest{"frequency_penalty", fmt.Sprintf("frequency_penalty %g asks the model to repeat itself, which Darkroom does not do: give 0 (off) to 2", *f)}
		case *f == 0:
			req.Sampling.FrequencyPenalty = -1 // off, not the model's default
		default:
			req.Sampling.FrequencyPenalty = *f
		}
	}
	if f := o.PresencePenalty; f != nil {
		switch {
		case math.IsNaN(*f) || *f < -2 || *f > 2:
			return nil, &badRequest{"presence_penalty", fmt.Sprintf("presence_penalty must be between -2 and 2, got %g", *f)}
		case *f < 0:
			return nil, &badRequest{"presence_penalty", fmt.Sprintf("presence_penalty %g asks the model to repeat itself, which Darkroom does not do: give 0 (off) to 2", *f)}
		}
		req.Sampling.PresencePenalty = *f
	}
	if p := o.TopP; p != nil {
		if !(*p > 0 && *p <= 1) {
			return nil, &badRequest{"top_p", fmt.Sprintf("top_p must be above 0 and at most 1 (1: every token), got %g", *p)}
		}
		req.Sampling.TopP = *p
	}
	if k := o.TopK; k != nil {
		if *k < -1 {
			return nil, &badRequest{"top_k", fmt.Sprintf("top_k must be -1 or 0 (off) or a number of tokens, got %d", *k)}
		}
		req.Sampling.TopK = max(*k, 0)
	}
	for key, b := range o.LogitBias {
		id, err := strconv.Atoi(key)
		switch {
		case err != nil || id < 0:
			return nil, &badRequest{"logit_bias", fmt.Sprintf("logit_bias keys are token ids, e.g. {\"818\": -100}; %q is not one", key)}
		case math.IsNaN(b) || b < -100 || b > 100:
			return nil, &badRequest{"logit_bias", fmt.Sprintf("logit_bias values must be between -100 and 100, got %g for %s", b, key)}
		}
		if req.Sampling.LogitBias == nil {
			req.Sampling.LogitBias = map[int]float64{}
		}
		req.Sampling.LogitBias[id] = b
	}
	if o.Seed != nil {
		req.Seed = uint64(*o.Seed)
	} else {
		var b [8]byte
		_, _ = crand.Read(b[:])
		req.Seed = binary.LittleEndian.Uint64(b[:])
	}
	stops, err := stopStrings(o.Stop)
	if err != nil {
		return nil, &badRequest{"stop", err.Error()}
	}
	return stops, nil
}

// stopStrings reads "stop": null, a string, or up to 4 strings.
func stopStrings(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errors.New("stop must be a string or an array of strings")
	}
	if len(many) > 4 {
		return nil, fmt.Errorf("stop holds %d strings; at most 4 are allowed", len(many))
	}
	out := many[:0]
	for _, s := range many {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// decodeRequest reads r's JSON body into v, or answers the client's error
// (415 for a body that is not JSON, 400 naming a field of the wrong type) and
// returns false.
func decodeRequest(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			apiError(w, http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
				fmt.Sprintf("the request body must be JSON (Content-Type: application/json), not %q", ct))
			return false
		}
	}
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// The field's path, less the Go name of the struct that embeds the
			// shared fields (api.Options): the client sent "temperature".
			field := strings.TrimPrefix(te.Field, "Options.")
			apiErrorParam(w, http.StatusBadRequest, "invalid_request_error", "invalid_type", field,
				fmt.Sprintf("%s must be %s, not %s", field, jsonWant(te.Type), jsonGot(te.Value)))
			return false
		}
		apiError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "the request body is not valid JSON: "+err.Error())
		return false
	}
	return true
}

// modelFor decodes a generation request's body into v and returns the model
// it runs on, or answers the client's error (a body decodeRequest refuses, no
// model, another model than the one it names: model's "model" field, read
// once v is decoded) and returns false.
func (s *Server) modelFor(w http.ResponseWriter, r *http.Request, v any, model func() string) (Model, bool) {
	if !decodeRequest(w, r, v) {
		return Model{}, false
	}
	m, ok := s.apiModelOr(w, r)
	if !ok {
		return m, false
	}
	if id := model(); id != "" && id != m.ID {
		modelNotFound(w, id, m.ID)
		return m, false
	}
	return m, true
}

// answerBadRequest answers err, a *badRequest, as a 400 naming its field.
func answerBadRequest(w http.ResponseWriter, err error) {
	br := &badRequest{msg: err.Error()}
	errors.As(err, &br)
	apiErrorParam(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", br.param, br.msg)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var cr api.ChatRequest
	m, ok := s.modelFor(w, r, &cr, func() string { return cr.Model })
	if !ok {
		return
	}
	req, stops, parallel, err := engineRequest(&cr, m)
	if err != nil {
		answerBadRequest(w, err)
		return
	}
	s.answer(w, r, &m, apiRun{req: req, stops: stops, opts: &cr.Options, steps: cr.Darkroom != nil && cr.Darkroom.Steps,
		input: "messages", parallel: parallel, shape: chatShape{}})
}

// apiRun is one generation that answers an API request: the engine request
// and what the endpoint asked of it, in the endpoint's shape.
type apiRun struct {
	req   engine.Request
	stops []string
	opts  *api.Options
	steps bool   // stream the developing canvas ("darkroom": {"steps": true})
	echo  string // text before the answer's own in the response (a text completion's echo)
	input string // the request's field the prompt came from, for a context_length_exceeded's param
	// parallel lets an answer (req.Tools declared) hold more than one tool
	// call.
	parallel bool
	shape    shape
}

// read divides c's text into its parts where the request asks for them: the
// thought (thinking on: chat.Parse), then the tool calls (tools declared:
// answerCalls, with the ids cs gave them where the answer was streamed), the
// text before them being the answer's; an answer whose calls all closed
// finishes with FinishToolCalls.
func (a *apiRun) read(c *completion, cs *callStream) {
	if a.req.Thinking {
		p := chat.Parse(c.text)
		c.thought, c.text = p.Thought, p.Text
	}
	if len(a.req.Tools) == 0 {
		return
	}
	c.text, c.calls, c.cutCall = answerCalls(c.text, a.parallel, cs.ids())
	if len(c.calls) > 0 && c.cutCall == "" {
		c.finish = api.FinishToolCalls
	}
}

// head is what every body of one response repeats. m is read as each body is
// made: a generation that finds its model closed by a switch runs on the new
// one (Server.generate), and names it.
type head struct {
	id          string
	created     int64
	m           *Model
	fingerprint string
	logprobs    bool   // the request asks for logprobs: each choice carries them
	echo        string // the text before the answer's own (a text completion's echo)
	index       int    // the choice a chunk is of (n > 1)
}

// tokenText is a token's text as the logprobs and an echo of token ids show
// it: the model's vocabulary's (a byte-fallback token's one byte), else vLLM's
// "token_id:N".
func (m *Model) tokenText(id int) string {
	if m.Vocab != nil {
		return m.Vocab.TokenText(id)
	}
	return "token_id:" + strconv.Itoa(id)
}

// shape writes the bodies of one endpoint: chat completions (chatShape) or
// text completions (textShape).
type shape interface {
	idPrefix() string
	// whole is a non-streamed response: each answer's text, finish and
	// logprobs (marks, and the prompt's in res where asked for), in order,
	// and the usage of all.
	whole(h head, answers []*completion, u api.Usage) any
	// first is the first chunk of a choice's stream (h.index), the first
	// choice's sent before the generation waits its turn (nil: none).
	first(h head) any
	// delta is a chunk that adds p: answer text (and thought), and the
	// logprobs of the tokens it completes.
	delta(h head, p piece) any
	// finish is the chunk that ends the answer c: its finish reason (and tool
	// calls), and the run's totals where the stream carries steps.
	finish(h head, c *completion, totals *api.Step) any
	// bare is a chunk with no choices: the usage, or a step.
	bare(h head, u *api.Usage, st *api.Step) any
}

// answer runs a's generation and writes the response: a whole body, or a
// stream of chunks. It checks the request with the engine (a 400 before any
// stream starts), takes a place in the queue (429 when it is full) and waits
// its turn.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, m *Model, a apiRun) {
	if !s.begin(w, m, &a) {
		return
	}
	defer s.queue.leave()
	req := a.req
	h := head{id: a.shape.idPrefix() + randomHex(12), created: time.Now().Unix(), m: m, fingerprint: "darkroom-" + string(req.Mode),
		logprobs: req.Logprobs, echo: a.echo}
	n := 1
	if a.opts.N != nil {
		n = *a.opts.N
	}
	// seeded is the request for choice i: the seed and the next ones, so that
	// n = 1 is the request as sent and a seeded run is reproduced whole.
	seeded := func(i int) engine.Request {
		q := req
		q.Seed += uint64(i)
		return q
	}
	if !a.opts.Stream {
		release, err := s.queue.wait(r.Context(), 0, nil)
		if err != nil {
			return // the client went away
		}
		var answers []*completion
		for i := range n {
			c := s.complete(r.Context(), m, seeded(i), a.stops, nil, nil)
			if c.err != nil {
				release()
				s.failed(w, r, c.err, a.input)
				return
			}
			c.text = a.echo + c.text
			a.read(&c, nil)
			answers = append(answers, &c)
		}
		release()
		writeJSON(w, http.StatusOK, a.shape.whole(h, answers, usageOf(answers)))
		return
	}

	stream, release, ok := s.streamTurn(w, r, func(st *sse) error {
		if first := a.shape.first(h); first != nil {
			return st.event("", first)
		}
		return nil
	})
	if !ok {
		return
	}
	defer stream.end()
	defer release()
	var onStep func(api.Step) error
	if a.steps && m.Vocab != nil {
		onStep = func(st api.Step) error { return stream.event("", a.shape.bare(h, nil, &st)) }
	}
	var answers []*completion
	for i := range n {
		hi := h
		hi.index = i
		if first := a.shape.first(hi); i > 0 && first != nil && stream.event("", first) != nil {
			return
		}
		if a.echo != "" && stream.event("", a.shape.delta(hi, piece{text: a.echo})) != nil {
			return
		}
		split := splitterFor(&a.req) // a thinking answer's text, divided into its thought and the answer
		calls := a.newCallStream()   // the answer, divided into its content and its calls
		send := func(delta string, lps []tokenMark, final bool) error {
			p := piece{marks: lps}
			p.thought, p.text = split.feed(delta, final)
			p.text, p.calls = calls.feed(p.text, final)
			if p.text == "" && p.thought == "" && len(p.calls) == 0 && len(lps) == 0 {
				return nil
			}
			return stream.event("", a.shape.delta(hi, p))
		}
		c := s.complete(r.Context(), m, seeded(i), a.stops, func(delta string, lps []tokenMark) error {
			return send(delta, lps, false)
		}, onStep)
		if c.err != nil {
			if r.Context().Err() == nil {
				s.logf("server: completion: %v", c.err)
				_ = stream.event("", api.ErrorResponse{Error: api.ErrorBody{Message: c.err.Error(), Type: "server_error", Code: "generation_failed"}})
				_ = stream.raw("", api.Done)
			}
			return
		}
		var totals *api.Step
		if onStep != nil {
			totals = &api.Step{Canvas: max(len(c.res.Canvases)-1, 0), Committed: c.usage.CompletionTokens,
				ForwardPasses: c.res.ForwardPasses, ElapsedMS: float64(c.res.Elapsed.Microseconds()) / 1000, Canvases: c.res.Canvases}
		}
		if send("", nil, true) != nil { // what the splitter and the calls held
			return
		}
		a.read(&c, calls)
		if stream.event("", a.shape.finish(hi, &c, totals)) != nil {
			return
		}
		answers = append(answers, &c)
	}
	if a.opts.StreamOptions != nil && a.opts.StreamOptions.IncludeUsage {
		u := usageOf(answers)
		if stream.event("", a.shape.bare(h, &u, nil)) != nil {
			return
		}
	}
	_ = stream.raw("", api.Done)
}

// wholeAnswer runs a's generation for one whole answer when the model's turn
// comes, its parts read (apiRun.read); false where it answered the failure
// (or the client went away).
func (s *Server) wholeAnswer(w http.ResponseWriter, r *http.Request, m *Model, a *apiRun) (*completion, bool) {
	release, err := s.queue.wait(r.Context(), 0, nil)
	if err != nil {
		return nil, false // the client went away
	}
	c := s.complete(r.Context(), m, a.req, a.stops, nil, nil)
	release()
	if c.err != nil {
		s.failed(w, r, c.err, a.input)
		return nil, false
	}
	a.read(&c, nil)
	return &c, true
}

// streamTurn opens an SSE stream, sends what first writes (what a client
// reads before the model's turn comes) and waits for that turn, keeping the
// connection alive. The caller ends the stream and releases the turn; on
// false there is neither.
func (s *Server) streamTurn(w http.ResponseWriter, r *http.Request, first func(*sse) error) (*sse, func(), bool) {
	st, ok := s.newSSE(w)
	if !ok {
		apiError(w, http.StatusInternalServerError, "server_error", "no_streaming", "streaming is not supported by this connection")
		return nil, nil, false
	}
	if first(st) != nil {
		st.end()
		return nil, nil, false
	}
	release, err := s.queue.wait(r.Context(), s.opts.KeepAlive, func() error { return st.comment("waiting for the model") })
	if err != nil {
		st.end()
		return nil, nil, false
	}
	return st, release, true
}

// failed answers a whole answer's failed generation: nothing where the
// client went away, 400 where the prompt did not fit (input names its field),
// else 500 with the engine's error.
func (s *Server) failed(w http.ResponseWriter, r *http.Request, err error, input string) {
	switch {
	case r.Context().Err() != nil:
	case errors.As(err, new(*engine.ContextError)):
		requestError(w, err, input)
	default:
		s.logf("server: %s %s: %v", r.Method, r.URL.Path, err)
		apiError(w, http.StatusInternalServerError, "server_error", "generation_failed", err.Error())
	}
}

// begin readies a's run: it checks the request with the engine (a 400 before
// any stream starts), takes a place in the queue (429 when it is full; the
// caller leaves it) and sets the headers that say how the answer is written.
// It returns false where it has answered.
func (s *Server) begin(w http.ResponseWriter, m *Model, a *apiRun) bool {
	req := &a.req
	leadHeld := req.Lead != "" // an engine that cannot say (none here but tests') holds what it is sent
	if c, ok := m.Engine.(checker); ok {
		checked, err := c.Check(*req)
		if err != nil {
			requestError(w, err, a.input)
			return false
		}
		leadHeld = checked.LeadHeld
	}
	if !s.queue.admit() {
		w.Header().Set("Retry-After", strconv.Itoa(s.queue.retryAfter()))
		apiError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded",
			fmt.Sprintf("%d requests are already waiting for the model; try again shortly", s.opts.QueueLimit))
		return false
	}
	w.Header().Set("X-Darkroom-Mode", string(req.Mode))
	if a.opts.Mode == "" {
		reason := m.APIModeReason
		if why := printerOnly(req); why != "" {
			reason = why
		}
		if reason != "" {
			w.Header().Set("X-Darkroom-Mode-Reason", reason)
		}
	}
	if leadHeld {
		w.Header().Set("X-Darkroom-Lead", develop.LeadNote)
	}
	return true
}

// usageOf is the usage of a request's answers: the prompt once (as the first
// read it), the answers' tokens summed.
func usageOf(answers []*completion) api.Usage {
	u := answers[0].usage
	for _, c := range answers[1:] {
		u.CompletionTokens += c.usage.CompletionTokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// chatShape is POST /v1/chat/completions' shape: a message, deltas of one.
type chatShape struct{}

func (chatShape) idPrefix() string { return "chatcmpl-" }

func (s chatShape) whole(h head, answers []*completion, u api.Usage) any {
	choices := make([]api.Choice, len(answers))
	for i, c := range answers {
		reply := &api.Reply{Role: "assistant", Content: &c.text, ToolCalls: c.calls}
		if len(c.calls) > 0 && c.text == "" {
			reply.Content = nil // OpenAI's null: the answer is its calls
		}
		if c.thought != "" {
			reply.ReasoningContent = &c.thought
		}
		choices[i] = api.Choice{Index: i, Message: reply, Logprobs: s.logprobs(h, c.marks), FinishReason: &c.finish}
	}
	return api.ChatCompletion{ID: h.id, Object: api.ObjectCompletion, Created: h.created, Model: h.m.ID, SystemFingerprint: h.fingerprint,
		Choices: choices, Usage: &u}
}

func (c chatShape) first(h head) any {
	empty := ""
	return c.chunk(h, []api.Choice{{Index: h.index, Delta: &api.Reply{Role: "assistant", Content: &empty}}})
}

func (c chatShape) delta(h head, p piece) any {
	d := &api.Reply{Content: &p.text}
	if p.thought != "" || len(p.calls) > 0 {
		if p.thought != "" {
			d.ReasoningContent = &p.thought
		}
		if p.text == "" {
			d.Content = nil
		}
	}
	for _, part := range p.calls {
		k := part.index
		call := api.ToolCall{Index: &k, Function: api.FunctionCall{Arguments: part.args}}
		if part.begin { // as OpenAI's first chunk of a call: its id, type and name
			call.ID, call.Type, call.Function.Name = part.call.ID, part.call.Type, part.call.Function.Name
		}
		d.ToolCalls = append(d.ToolCalls, call)
	}
	return c.chunk(h, []api.Choice{{Index: h.index, Delta: d, Logprobs: c.logprobs(h, p.marks)}})
}

// piece is what one chunk of a stream adds.
type piece struct {
	text    string      // the answer's
	thought string      // the thought's (thinking on)
	calls   []callPart  // the calls' (tools declared)
	marks   []tokenMark // the logprobs of the tokens whose text it completes
}

// logprobs is a choice's logprobs: nil where the request asks for none.
func (chatShape) logprobs(h head, marks []tokenMark) *api.ChatLogprobs {
	if !h.logprobs {
		return nil
	}
	lp := &api.ChatLogprobs{Content: make([]api.TokenLogprob, len(marks))}
	for i, mk := range marks {
		t := api.TokenLogprob{Token: h.m.tokenText(mk.ID), Logprob: mk.Logprob, TopLogprobs: make([]api.TopLogprob, len(mk.Top))}
		t.Bytes = textBytes(t.Token)
		for k, alt := range mk.Top {
			tok := h.m.tokenText(alt.ID)
			t.TopLogprobs[k] = api.TopLogprob{Token: tok, Logprob: alt.Logprob, Bytes: textBytes(tok)}
		}
		lp.Content[i] = t
	}
	return lp
}

// textBytes is a token's text as the list of its bytes that the logprobs
// carry, exact where the text is a piece of a character.
func textBytes(s string) []int {
	b := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		b[i] = int(s[i])
	}
	return b
}

func (s chatShape) finish(h head, c *completion, totals *api.Step) any {
	ch := s.chunk(h, []api.Choice{{Index: h.index, Delta: &api.Reply{}, FinishReason: &c.finish}}) // the calls came in the deltas
	ch.Darkroom = totals
	return ch
}

func (c chatShape) bare(h head, u *api.Usage, st *api.Step) any {
	ch := c.chunk(h, []api.Choice{})
	ch.Usage, ch.Darkroom = u, st
	return ch
}

func (chatShape) chunk(h head, choices []api.Choice) api.ChatCompletion {
	return api.ChatCompletion{ID: h.id, Object: api.ObjectChunk, Created: h.created, Model: h.m.ID, SystemFingerprint: h.fingerprint,
		Choices: choices}
}

// requestError answers a request the engine refused before running it: 400,
// with context_length_exceeded and the numbers for a prompt that does not fit
// (input names the request's field that held the prompt: messages or prompt).
func requestError(w http.ResponseWriter, err error, input string) {
	var ce *engine.ContextError
	if errors.As(err, &ce) {
		msg := fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens "+
			"(%d in the %s, %d in the completion). Please reduce the length of the %[4]s or max_tokens.",
			ce.Limit, ce.Need, ce.Prompt, input, ce.Need-ce.Prompt)
		if ce.MaxNew > ce.Limit {
			msg = fmt.Sprintf("max_tokens is %d, but this model's maximum context length is %d tokens.", ce.MaxNew, ce.Limit)
		}
		param := "max_tokens"
		if ce.Prompt >= ce.Limit {
			param = input // no max_tokens would help
		}
		apiErrorParam(w, http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", param, msg)
		return
	}
	apiError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", err.Error())
}

// completion is the outcome of one chat generation.
type completion struct {
	text   string
	finish string         // api.FinishStop, api.FinishLength or (apiRun.read) api.FinishToolCalls
	stop   string         // the stop string that ended the answer ("": none)
	calls  []api.ToolCall // the tool calls read out of the text (apiRun.read)
	// cutCall is, where the answer ended inside its last call (whose
	// arguments are then a JSON object's start), that call's values written
	// whole as a JSON object ("": no call was cut).
	cutCall string
	thought string // the thought read out of the text (apiRun.read; thinking on)
	usage   api.Usage
	res     *engine.Result // the engine's result (nil with err)
	// marks are the answer's tokens with their log probabilities and where
	// each ends in text (Request.Logprobs) that onDelta was not passed — a
	// whole answer's all: those that begin before its end, so that a stop
	// string's cut drops the tokens after it.
	marks []tokenMark
	err   error
}

// tokenMark is one answer token's log probability and the byte offsets in the
// answer's text where the token begins and ends.
type tokenMark struct {
	engine.TokenLogprob
	start, end int
}

var errStopString = errors.New("a stop string was written")

// complete runs req. Committed text is passed to onDelta (if set) as it grows,
// append-only: text that may still change (an incomplete UTF-8 sequence at the
// end, or the start of a stop string) is held back. With Request.Logprobs each
// delta also carries the tokens whose text it completes (at the end, every
// token that begins before the answer's end). A stop string ends the
// generation early. onStep (if set) gets the latest denoising step, at most
// one per FrameInterval and after the text committed before it. An onDelta or
// onStep error (the client went away) cancels the generation.
func (s *Server) complete(ctx context.Context, m *Model, req engine.Request, stops []string, onDelta func(string, []tokenMark) error,
	onStep func(api.Step) error) completion {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	box := newMailbox[string]()
	steps := newMailbox[api.Step]()
	var (
		marksMu sync.Mutex
		marks   []tokenMark // every token's, in order, as the engine reports them
	)
	if onDelta != nil || len(stops) > 0 || onStep != nil || req.Logprobs {
		req.OnEvent = func(ev engine.Event) {
			switch {
			case ev.Kind == engine.EventCommit || ev.Kind == engine.EventToken:
				if ev.Logprob != nil {
					marksMu.Lock()
					start := 0
					if n := len(marks); n > 0 {
						start = marks[n-1].end
					}
					marks = append(marks, tokenMark{*ev.Logprob, start, len(ev.Text)})
					marksMu.Unlock()
				}
				steps.take() // a step of the canvas just committed is stale
				box.put(ev.Text)
			case ev.Kind == engine.EventStep && onStep != nil:
				steps.put(newStepChunk(ev, m.Vocab))
			}
		}
	}
	sent := 0                     // bytes of text passed to onDelta
	var prev string               // the text sent so far is prev[:sent]
	stopped := false              // a stop string was found
	var stopText, stopWith string // the text up to it, and the stop string
	marksSent := 0                // marks passed to onDelta
	// marksTo is the marks not yet sent whose text ends by end (with final,
	// the rest: those that begin before end where a stop string cut the text).
	marksTo := func(end int, final bool) []tokenMark {
		marksMu.Lock()
		defer marksMu.Unlock()
		n := marksSent
		for n < len(marks) && (marks[n].end <= end || final && (!stopped || marks[n].start < end)) {
			n++
		}
		out := marks[marksSent:n:n]
		marksSent = n
		return out
	}
	type outcome struct {
		res *engine.Result
		err error
	}
	finished := make(chan outcome, 1)
	go func() {
		res, err := s.generate(ctx, m, req)
		finished <- outcome{res, err}
	}()

	push := func(text string, final bool) error {
		if !stopped {
			if i, stop := firstStop(text, stops); i >= 0 {
				text, stopped, stopText, stopWith = text[:i], true, text[:i], stop
				cancel(errStopString)
				final = true
			}
		}
		if onDelta == nil {
			return nil
		}
		if !strings.HasPrefix(text, prev[:sent]) {
			// The decoded text changed under what was sent (a token boundary
			// inside a character): it cannot be taken back; carry on from the same
			// place in the new text, at a character's start. (Returning here lost
			// the rest of a final text: the answer after a stream's first commit.)
			s.logf("server: streamed text changed after it was sent")
			sent = min(sent, len(text))
			for sent < len(text) && !utf8.RuneStart(text[sent]) {
				sent++
			}
			prev = text
		}
		end := len(text)
		if !final {
			end = holdBack(text, stops) // the calls are divided from the answer after the thought (callStream)
		}
		if end < sent {
			return nil
		}
		lps := marksTo(end, final)
		if end == sent && len(lps) == 0 {
			return nil
		}
		delta := text[sent:end]
		prev, sent = text, end
		return onDelta(delta, lps)
	}

	flush := func() error {
		if text, ok := box.take(); ok && !stopped {
			return push(text, false)
		}
		return nil
	}
	var (
		lastStep time.Time
		stepDue  <-chan time.Time // set while a step waits for its frame
	)
	sendStep := func() error {
		if wait := s.opts.FrameInterval - time.Since(lastStep); wait > 0 {
			if stepDue == nil {
				stepDue = time.After(wait)
			}
			return nil
		}
		if err := flush(); err != nil { // the canvases committed before the step come first
			return err
		}
		st, ok := steps.take()
		if !ok || stopped {
			return nil
		}
		lastStep = time.Now()
		return onStep(st)
	}
	var out outcome
loop:
	for {
		var err error
		select {
		case out = <-finished:
			break loop
		case <-box.kick:
			err = flush()
		case <-steps.kick:
			err = sendStep()
		case <-stepDue:
			stepDue = nil
			err = sendStep()
		}
		if err != nil {
			cancel(err)
			<-finished
			return completion{err: fmt.Errorf("send: %w", err)}
		}
	}
	if out.err != nil {
		return completion{err: out.err}
	}
	res := out.res
	c := completion{res: res, usage: api.Usage{PromptTokens: res.PromptTokens, CompletionTokens: len(res.Tokens),
		PromptDetails: &api.PromptDetails{CachedTokens: res.PromptCached}}}
	c.usage.TotalTokens = c.usage.PromptTokens + c.usage.CompletionTokens
	switch {
	case stopped:
		c.text, c.finish, c.stop = stopText, api.FinishStop, stopWith
	case res.StopReason == engine.StopCancelled:
		return completion{err: fmt.Errorf("generation cancelled: %w", context.Cause(ctx))}
	default:
		c.text, c.finish = res.Text, api.FinishStop
		if res.StopReason == engine.StopMaxTokens {
			c.finish = api.FinishLength
		}
		if i, stop := firstStop(c.text, stops); i >= 0 {
			c.text, c.finish, c.stop, stopped = c.text[:i], api.FinishStop, stop, true
		}
	}
	if err := push(c.text, true); err != nil {
		return completion{err: fmt.Errorf("send: %w", err)}
	}
	c.marks = marksTo(len(c.text), true) // a whole answer's (a stream sent its own with the text)
	return c
}

// firstStop is the index of the earliest stop string in text and that
// string, or -1.
func firstStop(text string, stops []string) (int, string) {
	at, stop := -1, ""
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && (at < 0 || i < at) {
			at, stop = i, s
		}
	}
	return at, stop
}

// holdBack is how much of text may be sent now: not a trailing U+FFFD (half a
// character whose other bytes come with the next token) nor a suffix that could
// be the start of a stop string.
func holdBack(text string, stops []string) int {
	end := len(text)
	for end > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:end])
		if r != utf8.RuneError {
			break
		}
		end -= size
	}
	return cutPartial(text, end, stops)
}

// cutPartial is where text[:end] ends less the start of each of marks it ends
// with (a stop string, a marker, that more text may complete), mark by mark.
func cutPartial(text string, end int, marks []string) int {
	for _, m := range marks {
		for k := min(len(m)-1, end); k > 0; k-- {
			if strings.HasSuffix(text[:end], m[:k]) {
				end -= k
				break
			}
		}
	}
	return end
}

// apiError writes an OpenAI-style error: {"error": {message, type, param, code}}.
// jsonWant names, in JSON's terms, what a request field of Go type t takes: a
// client sees the API's fields, not the server's structs.
func jsonWant(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}

// jsonGot names the JSON value a field was sent (UnmarshalTypeError.Value:
// "string", "number 1.5", "bool", "array", "object").
func jsonGot(v string) string {
	switch kind, num, _ := strings.Cut(v, " "); kind {
	case "string", "object", "array":
		return map[string]string{"string": "a string", "object": "an object", "array": "an array"}[kind]
	case "bool":
		return "true or false"
	case "number":
		if num != "" {
			return num
		}
		return "a number"
	}
	return v
}

func apiError(w http.ResponseWriter, status int, typ, code, msg string) {
	apiErrorParam(w, status, typ, code, "", msg)
}

func apiErrorParam(w http.ResponseWriter, status int, typ, code, param, msg string) {
	body := api.ErrorBody{Message: msg, Type: typ, Code: code}
	if param != "" {
		body.Param = &param
	}
	writeJSON(w, status, api.ErrorResponse{Error: body})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := io.ReadFull(crand.Reader, b); err != nil {
		return "0"
	}
	return hex.EncodeToString(b)
}
