// Package api is the wire format of Darkroom's OpenAI-compatible HTTP API: the
// requests, responses and stream chunks of GET /v1/models, POST
// /v1/chat/completions and POST /v1/completions, and the requests, responses
// and events of POST /v1/responses (responses.go) and of Anthropic's POST
// /v1/messages (messages.go), with their JSON tags, and
// Darkroom's extensions to them (the "mode" field and the "darkroom" object). app/server encodes the
// responses and decodes the requests; app/remote encodes the requests and
// decodes the responses; written once here, the two cannot drift apart.
//
// The types hold the fields Darkroom writes or reads, in OpenAI's shape; what
// they mean to the engine (roles, the temperature scale, stop strings, when a
// step is streamed) is app/server's to say, in its API doc.
package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/darkroomlabs/darkroom/engine"
)

// OwnedBy is the owned_by of every model a Darkroom server lists. A client that
// sees it may ask for the Darkroom extension.
const OwnedBy = "darkroom"

// Object names, the "object" field of each body.
const (
	ObjectModel      = "model"
	ObjectList       = "list"
	ObjectCompletion = "chat.completion"
	ObjectChunk      = "chat.completion.chunk"
	ObjectText       = "text_completion" // a text completion, and each chunk of its stream
)

// Finish reasons Darkroom writes: the answer ended, max_tokens cut it, or
// the model called tools and waits for their results.
const (
	FinishStop      = "stop"
	FinishLength    = "length"
	FinishToolCalls = "tool_calls"
)

// Done is the data of a stream's last event ("data: [DONE]").
const Done = "[DONE]"

