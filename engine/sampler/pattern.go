package sampler

import (
	"fmt"
	"math/bits"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// A string's pattern (JSON Schema's pattern, and the formats it names, as
// regular expressions): Go's regexp/syntax parses and compiles it, and the
// schema's reading runs the compiled program as a set of states, a character
// at a time, while the string is written — each character must leave a state
// from which the pattern can still match, and the string closes only where it
// matches. JSON Schema's pattern matches anywhere in the string (as ECMA 262's
// search does), so the program is compiled for .*(pattern).* over the whole
// string; ^ and $ anchor it. Word boundaries (\b, \B) are refused: the state
// would need the character before each one. A program is at most maxPatternInsts
// instructions, so that a state set is a fixed array a run copies.

// maxPatternInsts is the most instructions a pattern's program may have.
const maxPatternInsts = 256

// patSet is a set of a program's instruction indexes.
type patSet [maxPatternInsts / 64]uint64

func (s *patSet) add(pc int)      { s[pc/64] |= 1 << (pc % 64) }
func (s *patSet) has(pc int) bool { return s[pc/64]&(1<<(pc%64)) != 0 }
func (s *patSet) each(f func(pc int)) {
	for w, x := range s {
		for ; x != 0; x &= x - 1 {
			f(w*64 + bits.TrailingZeros64(x))
		}
	}
}

// pattern is a compiled pattern.
type pattern struct {
	src  string
	prog *syntax.Prog
	// live[0]: the program can reach Match from the instruction at the
	// string's beginning, live[1]: after it (where ^ no longer holds);
	// anyLoop: the instruction takes any character and comes back to itself
	// (with it in a set, any text keeps the set alive).
	live    [2][]bool
	anyLoop []bool
	start   patSet // the states at the string's beginning
}

// formats are the string formats held as patterns (JSON Schema's, as OpenAI's
// structured outputs read them); others are left to the model.
var formats = map[string]string{
	"date":      `^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$`,
	"time":      `^([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$`,
	"date-time": `^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$`,
	"uuid":      `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`,
	"email":     `^[^@\s"<>()\[\]\\,;:]+@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$`,
	"ipv4":      `^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$`,
	// A hostname's labels (RFC 1123; their 63 characters left to the model).
	"hostname": `^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$`,
	// A URI: a scheme, ':', then RFC 3986's characters, a '%' with two hex
	// digits (no space, quote or other character a URI must escape).
	"uri": `^[A-Za-z][A-Za-z0-9+.\-]*:([A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$`,
}

// compilePattern compiles src, or says why it cannot be held to.
func compilePattern(src string) (*pattern, error) {
	re, err := syntax.Parse(`(?s:.*)(?:`+src+`)(?s:.*)`, syntax.Perl)
	if err != nil {
		// (The error names the wrapped expression: say what is wrong with it.)
		if se, ok := err.(*syntax.Error); ok {
			return nil, fmt.Errorf("%s (%q)", se.Code, se.Expr)
		}
		return nil, err
	}
	var bad bool
	var walk func(*syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		bad = bad || r.Op == syntax.OpWordBoundary || r.Op == syntax.OpNoWordBoundary
		for _, sub := range r.Sub {
			walk(sub)
		}
	}
	if walk(re); bad {
		return nil, fmt.Errorf(`word boundaries (\b, \B) cannot be held to as the string is written`)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, err
	}
	if len(prog.Inst) > maxPatternInsts {
		return nil, fmt.Errorf("it compiles to %d instructions; at most %d can be held to", len(prog.Inst), maxPatternInsts)
	}
	p := &pattern{src: src, prog: prog, live: [2][]bool{make([]bool, len(prog.Inst)), make([]bool, len(prog.Inst))},
		anyLoop: make([]bool, len(prog.Inst))}
	// live: Match reached along the program's edges (a fixed point; every
	// character class can be written, so an edge is a path), ^ passed only
	// at the beginning.
	for changed := true; changed; {
		changed = false
		for v, live := range p.live {
			for pc, in := range prog.Inst {
				if live[pc] {
					continue
				}
				l := false
				switch in.Op {
				case syntax.InstMatch:
					l = true
				case syntax.InstAlt, syntax.InstAltMatch:
					l = live[in.Out] || live[in.Arg]
				case syntax.InstNop, syntax.InstCapture:
					l = live[in.Out]
				case syntax.InstEmptyWidth:
					l = live[in.Out] && (v == 0 || syntax.EmptyOp(in.Arg)&(syntax.EmptyBeginText|syntax.EmptyBeginLine) == 0)
				case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
					l = p.live[1][in.Out]
				}
				if l {
					live[pc], changed = true, true
				}
			}
		}
	}
	for pc, in := range prog.Inst {
		if anyRune(in) {
			var back patSet
			p.closure(&back, int(in.Out), false, true)
			p.anyLoop[pc] = back.has(pc)
		}
	}
	p.closure(&p.start, prog.Start, true, false)
	return p, nil
}

// anyRune reports whether in takes any character.
func anyRune(in syntax.Inst) bool {
	switch in.Op {
	case syntax.InstRuneAny:
		return true
	case syntax.InstRune:
		return len(in.Rune) == 2 && in.Rune[0] == 0 && in.Rune[1] == unicode.MaxRune && syntax.Flags(in.Arg)&syntax.FoldCase == 0
	}
	return false
}

// closure adds to set the states reached from pc taking no character: at the
// string's beginning where begin, its end where end. An instruction that
// needs the end is kept in the set where that is not known (end false).
func (p *pattern) closure(set *patSet, pc int, begin, end bool) {
	v := 1
	if begin {
		v = 0
	}
	if !p.live[v][pc] || set.has(pc) {
		return
	}
	in := &p.prog.Inst[pc]
	switch in.Op {
	case syntax.InstAlt, syntax.InstAltMatch:
		set.add(pc) // (marked, so that a loop ends; never stepped)
		p.closure(set, int(in.Out), begin, end)
		p.closure(set, int(in.Arg), begin, end)
	case syntax.InstNop, syntax.InstCapture:
		set.add(pc)
		p.closure(set, int(in.Out), begin, end)
	case syntax.InstEmptyWidth:
		op := syntax.EmptyOp(in.Arg)
		if op&(syntax.EmptyBeginText|syntax.EmptyBeginLine) != 0 && !begin {
			return
		}
		if op&(syntax.EmptyEndText|syntax.EmptyEndLine) != 0 && !end {
			set.add(pc) // waits for the end
			return
		}
		set.add(pc)
		p.closure(set, int(in.Out), begin, end)
	default: // a character's, or Match
		set.add(pc)
	}
}

// step is the set after the character r.
func (p *pattern) step(set *patSet, r rune) patSet {
	var next patSet
	set.each(func(pc int) {
		in := &p.prog.Inst[pc]
		switch in.Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			if in.MatchRune(r) {
				p.closure(&next, int(in.Out), false, false)
			}
		}
	})
	return next
}

