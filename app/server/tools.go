package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// maxTools is the most tools one request may declare: each is written into the
// prompt, so a long list is a long prompt.
const maxTools = 128

// toolPlan is what a chat request's tools ask of its answer.
type toolPlan struct {
	parallel bool // the answer may hold more than one call
	// hold holds the answer's calls to the tools (engine.Request.ToolCalls)
	// wherever the answer is written in AR mode; asked: the request asks for
	// it (a forced call, a strict tool), so that an answer with no mode named
	// is written in AR mode, and one named diffusion is refused.
	hold  *engine.CallHold
	asked bool
}

// toolUse reads a chat request's tools and tool_choice into req: the tools
// declared in the prompt (none for "none"). It returns how the calls are held
// — for "required" or a named function, the answer is calls (of that
// function) and nothing else, a thought first where the model thinks — and
// whether there may be more than one: each tool's parameters compiled for the
// hold, a strict tool's refused where they cannot be held to (another's
// arguments are then held to any object).
func toolUse(cr *api.ChatRequest, req *engine.Request) (tp toolPlan, err error) {
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"functions", cr.Functions}, {"function_call", cr.FunctionCall}} {
		switch raw := bytes.TrimSpace(f.raw); string(raw) {
		case "", "null", "[]", `"none"`: // none asked for
		default:
			return tp, &badRequest{f.name, fmt.Sprintf(`%s is OpenAI's deprecated form of tools: send the functions as "tools": `+
				`[{"type": "function", "function": {"name": …, "description": …, "parameters": {…}}}] (and "tool_choice" for function_call)`, f.name)}
		}
	}
	if len(cr.Tools) > maxTools {
		return tp, &badRequest{"tools", fmt.Sprintf("tools holds %d tools; at most %d can be declared", len(cr.Tools), maxTools)}
	}
	names := map[string]bool{}
	var tools []engine.Tool
	schemas := map[string]*sampler.Schema{}
	strict := false
	for i, t := range cr.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return tp, &badRequest{param + ".type", fmt.Sprintf(`%s.type is %q: want "function"`, param, t.Type)}
		}
		fn := t.Function
		if err := chat.CheckName(fn.Name); err != nil {
			return tp, &badRequest{param + ".function.name", fmt.Sprintf("%s.function.name: %v", param, err)}
		}
		if names[fn.Name] {
			return tp, &badRequest{param + ".function.name", fmt.Sprintf("%s: a second tool named %q", param, fn.Name)}
		}
		names[fn.Name] = true
		if p := bytes.TrimSpace(fn.Parameters); len(p) > 0 && string(p) != "null" {
			var obj map[string]json.RawMessage
			if json.Unmarshal(p, &obj) != nil {
				return tp, &badRequest{param + ".function.parameters", param + ".function.parameters must be a JSON Schema object, e.g. " +
					`{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`}
			}
			schema, err := sampler.CompileSchema(p)
			if err == nil {
				err = sampler.CheckCallTool(sampler.CallTool{Name: fn.Name, Schema: schema})
			}
			switch {
			case err == nil:
				schemas[fn.Name] = schema
			case fn.Strict != nil && *fn.Strict:
				return tp, &badRequest{param + ".function.parameters", fmt.Sprintf("%s.function.parameters: a strict tool's calls are held to its parameters, "+
					"and these cannot be: %v (or leave out strict)", param, err)}
			}
		}
		strict = strict || fn.Strict != nil && *fn.Strict
		tools = append(tools, engine.Tool{Name: fn.Name, Description: fn.Description, Parameters: fn.Parameters})
	}
	tp.parallel = cr.ParallelToolCalls == nil || *cr.ParallelToolCalls

	choice, name, err := toolChoice(cr.ToolChoice)
	if err != nil {
		return tp, err
	}
	switch {
	case choice == "none" || len(tools) == 0 && choice == "auto":
		return tp, nil // no tool declared: the model answers in words
	case len(tools) == 0:
		return tp, &badRequest{"tool_choice", fmt.Sprintf(`tool_choice %q needs tools to call: send "tools" with it`, choice)}
	case choice == "function" && !names[name]:
		return tp, &badRequest{"tool_choice", fmt.Sprintf("tool_choice names the function %q, which is not among the tools", clip(name, 80))}
	}
	req.Tools = tools
	if choice == "auto" {
		if !req.JSON { // (a JSON answer is held to its object: no call can be written)
			tp.hold = &engine.CallHold{Single: !tp.parallel, Schemas: schemas}
			tp.asked = strict
		}
		return tp, nil
	}
	// The answer is calls (of the named function), held from its first token.
	switch {
	case cr.Darkroom != nil && cr.Darkroom.Opening != "":
		return tp, &badRequest{"darkroom.opening", fmt.Sprintf(`tool_choice %q makes the answer a call: leave out the opening, or set tool_choice to "auto"`, choice)}
	case req.JSON:
		return tp, &badRequest{"response_format", fmt.Sprintf(`tool_choice %q makes the answer a call, not a JSON object: leave out response_format, or set tool_choice to "auto"`, choice)}
	}
	tp.hold = &engine.CallHold{Only: true, Single: !tp.parallel, Function: name, Schemas: schemas}
	tp.asked = true
	return tp, nil
}