// Model is one model of GET /v1/models, and the body of GET /v1/models/{id}:
// in OpenAI's shape and Anthropic's at once (each client reads its own
// fields; the Anthropic ones are left out where empty).
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`   // ObjectModel
	Created int64  `json:"created"`  // Unix seconds
	OwnedBy string `json:"owned_by"` // OwnedBy for a Darkroom server's models
	// Anthropic's: "model", the name to show, and Created as RFC 3339.
	Type        string `json:"type,omitempty"`
	DisplayName string `json:"display_name,omitempty"`
	CreatedAt   string `json:"created_at,omitempty"`
}

// Darkroom reports whether a Darkroom server lists the model, and so streams its
// denoising steps when asked.
func (m Model) Darkroom() bool { return m.OwnedBy == OwnedBy }

// ModelList is the body of GET /v1/models, a page in Anthropic's shape too
// (the whole list: HasMore false, FirstID and LastID its ends).
type ModelList struct {
	Object  string  `json:"object"` // ObjectList
	Data    []Model `json:"data"`
	HasMore bool    `json:"has_more"`
	FirstID string  `json:"first_id,omitempty"`
	LastID  string  `json:"last_id,omitempty"`
}

// Options are the fields of a request that say how to generate, the same in
// POST /v1/chat/completions and POST /v1/completions; both requests embed them,
// so they sit at the top level of either body.
type Options struct {
	MaxTokens   *int     `json:"max_tokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	// FrequencyPenalty is OpenAI's frequency_penalty, 0 to 2 here (below 0, a
	// wish for repetition, is refused); AR mode reads it.
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`
	// PresencePenalty is OpenAI's presence_penalty, 0 to 2 here, as the
	// frequency penalty; AR mode reads it.
	PresencePenalty *float64 `json:"presence_penalty,omitempty"`
	// TopP is OpenAI's top_p and TopK vLLM's top_k (0 or -1: off); AR mode
	// reads them (the printer's draw, after the temperature).
	TopP *float64 `json:"top_p,omitempty"`
	TopK *int     `json:"top_k,omitempty"`
	// LogitBias is OpenAI's logit_bias: token ids (as strings) to a bias from
	// -100 to 100 added to their logits; AR mode reads it.
	LogitBias     map[string]float64 `json:"logit_bias,omitempty"`
	Seed          *int64             `json:"seed,omitempty"`
	Stop          json.RawMessage    `json:"stop,omitempty"` // null, a string, or an array of strings
	N             *int               `json:"n,omitempty"`
	Stream        bool               `json:"stream"`
	StreamOptions *StreamOptions     `json:"stream_options,omitempty"`
	// Mode is Darkroom's extension: engine.Diffusion or engine.AR, "" for the
	// server's choice.
	Mode engine.Mode `json:"mode,omitempty"`
}

// ChatRequest is the body of POST /v1/chat/completions: the fields Darkroom
// honours. A server ignores the others; a client leaves out what it does not
// set.
type ChatRequest struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Options
	MaxCompletionTokens *int `json:"max_completion_tokens,omitempty"` // takes precedence over MaxTokens
	// ResponseFormat asks for text (none, or "text"), one JSON object
	// ("json_object") or one that is an instance of a schema ("json_schema").
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	// Logprobs asks for each answer token's log probability (Choice.Logprobs),
	// and TopLogprobs (0 to 20, with Logprobs) for the most likely tokens at
	// each position.
	Logprobs    *bool `json:"logprobs,omitempty"`
	TopLogprobs *int  `json:"top_logprobs,omitempty"`
	// Tools are the functions the model may call. ToolChoice is "auto" (the
	// default), "none" (no tool is declared to the model), "required" (the
	// answer is a call) or {"type": "function", "function": {"name": …}} (a call
	// of that function). ParallelToolCalls false asks for at most one call.
	Tools             []Tool          `json:"tools,omitempty"`
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	// ReasoningEffort (OpenAI's) and ChatTemplateKwargs' enable_thinking
	// (vLLM's) turn the model's thinking on: an effort of "low", "medium" or
	// "high", or enable_thinking true; "none" or "minimal", or false, leave
	// it off (the default). The thought comes back as ReasoningContent.
	ReasoningEffort    *string                    `json:"reasoning_effort,omitempty"`
	ChatTemplateKwargs map[string]json.RawMessage `json:"chat_template_kwargs,omitempty"`
	// Functions and FunctionCall, OpenAI's deprecated form of tools, are read
	// to refuse them, naming tools.
	Functions    json.RawMessage `json:"functions,omitempty"`
	FunctionCall json.RawMessage `json:"function_call,omitempty"`
	// Darkroom is Darkroom's opt-in extension; other servers ignore it.
	Darkroom *Extension `json:"darkroom,omitempty"`
}

// CompletionRequest is the body of POST /v1/completions, OpenAI's text
// completion: the model goes on from Prompt as written, with no chat template.
// Prompt is a string, an array of one string, an array of token ids, or an
// array of one such array; a server reads one prompt per request, so more
// prompts than one are refused.
type CompletionRequest struct {
	Model  string          `json:"model"`
	Prompt json.RawMessage `json:"prompt"`
	Options
	// Echo puts the prompt before the completion in the answer's text.
	Echo bool `json:"echo,omitempty"`
	// Logprobs asks for each answer token's log probability with this many of
	// the most likely tokens at its position (0 to 20; null: none):
	// TextChoice.Logprobs.
	Logprobs *int `json:"logprobs,omitempty"`
	// Suffix (text after the completion: infill) and BestOf are read to refuse
	// what Darkroom does not do: "" or null, and 1 or null ask for none.
	Suffix *string `json:"suffix,omitempty"`
	BestOf *int    `json:"best_of,omitempty"`
	// Darkroom is Darkroom's opt-in extension: its Opening and Steps (NoLead
	// has nothing to do: a text completion is never opened with an entry).
	Darkroom *Extension `json:"darkroom,omitempty"`
}

// ResponseFormat is a request's "response_format": its type, "text",
// "json_object" or "json_schema" with JSONSchema (chat completions). The
// Responses API's text.format carries a json_schema's fields flat: Name,
// Schema, Strict.
type ResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *JSONSchema     `json:"json_schema,omitempty"`
	Name       string          `json:"name,omitempty"`
	Schema     json.RawMessage `json:"schema,omitempty"`
	Strict     *bool           `json:"strict,omitempty"`
}

// JSONSchema is a json_schema response format: the schema the answer is held
// to, and its name (read, not used). Strict is read; the answer is always
// held to the schema.
type JSONSchema struct {
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict,omitempty"`
}

