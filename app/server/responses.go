package server

// POST /v1/responses, OpenAI's Responses API, for clients written against it
// (the openai client's responses.create and responses.stream, agent
// frameworks built on it). A request is read into the chat request it asks for
// (chatOf) and checked and run as chat completions are (engineRequest,
// Server.begin, Server.complete, apiRun.read); only the answer's shape is its
// own: output items — a "reasoning" item (thinking on), a "message" with one
// output_text part, and a "function_call" item per tool call — and, streamed,
// the API's semantic events (response.created, response.output_item.added,
// response.output_text.delta, …, response.completed), each with its
// sequence_number. A response is stored (store, the default; false: not) in
// memory while the server runs, the newest maxStored: previous_response_id
// goes on from its conversation, GET /v1/responses/{id} returns it and DELETE
// forgets it. Errors name the Responses API's fields (input[3],
// max_output_tokens, text.format, …).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/darkroomlabs/darkroom/app/api"
)

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	var rr api.ResponsesRequest
	m, ok := s.modelFor(w, r, &rr, func() string { return rr.Model })
	if !ok {
		return
	}
	var prior []api.Message
	if id := rr.PreviousResponseID; id != "" {
		stored, ok := s.stored.get(id)
		if !ok {
			notStored(w, "previous_response_id", id)
			return
		}
		prior = stored.conversation
	}
	cr, where, err := chatOf(&rr, prior)
	if err != nil {
		answerBadRequest(w, err)
		return
	}
	req, stops, parallel, err := engineRequest(&cr, m)
	if err != nil {
		var br *badRequest
		if errors.As(err, &br) { // named as the chat request names its fields
			err = &badRequest{chatFieldsAs(br.param, where, responsesParams, chatNames), chatFieldsAs(br.msg, where, responsesParams, chatNames)}
		}
		answerBadRequest(w, err)
		return
	}
	a := apiRun{req: req, stops: stops, opts: &cr.Options, input: "input", parallel: parallel}
	if !s.begin(w, &m, &a) {
		return
	}
	defer s.queue.leave()
	rs := &responseRun{s: s, m: &m, rr: &rr, a: &a, id: "resp_" + randomHex(12), created: time.Now().Unix(),
		reasoningID: "rs_" + randomHex(12), messageID: "msg_" + randomHex(12), asked: cr.Messages}
	if rr.Stream {
		rs.stream(w, r)
		return
	}
	if c, ok := s.wholeAnswer(w, r, &m, &a); ok {
		resp := rs.response(c, c.text)
		rs.store(&resp, c)
		writeJSON(w, http.StatusOK, resp)
	}
}

