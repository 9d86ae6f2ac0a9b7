package sampler

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// JSON mode: AR picks held to one JSON object (OpenAI's response_format
// json_object). Before each pick the constraint bans every id whose text would
// make the answer so far stop being the beginning of a JSON object (RFC 8259's
// grammar, read a byte at a time: a pushdown automaton over objects, arrays,
// strings with their escapes and well-formed UTF-8, numbers and the literals),
// and once the object is closed, every id but the ends. (UTF-8 is checked
// because a tokenizer's byte-fallback decoding turns a run of bytes that is
// not into U+FFFD each, quotes and all.) Nothing is learned or guessed: an id is
// allowed exactly when its bytes, fed to the automaton after the answer's, all
// pass. The ban is the one the stutter rule uses (TokenPlan.Banned), so it
// works where the device picks the token too.
//
// Cost, per pick: inside a string, a run of the automaton for each id that is
// not plain content (few: those with a quote, a backslash, a control byte or
// part of a character); elsewhere one run per byte value, one per pair of
// bytes some id begins with where the first may come, and one per id whose
// pair may come and that is longer than it.

// maxJSONSpace is the most whitespace bytes in a row the constraint allows
// between tokens of the object (none before it): a newline and the
// indentation of a fifth level, and a model stuck writing newlines must write
// something else.
const maxJSONSpace = 20

// JSONVocab is a vocabulary as the JSON constraint reads it, built once per
// model: each id's bytes, the ids grouped by their first two bytes (so that
// Banned decides a whole group by those two, mostly without looking at its
// ids), and the ids that are not plain string content, that are never written
// (special tokens, ids with no text) or that end the answer.
type JSONVocab struct {
	texts [][]byte
	never []bool // never written as text
	// byHead lists the written ids by their first two bytes (a one-byte id's
	// second taken as 0): those of head h are byHead[start[h]:start[h+1]].
	byHead []int32
	start  []int32
	// notPlain lists the written ids that are not plain string content —
	// whole UTF-8 characters without a quote, backslash or control byte —
	// and neverIDs those never written.
	notPlain, neverIDs []int32
	ends               []int // the ids that end a generation, allowed once the object is closed
	// chars are each plain id's characters (0: an id that is not plain; 255
	// for more), maxChars the most.
	chars    []uint8
	maxChars int
	// ascii is each plain id's characters as a set of ASCII bytes (none: it
	// has a character that is not ASCII).
	ascii [][2]uint64
	// thoughtStarts are the ids of ThoughtStart (JSONObject.ThoughtFirst).
	thoughtStarts []int32
}

// NewJSONVocab reads texts[id] (an id's bytes, a byte-fallback id's one byte),
// special[id] (an id that is not text: turn markers and the like; nil: none)
// and the end ids. Special ids are never written as text, but for the tool
// call format's control tokens and a thought's, named by the texts
// CallQuote, CallStart, CallEnd, ThoughtStart and ThoughtEnd, which the call
// hold reads as those one-byte texts (calls.go); so
// that no text is read as one of them, a plain id with a byte no UTF-8 text
// holds (0xF8 to 0xFF: a byte-fallback id no text needs) is never written
// either.
func NewJSONVocab(texts []string, special []bool, ends []int) *JSONVocab {
	v := &JSONVocab{texts: make([][]byte, len(texts)), never: make([]bool, len(texts)), start: make([]int32, 1<<16+1),
		ends: append([]int(nil), ends...), chars: make([]uint8, len(texts)), ascii: make([][2]uint64, len(texts))}
	for _, id := range ends {
		if id >= 0 && id < len(texts) {
			v.never[id] = true // written only as the end, never as text
		}
	}
	head := func(t string) int {
		h := int(t[0]) << 8
		if len(t) > 1 {
			h |= int(t[1])
		}
		return h
	}
	for id, t := range texts {
		v.texts[id] = []byte(t)
		isSpecial := special != nil && special[id]
		control := isSpecial && (t == CallQuote || t == CallStart || t == CallEnd || t == ThoughtStart || t == ThoughtEnd)
		if control && t == ThoughtStart {
			v.thoughtStarts = append(v.thoughtStarts, int32(id))
		}
		if !control && (v.never[id] || t == "" || isSpecial || hasByteAbove(t, 0xF7)) {
			v.never[id] = true
			v.neverIDs = append(v.neverIDs, int32(id))
			continue
		}
		v.start[head(t)+1]++
		// (Text that holds a tool call's end is asked too: the call hold,
		// calls.go, keeps it out of a string.)
		if !utf8.ValidString(t) || strings.ContainsAny(t, "\"\\") || strings.IndexFunc(t, func(r rune) bool { return r < 0x20 }) >= 0 ||
			strings.Contains(t, stringStops[1]) {
			v.notPlain = append(v.notPlain, int32(id))
		} else {
			n := utf8.RuneCountInString(t)
			v.chars[id], v.maxChars = uint8(min(n, 255)), max(v.maxChars, n)
			if n == len(t) {
				for i := 0; i < len(t); i++ {
					v.ascii[id][t[i]/64] |= 1 << (t[i] % 64)
				}
			}
		}
	}
	for h := 1; h < len(v.start); h++ {
		v.start[h] += v.start[h-1]
	}
	v.byHead = make([]int32, v.start[len(v.start)-1])
	next := slices.Clone(v.start[:len(v.start)-1])
	for id, t := range texts {
		if !v.never[id] {
			h := head(t)
			v.byHead[next[h]] = int32(id)
			next[h]++
		}
	}
	return v
}

