package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Gemma 4's tool control tokens.
const (
	ToolStart         = "<|tool>"
	ToolEnd           = "<tool|>"
	ToolCallStart     = "<|tool_call>"
	ToolCallEnd       = "<tool_call|>"
	ToolResponseStart = "<|tool_response>"
	ToolResponseEnd   = "<tool_response|>"
	// Quote delimits a string in declarations, calls and results.
	Quote = `<|"|>`
)

// Tool is a function the model may call: its declaration in the system turn.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the function's JSON Schema (an object; empty: none).
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// ToolCall is one call of a model message: in a conversation, a call the model
// made earlier; from ParseToolCalls, one it just wrote.
type ToolCall struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	// Arguments is a JSON object, as OpenAI's API carries it (text that is not
	// one is written into the call as it is).
	Arguments string `json:"arguments"`
}

// writer writes the format's pieces: control tokens (ctl) and text.
type writer struct{ emit func(s string, control bool) }

func (w writer) ctl(s string)  { w.emit(s, true) }
func (w writer) text(s string) { w.emit(s, false) }

// quoted is a string value: the template's `<|"|>` on each side, s as text.
func (w writer) quoted(s string) {
	w.ctl(Quote)
	w.text(s)
	w.ctl(Quote)
}

// nameRe is what a tool or function name may be: what ParseToolCalls reads
// back after "call:" (vLLM's Gemma 4 parser reads the same).
var nameRe = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,64}$`)

// CheckName is nil where name is a function name the format carries and
// ParseToolCalls reads back, else an error that says what a name may be.
func CheckName(name string) error {
	if !nameRe.MatchString(name) {
		return fmt.Errorf("function name %q: want 1 to 64 letters, digits, '_', '-' or '.'", clip(name, 40))
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// The template's macros follow. They read JSON as Jinja reads the Python values
// json.loads makes of it: dict keys are visited in `dictsort` order
// (case-insensitive), a missing key is Jinja's undefined (falsy, "" when
// written), numbers print as Python prints them.

// undefined is a missing key or a value Jinja cannot index.
type undefined struct{}

// decodeJSON decodes raw keeping numbers as written (json.Number); empty or
// invalid raw is undefined.
func decodeJSON(raw []byte) any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return undefined{}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return undefined{}
	}
	return v
}

// get is Jinja's v[key]: undefined where v is not a dict or lacks key.
func get(v any, key string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return undefined{}
	}
	x, ok := m[key]
	if !ok {
		return undefined{}
	}
	return x
}

// truthy is Python's truth of a JSON value.
func truthy(v any) bool {
	switch v := v.(type) {
	case nil, undefined:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case json.Number:
		f, err := v.Float64()
		return err != nil || f != 0
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return true
}

// sortedKeys is Jinja's dictsort: keys in case-insensitive order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := strings.ToLower(keys[i]), strings.ToLower(keys[j])
		if a != b {
			return a < b
		}
		return keys[i] < keys[j]
	})
	return keys
}

// items is what Jinja's `for x in v` visits: a list's items, a string's
// characters, a dict's keys (in their order); nothing for the rest.
func items(v any) []any {
	switch v := v.(type) {
	case []any:
		return v
	case string:
		var out []any
		for _, r := range v {
			out = append(out, string(r))
		}
		return out
	case map[string]any:
		var out []any
		for _, k := range sortedKeys(v) {
			out = append(out, k)
		}
		return out
	}
	return nil
}

// pyStr is `{{ v }}`: Python's str of the value ("" for undefined).
func pyStr(v any) string {
	switch v := v.(type) {
	case undefined:
		return ""
	case string:
		return v
	}
	return pyRepr(v)
}

// pyRepr is Python's repr of a JSON value (str of a number, bool or None).
func pyRepr(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case undefined:
		return ""
	case bool:
		if v {
			return "True"
		}
		return "False"
	case json.Number:
		return pyNumber(string(v))
	case string:
		q := "'"
		if strings.Contains(v, "'") && !strings.Contains(v, `"`) {
			q = `"`
		}
		r := strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`, "\t", `\t`, q, `\`+q)
		return q + r.Replace(v) + q
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = pyRepr(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		parts := make([]string, 0, len(v))
		for _, k := range sortedKeys(v) { // Python keeps the JSON's order; sorted is as good a guess as Go's maps allow
			parts = append(parts, pyRepr(k)+": "+pyRepr(v[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// pyNumber prints a JSON number as Python prints what json.loads makes of it:
// an int as its digits, a float in repr's shortest form ("1.0", "1e-05",
// "1e+16").
func pyNumber(lit string) string {
	if !strings.ContainsAny(lit, ".eE") {
		if n, ok := new(big.Int).SetString(lit, 10); ok {
			return n.String()
		}
		return lit
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		if math.IsInf(f, 1) {
			return "inf"
		}
		if math.IsInf(f, -1) {
			return "-inf"
		}
		return lit
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // shortest digits: d.ddde±XX
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if decpt := exp + 1; decpt <= -4 || decpt > 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// argument is the template's format_argument: strings quoted, booleans as
// true/false, dicts in dictsort order (keys quoted where escapeKeys), lists,
// and anything else as Python prints it.
func (w writer) argument(v any, escapeKeys bool) {
	switch v := v.(type) {
	case string:
		w.quoted(v)
	case bool:
		w.text(strconv.FormatBool(v))
	case map[string]any:
		w.text("{")
		for i, k := range sortedKeys(v) {
			if i > 0 {
				w.text(",")
			}
			if escapeKeys {
				w.quoted(k)
			} else {
				w.text(k)
			}
			w.text(":")
			w.argument(v[k], escapeKeys)
		}
		w.text("}")
	case []any:
		w.text("[")
		for i, x := range v {
			if i > 0 {
				w.text(",")
			}
			w.argument(x, escapeKeys)
		}
		w.text("]")
	default:
		w.text(pyStr(v))
	}
}

// quotedList is `[<|"|>a<|"|>,<|"|>b<|"|>]`: the template's required lists.
func (w writer) quotedList(v any) {
	w.text("[")
	for i, x := range items(v) {
		if i > 0 {
			w.text(",")
		}
		w.quoted(pyStr(x))
	}
	w.text("]")
}

// standardKeys are the schema keys format_parameters does not read as a
// property's name.
var standardKeys = map[string]bool{"description": true, "type": true, "properties": true, "required": true, "nullable": true}

// parameters is the template's format_parameters: each property of props (a
// dict) as name:{description,enum|items,nullable,properties,required,type}.
func (w writer) parameters(props any) {
	m, _ := props.(map[string]any)
	first := true
	for _, key := range sortedKeys(m) {
		if standardKeys[key] {
			continue
		}
		value := m[key]
		if !first {
			w.text(",")
		}
		first = false
		w.text(key + ":{")
		comma := false
		sep := func() {
			if comma {
				w.text(",")
			}
			comma = true
		}
		if d := get(value, "description"); truthy(d) {
			w.text("description:")
			w.quoted(pyStr(d))
			comma = true
		}
		typ := strings.ToUpper(pyStr(get(value, "type")))
		switch typ {
		case "STRING":
			if e := get(value, "enum"); truthy(e) {
				sep()
				w.text("enum:")
				w.argument(e, true)
			}
		case "ARRAY":
			if it, ok := get(value, "items").(map[string]any); ok && len(it) > 0 {
				sep()
				w.itemsSchema(it)
			}
		}
		if truthy(get(value, "nullable")) {
			sep()
			w.text("nullable:true")
		}
		if typ == "OBJECT" {
			if p, ok := get(value, "properties").(map[string]any); ok {
				sep()
				w.text("properties:{")
				w.parameters(p)
				w.text("}")
			} else if vm, ok := value.(map[string]any); ok {
				sep()
				w.text("properties:{")
				w.parameters(vm)
				w.text("}")
			}
			if r := get(value, "required"); truthy(r) {
				sep()
				w.text("required:")
				w.quotedList(r)
			}
		}
		sep()
		w.text("type:")
		w.quoted(typ)
		w.text("}")
	}
}

// itemsSchema is an array property's items:{…}, as the template writes it.
func (w writer) itemsSchema(it map[string]any) {
	w.text("items:{")
	first := true
	for _, k := range sortedKeys(it) {
		v := it[k]
		if v == nil { // Jinja's `is not none`
			continue
		}
		if !first {
			w.text(",")
		}
		first = false
		switch k {
		case "properties":
			w.text("properties:{")
			if _, ok := v.(map[string]any); ok {
				w.parameters(v)
			}
			w.text("}")
		case "required":
			w.text("required:")
			w.quotedList(v)
		case "type":
			w.text("type:")
			if s, ok := v.(string); ok {
				w.argument(strings.ToUpper(s), true)
			} else {
				var up []any
				for _, x := range items(v) {
					up = append(up, strings.ToUpper(pyStr(x)))
				}
				w.argument(up, true)
			}
		default:
			w.text(k + ":")
			w.argument(v, true)
		}
	}
	w.text("}")
}

// declaration is the template's format_function_declaration.
func (w writer) declaration(t Tool) {
	w.text("declaration:" + t.Name + "{description:")
	w.quoted(t.Description)
	if params := decodeJSON(t.Parameters); truthy(params) {
		w.text(",parameters:{")
		if p := get(params, "properties"); truthy(p) {
			w.text("properties:{")
			w.parameters(p)
			w.text("},")
		}
		if r := get(params, "required"); truthy(r) {
			w.text("required:")
			w.quotedList(r)
			w.text(",")
		}
		if typ := get(params, "type"); truthy(typ) {
			w.text("type:")
			w.quoted(strings.ToUpper(pyStr(typ)))
			w.text("}") // the template closes parameters only here
		}
	}
	w.text("}")
}

// toolCall is one call in a model message: its arguments as a dict in
// dictsort order, bare keys; arguments that are not a JSON object as written.
func (w writer) toolCall(c ToolCall) {
	w.ctl(ToolCallStart)
	w.text("call:" + c.Name + "{")
	if args, ok := decodeJSON([]byte(c.Arguments)).(map[string]any); ok {
		for i, k := range sortedKeys(args) {
			if i > 0 {
				w.text(",")
			}
			w.text(k + ":")
			w.argument(args[k], false)
		}
	} else {
		w.text(c.Arguments)
	}
	w.text("}")
	w.ctl(ToolCallEnd)
}

// toolResponse is a tool message's result, the template's
// format_tool_response_block for a string.
func (w writer) toolResponse(name, content string) {
	w.ctl(ToolResponseStart)
	w.text("response:" + name + "{value:")
	w.quoted(content)
	w.text("}")
	w.ctl(ToolResponseEnd)
}

// responseName is the function a tool message answers, as the template finds
// it: the name of the (last) call whose ID is its ToolCallID, else its Name,
// else "unknown".
func responseName(calls []ToolCall, m Message) string {
	name := m.Name
	if name == "" {
		name = "unknown"
	}
	for _, c := range calls {
		if c.ID == m.ToolCallID {
			name = c.Name
		}
	}
	return name
}
