package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// A tiny scanner for the two big parts of a tokenizer.json (the vocab object
// and the merges array, ~30 MB for Gemma): encoding/json's reflection path
// takes seconds on them, this takes a fraction. The input was already
// validated by encoding/json as part of the whole file.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", s.i, fmt.Sprintf(format, args...))
}

// peek skips whitespace and returns the next byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return s.errorf("want %q", c)
	}
	s.i++
	return nil
}

// strBytes reads a JSON string; the result aliases the input when the
// string has no escapes.
func (s *scanner) strBytes() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.errorf("want a string")
	}
	start := s.i
	s.i++
	escaped := false
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '\\' {
			escaped = true
			s.i += 2
			continue
		}
		if c == '"' {
			s.i++
			if !escaped {
				return s.b[start+1 : s.i-1], nil
			}
			var out string
			if err := json.Unmarshal(s.b[start:s.i], &out); err != nil {
				return nil, s.errorf("string: %v", err)
			}
			return []byte(out), nil
		}
		s.i++
	}
	return nil, s.errorf("unterminated string")
}

// skipValue skips one JSON value of any kind.
func (s *scanner) skipValue() error {
	switch c := s.peek(); c {
	case '"':
		_, err := s.strBytes()
		return err
	case '{', '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		s.i++
		if s.peek() == closing {
			s.i++
			return nil
		}
		for {
			if c == '{' {
				if _, err := s.strBytes(); err != nil {
					return err
				}
				if err := s.expect(':'); err != nil {
					return err
				}
			}
			if err := s.skipValue(); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.i++
			case closing:
				s.i++
				return nil
			default:
				return s.errorf("want ',' or %q", closing)
			}
		}
	case 0:
		return s.errorf("unexpected end of input")
	default: // number, true, false, null
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if s.i == start {
					return s.errorf("unexpected %q", s.b[s.i])
				}
				return nil
			}
			s.i++
		}
		return nil
	}
}

// objectFields splits a JSON object into its fields' raw values.
func objectFields(data []byte) (map[string]json.RawMessage, error) {
	s := &scanner{b: data}
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	if s.peek() == '}' {
		return out, nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return nil, err
		}
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		s.ws()
		start := s.i
		if err := s.skipValue(); err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		out[k] = data[start:s.i]
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			if s.peek() != 0 {
				return nil, s.errorf("data after the object")
			}
			return out, nil
		default:
			return nil, s.errorf("want ',' or '}'")
		}
	}
}

// str reads a JSON string.
func (s *scanner) str() (string, error) {
	b, err := s.strBytes()
	return string(b), err
}

func (s *scanner) integer() (int, error) {
	s.ws()
	start := s.i
	for s.i < len(s.b) && (s.b[s.i] == '-' || (s.b[s.i] >= '0' && s.b[s.i] <= '9')) {
		s.i++
	}
	n, err := strconv.Atoi(string(s.b[start:s.i]))
	if err != nil {
		return 0, s.errorf("want an integer")
	}
	return n, nil
}

// scanVocab parses {"token": id, …}.
func scanVocab(data []byte) (map[string]int, error) {
	s := &scanner{b: data}
	if s.peek() == 'n' {
		return nil, nil
	}
	if err := s.expect('{'); err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	vocab := make(map[string]int, len(data)/16)
	if s.peek() == '}' {
		return vocab, nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return nil, fmt.Errorf("vocab: %w", err)
		}
		if err := s.expect(':'); err != nil {
			return nil, fmt.Errorf("vocab: %w", err)
		}
		v, err := s.integer()
		if err != nil {
			return nil, fmt.Errorf("vocab %q: %w", k, err)
		}
		vocab[k] = v
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			return vocab, nil
		default:
			return nil, fmt.Errorf("vocab: %w", s.errorf("want ',' or '}'"))
		}
	}
}

// scanMerges parses ["a b", …] or [["a", "b"], …], calling fn for each pair
// in order. a and b may alias the input: fn must copy what it keeps.
func scanMerges(data []byte, fn func(a, b []byte)) error {
	s := &scanner{b: data}
	if c := s.peek(); c == 'n' || c == 0 {
		return nil
	}
	if err := s.expect('['); err != nil {
		return fmt.Errorf("merges: %w", err)
	}
	if s.peek() == ']' {
		return nil
	}
	for n := 0; ; n++ {
		var a, b []byte
		var err error
		if s.peek() == '[' {
			s.i++
			a, err = s.strBytes()
			if err == nil {
				err = s.expect(',')
			}
			if err == nil {
				b, err = s.strBytes()
			}
			if err == nil {
				err = s.expect(']')
			}
		} else {
			var line []byte
			line, err = s.strBytes()
			if err == nil {
				sp := bytes.IndexByte(line, ' ')
				if sp < 0 {
					return fmt.Errorf("merge %d %q: want two tokens separated by a space", n, line)
				}
				a, b = line[:sp], line[sp+1:]
			}
		}
		if err != nil {
			return fmt.Errorf("merge %d: %w", n, err)
		}
		fn(a, b)
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			return nil
		default:
			return fmt.Errorf("merges: %w", s.errorf("want ',' or ']'"))
		}
	}
}