// JSONObject holds one generation's picks to a JSON object: Banned before each
// pick, Picked after it.
type JSONObject struct {
	v      *JSONVocab
	h      jsonHold
	banned []bool
	pats   map[*pattern]*patDFA // the patterns' automata, made as their strings are written
	// thought is where a thought before the object is (ThoughtFirst): it may
	// begin (thoughtMay), is being written (thoughtIn), or is past.
	thought uint8
}

// Where a thought before the object is (JSONObject.thought).
const (
	thoughtPast uint8 = iota
	thoughtMay
	thoughtIn
)

// ThoughtFirst lets the answer begin with a thought (the model thinking:
// `<|channel>`…`<channel|>`, as NewJSONVocab names them ThoughtStart and
// ThoughtEnd), unheld, before its object: the object is held from the
// thought's end, or from the start where the model writes none.
func (j *JSONObject) ThoughtFirst() { j.thought = thoughtMay }

// Object starts a constraint for one answer.
func (v *JSONVocab) Object() *JSONObject {
	return &JSONObject{v: v, h: jsonHold{st: jsonState{mode: jTop}}, banned: make([]bool, len(v.texts)), pats: map[*pattern]*patDFA{}}
}

// ObjectOf starts a constraint for one answer that is an instance of schema
// (nil: any object).
func (v *JSONVocab) ObjectOf(schema *Schema) *JSONObject {
	j := v.Object()
	if schema != nil {
		j.h.sch = &schemaState{schema: schema}
	}
	return j
}

// Done reports whether the object is closed: the answer is whole.
func (j *JSONObject) Done() bool { return j.h.st.mode == jDone }

// Banned marks the ids the next pick may not take ([vocab], the constraint's
// own: read it before the next Picked). Where nothing could follow (a
// vocabulary without the bytes the object needs), the ends are allowed.
func (j *JSONObject) Banned() []bool {
	if j.thought == thoughtIn {
		return nil // (a thought is the model's own)
	}
	allowed := 0
	if j.Done() {
		fill(j.banned, true)
	} else {
		allowed = j.v.ban(j.banned, j)
	}
	if j.thought == thoughtMay {
		for _, id := range j.v.thoughtStarts {
			j.banned[id] = false
			allowed++
		}
	}
	if j.Done() || allowed == 0 {
		j.v.allowEnds(j.banned)
	}
	return j.banned
}

// plainRule is how a pick inside a string, between its characters, takes
// the plain ids (whole characters without a quote, a backslash or a control
// byte: content as they are); the others are asked one by one.
type plainRule struct {
	inString bool // the rule holds; otherwise every id is asked by its bytes
	// budget is the most characters a plain id may have (a maxLength; < 0:
	// any); pat, where not nil, the pattern's automaton each id's characters
	// must keep alive, from state.
	budget int
	pat    *patDFA
	state  int32
}