// StreamOptions are a streamed request's options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"` // a last chunk carries Usage
}

// Extension is a request's "darkroom" object.
type Extension struct {
	Opening string `json:"opening,omitempty"` // the start of the answer, fixed in advance
	NoLead  bool   `json:"no_lead,omitempty"` // the model alone: no entry's text opens the answer
	Steps   bool   `json:"steps"`             // stream the developing canvas (Step chunks)
}

// Message is one message of a request. Content is a string, null, or an array
// of text parts ({"type": "text", "text": …}), as OpenAI allows; Text reads it.
type Message struct {
	Role    string          `json:"role"` // system, developer, user, assistant or tool
	Content json.RawMessage `json:"content"`
	// ToolCalls are an assistant message's calls (as a response gave them).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is a tool message's: the id of the call whose result it is.
	// Name (a tool message's) names the function where the id is not sent.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
	// ReasoningContent (or Reasoning, vLLM's newer name) is an assistant
	// message's thought, as a response gave it.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Reasoning        string `json:"reasoning,omitempty"`
}

// Tool is one of a request's tools: {"type": "function", "function": {…}}.
type Tool struct {
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
}

// FunctionDef declares a function: its name, what it does, and its
// parameters' JSON Schema (an object).
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// Strict asks that the function's calls be held to its parameters (where
	// they can be: refused where not), written in AR mode.
	Strict *bool `json:"strict,omitempty"`
}

