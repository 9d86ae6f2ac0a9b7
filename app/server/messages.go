package server

// POST /v1/messages, Anthropic's Messages API, for clients written against it
// (the anthropic client, and coding agents that take a base URL for it), and
// POST /v1/messages/count_tokens. As with the Responses API (responses.go), a
// request is read into the chat request it asks for (chatOfMessages) and
// checked and run as a chat completion is; only the answer's shape is its
// own: content blocks — "thinking" (thinking on), "text", a "tool_use" per
// tool call — a stop_reason (end_turn, max_tokens, stop_sequence, tool_use),
// and, streamed, the API's named events (message_start, content_block_start,
// content_block_delta, content_block_stop, message_delta, message_stop). The
// API key may come as Anthropic's x-api-key header (guard.go). Errors keep
// the API's one error shape, whose error.message and error.type the anthropic
// client reads, and name the Messages API's fields.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/chat"
)

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	var mr api.MessagesRequest
	m, ok := s.modelFor(w, r, &mr, func() string { return mr.Model })
	if !ok {
		return
	}
	cr, req, stops, parallel, ok := messagesRequest(w, &mr, m)
	if !ok {
		return
	}
	a := apiRun{req: req, stops: stops, opts: &cr.Options, input: "messages", parallel: parallel}
	if !s.begin(w, &m, &a) {
		return
	}
	defer s.queue.leave()
	mrun := &messageRun{s: s, m: &m, a: &a, id: "msg_" + randomHex(12)}
	if mr.Stream {
		mrun.stream(w, r)
		return
	}
	if c, ok := s.wholeAnswer(w, r, &m, &a); ok {
		writeJSON(w, http.StatusOK, mrun.message(c))
	}
}