// canTake reports whether some state in set takes some character from lo to
// hi (a character of which only the first bytes are read: a case-folded class
// is taken to, the rest read exactly).
func (p *pattern) canTake(set *patSet, lo, hi rune) bool {
	ok := false
	set.each(func(pc int) {
		in := &p.prog.Inst[pc]
		switch in.Op {
		case syntax.InstRuneAny:
			ok = true
		case syntax.InstRuneAnyNotNL:
			ok = ok || lo != '\n' || hi != '\n'
		case syntax.InstRune1:
			ok = ok || in.Rune[0] >= lo && in.Rune[0] <= hi
		case syntax.InstRune:
			if syntax.Flags(in.Arg)&syntax.FoldCase != 0 {
				ok = true
				return
			}
			for i := 0; i+1 < len(in.Rune); i += 2 {
				ok = ok || in.Rune[i] <= hi && in.Rune[i+1] >= lo
			}
			if len(in.Rune) == 1 { // (a single rune, case-folded elsewhere)
				ok = ok || in.Rune[0] >= lo && in.Rune[0] <= hi
			}
		}
	})
	return ok
}

// alive reports whether the pattern can still match from set: some state in
// it takes a character, or matches, or waits for the end.
func (p *pattern) alive(set *patSet) bool {
	ok := false
	set.each(func(pc int) {
		switch p.prog.Inst[pc].Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL, syntax.InstMatch, syntax.InstEmptyWidth:
			ok = true
		}
	})
	return ok
}