// plainRule says how the next pick takes plain ids: as content, where the
// next byte is inside a string between characters and the string is not held
// to an enum or a declared key; pats are the generation's pattern automata.
func (h *jsonHold) plainRule(pats map[*pattern]*patDFA) plainRule {
	st := &h.st
	if st.mode != jString || st.next != 0 {
		return plainRule{}
	}
	s := h.sch
	switch {
	case s == nil:
		return plainRule{inString: true, budget: -1}
	case st.key:
		return plainRule{inString: s.keyFree, budget: -1}
	case s.litOn:
		return plainRule{}
	}
	r := plainRule{inString: true, budget: -1}
	if s.cur != nil && s.cur.maxLen >= 0 {
		r.budget = s.cur.maxLen - s.strLen
	}
	if s.patOn && !s.cur.pat.universal(&s.pat) {
		d := pats[s.cur.pat]
		if d == nil {
			d = newPatDFA(s.cur.pat)
			pats[s.cur.pat] = d
		}
		r.pat, r.state = d, d.intern(s.pat)
		if r.state == dfaFull {
			return plainRule{} // (a hostile pattern's: each id asked by its bytes)
		}
		// Where few characters may come next (a date's digit), the ids are
		// decided faster by their first two bytes, most of them unseen.
		open := 0
		for c := rune(0x20); c < 0x7F; c++ {
			if d.step(r.state, c) != dfaDead {
				open++
			}
		}
		if open < 16 {
			return plainRule{}
		}
	}
	return r
}

func (j *JSONObject) plainRule() plainRule { return j.h.plainRule(j.pats) }

// language is what ban asks of a constraint: whether some bytes may come
// next, and how plain ids are taken (plainRule).
type language interface {
	accepts(text []byte) bool
	plainRule() plainRule
}

// ban marks in banned the ids whose text l does not allow next (special ids
// and ends too), and returns how many ids it allows.
func (v *JSONVocab) ban(banned []bool, l language) (allowed int) {
	r := l.plainRule()
	if r.budget >= v.maxChars {
		r.budget = -1 // every plain id fits
	}
	if r.inString && r.budget < math.MaxUint8 { // (chars counts to 255: a longer budget's ids are asked)
		// Inside a string, between characters: plain ids are content, of at
		// most the budget's characters and taken by the pattern; the others
		// are asked.
		fill(banned, false)
		for _, id := range v.neverIDs {
			banned[id] = true
		}
		allowed = len(banned) - len(v.neverIDs)
		for _, id := range v.notPlain {
			if !l.accepts(v.texts[id]) {
				banned[id] = true
				allowed--
			}
		}
		switch {
		case r.pat != nil:
			allowed -= v.banPlain(banned, r)
		case r.budget >= 0:
			for id, n := range v.chars {
				if int(n) > r.budget {
					banned[id] = true
					allowed--
				}
			}
		}
		return allowed
	}
	// Elsewhere by the first two bytes: a byte that may not come first bans
	// its ids unseen, and so does a pair that may not (most ids: a letter, or
	// a space and a letter, where a quote or a digit must come); an id of one
	// or two bytes is decided by them.
	fill(banned, true)
	for c := range 256 {
		if !l.accepts([]byte{byte(c)}) {
			continue
		}
		for d := range 256 {
			h := c<<8 | d
			ids := v.byHead[v.start[h]:v.start[h+1]]
			if len(ids) == 0 {
				continue
			}
			// A pair that may not come bans its group unseen, but for the
			// one-byte ids (decided by c), which are in the group of d 0.
			pairOK := l.accepts([]byte{byte(c), byte(d)})
			if !pairOK && d != 0 {
				continue
			}
			for _, id := range ids {
				text := v.texts[id]
				if len(text) == 1 || pairOK && (len(text) == 2 || l.accepts(text)) {
					banned[id] = false
					allowed++
				}
			}
		}
	}
	return allowed
}

// banPlain bans the plain ids that r's pattern does not take (or that are
// longer than its budget), and returns how many. An id of ASCII characters
// that each leave the pattern's state as it is (a class repeated: [a-z ]*)
// is taken unasked; the others are read a character at a time.
func (v *JSONVocab) banPlain(banned []bool, r plainRule) (n int) {
	var same [2]uint64 // the ASCII characters that leave r.state as it is
	for c := rune(0x20); c < 0x7F; c++ {
		if r.pat.step(r.state, c) == r.state {
			same[c/64] |= 1 << (c % 64)
		}
	}
	for id, chars := range v.chars {
		if chars == 0 {
			continue // not plain: asked already
		}
		m := v.ascii[id]
		ok := r.budget < 0 || int(chars) <= r.budget
		if ok && (m[0] == 0 && m[1] == 0 || m[0]&^same[0] != 0 || m[1]&^same[1] != 0) {
			ok = r.pat.takes(r.state, v.texts[id]) // (not ASCII, or a character that moves the state)
		}
		if !ok {
			banned[id] = true
			n++
		}
	}
	return n
}