// handleCountTokens answers POST /v1/messages/count_tokens: how many tokens
// the prompt of that Messages request is, {"input_tokens": N}.
func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	var mr api.MessagesRequest
	if !decodeRequest(w, r, &mr) {
		return
	}
	m, tok, _, ok := s.tokenizerOr(w, r)
	if !ok {
		return
	}
	_, req, _, _, ok := messagesRequest(w, &mr, m)
	if !ok {
		return
	}
	ids, err := chat.Encode(tok, req.Messages, chat.Options{Thinking: req.Thinking, Tools: req.Tools})
	if err != nil {
		answerBadRequest(w, &badRequest{"messages", err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": len(ids)})
}

// messagesRequest reads mr into the chat request and engine request it asks
// for; where it cannot, it answers the 400, naming the Messages API's fields,
// and returns false.
func messagesRequest(w http.ResponseWriter, mr *api.MessagesRequest, m Model) (api.ChatRequest, engine.Request, []string, bool, bool) {
	cr, where, err := chatOfMessages(mr)
	if err != nil {
		answerBadRequest(w, err)
		return cr, engine.Request{}, nil, false, false
	}
	req, stops, parallel, err := engineRequest(&cr, m)
	if err != nil {
		var br *badRequest
		if errors.As(err, &br) { // named as the chat request names its fields
			err = &badRequest{chatFieldsAs(br.param, where, messagesParams, anthropicNames), chatFieldsAs(br.msg, where, messagesParams, anthropicNames)}
		}
		answerBadRequest(w, err)
		return cr, req, nil, false, false
	}
	return cr, req, stops, parallel, true
}

// chatOfMessages reads a Messages API request into the chat request it asks
// for, and where[i] names the part of it that chat message i came from
// ("system", "messages[2]"), for errors. A user message's tool_result blocks
// are tool messages (before its text, if it has any; an is_error result's
// text begins "Error: "); an assistant message's
// thinking, text and tool_use blocks are one assistant message with its
// reasoning and tool calls.
func chatOfMessages(mr *api.MessagesRequest) (api.ChatRequest, []string, error) {
	cr := api.ChatRequest{Model: mr.Model}
	cr.Options = api.Options{MaxTokens: mr.MaxTokens, Temperature: mr.Temperature, TopP: mr.TopP, TopK: mr.TopK, Seed: mr.Seed,
		Stream: mr.Stream, Mode: mr.Mode}
	if len(mr.StopSequences) > 0 {
		cr.Stop, _ = json.Marshal(mr.StopSequences)
	}
	var where []string
	if sys, err := itemText(mr.System, "system"); err != nil {
		return cr, nil, err
	} else if sys != "" {
		cr.Messages = append(cr.Messages, api.TextMessage("system", sys))
		where = append(where, "system")
	}
	if len(mr.Messages) == 0 {
		return cr, nil, &badRequest{"messages", `messages must hold at least one message, e.g. "messages": [{"role": "user", "content": "What is Unix?"}]`}
	}
	for j, msg := range mr.Messages {
		at := fmt.Sprintf("messages[%d]", j)
		blocks, err := contentBlocks(msg.Content, at+".content")
		if err != nil {
			return cr, nil, err
		}
		switch msg.Role {
		case "user":
			var text strings.Builder
			for k, b := range blocks {
				switch b.Type {
				case "text":
					text.WriteString(deref(b.Text))
				case "tool_result":
					out, err := itemText(b.Content, fmt.Sprintf("%s.content[%d].content", at, k))
					if err != nil {
						return cr, nil, err
					}
					if b.IsError { // the template has no field for it: the result says so
						out = "Error: " + out
					}
					tm := api.TextMessage("tool", out)
					tm.ToolCallID = b.ToolUseID
					cr.Messages = append(cr.Messages, tm)
					where = append(where, at)
				default:
					return cr, nil, &badRequest{fmt.Sprintf("%s.content[%d].type", at, k), fmt.Sprintf(`%s.content[%d]: a %q block is not supported `+
						`in a user message (text and tool_result only)`, at, k, clip(b.Type, 40))}
				}
			}
			if text.Len() > 0 || len(blocks) == 0 {
				cr.Messages = append(cr.Messages, api.TextMessage("user", text.String()))
				where = append(where, at)
			}
		case "assistant":
			am := api.Message{Role: "assistant"}
			var text strings.Builder
			for k, b := range blocks {
				switch b.Type {
				case "text":
					text.WriteString(deref(b.Text))
				case "thinking":
					am.ReasoningContent += deref(b.Thinking)
				case "redacted_thinking":
				case "tool_use":
					args := string(bytes.TrimSpace(b.Input))
					if args == "" || args == "null" {
						args = "{}"
					}
					am.ToolCalls = append(am.ToolCalls, api.ToolCall{ID: b.ID, Type: "function", Function: api.FunctionCall{Name: b.Name, Arguments: args}})
				default:
					return cr, nil, &badRequest{fmt.Sprintf("%s.content[%d].type", at, k), fmt.Sprintf(`%s.content[%d]: a %q block is not supported `+
						`in an assistant message (text, thinking and tool_use only)`, at, k, clip(b.Type, 40))}
				}
			}
			am.Content = api.TextMessage("", text.String()).Content
			cr.Messages = append(cr.Messages, am)
			where = append(where, at)
		default:
			return cr, nil, &badRequest{at + ".role", fmt.Sprintf(`%s.role %q: want "user" or "assistant" (the system prompt is "system")`, at, clip(msg.Role, 40))}
		}
	}

	for i, t := range mr.Tools {
		if t.Type != "" && t.Type != "custom" {
			return cr, nil, &badRequest{fmt.Sprintf("tools[%d].type", i), fmt.Sprintf(`tools[%d].type %q is a server tool, which this server does not run: `+
				`send custom tools ({"name": …, "description": …, "input_schema": {…}})`, i, clip(t.Type, 40))}
		}
		cr.Tools = append(cr.Tools, api.Tool{Type: "function", Function: api.FunctionDef{Name: t.Name, Description: t.Description, Parameters: t.InputSchema, Strict: t.Strict}})
	}
	if tc := mr.ToolChoice; tc != nil {
		choice := map[string]string{"auto": "auto", "any": "required", "none": "none"}
		switch c, ok := choice[tc.Type]; {
		case ok:
			cr.ToolChoice, _ = json.Marshal(c)
		case tc.Type == "tool":
			cr.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}})
		default:
			return cr, nil, &badRequest{"tool_choice.type", fmt.Sprintf(`tool_choice.type %q: want "auto", "any", "tool" or "none"`, clip(tc.Type, 40))}
		}
		if tc.DisableParallelToolUse {
			cr.ParallelToolCalls = new(bool)
		}
	}
	if th := mr.Thinking; th != nil {
		effort := map[string]string{"enabled": "high", "adaptive": "high", "disabled": "none"}[th.Type]
		if effort == "" {
			return cr, nil, &badRequest{"thinking.type", fmt.Sprintf(`thinking.type %q: want "enabled" or "disabled"`, clip(th.Type, 40))}
		}
		cr.ReasoningEffort = &effort
	}
	return cr, where, nil
}

