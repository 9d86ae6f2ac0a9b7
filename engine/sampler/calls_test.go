package sampler

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/chat"
)

// callText writes a call of name with arguments v (decoded JSON) the way the
// chat template writes one (format_argument: bare keys, strings between
// quote tokens, no whitespace), each control token as the hold reads it. It
// is the test's own writer, apart from the hold and from engine/chat.
func callText(name string, v any) string {
	var b strings.Builder
	var arg func(v any)
	arg = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(CallQuote + x + CallQuote)
		case bool:
			b.WriteString(map[bool]string{true: "true", false: "false"}[x])
		case nil:
			b.WriteString("None") // (Python's str of None)
		case json.Number:
			b.WriteString(x.String())
		case []any:
			b.WriteString("[")
			for i, y := range x {
				if i > 0 {
					b.WriteString(",")
				}
				arg(y)
			}
			b.WriteString("]")
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			b.WriteString("{")
			for i, k := range keys {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString(k + ":")
				arg(x[k])
			}
			b.WriteString("}")
		}
	}
	b.WriteString(CallStart + callWord + name)
	arg(v)
	b.WriteString(CallEnd)
	return b.String()
}

// asText is the hold's text as the answer's text reads: each control token as
// the chat template writes it.
func asText(s string) string {
	return strings.NewReplacer(CallQuote, chat.Quote, CallStart, chat.ToolCallStart, CallEnd, chat.ToolCallEnd).Replace(s)
}

// sameJSON reports whether two JSON texts hold the same value (numbers
// compared as float64s).
func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

func oneTool(t testing.TB, name, schema string) CallRules {
	t.Helper()
	s, err := CompileSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	return CallRules{Tools: []CallTool{{Name: name, Schema: s}}, Only: true, Single: true}
}

// TestCallsAgainstReference: random argument values of each test schema's
// shape (instances, and mutations of them), written as calls the template's
// way, are held whole exactly when an independent validator finds them
// instances; and what the hold closes, engine/chat's parser (vLLM's reading)
// reads back as the same value.
func TestCallsAgainstReference(t *testing.T) {
	againstReference(t, rand.NewPCG(3, 5), func(name string, v any, want bool) {
		text := callText("f", v)
		ok, done := CallPrefix(oneTool(t, "f", testSchemas[name]), text)
		if got := ok && done; got != want {
			t.Fatalf("%s: %q: hold says %v (ok %v done %v), the validator %v", name, asText(text), got, ok, done, want)
		}
		if !want {
			return
		}
		content, calls := chat.ParseToolCalls(asText(text))
		if content != "" || len(calls) != 1 || calls[0].Name != "f" || !sameJSON(calls[0].Arguments, canonical(v)) {
			t.Fatalf("%s: %q reads back as %q %+v, want %s", name, asText(text), content, calls, canonical(v))
		}
	})
}

