package chat

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReadCallsAsWritten: an answer read as it comes gives only what stays
// true — the content less what may be a call's start, a call once its head
// is whole, a key with its value's first byte, a bare value once it ends, a
// string's text less what may be its end quote — and a cut call's Partial
// is its values written whole, closed.
func TestReadCallsAsWritten(t *testing.T) {
	for _, tc := range []struct {
		text, content string
		calls         []WrittenCall
	}{
		{text: "Let me look.<|tool", content: "Let me look."},
		{text: "Hi <|tool_call>call:get_wea", content: "Hi "},
		{text: "<|tool_call>call:f{", calls: []WrittenCall{{Name: "f", Arguments: "{", Partial: "{}"}}},
		{text: "<|tool_call>call:f{city:", calls: []WrittenCall{{Name: "f", Arguments: "{", Partial: "{}"}}},
		{text: "<|tool_call>call:f{city:<|", calls: []WrittenCall{{Name: "f", Arguments: "{", Partial: "{}"}}},
		{text: `<|tool_call>call:f{city:<|"|>Par`, calls: []WrittenCall{{Name: "f", Arguments: `{"city":"Par`, Partial: `{}`}}},
		{text: `<|tool_call>call:f{city:<|"|>Paris<|"`, calls: []WrittenCall{{Name: "f", Arguments: `{"city":"Paris`, Partial: `{}`}}},
		{text: `<|tool_call>call:f{city:<|"|>Paris<|"|>,days:1`, calls: []WrittenCall{{Name: "f", Arguments: `{"city":"Paris"`, Partial: `{"city":"Paris"}`}}},
		{text: `<|tool_call>call:f{city:<|"|>Paris<|"|>,days:12}`, calls: []WrittenCall{{Name: "f", Arguments: `{"city":"Paris"`, Partial: `{"city":"Paris"}`}}}, // the brace may be the end
		{text: `<|tool_call>call:f{city:<|"|>Paris<|"|>,days:12,`, calls: []WrittenCall{{Name: "f", Arguments: `{"city":"Paris","days":12`, Partial: `{"city":"Paris","days":12}`}}},
		{text: `<|tool_call>call:f{l:[1,{a:<|"|>é`, calls: []WrittenCall{{Name: "f", Arguments: `{"l":[1,{"a":"é`, Partial: `{"l":[1,{}]}`}}},
		{text: "<|tool_call>call:f{s:<|\"|>caf\xc3", calls: []WrittenCall{{Name: "f", Arguments: `{"s":"caf`, Partial: `{}`}}},
		{text: `<|tool_call>call:f{k:<|"|>v<|"|>,k:<|"|>w`, calls: []WrittenCall{{Name: "f", Arguments: `{"k":"v"`, Partial: `{"k":"v"}`}}},
		{text: `<|tool_call>call:f{a:1}<tool_call|><|tool_call>call:g{`, calls: []WrittenCall{
			{Name: "f", Arguments: `{"a":1}`, Closed: true, End: 35}, {Name: "g", Arguments: "{", Partial: "{}"}}},
		{text: "<|tool_call>call:f{a:" + strings.Repeat("[", 40), calls: []WrittenCall{ // (nested past maxArgsDepth: no value)
			{Name: "f", Arguments: `{"a":` + strings.Repeat("[", 32), Partial: `{"a":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + "}"}}},
		{text: `<|tool_call>call:bad name{a:1}<tool_call|>`},
	} {
		content, calls := ReadCalls(tc.text, false)
		if content != tc.content || len(calls) != len(tc.calls) {
			t.Errorf("%q: %q %+v, want %q %+v", tc.text, content, calls, tc.content, tc.calls)
			continue
		}
		for i := range calls {
			if calls[i] != tc.calls[i] {
				t.Errorf("%q: call %d %+v, want %+v", tc.text, i, calls[i], tc.calls[i])
			}
			if c := calls[i]; !c.Closed && !json.Valid([]byte(c.Partial)) {
				t.Errorf("%q: %s is not JSON", tc.text, c.Partial)
			}
		}
	}
	// Whole, a cut call's bare value and held text are its.
	_, calls := ReadCalls(`<|tool_call>call:f{a:<|"|>x<|"|>,b:12}`, true)
	if len(calls) != 1 || calls[0] != (WrittenCall{Name: "f", Arguments: `{"a":"x","b":12`, Partial: `{"a":"x","b":12}`}) {
		t.Errorf("cut call read whole: %+v", calls)
	}
}

// FuzzReadCallsPrefix: whatever a model writes, what ReadCalls gives for a
// text as far as it is written is a prefix of what it gives for more of it,
// and of the whole — the content, each call's name and arguments, a closed
// call unchanged — so a stream that sends it as it comes never sends what
// the whole answer takes back; and a call's arguments (closed) or its Partial
// are a JSON object.
func FuzzReadCallsPrefix(f *testing.F) {
	for _, s := range []string{
		`Sure.<|tool_call>call:f{a:<|"|>x<|"|>,b:[1,{c:2}],d:{e:null}}<tool_call|>`,
		`text<|tool_call>call:g{}<tool_call|><|tool_call>call:h{k:v}<tool_call|>`,
		`<|tool_call>call:f{a:<|"|>unterminated}<tool_call|>`,
		`<|tool_call>call:f{a:[[[{{{<|"|>}<tool_call|>`,
		`<|tool_call>call:f{:,,:}<tool_call|>`,
		`<|tool_call>call:f{a:1.5.5,b:1e400,c:+7,d:-0,e:.5,a:2}<tool_call|>`,
		`<|tool_call>call:f{s:<|"|>}<tool_call|> inside<|"|>}<tool_call|>`,
		"<|tool_call>call:f{s:<|\"|>héllo 世界<|\"|>,t:[<|\"|>a<|\"|>,b c]}<tool_call|>",
		`<|tool_call>call x{}<tool_call|><|tool_call>call:y{z:{}}`,
	} {
		f.Add(s, uint16(7), uint16(30))
	}
	f.Fuzz(func(t *testing.T, text string, a, b uint16) {
		i, j := int(a)%(len(text)+1), int(b)%(len(text)+1)
		if i > j {
			i, j = j, i
		}
		type read struct {
			content string
			calls   []WrittenCall
		}
		at := func(n int, final bool) read {
			c, calls := ReadCalls(text[:n], final)
			return read{c, calls}
		}
		reads := []read{at(i, false), at(j, false), at(len(text), false), at(len(text), true)}
		for k := 1; k < len(reads); k++ {
			p, q := reads[k-1], reads[k]
			if !strings.HasPrefix(q.content, p.content) || len(q.calls) < len(p.calls) {
				t.Fatalf("%q: read %d %+v does not go on to read %d %+v", text, k-1, p, k, q)
			}
			for n, c := range p.calls {
				d := q.calls[n]
				if c.Name != d.Name || !strings.HasPrefix(d.Arguments, c.Arguments) || c.Closed && d != c {
					t.Fatalf("%q: call %d of read %d %+v, then %+v", text, n, k-1, c, d)
				}
			}
		}
		for _, r := range reads {
			if strings.Contains(r.content, ToolCallStart) {
				t.Fatalf("%q: content %q holds a call's start", text, r.content)
			}
			for _, c := range r.calls {
				var obj map[string]any
				whole := c.Arguments
				if !c.Closed {
					whole = c.Partial
				}
				d := json.NewDecoder(strings.NewReader(whole))
				d.UseNumber() // a big integer is JSON too
				if err := d.Decode(&obj); err != nil || d.More() {
					t.Fatalf("%q: arguments %q (partial %q) are not a JSON object: %v", text, c.Arguments, c.Partial, err)
				}
				if c.Closed != (c.Partial == "") {
					t.Fatalf("%q: call %+v", text, c)
				}
			}
		}
	})
}
