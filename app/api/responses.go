package api

import (
	"encoding/json"

	"github.com/darkroomlabs/darkroom/engine"
)

// ObjectResponse is the "object" of a Responses API response.
const ObjectResponse = "response"

// Response statuses Darkroom writes: the answer ended, or max_output_tokens
// cut it (IncompleteDetails says so); a stream's first events say in progress.
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
)

// ResponsesRequest is the body of POST /v1/responses, OpenAI's Responses API:
// the fields Darkroom honours. Input is a string (one user message) or an
// array of input items (InputItem). Nothing is stored: PreviousResponseID is
// read to refuse it.
type ResponsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    string          `json:"instructions,omitempty"` // the system message
	MaxOutputTokens *int            `json:"max_output_tokens,omitempty"`
	Temperature     *float64        `json:"temperature,omitempty"`
	TopP            *float64        `json:"top_p,omitempty"`
	// Tools are function tools, flat: {"type": "function", "name": …,
	// "description": …, "parameters": {…}}. ToolChoice is "auto", "none",
	// "required" or {"type": "function", "name": …}.
	Tools             []ResponseTool  `json:"tools,omitempty"`
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	// Text's format is "text" or "json_object" (a "json_schema" is refused).
	Text *ResponseText `json:"text,omitempty"`
	// Reasoning's effort "low", "medium" or "high" turns the model's thinking
	// on; the thought is a "reasoning" output item.
	Reasoning          *ResponseReasoning `json:"reasoning,omitempty"`
	Stream             bool               `json:"stream,omitempty"`
	PreviousResponseID string             `json:"previous_response_id,omitempty"`
	Store              *bool              `json:"store,omitempty"` // read, not honoured: nothing is stored
	// Seed and Mode are Darkroom's, as in chat completions.
	Seed *int64      `json:"seed,omitempty"`
	Mode engine.Mode `json:"mode,omitempty"`
}

// ResponseTool is a Responses API function tool.
type ResponseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ResponseText is a request's or a response's "text": its format.
type ResponseText struct {
	Format ResponseFormat `json:"format"`
}

// ResponseReasoning is a request's or a response's "reasoning".
type ResponseReasoning struct {
	Effort *string `json:"effort"`
}

// InputItem is one item of a request's input: a message (Role and Content, a
// string or an array of input_text/output_text parts), a function_call the
// model made (CallID, Name, Arguments), a function_call_output (CallID and
// Output, the call's result) or a reasoning item (Content's reasoning_text).
type InputItem struct {
	Type      string          `json:"type,omitempty"` // "message" where absent
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

// Response is a Responses API response: the whole answer, and the snapshot a
// stream's response.created, response.in_progress and response.completed (or
// response.incomplete) events carry.
type Response struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	CreatedAt         int64              `json:"created_at"` // Unix seconds
	Status            string             `json:"status"`
	Model             string             `json:"model"`
	Output            []OutputItem       `json:"output"`
	Usage             *ResponseUsage     `json:"usage"`
	IncompleteDetails *IncompleteDetails `json:"incomplete_details"`
	Error             *ErrorBody         `json:"error"`
	Instructions      *string            `json:"instructions"`
	MaxOutputTokens   *int               `json:"max_output_tokens"`
	Temperature       *float64           `json:"temperature"`
	TopP              *float64           `json:"top_p"`
	ParallelToolCalls bool               `json:"parallel_tool_calls"`
	ToolChoice        json.RawMessage    `json:"tool_choice"`
	Tools             []ResponseTool     `json:"tools"`
	Text              ResponseText       `json:"text"`
	Reasoning         *ResponseReasoning `json:"reasoning"`
	Store             bool               `json:"store"`
	Metadata          map[string]string  `json:"metadata"`
}

// IncompleteDetails says why a response is incomplete: "max_output_tokens".
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ResponseUsage is a response's token counts.
type ResponseUsage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails are the input tokens read from the prompt cache.
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokensDetails are the output tokens of the thought (not counted
// apart here: 0).
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// OutputItem is one item of a response's output: a "message" (Role, Content
// of output_text parts), a "function_call" (CallID, Name, Arguments) or a
// "reasoning" item (Content of reasoning_text parts, Summary empty).
type OutputItem struct {
	Type      string         `json:"type"`
	ID        string         `json:"id"`
	Status    string         `json:"status,omitempty"`
	Role      string         `json:"role,omitempty"`
	Content   *[]ContentPart `json:"content,omitempty"` // a message's and a reasoning item's (written [] while empty)
	Summary   *[]ContentPart `json:"summary,omitempty"` // a reasoning item's: none, written []
	CallID    string         `json:"call_id,omitempty"`
	Name      string         `json:"name,omitempty"`
	Arguments *string        `json:"arguments,omitempty"`
}

// ContentPart is an output item's part: "output_text" (with its annotations,
// an empty list: NoAnnotations) or "reasoning_text" (none).
type ContentPart struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations *[]any `json:"annotations,omitempty"`
}

// NoAnnotations is an output_text part's annotations: none, written [].
func NoAnnotations() *[]any { return &[]any{} }

// ResponseEvent is one event of a Responses API stream: Type names it
// ("response.created", "response.output_text.delta", …) and the fields it
// carries are set.
type ResponseEvent struct {
	Type           string       `json:"type"`
	SequenceNumber int          `json:"sequence_number"`
	Response       *Response    `json:"response,omitempty"`
	OutputIndex    *int         `json:"output_index,omitempty"`
	ContentIndex   *int         `json:"content_index,omitempty"`
	ItemID         string       `json:"item_id,omitempty"`
	Item           *OutputItem  `json:"item,omitempty"`
	Part           *ContentPart `json:"part,omitempty"`
	Delta          *string      `json:"delta,omitempty"`
	Text           *string      `json:"text,omitempty"`
	Arguments      *string      `json:"arguments,omitempty"`
	Name           string       `json:"name,omitempty"`
	Logprobs       []any        `json:"logprobs,omitempty"`
	Error          *ErrorBody   `json:"error,omitempty"`
}