// allowEnds lifts the ban on the ids that end a generation.
func (v *JSONVocab) allowEnds(banned []bool) {
	for _, id := range v.ends {
		if id >= 0 && id < len(banned) {
			banned[id] = false
		}
	}
}

// fill sets every element of b to v: a clear, or a copy of what is set
// doubling (memmove's speed: a loop of stores took 0.15 ms over Gemma's
// vocabulary, most of a pick's bans inside a string).
func fill(b []bool, v bool) {
	if !v || len(b) == 0 {
		clear(b)
		return
	}
	b[0] = true
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// Picked moves the constraint past id's text. An id it would not have allowed
// (an end, or a pick made without it) leaves it where it was.
func (j *JSONObject) Picked(id int) {
	if id < 0 || id >= len(j.v.texts) || j.v.never[id] {
		return
	}
	text := j.v.texts[id]
	switch {
	case j.thought == thoughtMay && string(text) == ThoughtStart:
		j.thought = thoughtIn
	case j.thought == thoughtIn:
		if string(text) == ThoughtEnd {
			j.thought = thoughtPast
		}
	default:
		if j.advance(text) {
			j.thought = thoughtPast
		}
	}
}

// jsonHold is the automaton's state between picks, with the schema's where
// one holds the object.
type jsonHold struct {
	st     jsonState
	stack  []byte       // the open containers, '{' or '['
	sch    *schemaState // the schema's reading (schema.go); nil: any object
	frames []schemaFrame
}

// run is one run of the automaton over some bytes, on copies of its state.
type run struct {
	st   jsonState
	view stackView
	held bool // a schema holds the object: sch and fv run too
	sch  schemaState
	fv   frameView
}

// start readies r to run from h.
func (h *jsonHold) start(r *run) {
	r.st, r.view, r.held = h.st, stackView{base: h.stack, depth: len(h.stack)}, h.sch != nil
	if r.held {
		r.sch, r.fv = *h.sch, frameView{base: h.frames, depth: len(h.frames)}
	}
}

// commit moves h to where r ran to.
func (h *jsonHold) commit(r *run) {
	h.st, h.stack = r.st, append(h.stack[:r.view.depth], r.view.local[:r.view.n]...)
	if !r.held {
		h.sch, h.frames = nil, h.frames[:0]
		return
	}
	if h.sch == nil {
		h.sch = new(schemaState)
	}
	*h.sch, h.frames = r.sch, append(h.frames[:r.fv.depth], r.fv.local[:r.fv.n]...)
}

// step feeds r one byte of JSON, and reports whether it may come there.
func (r *run) step(c byte) bool {
	if r.held && !r.sch.observe(&r.st, &r.fv, c) {
		return false
	}
	return r.st.step(&r.view, c)
}

// feed runs r from the constraint's state over text, and reports whether
// every byte of it may come.
func (j *JSONObject) feed(r *run, text []byte) bool {
	j.h.start(r)
	for _, c := range text {
		if !r.step(c) {
			return false
		}
	}
	return true
}

// accepts reports whether text may come next, leaving the state as it is.
func (j *JSONObject) accepts(text []byte) bool {
	var r run
	return j.feed(&r, text)
}

// advance moves the state past text where all of it may come, and reports
// whether it could.
func (j *JSONObject) advance(text []byte) bool {
	var r run
	if !j.feed(&r, text) {
		return false
	}
	j.h.commit(&r)
	return true
}

// JSONPrefix reports whether text is the beginning of a JSON object as the
// constraint reads it (whitespace runs included), and whether the object is
// closed in it: the constraint's automaton on its own, for tests.
func JSONPrefix(text string) (ok, closed bool) { return SchemaPrefix(nil, text) }

type jsonMode uint8

const (
	jTop        jsonMode = iota // before the object: its '{'
	jValue                      // a value (after ':' or an array's ',')
	jArrayFirst                 // after '[': a value or ']'
	jKeyOrClose                 // after '{': a key or '}'
	jKey                        // after an object's ',': a key
	jColon                      // after a key
	jAfterValue                 // inside a container after a value: ',' or its close
	jString                     // inside a string (a key's where key)
	jEscape                     // after a backslash in a string
	jUnicode                    // inside \uXXXX (hex digits read so far)
	jNumber                     // inside a number (num: where)
	jLiteral                    // inside true, false or null (lit: what is left)
	jDone                       // the object is closed
)

// Where in a number (jNumber).
const (
	nMinus     uint8 = iota // after '-': a digit
	nZero                   // a leading 0: '.', 'e' or the end
	nInt                    // integer digits: more, '.', 'e' or the end
	nDot                    // after '.': a digit
	nFrac                   // fraction digits: more, 'e' or the end
	nExp                    // after 'e': a sign or a digit
	nExpSign                // after the exponent's sign: a digit
	nExpDigits              // exponent digits: more or the end
)

// jsonState is the automaton's state but for its stack.
type jsonState struct {
	mode  jsonMode
	key   bool   // the string is an object's key
	num   uint8  // jNumber: where
	lit   string // jLiteral: the literal's bytes still to come
	hex   uint8  // jUnicode: hex digits read
	space uint8  // whitespace bytes in a row
	// next counts the continuation bytes the string's character still wants,
	// the first of them between lo and hi (RFC 3629's table: no overlong
	// form, no surrogate, nothing past U+10FFFF).
	next   uint8
	lo, hi byte
}

// stackView is the stack of open containers as one run sees it.
type stackView = overlay[byte]

// overlay is a stack as one run sees it, the automaton's containers
// (stackView) or the schema's frames (frameView): the constraint's own down to
// depth, then up to 16 the run pushed. A run that looks at (or changes) an
// item below its own takes a copy of it into its own, so that the
// constraint's stack is left as it was until the run is committed (its base
// up to depth, then its own).
type overlay[T any] struct {
	base  []T
	depth int
	local [16]T
	n     int
}

// top is the top item, the run's own (nil: the stack is empty).
func (o *overlay[T]) top() *T {
	if o.n == 0 {
		if o.depth == 0 {
			return nil
		}
		o.depth--
		o.local[0] = o.base[o.depth]
		o.n = 1
	}
	return &o.local[o.n-1]
}

func (o *overlay[T]) push(x T) bool {
	if o.n == len(o.local) {
		return false
	}
	o.local[o.n] = x
	o.n++
	return true
}

func (o *overlay[T]) pop() {
	if o.n > 0 {
		o.n--
	} else if o.depth > 0 {
		o.depth--
	}
}

func (o *overlay[T]) empty() bool { return o.n == 0 && o.depth == 0 }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// step feeds one byte, and reports whether it may come there.
func (st *jsonState) step(s *stackView, c byte) bool {
	switch st.mode {
	case jString:
		if st.next > 0 {
			if c < st.lo || c > st.hi {
				return false
			}
			st.next, st.lo, st.hi = st.next-1, 0x80, 0xBF
			return true
		}
		if c >= 0x80 {
			return st.utf8Lead(c)
		}
		switch {
		case c == '"':
			if st.key {
				st.mode = jColon
				return true
			}
			st.valueDone(s)
		case c == '\\':
			st.mode = jEscape
		case c < 0x20:
			return false
		}
		return true
	case jEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			st.mode = jString
		case 'u':
			st.mode, st.hex = jUnicode, 0
		default:
			return false
		}
		return true
	case jUnicode:
		if !isHex(c) {
			return false
		}
		if st.hex++; st.hex == 4 {
			st.mode = jString
		}
		return true
	case jLiteral:
		if c != st.lit[0] {
			return false
		}
		if st.lit = st.lit[1:]; st.lit == "" {
			st.valueDone(s)
		}
		return true
	case jNumber:
		if st.number(c) {
			return true
		}
		switch st.num {
		case nZero, nInt, nFrac, nExpDigits: // the number ends here: c follows it
			st.valueDone(s)
			return st.step(s, c)
		}
		return false
	case jDone:
		return false
	}
	// Between tokens: whitespace, up to maxJSONSpace in a row (none before
	// the object).
	if isSpace(c) {
		if st.space == maxJSONSpace || st.mode == jTop {
			return false
		}
		st.space++
		return true
	}
	st.space = 0
	switch st.mode {
	case jTop:
		if c != '{' {
			return false
		}
		st.mode = jKeyOrClose
		return s.push('{')
	case jValue, jArrayFirst:
		if c == ']' && st.mode == jArrayFirst {
			s.pop()
			st.valueDone(s)
			return true
		}
		return st.value(s, c)
	case jKeyOrClose, jKey:
		switch {
		case c == '"':
			st.mode, st.key = jString, true
			return true
		case c == '}' && st.mode == jKeyOrClose:
			s.pop()
			st.valueDone(s)
			return true
		}
		return false
	case jColon:
		if c != ':' {
			return false
		}
		st.mode = jValue
		return true
	case jAfterValue:
		var top byte
		if t := s.top(); t != nil {
			top = *t
		}
		switch {
		case c == ',' && top == '{':
			st.mode = jKey
		case c == ',' && top == '[':
			st.mode = jValue
		case c == '}' && top == '{', c == ']' && top == '[':
			s.pop()
			st.valueDone(s)
		default:
			return false
		}
		return true
	}
	return false
}

