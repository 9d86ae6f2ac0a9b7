package chat

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// WrittenCall is a tool call as far as an answer's text has written it.
type WrittenCall struct {
	Name string
	// Arguments is the call's arguments as a JSON object: whole where the
	// call is Closed; else as much of that JSON as no later text can change,
	// so that what a stream sends of it stays true (a prefix of the
	// arguments the call will have).
	Arguments string
	// Closed: the call's end was written; End is where it ends in the text
	// read (after its end token).
	Closed bool
	End    int
	// Partial is, where the call is not Closed, its values written whole as
	// a JSON object: Arguments with its open arrays and objects closed and an
	// unfinished string left out with its key — what a partial-JSON reader
	// (Anthropic's clients') makes of the arguments a stream sent.
	Partial string
}

// callEnd ends a call's arguments: the object's brace and the end token.
const callEnd = "}" + ToolCallEnd

// ReadCalls reads a model answer (the text after its thoughts, as Parse
// returns it) as far as it is written; final: the text is whole. content is
// the text before the first call's start, as written (untrimmed; unless final,
// less what may yet be the start of a call). calls are the calls begun,
// in order: a call is begun once its `<|tool_call>call:NAME{` is written, as
// vLLM's Gemma 4 parser finds them (NAME letters, digits, '_', '-', '.'), and
// closed at the first `}<tool_call|>` after it. A call not closed runs to the
// end of the text: nothing after its start is another's.
//
// The arguments are read as vLLM's _parse_gemma4_args reads them — keys bare,
// strings in <|"|>, a bare value true, false, null (also none and nil), an
// int, a float where it has a '.', else the text as a string, an unterminated
// string or bracket running to the end — except that a repeated key's later
// value is dropped (vLLM keeps the last): the first stands, so that what a
// stream sent of it stays true. What ReadCalls gives for a text is a prefix of
// what it gives for any text that goes on from it (FuzzReadCallsPrefix).
func ReadCalls(text string, final bool) (content string, calls []WrittenCall) {
	at := ToolCallAt(text)
	if at < 0 {
		if final {
			return text, nil
		}
		return text[:len(text)-partialSuffix(text, ToolCallStart)], nil
	}
	content = text[:at]
	for at >= 0 {
		head := text[at+len(ToolCallStart):]
		name, n, ok := callHead(head, final)
		if !ok {
			if n < 0 {
				break // the head is not whole yet
			}
			next := ToolCallAt(head)
			if next < 0 {
				break
			}
			at += len(ToolCallStart) + next
			continue
		}
		args := head[n:]
		if e := strings.Index(args, callEnd); e >= 0 {
			r := argsReader{s: args[:e]}
			r.read(true)
			rest := args[e+len(callEnd):]
			calls = append(calls, WrittenCall{Name: name, Arguments: r.out.String(), Closed: true, End: len(text) - len(rest)})
			next := ToolCallAt(rest)
			if next < 0 {
				break
			}
			at = len(text) - len(rest) + next
			continue
		}
		if !final {
			args = args[:len(args)-partialSuffix(args, callEnd)]
		}
		r := argsReader{s: args}
		r.read(false)
		calls = append(calls, WrittenCall{Name: name, Arguments: r.out.String(), Partial: r.partial()})
		break
	}
	return content, calls
}

// ParseToolCalls reads a whole answer (ReadCalls, final) into its content,
// trimmed, and its closed calls, IDs left for the caller to give; a call cut
// off before its end is left out.
func ParseToolCalls(text string) (content string, calls []ToolCall) {
	content, written := ReadCalls(text, true)
	for _, c := range written {
		if c.Closed {
			calls = append(calls, ToolCall{Name: c.Name, Arguments: c.Arguments})
		}
	}
	return strings.TrimSpace(content), calls
}

// ToolCallAt is where text's first tool call begins (-1: none yet).
func ToolCallAt(text string) int { return strings.Index(text, ToolCallStart) }

// callHead reads a call's head after its start token, "call:NAME{": the name
// and where the arguments begin. n < 0 where it cannot yet tell (the text
// ends inside a head that may still be whole; never when final).
func callHead(s string, final bool) (name string, n int, ok bool) {
	const prefix = "call:"
	if !strings.HasPrefix(s, prefix) {
		if !final && strings.HasPrefix(prefix, s) {
			return "", -1, false
		}
		return "", 0, false
	}
	k := len(prefix)
	for k < len(s) && isNameByte(s[k]) {
		k++
	}
	switch {
	case k == len(s) && !final:
		return "", -1, false
	case k == len(prefix) || k == len(s) || s[k] != '{':
		return "", 0, false
	}
	return s[len(prefix):k], k + 1, true
}