// chatOf reads a Responses API request into the chat request it asks for
// (prior: the conversation of the response previous_response_id names, after
// the instructions and before the input), and where[i] names the input that
// chat message i came from ("instructions", "previous_response_id", "input",
// "input[3]"), for errors. Consecutive assistant output in input (a
// reasoning item, a message, function_call items) is one assistant message
// with its reasoning and tool calls; a function_call_output is a tool message.
func chatOf(rr *api.ResponsesRequest, prior []api.Message) (api.ChatRequest, []string, error) {
	cr := api.ChatRequest{Model: rr.Model, ParallelToolCalls: rr.ParallelToolCalls}
	cr.Options = api.Options{MaxTokens: rr.MaxOutputTokens, Temperature: rr.Temperature, TopP: rr.TopP, Seed: rr.Seed,
		Stream: rr.Stream, Mode: rr.Mode}
	var where []string
	if rr.Instructions != "" {
		cr.Messages = append(cr.Messages, api.TextMessage("system", rr.Instructions))
		where = append(where, "instructions")
	}
	for _, m := range prior { // the stored conversation previous_response_id names
		cr.Messages = append(cr.Messages, m)
		where = append(where, "previous_response_id")
	}
	raw := bytes.TrimSpace(rr.Input)
	var text string
	var items []api.InputItem
	switch {
	case len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &text) == nil:
		cr.Messages = append(cr.Messages, api.TextMessage("user", text))
		where = append(where, "input")
	case len(raw) > 0 && raw[0] == '[' && json.Unmarshal(raw, &items) == nil && len(items) > 0:
	default:
		return cr, nil, &badRequest{"input", `input must be text or a list of items, e.g. "input": "What is Unix?" or ` +
			`"input": [{"role": "user", "content": "What is Unix?"}]`}
	}
	var cur *api.Message // the assistant message being gathered
	curAt := ""
	flush := func() {
		if cur != nil && (len(cur.ToolCalls) > 0 || len(bytes.TrimSpace(cur.Content)) > 0) {
			cr.Messages = append(cr.Messages, *cur)
			where = append(where, curAt)
		}
		cur = nil
	}
	assistant := func(at string) *api.Message {
		if cur == nil {
			cur, curAt = &api.Message{Role: "assistant"}, at
		}
		return cur
	}
	for i, it := range items {
		at := fmt.Sprintf("input[%d]", i)
		typ := it.Type
		if typ == "" {
			typ = "message"
		}
		switch typ {
		case "message":
			text, err := itemText(it.Content, at+".content")
			if err != nil {
				return cr, nil, err
			}
			if it.Role == "assistant" {
				if cur != nil && (len(cur.ToolCalls) > 0 || len(cur.Content) > 0) {
					flush() // a second message: a turn of its own
				}
				assistant(at).Content = api.TextMessage("", text).Content
				continue
			}
			flush()
			cr.Messages = append(cr.Messages, api.TextMessage(it.Role, text))
			where = append(where, at)
		case "function_call":
			m := assistant(at)
			m.ToolCalls = append(m.ToolCalls, api.ToolCall{ID: it.CallID, Type: "function", Function: api.FunctionCall{Name: it.Name, Arguments: it.Arguments}})
		case "function_call_output":
			flush()
			out, err := itemText(it.Output, at+".output")
			if err != nil {
				return cr, nil, err
			}
			msg := api.TextMessage("tool", out)
			msg.ToolCallID = it.CallID
			cr.Messages = append(cr.Messages, msg)
			where = append(where, at)
		case "reasoning":
			flush()
			text, err := itemText(it.Content, at+".content")
			if err != nil {
				return cr, nil, err
			}
			assistant(at).ReasoningContent = text
		default:
			return cr, nil, &badRequest{at + ".type", fmt.Sprintf(`%s.type %q is not supported: want "message", "function_call", `+
				`"function_call_output" or "reasoning"`, at, clip(it.Type, 40))}
		}
	}
	flush()

	for i, t := range rr.Tools {
		if t.Type != "function" {
			return cr, nil, &badRequest{fmt.Sprintf("tools[%d].type", i), fmt.Sprintf(`tools[%d].type %q: only function tools are supported `+
				`({"type": "function", "name": …, "parameters": {…}}); this server runs no built-in tools`, i, clip(t.Type, 40))}
		}
		cr.Tools = append(cr.Tools, api.Tool{Type: "function", Function: api.FunctionDef{Name: t.Name, Description: t.Description,
			Parameters: t.Parameters, Strict: t.Strict}})
	}
	cr.ToolChoice = rr.ToolChoice
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(rr.ToolChoice, &named) == nil && named.Type == "function" && named.Name != "" {
		cr.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": named.Name}})
	}
	if rr.Text != nil {
		f := rr.Text.Format
		if f.Type == "json_schema" && f.JSONSchema == nil { // the Responses API's fields are flat
			f.JSONSchema = &api.JSONSchema{Name: f.Name, Schema: f.Schema, Strict: f.Strict}
		}
		cr.ResponseFormat = &f
	}
	if rr.Reasoning != nil {
		cr.ReasoningEffort = rr.Reasoning.Effort
	}
	return cr, where, nil
}