// ToolCall is one call of a function: in an answer's message (Reply), in a
// stream's delta (with Index), or in an assistant message sent back.
type ToolCall struct {
	Index    *int         `json:"index,omitempty"` // a stream's: which call of the answer
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall is a called function's name and its arguments, a JSON object
// as text.
type FunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// TextMessage is a message whose content is the string text.
func TextMessage(role, text string) Message {
	b, _ := json.Marshal(text) // a string always encodes
	return Message{Role: role, Content: b}
}

// Text is the message's content as one string: the string, "" for null or no
// content, or the text parts joined. Parts of another type are an error.
func (m Message) Text() (string, error) {
	raw := bytes.TrimSpace(m.Content)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or an array of text parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part type %q is not supported (text only)", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// ChatCompletion is a response of POST /v1/chat/completions: the whole answer
// (Object ObjectCompletion, the text in Choices[0].Message) or one chunk of a
// stream (ObjectChunk, the text added in Choices[0].Delta). A stream's chunks
// with no choices carry Usage (the last, when asked for) or a Darkroom step.
type ChatCompletion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"` // Unix seconds
	Model             string   `json:"model"`
	SystemFingerprint string   `json:"system_fingerprint"` // Darkroom: "darkroom-" and the mode that ran
	Choices           []Choice `json:"choices"`
	Usage             *Usage   `json:"usage,omitempty"`
	// Darkroom is sent only to a request with the "darkroom" extension.
	Darkroom *Step `json:"darkroom,omitempty"`
}

// Choice is the one answer of a response (Darkroom writes one per request).
type Choice struct {
	Index        int           `json:"index"`
	Message      *Reply        `json:"message,omitempty"` // a whole answer's
	Delta        *Reply        `json:"delta,omitempty"`   // a chunk's
	Logprobs     *ChatLogprobs `json:"logprobs"`          // null unless the request asks for them
	FinishReason *string       `json:"finish_reason"`     // FinishStop or FinishLength on the last; null before
}

// Reply is a choice's message, or the part of it one chunk adds.
type Reply struct {
	Role    string  `json:"role,omitempty"` // "assistant", in the whole answer and the first chunk
	Content *string `json:"content,omitempty"`
	// ReasoningContent is the model's thought (thinking on), apart from the
	// answer in Content, as vLLM and DeepSeek send it.
	ReasoningContent *string `json:"reasoning_content,omitempty"`
	// ToolCalls are the calls the model wrote (finish reason "tool_calls"); a
	// stream sends each whole, in the chunk that ends its choice.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// TextCompletion is a response of POST /v1/completions: the whole answer, or
// one chunk of a stream (both Object ObjectText; a chunk's Text is what it
// adds). As in ChatCompletion, a stream's chunks with no choices carry Usage
// or a Darkroom step.
type TextCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"` // Unix seconds
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []TextChoice `json:"choices"`
	Usage             *Usage       `json:"usage,omitempty"`
	Darkroom          *Step        `json:"darkroom,omitempty"`
}

// TextChoice is the one answer of a text completion, or the part a chunk adds.
type TextChoice struct {
	Text         string        `json:"text"`
	Index        int           `json:"index"`
	Logprobs     *TextLogprobs `json:"logprobs"`      // null unless the request asks for them
	FinishReason *string       `json:"finish_reason"` // FinishStop or FinishLength on the last; null before
}

// ChatLogprobs is a chat choice's "logprobs": the log probability of each
// token of the answer (or of the part a chunk adds), in order.
type ChatLogprobs struct {
	Content []TokenLogprob `json:"content"`
	Refusal []TokenLogprob `json:"refusal"` // null: Darkroom's models write no refusal apart
}

// TokenLogprob is one token of a chat answer: its text (a piece of a
// character where the token is one of its bytes), the natural log of its
// probability, its bytes, and the most likely tokens at its position.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float32      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is one of the most likely tokens at a position.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// TextLogprobs is a text completion choice's "logprobs", OpenAI's parallel
// lists: each token's text, log probability, most likely tokens at its
// position (text → log probability) and byte offset in the choice's text. An
// echoed prompt's first token has null for both (nothing comes before it).
type TextLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float32           `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// Usage counts a request's tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// PromptDetails.CachedTokens: of the prompt's tokens, how many the server read
	// from an earlier request's cache instead of encoding (OpenAI's field; the
	// prompt began as the last one did).
	PromptDetails *PromptDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptDetails is Usage's prompt_tokens_details.
type PromptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// Step is a chunk's "darkroom" object: one denoising step of the current canvas
// (Step > 0), or, in the finish chunk, the run's totals (Canvases set). Draft
// and Argmax are the canvas positions' token texts, null for a token that ends
// the answer; Committed counts the tokens committed before the canvas.
type Step struct {
	Canvas        int                  `json:"canvas"`
	Step          int                  `json:"step,omitempty"`
	Round         int                  `json:"guidance_round,omitempty"` // engine.Event.Round: a guidance round's, 1-based (0: a denoising step)
	Steps         int                  `json:"steps,omitempty"`          // engine.Event.Steps: denoising steps of every canvas so far
	Draft         []*string            `json:"draft,omitempty"`
	Argmax        []*string            `json:"argmax,omitempty"`
	Accepted      []bool               `json:"accepted,omitempty"`
	Committed     int                  `json:"committed"`
	ForwardPasses int                  `json:"forward_passes"`
	ElapsedMS     float64              `json:"elapsed_ms"`
	Canvases      []engine.CanvasStats `json:"canvases,omitempty"`
}

// ErrorResponse is the body of an error: a response's with a 4xx or 5xx
// status, or an event inside a stream that failed after its 200.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is what went wrong, in OpenAI's shape.
type ErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`  // "invalid_request_error", "server_error", …
	Param   *string `json:"param"` // the request field at fault, if one is
	Code    string  `json:"code"`  // "model_not_found", "context_length_exceeded", …
}