// isNameByte reports a byte of a call's name: regexp's \w, '-' or '.'.
func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}

// partialSuffix is the length of text's longest end that is a proper prefix
// of mark: what may yet be mark's start.
func partialSuffix(text, mark string) int {
	for n := min(len(mark)-1, len(text)); n > 0; n-- {
		if strings.HasSuffix(text, mark[:n]) {
			return n
		}
	}
	return 0
}

// argsReader writes a call's arguments as JSON. Unless the text is whole
// (bounded), it writes only what no later text can change: a key with the
// first byte of its value, a bare value once a byte after it ends it, a
// string's text but what may be the start of its end quote or half a
// character.
type argsReader struct {
	s     string
	out   bytes.Buffer
	open  []byte // the closers of what out holds open, innermost last
	mute  int    // > 0: reading a repeated key's value, which is not written
	cut   bool   // the text ended where more may come: nothing after it is read
	depth int    // the objects and arrays open inside the arguments' object
	// lead is where the innermost string value began in out, its key (or
	// comma) with it.
	lead int
}

// partial is what was written of an object not read whole: its values
// written whole, closed (an unfinished string left out with its lead).
func (r *argsReader) partial() string {
	out, open := r.out.Bytes(), r.open
	if open[len(open)-1] == '"' {
		out, open = out[:r.lead], open[:len(open)-1]
	}
	b := bytes.NewBuffer(slices.Clip(out))
	for i := len(open) - 1; i >= 0; i-- {
		b.WriteByte(open[i])
	}
	return b.String()
}

// read writes the arguments' object; bounded: s is all of them.
func (r *argsReader) read(bounded bool) {
	r.write("{")
	r.push('}')
	r.object(0, len(r.s), bounded)
	if bounded {
		r.pop()
	}
}

func (r *argsReader) write(s string) {
	if r.mute == 0 {
		r.out.WriteString(s)
	}
}

func (r *argsReader) push(closer byte) {
	if r.mute == 0 {
		r.open = append(r.open, closer)
	}
}

// pop writes the innermost closer.
func (r *argsReader) pop() {
	if r.mute == 0 {
		r.out.WriteByte(r.open[len(r.open)-1])
		r.open = r.open[:len(r.open)-1]
	}
}

// object reads key:value pairs from s[i:end], which is all of them where
// bounded; the caller opened the object and closes it.
func (r *argsReader) object(i, end int, bounded bool) {
	s := r.s
	seen := map[string]bool{}
	for written := 0; ; {
		for i < end && strings.IndexByte(" ,\n\t", s[i]) >= 0 {
			i++
		}
		ks := i
		for i < end && s[i] != ':' {
			i++
		}
		if i >= end {
			r.cut = !bounded
			return
		}
		key := strings.TrimSpace(s[ks:i])
		if len(key) >= 2*len(Quote) && strings.HasPrefix(key, Quote) && strings.HasSuffix(key, Quote) {
			key = key[len(Quote) : len(key)-len(Quote)]
		}
		i++ // ':'
		for i < end && strings.IndexByte(" \n\t", s[i]) >= 0 {
			i++
		}
		var lead bytes.Buffer
		if written > 0 {
			lead.WriteByte(',')
		}
		writeString(&lead, key)
		lead.WriteByte(':')
		repeated := seen[key]
		if repeated {
			r.mute++
		}
		var ok bool
		i, ok = r.value(i, end, bounded, lead.String(), ",}]")
		if repeated {
			r.mute--
		}
		if r.cut || !ok {
			return
		}
		if !repeated {
			seen[key] = true
			written++
		}
	}
}

// array reads the values in s[i:end], which is all of them where bounded;
// the caller opened the array and closes it.
func (r *argsReader) array(i, end int, bounded bool) {
	s := r.s
	for count := 0; ; count++ {
		for i < end && strings.IndexByte(" ,\n\t", s[i]) >= 0 {
			i++
		}
		if i >= end {
			r.cut = !bounded
			return
		}
		lead := ""
		if count > 0 {
			lead = ","
		}
		var ok bool
		if i, ok = r.value(i, end, bounded, lead, ",]"); r.cut || !ok {
			return
		}
	}
}

// maxArgsDepth is how deep a call's arguments may nest: a value deeper is no
// value (its object or array ends before it). Each level scans ahead for its
// closing bracket, so the depth multiplies the cost of reading, which a
// stream pays again as each piece comes (a model looping on "[" wrote 3 KB of
// them: 2.6 s of reading).
const maxArgsDepth = 32