// TestCallsHold: where calls begin, which names, how many, and the bytes a
// call's arguments may not hold, each refused at the byte that breaks it.
func TestCallsHold(t *testing.T) {
	s, err := CompileSchema([]byte(`{"type":"object","properties":{"city":{"type":"string"},"n":{"type":"number"},
		"unit":{"enum":["C","F"]}},"required":["city"]}`))
	if err != nil {
		t.Fatal(err)
	}
	tools := []CallTool{{Name: "get_weather", Schema: s}, {Name: "get", Schema: nil}, {Name: "getx"}}
	q, cs, ce := CallQuote, CallStart, CallEnd
	call := cs + "call:get_weather{city:" + q + "Oslo" + q + "}" + ce
	for _, c := range []struct {
		name  string
		rules CallRules
		text  string
		ok    bool
		done  bool
	}{
		{"a call", CallRules{Tools: tools, Only: true, Single: true}, call, true, true},
		{"words first, Only", CallRules{Tools: tools, Only: true}, "S", false, false},
		{"words first", CallRules{Tools: tools}, "Sure, <b>a</b> " + q + ce + call, true, false},
		{"two calls", CallRules{Tools: tools, Only: true}, call + call, true, false},
		{"two calls, Single", CallRules{Tools: tools, Only: true, Single: true}, call + cs, false, false},
		{"words after a call", CallRules{Tools: tools}, call + " ", false, false},
		{"a call's start in a thought", CallRules{Tools: tools}, ThoughtStart + "thought\nx" + cs + "y" + ThoughtEnd + "So:" + call, true, false},
		{"a thought, Only", CallRules{Tools: tools, Only: true}, ThoughtStart, false, false},
		{"a thought before a forced call", CallRules{Tools: tools, Only: true, ThoughtFirst: true}, ThoughtStart + "x" + cs + "y" + ThoughtEnd + call, true, false},
		{"words after the thought, Only", CallRules{Tools: tools, Only: true, ThoughtFirst: true}, ThoughtStart + "x" + ThoughtEnd + "S", false, false},
		{"a second thought", CallRules{Tools: tools, Only: true, ThoughtFirst: true}, ThoughtStart + ThoughtEnd + ThoughtStart, false, false},
		{"a name's beginning", CallRules{Tools: tools, Only: true}, cs + "call:ge{", false, false},
		{"a shorter name", CallRules{Tools: tools, Only: true}, cs + "call:get{}" + ce, true, false},
		{"a longer name", CallRules{Tools: tools, Only: true}, cs + "call:getx{a:[1,{b:null}]}" + ce, true, false},
		{"no such name", CallRules{Tools: tools, Only: true}, cs + "call:get_w{", false, false},
		{"the word", CallRules{Tools: tools, Only: true}, cs + "cal:", false, false},
		{"a required key missing", CallRules{Tools: tools, Only: true}, cs + "call:get_weather{n:1}", false, false},
		{"an undeclared key", CallRules{Tools: tools, Only: true}, cs + "call:get_weather{x", false, false},
		{"a key twice", CallRules{Tools: tools, Only: true}, cs + "call:get_weather{city:" + q + q + ",c", false, false},
		{"a space", CallRules{Tools: tools, Only: true}, cs + "call:get_weather{city: ", false, false},
		{"a JSON string", CallRules{Tools: tools, Only: true}, cs + "call:get_weather{city:\"", false, false},
		{"a quoted key", CallRules{Tools: tools, Only: true}, cs + "call:get{\"", false, false},
		{"an enum's value", CallRules{Tools: tools, Only: true}, cs + "call:get_weather{unit:" + q + "F" + q + ",city:" + q + "x" + q + "}" + ce, true, false},
		{"not an enum's value", CallRules{Tools: tools, Only: true}, cs + "call:get_weather{unit:" + q + "K", false, false},
		{"an exponent with a '.'", CallRules{Tools: tools, Only: true}, cs + "call:get_weather{n:1.5e3,city:" + q + q + "}" + ce, true, false},
		{"an exponent without", CallRules{Tools: tools, Only: true}, cs + "call:get_weather{n:1e", false, false},
		{"a string's text with quotes, escapes, lines", CallRules{Tools: tools, Only: true},
			cs + "call:get_weather{city:" + q + "\"a\\b\"\n\t\x01 <|\"| > <tool_call| é" + q + "}" + ce, true, false},
		{"a quote token's text in a string", CallRules{Tools: tools, Only: true}, cs + "call:get_weather{city:" + q + "x<|\"|>", false, false},
		{"a call end's text in a string", CallRules{Tools: tools, Only: true}, cs + "call:get_weather{city:" + q + "}<tool_call|>", false, false},
		{"a call end inside the arguments", CallRules{Tools: tools, Only: true}, cs + "call:get_weather{city:" + q + ce, false, false},
		{"a bare string", CallRules{Tools: tools, Only: true}, cs + "call:get{a:x", false, false},
		{"None, as the template writes null", CallRules{Tools: tools, Only: true}, cs + "call:getx{a:None,b:[None,null]}" + ce, true, false},
		{"Nonsense", CallRules{Tools: tools, Only: true}, cs + "call:getx{a:Nons", false, false},
		{"None where null may not come", CallRules{Tools: tools, Only: true}, cs + "call:get_weather{n:N", false, false},
		{"nothing after the end, Single", CallRules{Tools: tools, Single: true}, "x" + call + "y", false, false},
	} {
		ok, done := CallPrefix(c.rules, c.text)
		if ok != c.ok || done != c.done {
			t.Errorf("%s: %q: ok %v done %v, want %v %v", c.name, asText(c.text), ok, done, c.ok, c.done)
		}
		if !c.ok { // refused at its last byte
			if ok, _ := CallPrefix(c.rules, c.text[:len(c.text)-1]); !ok {
				t.Errorf("%s: refused before its last byte: the test's text is wrong", c.name)
			}
		}
	}
}