// contentBlocks reads a message's content: a string (one text block) or blocks.
func contentBlocks(raw json.RawMessage, at string) ([]api.ContentBlock, error) {
	raw = bytes.TrimSpace(raw)
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return []api.ContentBlock{{Type: "text", Text: &s}}, nil
	}
	var blocks []api.ContentBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return nil, &badRequest{at, at + ` must be text or a list of content blocks, e.g. [{"type": "text", "text": "What is Unix?"}]`}
	}
	return blocks, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// messagesParams are the chat request's whole fields the Messages API names
// otherwise.
var messagesParams = map[string]string{"messages": "messages", "stop": "stop_sequences"}

// anthropicNames are the chat request's field names and the Messages API's.
var anthropicNames = strings.NewReplacer(
	"stop must", "stop_sequences must", "stop holds", "stop_sequences holds",
	".function.name", ".name", ".function.parameters", ".input_schema",
	"reasoning_effort", "thinking",
	`tool_choice "required"`, `tool_choice "any"`,
	`{"type": "function", "function": {"name": …}}`, `{"type": "tool", "name": …}`,
	`"role": "tool", "tool_call_id"`, `"type": "tool_result", "tool_use_id"`,
	"a tool message", "a tool_result", "tool_call_id", "tool_use_id",
)

// messageRun writes one Messages API answer.
type messageRun struct {
	s  *Server
	m  *Model
	a  *apiRun
	id string
}

// message is the answered message for c.
func (mr *messageRun) message(c *completion) api.AnthropicResponse {
	msg := mr.start()
	if c.thought != "" {
		msg.Content = append(msg.Content, thinkingBlock(c.thought))
	}
	if c.text != "" {
		msg.Content = append(msg.Content, textBlock(c.text))
	}
	for k, call := range c.calls {
		b := toolUseBlock(call)
		if k == len(c.calls)-1 && c.cutCall != "" {
			b.Input = json.RawMessage(c.cutCall) // what Anthropic's clients read of the input a stream sent
		}
		msg.Content = append(msg.Content, b)
	}
	if len(msg.Content) == 0 {
		msg.Content = append(msg.Content, textBlock(""))
	}
	msg.StopReason, msg.StopSequence = stopReason(c)
	msg.Usage = usageOfMessage(c)
	return msg
}

// start is the message with no content yet (a stream's message_start).
func (mr *messageRun) start() api.AnthropicResponse {
	return api.AnthropicResponse{ID: mr.id, Type: "message", Role: "assistant", Model: mr.m.ID, Content: []api.ContentBlock{}}
}

func stopReason(c *completion) (reason, sequence *string) {
	r := api.StopEndTurn
	switch {
	case c.finish == api.FinishToolCalls:
		r = api.StopToolUse
	case c.stop != "":
		r = api.StopSequence
		return &r, &c.stop
	case c.finish == api.FinishLength:
		r = api.StopMaxTokens
	}
	return &r, nil
}

func usageOfMessage(c *completion) api.AnthropicUsage {
	u := api.AnthropicUsage{InputTokens: c.usage.PromptTokens, OutputTokens: c.usage.CompletionTokens}
	if d := c.usage.PromptDetails; d != nil {
		u.CacheReadInputTokens = d.CachedTokens
	}
	return u
}

func textBlock(text string) api.ContentBlock { return api.ContentBlock{Type: "text", Text: &text} }

