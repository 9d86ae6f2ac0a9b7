package sampler

import (
	"fmt"
	"sort"
	"strings"
)

// Tool calls: AR picks held to Gemma 4's tool calls (the API's tool_choice
// "required" or a named function, and strict tools). A call is
//
//	<|tool_call>call:NAME{key:value,…}<tool_call|>
//
// with NAME one of the declared tools, and the arguments an object written
// the way the chat template writes them (engine/chat's format_argument): keys
// bare, strings between `<|"|>` tokens with their text as it is, numbers,
// true, false, null (or None, as the template writes it), lists and objects,
// no whitespace between them. The hold reads them as a transducer into JSON:
// each byte becomes the JSON bytes that say the same (a bare key's first byte
// a '"' and itself, its ':' a '"' and ':', a `<|"|>` a '"', a string's '"'
// `\"`, …), fed to the JSON constraint's automaton held to the tool's
// parameters schema (json.go, schema.go), so a call's arguments are an
// instance of that schema exactly as JSON mode's answer is. What it allows is also what engine/chat's ParseToolCalls reads
// back as the same JSON: numbers with an exponent carry a '.', and a string
// never holds the text of `<|"|>` nor of `<tool_call|>` (the parser would end
// it there).
//
// Before the first call the hold allows any text (where the answer may be
// words: tool_choice "auto"; a call's start inside a thought, between
// `<|channel>` and `<channel|>`, is the thought's text), or only the call
// (Only); the control tokens come to it as the one-byte texts CallQuote,
// CallStart, CallEnd, ThoughtStart and ThoughtEnd (bytes no UTF-8 text holds),
// which NewJSONVocab reads as it reads any id's text. After a call come the
// ends, or (not Single) another call.

// The tool-call control tokens as the hold reads them: one byte each that no
// UTF-8 text holds. The vocabulary given to NewJSONVocab names the model's
// `<|"|>`, `<|tool_call>` and `<tool_call|>` ids by these texts.
const (
	CallQuote = "\xF8"
	CallStart = "\xF9"
	CallEnd   = "\xFA"
	// ThoughtStart and ThoughtEnd are `<|channel>` and `<channel|>`, which
	// open and close a thought.
	ThoughtStart = "\xFB"
	ThoughtEnd   = "\xFC"
)

// callWord follows CallStart in every call.
const callWord = "call:"

// CallTool is a tool the hold knows: its name and its arguments' schema (nil:
// any object).
type CallTool struct {
	Name   string
	Schema *Schema
}

// CallRules say what a hold allows.
type CallRules struct {
	Tools []CallTool
	// Only: the answer is calls and nothing else; otherwise words may come
	// before the first.
	Only bool
	// Single: at most one call.
	Single bool
	// ThoughtFirst: where Only, a thought may come before the first call (a
	// thinking model's; unheld).
	ThoughtFirst bool
}

// Where a call's reading is (callState.phase).
type callPhase uint8

const (
	cFree  callPhase = iota // before any call (not Only): any text; CallStart begins one
	cThink                  // in a thought before any call (ThoughtFirst where Only): any text, to ThoughtEnd
	cStart                  // Only, before the first call: its CallStart
	cWord                   // after CallStart: callWord (pos: its bytes read)
	cName                   // the name: tools[lo:hi] begin with the pos bytes read
	cArgs                   // the arguments (ToolCalls.args)
	cClose                  // after the arguments: CallEnd
	cAfter                  // after a call: another's CallStart (not Single), or an end
)

// Delimiters a string's text may not hold (callState.tail): the parser would
// end the string, or the call, at them. Neither holds its first byte again,
// so how much of each the text ends with is read a byte at a time.
var stringStops = [2]string{`<|"|>`, "<tool_call|>"}

// callState is the hold's state but for the arguments' automaton.
type callState struct {
	phase       callPhase
	pos, lo, hi int
	tail        [2]uint8 // in a string: how much of each of stringStops its text ends with
	none        uint8    // in a null written as the template writes it (None): its bytes read
	thought     bool     // a thought was begun
}

// ToolCalls holds one generation's picks to tool calls: Banned before each
// pick, Picked after it.
type ToolCalls struct {
	v            *JSONVocab
	tools        []CallTool // by name
	only         bool
	single       bool
	thoughtFirst bool
	c            callState
	args         jsonHold // cArgs: the arguments as JSON
	banned       []bool
	pats         map[*pattern]*patDFA // the patterns' automata (JSONObject's)
}

// callRun is one run of the hold over some bytes, on copies of its state.
type callRun struct {
	c callState
	r run
}