// itemText is an input item's text: a string, or the text of its parts
// (input_text, output_text, reasoning_text, summary_text); a part of another
// kind is a badRequest naming at.
func itemText(raw json.RawMessage, at string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", &badRequest{at, at + " must be text or a list of text parts"}
	}
	var b strings.Builder
	for k, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text", "reasoning_text", "summary_text":
			b.WriteString(p.Text)
		default:
			return "", &badRequest{fmt.Sprintf("%s[%d].type", at, k), fmt.Sprintf("%s[%d]: a %q part is not supported (text only)", at, k, clip(p.Type, 40))}
		}
	}
	return b.String(), nil
}

// chatNames are the chat request's field names and the Responses API's for
// them, as errors name them.
var chatNames = strings.NewReplacer(
	"max_tokens", "max_output_tokens",
	"response_format.json_schema.schema", "text.format.schema", "response_format.json_schema", "text.format",
	".function.name", ".name", ".function.parameters", ".parameters",
	"response_format", "text.format",
	"reasoning_effort", "reasoning.effort",
	`{"type": "function", "function": {"name": …}}`, `{"type": "function", "name": …}`,
	"the messages", "the input", `"messages"`, `"input"`,
)

var messageRef = regexp.MustCompile(`messages\[(\d+)\]`)

// chatFieldsAs rewrites an error's param or message from the chat request's
// names to another API's: messages[i] is where[i] (params["messages"] past
// them), a param that is a whole chat field params names, and the rest names.
func chatFieldsAs(s string, where []string, params map[string]string, names *strings.Replacer) string {
	s = messageRef.ReplaceAllStringFunc(s, func(ref string) string {
		i, err := strconv.Atoi(ref[len("messages[") : len(ref)-1])
		if err != nil || i >= len(where) {
			return params["messages"]
		}
		return where[i]
	})
	if p, ok := params[s]; ok {
		return p
	}
	return names.Replace(s)
}

// responsesParams are the chat request's whole fields the Responses API names
// otherwise.
var responsesParams = map[string]string{"messages": "input"}

// responseRun writes one Responses API answer.
type responseRun struct {
	s       *Server
	m       *Model
	rr      *api.ResponsesRequest
	a       *apiRun
	id      string
	created int64
	// The ids of the answer's reasoning and message items, the same in a
	// stream's events and its final response.
	reasoningID, messageID string
	asked                  []api.Message // the chat request's messages, for store
}

// store keeps resp (Store set) with its conversation — the messages it was
// asked with less the instructions, and c's answer — unless the request said
// store false.
func (rs *responseRun) store(resp *api.Response, c *completion) {
	if rs.rr.Store != nil && !*rs.rr.Store {
		return
	}
	resp.Store = true
	var conv []api.Message
	asked := rs.asked
	if rs.rr.Instructions != "" {
		asked = asked[1:] // instructions are not carried over
	}
	conv = append(conv, asked...)
	answer := api.TextMessage("assistant", c.text)
	answer.ToolCalls, answer.ReasoningContent = c.calls, c.thought
	conv = append(conv, answer)
	rs.s.stored.put(&storedResponse{response: *resp, conversation: conv})
}

// response is the Response for c, its message's text text (a stream's: what
// it sent).
func (rs *responseRun) response(c *completion, text string) api.Response {
	r := rs.snapshot(api.StatusCompleted)
	if c.thought != "" {
		r.Output = append(r.Output, reasoningItem(rs.reasoningID, c.thought))
	}
	if text != "" || len(c.calls) == 0 {
		r.Output = append(r.Output, messageItem(rs.messageID, text, api.StatusCompleted))
	}
	for k, call := range c.calls {
		status := api.StatusCompleted
		if k == len(c.calls)-1 && c.cutCall != "" {
			status = api.StatusIncomplete // the answer ended inside it
		}
		r.Output = append(r.Output, callItem(call, status))
	}
	if c.finish == api.FinishLength {
		r.Status, r.IncompleteDetails = api.StatusIncomplete, &api.IncompleteDetails{Reason: "max_output_tokens"}
	}
	r.Usage = &api.ResponseUsage{InputTokens: c.usage.PromptTokens, OutputTokens: c.usage.CompletionTokens,
		TotalTokens: c.usage.PromptTokens + c.usage.CompletionTokens}
	if d := c.usage.PromptDetails; d != nil {
		r.Usage.InputTokensDetails.CachedTokens = d.CachedTokens
	}
	return r
}