func thinkingBlock(text string) api.ContentBlock {
	sig := "" // no signature: the thought is sent back as it is
	return api.ContentBlock{Type: "thinking", Thinking: &text, Signature: &sig}
}

// toolUseBlock is a call's tool_use block: its arguments as the input, its id
// in Anthropic's form.
func toolUseBlock(call api.ToolCall) api.ContentBlock {
	return api.ContentBlock{Type: "tool_use", ID: "toolu_" + strings.TrimPrefix(call.ID, callIDPrefix), Name: call.Function.Name,
		Input: json.RawMessage(call.Function.Arguments)}
}

// stream writes the answer as the Messages API's events.
func (mr *messageRun) stream(w http.ResponseWriter, r *http.Request) {
	s := mr.s
	st, release, ok := s.streamTurn(w, r, func(st *sse) error {
		start := mr.start()
		return st.event("message_start", api.AnthropicEvent{Type: "message_start", Message: &start})
	})
	if !ok {
		return
	}
	defer st.end()
	defer release()
	send := func(ev api.AnthropicEvent) error { return st.event(ev.Type, ev) }

	split := splitterFor(&mr.a.req)
	blocks := 0
	open := -1     // the block being written (-1: none)
	openKind := "" // its type: "thinking", "text" or "tool_use"
	begin := func(kind string, b api.ContentBlock) error {
		if open >= 0 {
			i := open
			if err := send(api.AnthropicEvent{Type: "content_block_stop", Index: &i}); err != nil {
				return err
			}
		}
		open, openKind = blocks, kind
		blocks++
		i := open
		return send(api.AnthropicEvent{Type: "content_block_start", Index: &i, ContentBlock: &b})
	}
	write := func(kind, text string) error {
		if text == "" {
			return nil
		}
		if openKind != kind {
			b := textBlock("")
			if kind == "thinking" {
				b = thinkingBlock("")
			}
			if err := begin(kind, b); err != nil {
				return err
			}
		}
		i := open
		d := &api.AnthropicDelta{Type: "text_delta", Text: &text}
		if kind == "thinking" {
			d = &api.AnthropicDelta{Type: "thinking_delta", Thinking: &text}
		}
		return send(api.AnthropicEvent{Type: "content_block_delta", Index: &i, Delta: d})
	}
	calls := mr.a.newCallStream()
	feed := func(delta string, final bool) error {
		th, an := split.feed(delta, final)
		an, parts := calls.feed(an, final)
		if err := write("thinking", th); err != nil {
			return err
		}
		if err := write("text", an); err != nil {
			return err
		}
		for _, p := range parts {
			if p.begin {
				b := toolUseBlock(*p.call)
				b.Input = json.RawMessage("{}") // as Anthropic's: the input comes in its deltas
				if err := begin("tool_use", b); err != nil {
					return err
				}
			}
			if p.args != "" {
				i := open
				if err := send(api.AnthropicEvent{Type: "content_block_delta", Index: &i, Delta: &api.AnthropicDelta{Type: "input_json_delta", PartialJSON: &p.args}}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	c := s.complete(r.Context(), mr.m, mr.a.req, mr.a.stops, func(delta string, _ []tokenMark) error { return feed(delta, false) }, nil)
	if c.err != nil {
		if r.Context().Err() == nil {
			s.logf("server: message: %v", c.err)
			_ = send(api.AnthropicEvent{Type: "error", Error: &api.ErrorBody{Message: c.err.Error(), Type: "api_error", Code: "generation_failed"}})
		}
		return
	}
	if feed("", true) != nil { // what the splitter and the calls held
		return
	}
	mr.a.read(&c, calls)
	if open < 0 && begin("text", textBlock("")) != nil { // an empty answer: an empty text block, as the whole message holds
		return
	}
	if i := open; send(api.AnthropicEvent{Type: "content_block_stop", Index: &i}) != nil {
		return
	}
	reason, sequence := stopReason(&c)
	u := usageOfMessage(&c)
	if send(api.AnthropicEvent{Type: "message_delta", Delta: &api.AnthropicDelta{StopReason: reason, StopSequence: sequence}, Usage: &u}) != nil {
		return
	}
	_ = send(api.AnthropicEvent{Type: "message_stop"})
}