// utf8Lead starts a multi-byte character in a string with c, and reports
// whether c may begin one.
func (st *jsonState) utf8Lead(c byte) bool {
	st.lo, st.hi = 0x80, 0xBF
	switch {
	case c >= 0xC2 && c <= 0xDF:
		st.next = 1
	case c == 0xE0:
		st.next, st.lo = 2, 0xA0
	case c == 0xED:
		st.next, st.hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		st.next = 2
	case c == 0xF0:
		st.next, st.lo = 3, 0x90
	case c == 0xF4:
		st.next, st.hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		st.next = 3
	default:
		return false
	}
	return true
}

// value starts the value c begins.
func (st *jsonState) value(s *stackView, c byte) bool {
	switch {
	case c == '{':
		st.mode = jKeyOrClose
		return s.push('{')
	case c == '[':
		st.mode = jArrayFirst
		return s.push('[')
	case c == '"':
		st.mode, st.key = jString, false
	case c == '-':
		st.mode, st.num = jNumber, nMinus
	case c == '0':
		st.mode, st.num = jNumber, nZero
	case isDigit(c):
		st.mode, st.num = jNumber, nInt
	case c == 't':
		st.mode, st.lit = jLiteral, "rue"
	case c == 'f':
		st.mode, st.lit = jLiteral, "alse"
	case c == 'n':
		st.mode, st.lit = jLiteral, "ull"
	default:
		return false
	}
	return true
}