// matches reports whether the string may end with set: Match is reached with
// the end known (begin: the string is empty).
func (p *pattern) matches(set *patSet, begin bool) bool {
	var end patSet
	set.each(func(pc int) {
		switch p.prog.Inst[pc].Op {
		case syntax.InstMatch:
			end.add(pc)
		case syntax.InstEmptyWidth:
			p.closure(&end, int(p.prog.Inst[pc].Out), begin, true)
		}
	})
	m := false
	end.each(func(pc int) { m = m || p.prog.Inst[pc].Op == syntax.InstMatch })
	return m
}

// universal reports whether any text keeps set alive (a state that takes any
// character and comes back to itself is in it), so that a string's plain
// text need not be asked.
func (p *pattern) universal(set *patSet) bool {
	u := false
	set.each(func(pc int) { u = u || p.anyLoop[pc] })
	return u
}

// clip is s cut to n bytes, "…" marking the cut, for errors.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// patDFA is a pattern's automaton as sets met so far: each set a state, its
// steps found as they are first asked and kept (for the plain ids a pick
// inside a string asks about: every one of them, each pick). It is one
// generation's, as its sets are. A hostile pattern's sets can be many: past
// maxDFAStates no set is kept as a state (the steps from it are then found
// each time), nor past maxDFAWide a step on a character that is not ASCII.
type patDFA struct {
	p     *pattern
	sets  []patSet
	index map[patSet]int32
	// ascii[s][r] is the state after r from s, plus 1 (0: not asked yet; 0
	// after the -1: none, the pattern can no longer match); wide the same
	// for the other characters.
	ascii [][128]int32
	wide  map[[2]int32]int32
}

const (
	maxDFAStates = 2048    // a state's ASCII steps take 512 bytes
	maxDFAWide   = 1 << 16 // steps on characters that are not ASCII
	dfaDead      = -1      // the pattern can no longer match
	dfaFull      = -2      // a set no longer kept as a state
)

func newPatDFA(p *pattern) *patDFA {
	return &patDFA{p: p, index: map[patSet]int32{}, wide: map[[2]int32]int32{}}
}

// intern is set's state (dfaFull where no more are kept).
func (d *patDFA) intern(set patSet) int32 {
	if s, ok := d.index[set]; ok {
		return s
	}
	if len(d.sets) == maxDFAStates {
		return dfaFull
	}
	s := int32(len(d.sets))
	d.sets, d.ascii = append(d.sets, set), append(d.ascii, [128]int32{})
	d.index[set] = s
	return s
}

// step is the state after r from s: dfaDead where the pattern can no longer
// match, dfaFull where that set is not kept as a state.
func (d *patDFA) step(s int32, r rune) int32 {
	if r < 128 {
		if n := d.ascii[s][r]; n != 0 {
			return n - 1
		}
	} else if n := d.wide[[2]int32{s, r}]; n != 0 {
		return n - 1
	}
	next := d.p.step(&d.sets[s], r)
	n := int32(dfaDead)
	if d.p.alive(&next) {
		n = d.intern(next)
	}
	switch {
	case n == dfaFull:
	case r < 128:
		d.ascii[s][r] = n + 1
	case len(d.wide) < maxDFAWide:
		d.wide[[2]int32{s, r}] = n + 1
	}
	return n
}

// takes reports whether the characters of text (plain: whole UTF-8
// characters) keep the pattern alive from s.
func (d *patDFA) takes(s int32, text []byte) bool {
	for i, r := range string(text) {
		switch n := d.step(s, r); n {
		case dfaDead:
			return false
		case dfaFull: // on with the sets themselves
			set := d.p.step(&d.sets[s], r)
			for _, r := range string(text[i+utf8.RuneLen(r):]) {
				if set = d.p.step(&set, r); !d.p.alive(&set) {
					return false
				}
			}
			return d.p.alive(&set)
		default:
			s = n
		}
	}
	return true
}
