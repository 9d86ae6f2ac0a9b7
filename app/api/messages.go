package api

import (
	"encoding/json"

	"github.com/darkroomlabs/darkroom/engine"
)

// Anthropic's Messages API (POST /v1/messages), for clients written against
// it: the request, the message answered, and a stream's events.

// MessagesRequest is the body of POST /v1/messages: the fields Darkroom
// honours. System is a string or text blocks; each message's Content a string
// or content blocks (ContentBlock).
type MessagesRequest struct {
	Model         string             `json:"model"`
	MaxTokens     *int               `json:"max_tokens"`
	System        json.RawMessage    `json:"system,omitempty"`
	Messages      []AnthropicMessage `json:"messages"`
	StopSequences []string           `json:"stop_sequences,omitempty"`
	Temperature   *float64           `json:"temperature,omitempty"`
	TopP          *float64           `json:"top_p,omitempty"`
	TopK          *int               `json:"top_k,omitempty"`
	Stream        bool               `json:"stream,omitempty"`
	// Tools are custom tools ({"name", "description", "input_schema"}); a
	// server tool (a "type" other than "custom") is refused.
	Tools      []AnthropicTool      `json:"tools,omitempty"`
	ToolChoice *AnthropicToolChoice `json:"tool_choice,omitempty"`
	// Thinking {"type": "enabled"} (or "adaptive") turns the model's thinking
	// on; the thought is a "thinking" content block. Its budget_tokens is read,
	// not enforced: the thought is part of max_tokens.
	Thinking *AnthropicThinking `json:"thinking,omitempty"`
	// Seed and Mode are Darkroom's, as in chat completions.
	Seed *int64      `json:"seed,omitempty"`
	Mode engine.Mode `json:"mode,omitempty"`
}

// AnthropicMessage is one message of a request: "user" or "assistant".
type AnthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// ContentBlock is one block of a message's content, of a response's, or
// (streamed) the block a content_block_start opens: "text" (Text), "thinking"
// (Thinking, Signature), "tool_use" (ID, Name, Input) or, in a request,
// "tool_result" (ToolUseID, Content: a string or text blocks; IsError).
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// AnthropicTool is a custom tool: its name, description and input's JSON
// Schema; Strict holds its calls to that schema (as FunctionDef's).
type AnthropicTool struct {
	Type        string          `json:"type,omitempty"` // "custom" or none
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// AnthropicToolChoice is "auto", "any" (a tool must be called), "tool" (Name
// must be) or "none".
type AnthropicToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// AnthropicThinking is a request's "thinking".
type AnthropicThinking struct {
	Type         string `json:"type"` // "enabled", "adaptive" or "disabled"
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// Stop reasons of an answered message.
const (
	StopEndTurn   = "end_turn"
	StopMaxTokens = "max_tokens"
	StopSequence  = "stop_sequence"
	StopToolUse   = "tool_use"
)

// AnthropicResponse is an answered message: the whole response, and (content
// empty, no stop reason) the message a stream's message_start carries.
type AnthropicResponse struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"` // "message"
	Role         string         `json:"role"` // "assistant"
	Model        string         `json:"model"`
	Content      []ContentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        AnthropicUsage `json:"usage"`
}

// AnthropicUsage is a message's token counts.
type AnthropicUsage struct {
	InputTokens          int `json:"input_tokens"`
	OutputTokens         int `json:"output_tokens"`
	CacheReadInputTokens int `json:"cache_read_input_tokens"`
}

// AnthropicEvent is one event of a stream, its Type also the SSE event's
// name: message_start (Message), content_block_start (Index, ContentBlock),
// content_block_delta (Index, Delta), content_block_stop (Index),
// message_delta (Delta's stop reason, Usage), message_stop, error.
type AnthropicEvent struct {
	Type         string             `json:"type"`
	Message      *AnthropicResponse `json:"message,omitempty"`
	Index        *int               `json:"index,omitempty"`
	ContentBlock *ContentBlock      `json:"content_block,omitempty"`
	Delta        *AnthropicDelta    `json:"delta,omitempty"`
	Usage        *AnthropicUsage    `json:"usage,omitempty"`
	Error        *ErrorBody         `json:"error,omitempty"`
}

// AnthropicDelta is a content_block_delta's text_delta (Text), thinking_delta
// (Thinking) or input_json_delta (PartialJSON), or a message_delta's stop
// reason.
type AnthropicDelta struct {
	Type         string  `json:"type,omitempty"`
	Text         *string `json:"text,omitempty"`
	Thinking     *string `json:"thinking,omitempty"`
	PartialJSON  *string `json:"partial_json,omitempty"`
	StopReason   *string `json:"stop_reason,omitempty"`
	StopSequence *string `json:"stop_sequence,omitempty"`
}