// snapshot is the response with no output yet, the request's settings echoed.
func (rs *responseRun) snapshot(status string) api.Response {
	rr := rs.rr
	r := api.Response{ID: rs.id, Object: api.ObjectResponse, CreatedAt: rs.created, Status: status, Model: rs.m.ID, Output: []api.OutputItem{},
		MaxOutputTokens: rr.MaxOutputTokens, Temperature: rr.Temperature, TopP: rr.TopP, ToolChoice: rr.ToolChoice, Tools: rr.Tools,
		ParallelToolCalls: rs.a.parallel, Text: api.ResponseText{Format: api.ResponseFormat{Type: "text"}}, Reasoning: rr.Reasoning,
		Metadata: map[string]string{}}
	if rr.Instructions != "" {
		r.Instructions = &rr.Instructions
	}
	if len(bytes.TrimSpace(r.ToolChoice)) == 0 {
		r.ToolChoice = json.RawMessage(`"auto"`)
	}
	if r.Tools == nil {
		r.Tools = []api.ResponseTool{}
	}
	if rr.Text != nil && rr.Text.Format.Type != "" {
		r.Text = *rr.Text
	}
	return r
}

func reasoningItem(id, text string) api.OutputItem {
	return api.OutputItem{Type: "reasoning", ID: id, Summary: &[]api.ContentPart{}, Content: &[]api.ContentPart{{Type: "reasoning_text", Text: text}}}
}

func messageItem(id, text, status string) api.OutputItem {
	return api.OutputItem{Type: "message", ID: id, Status: status, Role: "assistant",
		Content: &[]api.ContentPart{{Type: "output_text", Text: text, Annotations: api.NoAnnotations()}}}
}

// callItem is a tool call's function_call item; its id is the call's.
func callItem(call api.ToolCall, status string) api.OutputItem {
	args := call.Function.Arguments
	return api.OutputItem{Type: "function_call", ID: "fc_" + strings.TrimPrefix(call.ID, callIDPrefix), Status: status, CallID: call.ID,
		Name: call.Function.Name, Arguments: &args}
}