// value reads the value at s[i:end] (a bare one ends at a byte of ends) and
// writes it after lead; it returns where reading stopped, and false where
// there was no value to read (or r.cut).
func (r *argsReader) value(i, end int, bounded bool, lead, ends string) (int, bool) {
	s := r.s
	rest := s[i:end]
	if !bounded && (rest == "" || len(rest) < len(Quote) && strings.HasPrefix(Quote, rest)) {
		r.cut = true
		return end, false
	}
	switch {
	case rest == "":
		r.write(lead + `""`)
		return i, true
	case strings.HasPrefix(rest, Quote):
		if r.mute == 0 {
			r.lead = r.out.Len()
		}
		r.write(lead + `"`)
		r.push('"')
		body := rest[len(Quote):]
		if k := strings.Index(body, Quote); k >= 0 {
			r.writeText(body[:k])
			r.pop()
			return i + len(Quote) + k + len(Quote), true
		}
		if !bounded {
			r.writeText(body[:len(body)-heldText(body)])
			r.cut = true
			return end, false
		}
		r.writeText(body)
		r.pop()
		return end, true
	case rest[0] == '{' || rest[0] == '[':
		if r.depth == maxArgsDepth {
			return i, false
		}
		r.depth++
		defer func() { r.depth-- }()
		open, closer := rest[0], byte('}')
		if open == '[' {
			closer = ']'
		}
		j, closed := matching(s, i, end, open, closer)
		r.write(lead + string(open))
		r.push(closer)
		if open == '{' {
			r.object(i+1, j, closed || bounded)
		} else {
			r.array(i+1, j, closed || bounded)
		}
		if r.cut {
			return end, false
		}
		if closed || bounded {
			r.pop()
		}
		if closed {
			return j + 1, true
		}
		return end, true
	}
	k := i
	for k < end && strings.IndexByte(ends, s[k]) < 0 {
		k++
	}
	if k == i {
		return i, false
	}
	if k == end && !bounded {
		r.cut = true
		return end, false
	}
	if r.mute == 0 {
		r.out.WriteString(lead)
		writeBare(&r.out, strings.TrimSpace(s[i:k]))
	}
	return k, true
}

// matching finds the bracket that closes the one at s[i] within s[:end],
// passing over <|"|> strings; where none does it returns end, false.
func matching(s string, i, end int, open, closer byte) (int, bool) {
	depth := 1
	for i++; i < end; i++ {
		if strings.HasPrefix(s[i:end], Quote) {
			k := strings.Index(s[i+len(Quote):end], Quote)
			if k < 0 {
				return end, false
			}
			i += len(Quote) + k + len(Quote) - 1
			continue
		}
		switch s[i] {
		case open:
			depth++
		case closer:
			if depth--; depth == 0 {
				return i, true
			}
		}
	}
	return end, false
}

// heldText is how much of an unterminated string's end to hold back: what
// may be the start of its end quote, or the first bytes of a character.
func heldText(s string) int {
	if n := partialSuffix(s, Quote); n > 0 {
		return n
	}
	for n := 1; n < utf8.UTFMax && n <= len(s); n++ {
		if c := s[len(s)-n]; utf8.RuneStart(c) {
			if c >= utf8.RuneSelf && !utf8.FullRuneInString(s[len(s)-n:]) {
				return n
			}
			break
		}
	}
	return 0
}

// writeText writes s as a JSON string's text: what writeString writes
// between the quotes.
func (r *argsReader) writeText(s string) {
	if r.mute > 0 || s == "" {
		return
	}
	n := r.out.Len()
	writeString(&r.out, s)
	b := r.out.Bytes()
	copy(b[n:], b[n+1:])       // the opening quote
	r.out.Truncate(len(b) - 2) // and the closing one
}

// writeBare writes a bare value as vLLM's _parse_gemma4_value reads it.
func writeBare(b *bytes.Buffer, v string) {
	switch lower := strings.ToLower(v); {
	case v == "":
		b.WriteString(`""`)
	case v == "true" || v == "false":
		b.WriteString(v)
	case lower == "null" || lower == "none" || lower == "nil":
		b.WriteString("null")
	case strings.Contains(v, "."):
		if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
			return
		}
		writeString(b, v)
	default:
		if n, ok := new(big.Int).SetString(strings.TrimPrefix(v, "+"), 10); ok {
			b.WriteString(n.String())
			return
		}
		writeString(b, v)
	}
}

// writeString writes s as a JSON string, with <, > and & as they are.
func writeString(b *bytes.Buffer, s string) {
	e := json.NewEncoder(b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s)         // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}