// Calls starts a hold for one answer, or says why rules cannot be held to: no
// tool, a name twice, or a schema property no bare key can write.
func (v *JSONVocab) Calls(rules CallRules) (*ToolCalls, error) {
	if len(rules.Tools) == 0 {
		return nil, fmt.Errorf("tool calls are held to the tools declared: declare at least one")
	}
	tools := append([]CallTool(nil), rules.Tools...)
	sort.Slice(tools, func(i, k int) bool { return tools[i].Name < tools[k].Name })
	for i, t := range tools {
		if i > 0 && tools[i-1].Name == t.Name {
			return nil, fmt.Errorf("two tools are named %q", t.Name)
		}
		if err := CheckCallTool(t); err != nil {
			return nil, err
		}
	}
	h := &ToolCalls{v: v, tools: tools, only: rules.Only, single: rules.Single, thoughtFirst: rules.ThoughtFirst,
		banned: make([]bool, len(v.texts)), pats: map[*pattern]*patDFA{}}
	if h.only {
		h.c.phase = cStart
	}
	return h, nil
}

// CheckCallTool is nil where a hold can hold t's calls, else an error that
// says why not: it has no name, or its schema declares a property no bare key
// can write.
func CheckCallTool(t CallTool) error {
	if t.Name == "" {
		return fmt.Errorf("a tool has no name")
	}
	if t.Schema != nil {
		if key, ok := t.Schema.keys(bareKey); !ok {
			return fmt.Errorf("tool %q: its parameters declare the property %q, which a call cannot write "+
				"(a call's keys are written bare: no spaces, quotes or any of :,{}[])", t.Name, key)
		}
	}
	return nil
}

// Opening moves the hold past ids that the answer opens with, held, and
// reports whether they are the beginning of what it allows.
func (h *ToolCalls) Opening(ids []int) bool {
	for _, id := range ids {
		if id < 0 || id >= len(h.v.texts) || h.v.never[id] || !h.advance(h.v.texts[id]) {
			return false
		}
	}
	return true
}

// Done reports whether nothing may follow but the end: a Single hold's call
// is whole.
func (h *ToolCalls) Done() bool { return h.single && h.c.phase == cAfter }

// Banned marks the ids the next pick may not take ([vocab], the hold's own:
// read it before the next Picked); nil where any may (words before a call).
// The ends are allowed after a call, and wherever nothing else could follow.
func (h *ToolCalls) Banned() []bool {
	if h.c.phase == cFree || h.c.phase == cThink {
		return nil
	}
	allowed := 0
	if h.Done() {
		fill(h.banned, true)
	} else {
		allowed = h.v.ban(h.banned, h)
	}
	if h.c.phase == cAfter || allowed == 0 {
		h.v.allowEnds(h.banned)
	}
	return h.banned
}

// Picked moves the hold past id's text. An id it would not have allowed (an
// end, or a pick made without it) leaves it where it was.
func (h *ToolCalls) Picked(id int) {
	if id >= 0 && id < len(h.v.texts) && !h.v.never[id] {
		h.advance(h.v.texts[id])
	}
}

// plainRule: inside an argument's string (not a key's), between characters
// and with no delimiter's text begun, plain text is taken as in JSON.
func (h *ToolCalls) plainRule() plainRule {
	if h.c.phase != cArgs || h.args.st.key || h.c.tail != [2]uint8{} {
		return plainRule{}
	}
	return h.args.plainRule(h.pats)
}

func (h *ToolCalls) start(cr *callRun) {
	cr.c = h.c
	if h.c.phase == cArgs {
		h.args.start(&cr.r)
	}
}

func (h *ToolCalls) feed(cr *callRun, text []byte) bool {
	for _, b := range text {
		if !h.step(cr, b) {
			return false
		}
	}
	return true
}

func (h *ToolCalls) accepts(text []byte) bool {
	var cr callRun
	h.start(&cr)
	return h.feed(&cr, text)
}

func (h *ToolCalls) advance(text []byte) bool {
	var cr callRun
	h.start(&cr)
	if !h.feed(&cr, text) {
		return false
	}
	h.c = cr.c
	h.args.commit(&cr.r)
	return true
}