// stream writes the answer as the Responses API's events.
func (rs *responseRun) stream(w http.ResponseWriter, r *http.Request) {
	s := rs.s
	ev := &eventWriter{}
	st, release, ok := s.streamTurn(w, r, func(st *sse) error {
		ev.st = st
		snap := rs.snapshot(api.StatusInProgress)
		if err := ev.send(api.ResponseEvent{Type: "response.created", Response: &snap}); err != nil {
			return err
		}
		return ev.send(api.ResponseEvent{Type: "response.in_progress", Response: &snap})
	})
	if !ok {
		return
	}
	defer st.end()
	defer release()

	split := splitterFor(&rs.a.req)
	calls := rs.a.newCallStream()
	items := 0 // output items opened
	var thought, text *openItem
	var callAt []int // each call's output index
	closeThought := func() error {
		if thought == nil || thought.closed {
			return nil
		}
		return ev.close(thought, reasoningItem(thought.id, thought.text.String()))
	}
	// closeItems closes the reasoning and message items: an answer's calls
	// come after its text.
	closeItems := func() error {
		if err := closeThought(); err != nil {
			return err
		}
		if text != nil && !text.closed {
			return ev.close(text, messageItem(text.id, text.text.String(), api.StatusCompleted))
		}
		return nil
	}
	// openText opens the message item, the thought's being done.
	openText := func() error {
		if err := closeThought(); err != nil || text != nil {
			return err
		}
		text = &openItem{index: items, id: rs.messageID, kind: "output_text"}
		items++
		return ev.open(text, api.OutputItem{Type: "message", ID: text.id, Status: api.StatusInProgress, Role: "assistant",
			Content: &[]api.ContentPart{}})
	}
	// sendText sends thought and answer text.
	sendText := func(th, an string) error {
		if th != "" {
			if thought == nil {
				thought = &openItem{index: items, id: rs.reasoningID, kind: "reasoning_text"}
				items++
				item := api.OutputItem{Type: "reasoning", ID: thought.id, Summary: &[]api.ContentPart{}}
				if err := ev.open(thought, item); err != nil {
					return err
				}
			}
			if err := ev.delta(thought, th); err != nil {
				return err
			}
		}
		if an != "" {
			if err := openText(); err != nil {
				return err
			}
			return ev.delta(text, an)
		}
		return nil
	}
	send := func(delta string, final bool) error {
		th, an := split.feed(delta, final)
		an, parts := calls.feed(an, final)
		if err := sendText(th, an); err != nil {
			return err
		}
		for _, p := range parts {
			if p.begin {
				if err := closeItems(); err != nil {
					return err
				}
				callAt = append(callAt, items)
				items++
				item := callItem(*p.call, api.StatusInProgress)
				empty := ""
				item.Arguments = &empty
				if err := ev.send(api.ResponseEvent{Type: "response.output_item.added", OutputIndex: &callAt[p.index], Item: &item}); err != nil {
					return err
				}
			}
			at := &callAt[p.index]
			if p.args != "" {
				if err := ev.send(api.ResponseEvent{Type: "response.function_call_arguments.delta", OutputIndex: at, ItemID: callItem(*p.call, "").ID, Delta: &p.args}); err != nil {
					return err
				}
			}
			if p.closed {
				if err := ev.callDone(*at, *p.call, api.StatusCompleted); err != nil {
					return err
				}
			}
		}
		return nil
	}
	c := s.complete(r.Context(), rs.m, rs.a.req, rs.a.stops, func(delta string, _ []tokenMark) error { return send(delta, false) }, nil)
	if c.err != nil {
		if r.Context().Err() == nil {
			s.logf("server: response: %v", c.err)
			_ = ev.send(api.ResponseEvent{Type: "error", Error: &api.ErrorBody{Message: c.err.Error(), Type: "server_error", Code: "generation_failed"}})
		}
		return
	}
	if send("", true) != nil { // what the splitter and the calls held
		return
	}
	rs.a.read(&c, calls)
	if len(c.calls) == 0 && openText() != nil { // an empty answer: an empty message, as the whole response holds
		return
	}
	if closeItems() != nil {
		return
	}
	if c.cutCall != "" && len(callAt) == len(c.calls) && ev.callDone(callAt[len(callAt)-1], c.calls[len(c.calls)-1], api.StatusIncomplete) != nil {
		return // the call the answer ended inside
	}
	sent := ""
	if text != nil {
		sent = text.text.String()
	}
	final := rs.response(&c, sent)
	rs.store(&final, &c)
	kind := "response.completed"
	if final.Status == api.StatusIncomplete {
		kind = "response.incomplete"
	}
	_ = ev.send(api.ResponseEvent{Type: kind, Response: &final})
}

// callDone ends the call at output index at: its arguments whole, then the
// item, status completed (or incomplete: the answer ended inside it).
func (e *eventWriter) callDone(at int, call api.ToolCall, status string) error {
	args, done := call.Function.Arguments, callItem(call, status)
	if err := e.send(api.ResponseEvent{Type: "response.function_call_arguments.done", OutputIndex: &at, ItemID: done.ID, Name: call.Function.Name,
		Arguments: &args}); err != nil {
		return err
	}
	return e.send(api.ResponseEvent{Type: "response.output_item.done", OutputIndex: &at, Item: &done})
}

// openItem is a streamed output item with one content part (a message's
// output_text, a reasoning item's reasoning_text), while it is written.
type openItem struct {
	index  int
	id     string
	kind   string // the part's type
	text   strings.Builder
	closed bool
}

// eventWriter sends a stream's events, numbered in order.
type eventWriter struct {
	st  *sse
	seq int
}

func (e *eventWriter) send(ev api.ResponseEvent) error {
	ev.SequenceNumber = e.seq
	e.seq++
	return e.st.event(ev.Type, ev)
}