// toolChoice reads tool_choice: "auto" (also absent or null), "none",
// "required", or "function" with the name of {"type": "function",
// "function": {"name": …}}.
func toolChoice(raw json.RawMessage) (choice, name string, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "auto", "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return s, "", nil
		}
		return "", "", &badRequest{"tool_choice", fmt.Sprintf(`tool_choice %q: want "auto", "none", "required" or {"type": "function", "function": {"name": …}}`, clip(s, 80))}
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &named) != nil || named.Type != "function" || named.Function.Name == "" {
		return "", "", &badRequest{"tool_choice", fmt.Sprintf(`tool_choice %s: want "auto", "none", "required" or {"type": "function", "function": {"name": …}}`, clip(string(raw), 80))}
	}
	return "function", named.Function.Name, nil
}

// toolCalls is an assistant message's calls as the chat template reads them,
// or a badRequest naming the call at fault (param is the message's).
func toolCalls(in []api.ToolCall, param string) ([]chat.ToolCall, error) {
	var out []chat.ToolCall
	for k, c := range in {
		p := fmt.Sprintf("%s.tool_calls[%d]", param, k)
		if c.Type != "" && c.Type != "function" {
			return nil, &badRequest{p + ".type", fmt.Sprintf(`%s.type is %q: want "function"`, p, c.Type)}
		}
		if err := chat.CheckName(c.Function.Name); err != nil {
			return nil, &badRequest{p + ".function.name", fmt.Sprintf("%s.function.name: %v", p, err)}
		}
		out = append(out, chat.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return out, nil
}

// toolResult checks that tool message m (messages[i]) follows the assistant
// message whose call it answers (out: the messages before it, read), and that
// it says which call: a tool_call_id of one of that message's calls, or the
// function's name.
func toolResult(out []engine.Message, m api.Message, i int) error {
	k := len(out) - 1
	for k >= 0 && out[k].Role == "tool" {
		k--
	}
	if k < 0 || out[k].Role != "model" || len(out[k].ToolCalls) == 0 {
		return &badRequest{fmt.Sprintf("messages[%d].role", i), fmt.Sprintf("messages[%d]: a tool message must follow the assistant message "+
			"whose tool call it answers (that message, then one tool message for each of its calls)", i)}
	}
	for _, c := range out[k].ToolCalls {
		if c.ID == m.ToolCallID {
			return nil
		}
	}
	if m.Name != "" {
		return nil
	}
	return &badRequest{fmt.Sprintf("messages[%d].tool_call_id", i), fmt.Sprintf("messages[%d].tool_call_id %q is not the id of a call "+
		"in the assistant message before it: send the id the call came with", i, clip(m.ToolCallID, 80))}
}

// callIDPrefix begins a tool call's id, as OpenAI's do; the Responses and Messages
// APIs give the call the same id under their own prefixes (callItem, toolUseBlock).
const callIDPrefix = "call_"

// newCall is a call of tool name with arguments args and id id ("": a fresh one).
func newCall(id, name, args string) api.ToolCall {
	if id == "" {
		id = callIDPrefix + randomHex(12)
	}
	return api.ToolCall{ID: id, Type: "function", Function: api.FunctionCall{Name: name, Arguments: args}}
}

// answerCalls reads the calls out of an answer's text (tools declared): the
// text before them, and the calls — the first alone where the request asks
// for no parallel calls — with the ids a stream gave them (ids[k]; fresh where
// none). A call the answer ended inside (max_tokens, a stop string) is its
// last, with the arguments written (chat.ReadCalls: a prefix of a JSON
// object, as OpenAI's API gives a call max_tokens cut); partial is then its
// values written whole, as a JSON object (chat.WrittenCall.Partial; "": no
// call was cut).
func answerCalls(text string, parallel bool, ids []string) (content string, calls []api.ToolCall, partial string) {
	content, written := chat.ReadCalls(text, true)
	if !parallel && len(written) > 1 {
		written = written[:1]
	}
	calls = make([]api.ToolCall, len(written))
	for k, c := range written {
		id := ""
		if k < len(ids) {
			id = ids[k]
		}
		calls[k] = newCall(id, c.Name, c.Arguments)
		partial = c.Partial
	}
	return strings.TrimSpace(content), calls, partial
}

// callStream divides a streamed answer — its text after the thought, fed in
// order — into its content and its tool calls as it comes, as answerCalls
// reads the whole: what each feed gives out is what the text so far settles
// (chat.ReadCalls), so the content and each call's arguments it gives add up
// to the whole answer's. The text before base is read for good (content given
// out, calls closed): each feed reads on from there. A nil callStream (no
// tools declared) gives all as content.
type callStream struct {
	parallel bool
	text     strings.Builder
	base     int            // where the text not yet read for good begins
	inCalls  bool           // a call has begun: the content is over
	calls    []api.ToolCall // the calls begun: their ids, names and the arguments given out
	passed   int            // how many of them closed before base
}

// callPart is what one feed gives out of a call: more of its arguments, and
// its begin or end.
type callPart struct {
	index  int
	call   *api.ToolCall // its id and name are new where begin
	begin  bool
	args   string
	closed bool
}

// newCallStream is the call stream of a's answer: nil where no tools are
// declared.
func (a *apiRun) newCallStream() *callStream {
	if len(a.req.Tools) == 0 {
		return nil
	}
	return &callStream{parallel: a.parallel}
}

// feed takes the answer's next text (final: it is whole) and gives out the
// content and call parts it settles.
func (cs *callStream) feed(delta string, final bool) (content string, parts []callPart) {
	if cs == nil {
		return delta, nil
	}
	cs.text.WriteString(delta)
	got, written := chat.ReadCalls(cs.text.String()[cs.base:], final)
	if !cs.inCalls {
		content = got
		cs.base += len(got)
		cs.inCalls = len(written) > 0
	}
	base, first := cs.base, cs.passed
	for k, w := range written {
		index := first + k
		if !cs.parallel && index > 0 {
			break
		}
		p := callPart{index: index}
		if index == len(cs.calls) {
			cs.calls = append(cs.calls, newCall("", w.Name, ""))
			p.begin = true
		}
		c := &cs.calls[index]
		p.call = c
		p.args = w.Arguments[len(c.Function.Arguments):]
		c.Function.Arguments = w.Arguments
		if w.Closed {
			p.closed = true
			cs.passed++
			cs.base = base + w.End
		}
		if p.begin || p.args != "" || p.closed {
			parts = append(parts, p)
		}
		if !w.Closed {
			break
		}
	}
	return content, parts
}

// ids are the ids of the calls given out, in order.
func (cs *callStream) ids() []string {
	if cs == nil {
		return nil
	}
	ids := make([]string, len(cs.calls))
	for k, c := range cs.calls {
		ids[k] = c.ID
	}
	return ids
}