// step reads one byte of the answer, and reports whether it may come there.
func (h *ToolCalls) step(cr *callRun, b byte) bool {
	c := &cr.c
	switch c.phase {
	case cFree:
		switch b {
		case CallStart[0]:
			c.phase, c.pos = cWord, 0
		case ThoughtStart[0]:
			c.phase, c.thought = cThink, true
		}
		return true
	case cThink:
		if b == ThoughtEnd[0] {
			c.phase = cFree
			if h.only {
				c.phase = cStart
			}
		}
		return true
	case cStart, cAfter:
		if b == ThoughtStart[0] && c.phase == cStart && h.thoughtFirst && !c.thought {
			c.phase, c.thought = cThink, true
			return true
		}
		if b != CallStart[0] || c.phase == cAfter && h.single {
			return false
		}
		c.phase, c.pos = cWord, 0
		return true
	case cWord:
		if b != callWord[c.pos] {
			return false
		}
		if c.pos++; c.pos == len(callWord) {
			c.phase, c.pos, c.lo, c.hi = cName, 0, 0, len(h.tools)
		}
		return true
	case cName:
		if b == '{' {
			// The name is whole: the range's first (sorted, a whole name
			// comes before those it begins).
			if c.lo == c.hi || len(h.tools[c.lo].Name) != c.pos {
				return false
			}
			cr.r = run{st: jsonState{mode: jTop}}
			if s := h.tools[c.lo].Schema; s != nil {
				cr.r.held, cr.r.sch = true, schemaState{schema: s}
			}
			c.phase = cArgs
			return cr.r.step('{')
		}
		pos, names := c.pos, h.tools[c.lo:c.hi]
		lo := sort.Search(len(names), func(i int) bool { return len(names[i].Name) > pos && names[i].Name[pos] >= b })
		hi := sort.Search(len(names), func(i int) bool { return len(names[i].Name) > pos && names[i].Name[pos] > b })
		c.lo, c.hi, c.pos = c.lo+lo, c.lo+hi, pos+1
		return lo < hi
	case cArgs:
		if !argByte(cr, b) {
			return false
		}
		if cr.r.st.mode == jDone {
			c.phase = cClose
		}
		return true
	case cClose:
		if b != CallEnd[0] {
			return false
		}
		c.phase = cAfter
		return true
	}
	return false
}

// argByte feeds one byte of arguments written the template's way to the
// run's automaton as the JSON bytes that say the same.
func argByte(cr *callRun, b byte) bool {
	r, st := &cr.r, &cr.r.st
	switch {
	case cr.c.none > 0: // None, read as null
		i := cr.c.none
		if b != pyNone[i] {
			return false
		}
		cr.c.none = (i + 1) % uint8(len(pyNone))
		return r.step("null"[i])
	case b == 'N' && (st.mode == jValue || st.mode == jArrayFirst):
		cr.c.none = 1
		return r.step('n')
	case st.mode == jString && st.key: // a bare key
		if b == ':' {
			return r.step('"') && r.step(':')
		}
		return bareKey(b) && r.step(b)
	case st.mode == jString: // a string's text
		if b == CallQuote[0] {
			return r.step('"')
		}
		for i, stop := range stringStops {
			switch {
			case b == stop[cr.c.tail[i]]:
				if cr.c.tail[i]++; int(cr.c.tail[i]) == len(stop) {
					return false
				}
			case b == stop[0]:
				cr.c.tail[i] = 1
			default:
				cr.c.tail[i] = 0
			}
		}
		return escaped(r, b)
	case st.mode == jKeyOrClose || st.mode == jKey:
		if b == '}' {
			return r.step(b)
		}
		return bareKey(b) && r.step('"') && r.step(b)
	case b == CallQuote[0]:
		cr.c.tail = [2]uint8{}
		return r.step('"')
	case b == '"' || isSpace(b):
		return false // a string is quoted with `<|"|>`; no whitespace between values
	case st.mode == jNumber && (st.num == nZero || st.num == nInt) && (b == 'e' || b == 'E'):
		return false // the parser reads a number with no '.' as an integer, or as a string
	}
	return r.step(b)
}

// pyNone is null as the template writes it (Python's str of None), which
// the parser reads as null too.
const pyNone = "None"

// bareKey reports whether b may be in a key written bare: not whitespace nor
// a control byte, nor a byte of the format's syntax (or a quote or backslash,
// which JSON would write escaped).
func bareKey(b byte) bool { return b > ' ' && b != 0x7F && !strings.ContainsRune(`:,{}[]"\`, rune(b)) }

// escaped feeds a string's byte as JSON writes it (the automaton refuses a
// byte no UTF-8 text holds).
func escaped(r *run, b byte) bool {
	switch b {
	case '"', '\\':
		return r.step('\\') && r.step(b)
	case '\n':
		return r.step('\\') && r.step('n')
	case '\r':
		return r.step('\\') && r.step('r')
	case '\t':
		return r.step('\\') && r.step('t')
	case '\b':
		return r.step('\\') && r.step('b')
	case '\f':
		return r.step('\\') && r.step('f')
	}
	if b < 0x20 {
		const hex = "0123456789abcdef"
		return r.step('\\') && r.step('u') && r.step('0') && r.step('0') && r.step(hex[b>>4]) && r.step(hex[b&15])
	}
	return r.step(b)
}

// CallPrefix reports whether text (the control tokens written as CallQuote,
// CallStart and CallEnd) is the beginning of what a hold by rules allows, and
// whether that hold is Done after it. For tests.
func CallPrefix(rules CallRules, text string) (ok, done bool) {
	h, err := (&JSONVocab{}).Calls(rules)
	if err != nil {
		return false, false
	}
	for i := 0; i < len(text); i++ { // a byte at a time: nesting deeper than one run's stackView holds
		if !h.advance([]byte{text[i]}) {
			return false, false
		}
	}
	return true, h.Done()
}