// number feeds c to the number, and reports whether it continues it.
func (st *jsonState) number(c byte) bool {
	switch st.num {
	case nMinus:
		switch {
		case c == '0':
			st.num = nZero
		case isDigit(c):
			st.num = nInt
		default:
			return false
		}
	case nZero, nInt:
		switch {
		case isDigit(c) && st.num == nInt:
		case c == '.':
			st.num = nDot
		case c == 'e' || c == 'E':
			st.num = nExp
		default:
			return false
		}
	case nDot:
		if !isDigit(c) {
			return false
		}
		st.num = nFrac
	case nFrac:
		switch {
		case isDigit(c):
		case c == 'e' || c == 'E':
			st.num = nExp
		default:
			return false
		}
	case nExp:
		switch {
		case c == '+' || c == '-':
			st.num = nExpSign
		case isDigit(c):
			st.num = nExpDigits
		default:
			return false
		}
	case nExpSign, nExpDigits:
		if !isDigit(c) {
			return false
		}
		st.num = nExpDigits
	default:
		return false
	}
	return true
}

// valueDone follows a whole value: the object is closed, or its container
// wants a ',' or its close.
func (st *jsonState) valueDone(s *stackView) {
	st.space = 0
	if s.empty() {
		st.mode = jDone
		return
	}
	st.mode = jAfterValue
}

// SchemaPrefix is JSONPrefix held to schema as well (nil: none): whether text
// is the beginning of an instance of it as the constraint reads it, and
// whether the object is closed in it. For tests.
func SchemaPrefix(schema *Schema, text string) (ok, closed bool) {
	j := &JSONObject{h: jsonHold{st: jsonState{mode: jTop}}}
	if schema != nil {
		j.h.sch = &schemaState{schema: schema}
	}
	for i := 0; i < len(text); i++ { // a byte at a time: nesting deeper than one run's stackView holds
		if !j.advance([]byte{text[i]}) {
			return false, false
		}
	}
	return true, j.Done()
}

// hasByteAbove reports whether t holds a byte above b.
func hasByteAbove(t string, b byte) bool {
	for i := 0; i < len(t); i++ {
		if t[i] > b {
			return true
		}
	}
	return false
}