// TestCallsRefuses: rules no call could follow are refused in words.
func TestCallsRefuses(t *testing.T) {
	spaced, err := CompileSchema([]byte(`{"type":"object","properties":{"a":{"type":"object","properties":{"my key":{"type":"string"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	v := NewJSONVocab([]string{"a"}, nil, nil)
	for _, c := range []struct {
		rules CallRules
		want  string
	}{
		{CallRules{}, "at least one"},
		{CallRules{Tools: []CallTool{{Name: "f"}, {Name: "f"}}}, `two tools are named "f"`},
		{CallRules{Tools: []CallTool{{Name: ""}}}, "no name"},
		{CallRules{Tools: []CallTool{{Name: "f", Schema: spaced}}}, `"my key"`},
	} {
		if _, err := v.Calls(c.rules); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.rules, err, c.want)
		}
	}
}

// TestCallsBannedMatchesAccepts: over a vocabulary with the control tokens,
// special ids and pieces of every kind, the hold's bans are exactly the ids
// whose text it refuses, at every step of writing two calls (the fast path
// inside strings included, and across a stop's text begun in one id).
func TestCallsBannedMatchesAccepts(t *testing.T) {
	texts := []string{CallStart, CallEnd, CallQuote, "call", ":", "call:", "get", "_weather", "get_weather", "{", "}", "{city", "city",
		"unit", ":", ",", "Oslo", " Oslo", "<", "tool", "_call", "|>", "<|", "\"", "|", ">", "}<tool_call|>", "é", "\xc3", "\xa9", "\n",
		"1", ".", "5", "e", "3", "n", "null", "F", "C", "Sure", " ", "x", "\xf8", "\xf9", "\xfa", "\xff"}
	special := make([]bool, len(texts))
	special[0], special[1], special[2] = true, true, true // the control tokens; the byte-fallback ids of \xf8 … are text
	texts = append(texts, "<eos>", "<|turn>")
	special = append(special, true, true)
	eos := len(texts) - 2
	v := NewJSONVocab(texts, special, []int{eos})
	s, err := CompileSchema([]byte(`{"type":"object","properties":{"city":{"type":"string"},"n":{"type":"number"},
		"unit":{"enum":["C","F"]}},"required":["city"]}`))
	if err != nil {
		t.Fatal(err)
	}
	h, err := v.Calls(CallRules{Tools: []CallTool{{Name: "get_weather", Schema: s}, {Name: "get"}}})
	if err != nil {
		t.Fatal(err)
	}
	pieces := []string{"Sure", " ", CallStart, "call:", "get_weather", "{city", ":", CallQuote, "Oslo", "<", "tool", "_call", "|", "\xc3", "\xa9",
		"\"", "<|", "\"", "|", "\n", CallQuote, ",", "n", ":", "1", ".", "5", "e", "3", ",", "unit", ":", CallQuote, "F", CallQuote, "}", CallEnd,
		CallStart, "call", ":", "get", "{", "}", CallEnd}
	for i, piece := range pieces {
		banned := h.Banned()
		if h.c.phase == cFree {
			if banned != nil {
				t.Fatalf("before %q: words before a call, and something banned", asText(piece))
			}
		} else {
			for id, text := range texts {
				want := special[id] && id > 2 || text[0] >= 0xF8 && id > 2 || !h.accepts([]byte(text))
				if id == eos {
					want = h.c.phase != cAfter
				}
				if banned[id] != want {
					t.Fatalf("before %q (piece %d): id %q banned %v, a run says %v", asText(piece), i, asText(text), banned[id], want)
				}
			}
		}
		id := slices.Index(texts, piece)
		if banned != nil && banned[id] {
			t.Fatalf("%q banned where the calls go on with it", asText(piece))
		}
		h.Picked(id)
	}
	if h.c.phase != cAfter || h.Done() {
		t.Errorf("phase %d done %v after two calls, want after a call and not done (more may come)", h.c.phase, h.Done())
	}
	if b := h.Banned(); b[eos] || !b[slices.Index(texts, "x")] || b[0] {
		t.Error("after a call: the end and another call's start allowed, words not")
	}
}

// TestCallsOpening: a forced call's held opening moves the hold; one that is
// not a call's beginning is refused.
func TestCallsOpening(t *testing.T) {
	texts := []string{CallStart, "call:", "get", "{", "x", "<eos>"}
	special := []bool{true, false, false, false, false, true}
	v := NewJSONVocab(texts, special, []int{5})
	rules := CallRules{Tools: []CallTool{{Name: "get"}}, Only: true, Single: true}
	h, _ := v.Calls(rules)
	if !h.Opening([]int{0, 1, 2, 3}) || h.c.phase != cArgs {
		t.Fatalf("opening `<|tool_call>call:get{`: phase %d", h.c.phase)
	}
	h, _ = v.Calls(rules)
	if h.Opening([]int{4}) {
		t.Error("opening x: accepted by a hold that is only calls")
	}
	h, _ = v.Calls(rules)
	if h.Opening([]int{5}) {
		t.Error("opening with an end: accepted")
	}
}

// FuzzCalls: whatever the model writes, what the hold closes is one call of a
// declared tool that engine/chat's parser reads back with arguments that are
// an instance of the tool's schema.
func FuzzCalls(f *testing.F) {
	q := CallQuote
	for _, s := range []string{
		"call:f{name:" + q + "A" + q + ",age:1,ok:true}",
		"call:f{age:-0,name:" + q + "<|\"|" + q + ",ok:false,score:2.5E-3}",
		"call:f{age:12,name:" + q + "}<tool_call|" + q + ",ok:true,color:" + q + "red" + q + "}",
		"call:f{age:1,name:" + q + q + ",ok:false,score:None}",
	} {
		f.Add(s)
	}
	rules := oneTool(f, "f", testSchemas["flat"])
	f.Fuzz(func(t *testing.T, body string) {
		text := CallStart + body + CallEnd
		ok, done := CallPrefix(rules, text)
		if !ok || !done {
			return
		}
		content, calls := chat.ParseToolCalls(asText(text))
		if content != "" || len(calls) != 1 || calls[0].Name != "f" {
			t.Fatalf("%q held whole, read back as %q %+v", asText(text), content, calls)
		}
		if ok, closed := SchemaPrefix(rules.Tools[0].Schema, calls[0].Arguments); !ok || !closed {
			t.Fatalf("%q held whole, its arguments read back as %s: not an instance", asText(text), calls[0].Arguments)
		}
	})
}

// BenchmarkCallsBanned: one pick's bans over a vocabulary of Gemma's size,
// inside a held call (its control tokens the byte ids 0xF8 to 0xFA).
func BenchmarkCallsBanned(b *testing.B) {
	special := make([]bool, 262144)
	special[CallQuote[0]], special[CallStart[0]], special[CallEnd[0]] = true, true, true
	v := NewJSONVocab(benchTexts(), special, []int{1})
	schema, err := CompileSchema([]byte(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},
		"unit":{"enum":["celsius","fahrenheit"]}},"required":["city"]}`))
	if err != nil {
		b.Fatal(err)
	}
	tools := []CallTool{{Name: "get_weather", Schema: schema}, {Name: "get_time"}, {Name: "search"}}
	head := CallStart + "call:get_weather{"
	for _, c := range []struct{ name, so string }{{"name", CallStart + "call:get_"}, {"in-key", head + "ci"},
		{"in-string", head + "city:" + CallQuote + "Os"}, {"in-number", head + "days:1"}, {"after-value", head + "city:" + CallQuote + "Oslo" + CallQuote}} {
		b.Run(c.name, func(b *testing.B) {
			h, err := v.Calls(CallRules{Tools: tools, Only: true})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < len(c.so); i++ {
				h.Picked(int(c.so[i]))
			}
			if ok, _ := CallPrefix(CallRules{Tools: tools, Only: true}, c.so); !ok || h.c.phase != map[bool]callPhase{true: cName, false: cArgs}[c.name == "name"] {
				b.Fatalf("%q: phase %d", c.so, h.c.phase)
			}
			for b.Loop() {
				h.Banned()
			}
		})
	}
}