// open adds item to the output and its empty part.
func (e *eventWriter) open(it *openItem, item api.OutputItem) error {
	zero := 0
	part := api.ContentPart{Type: it.kind}
	if it.kind == "output_text" {
		part.Annotations = api.NoAnnotations()
	}
	if err := e.send(api.ResponseEvent{Type: "response.output_item.added", OutputIndex: &it.index, Item: &item}); err != nil {
		return err
	}
	return e.send(api.ResponseEvent{Type: "response.content_part.added", OutputIndex: &it.index, ContentIndex: &zero, ItemID: it.id, Part: &part})
}

// delta adds text to it's part.
func (e *eventWriter) delta(it *openItem, text string) error {
	zero := 0
	it.text.WriteString(text)
	typ := "response.output_text.delta"
	if it.kind == "reasoning_text" {
		typ = "response.reasoning_text.delta"
	}
	return e.send(api.ResponseEvent{Type: typ, OutputIndex: &it.index, ContentIndex: &zero, ItemID: it.id, Delta: &text})
}

// close ends it's part and the item, done being the item whole.
func (e *eventWriter) close(it *openItem, done api.OutputItem) error {
	zero := 0
	text := it.text.String()
	part := (*done.Content)[0]
	typ := "response.output_text.done"
	if it.kind == "reasoning_text" {
		typ = "response.reasoning_text.done"
	}
	it.closed = true
	if err := e.send(api.ResponseEvent{Type: typ, OutputIndex: &it.index, ContentIndex: &zero, ItemID: it.id, Text: &text}); err != nil {
		return err
	}
	if err := e.send(api.ResponseEvent{Type: "response.content_part.done", OutputIndex: &it.index, ContentIndex: &zero, ItemID: it.id, Part: &part}); err != nil {
		return err
	}
	return e.send(api.ResponseEvent{Type: "response.output_item.done", OutputIndex: &it.index, Item: &done})
}

// maxStored is how many responses the server keeps (the newest) for
// previous_response_id and GET /v1/responses/{id}, in memory while it runs.
const maxStored = 64

// responseStore keeps the newest stored responses: each with the
// conversation it ended, so that a request naming it goes on from there.
type responseStore struct {
	mu    sync.Mutex
	byID  map[string]*storedResponse
	order []string // oldest first
}

// storedResponse is a stored response and its conversation: the messages it
// was asked with (its instructions' system message left out, as the API does:
// instructions are not carried over) and its answer, as an assistant message.
type storedResponse struct {
	response     api.Response
	conversation []api.Message
}

func newResponseStore() *responseStore { return &responseStore{byID: map[string]*storedResponse{}} }

func (rs *responseStore) put(r *storedResponse) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.byID[r.response.ID] = r
	rs.order = append(rs.order, r.response.ID)
	for len(rs.order) > maxStored {
		delete(rs.byID, rs.order[0])
		rs.order = rs.order[1:]
	}
}

func (rs *responseStore) get(id string) (*storedResponse, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.byID[id]
	return r, ok
}

func (rs *responseStore) remove(id string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, ok := rs.byID[id]; !ok {
		return false
	}
	delete(rs.byID, id)
	rs.order = slices.DeleteFunc(rs.order, func(x string) bool { return x == id })
	return true
}

// notStored answers a request for a response this server does not hold.
func notStored(w http.ResponseWriter, param, id string) {
	apiErrorParam(w, http.StatusNotFound, "invalid_request_error", "response_not_found", param,
		fmt.Sprintf("no stored response %q: this server keeps the last %d responses made with store (the default) while it runs; "+
			"send the whole conversation in input instead", clip(id, 80), maxStored))
}

func (s *Server) handleGetResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	stored, ok := s.stored.get(id)
	if !ok {
		notStored(w, "response_id", id)
		return
	}
	writeJSON(w, http.StatusOK, stored.response)
}

func (s *Server) handleDeleteResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.stored.remove(id) {
		notStored(w, "response_id", id)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response.deleted", "deleted": true})
}
