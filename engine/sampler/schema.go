package sampler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
	"sort"
	"strings"
)

// JSON Schema mode: the JSON constraint (json.go) held to a schema as well
// (OpenAI's response_format json_schema, structured outputs). The schema is
// compiled into nodes, and a schemaState runs beside the JSON automaton, read
// a byte at a time from the automaton's own states: where a value begins it
// must be of a kind the schema allows there; an object's keys must be its
// declared properties, each once, and it closes only once the required ones
// are written; an array's values follow its items; an enum's or const's value
// must be one of its literals, byte for byte as the schema writes them; an
// integer has no fraction or exponent. What the constraint allows is always a
// beginning of an instance of the schema, so a closed answer is one.
//
// The keywords read are type (one or a list), properties, required,
// additionalProperties, items, enum, const, anyOf and oneOf (where the
// alternatives are told apart by their value's first byte: a string or null,
// an object or an array, …), nullable, and local $refs (#/$defs/…,
// #/definitions/…, # itself). Annotations and the bounds the constraint does
// not hold a value to (description, format, pattern, minLength, minimum,
// minItems, …) are read and left to the model; any other keyword (allOf, not,
// if, patternProperties, prefixItems, …) is refused by name, since the answer
// could not be held to it. An object with declared properties takes no other
// key (what OpenAI's strict mode asks: additionalProperties false), one with
// none takes any key, its values held to additionalProperties where that is a
// schema.

// Kinds of a JSON value, as a node's bit set.
const (
	kObject uint8 = 1 << iota
	kArray
	kString
	kNumber
	kInteger
	kBool
	kNull
	kAll = kObject | kArray | kString | kNumber | kInteger | kBool | kNull
)

// maxSchemaProps is the most properties an object, and literals an enum,
// may have: each is a bit of a uint64 in the running state.
const maxSchemaProps = 64

// Schema is a compiled JSON Schema for JSON mode.
type Schema struct {
	root *schemaNode
	raw  []byte
}

// Raw is the schema as it was given.
func (s *Schema) Raw() []byte { return s.raw }

// schemaNode is one compiled schema. A nil node allows any value.
type schemaNode struct {
	kinds    uint8
	props    []schemaProp // an object's declared properties, sorted by key
	required uint64       // bit i: props[i] must be written
	free     bool         // an object with no declared properties: any key
	addl     *schemaNode  // a free object's values (nil: any)
	items    *schemaNode  // an array's values (nil: any)
	// lits (enum, const) are what a value of the kinds litKinds must be,
	// byte for byte; values of other kinds (another alternative's) are not
	// held to them.
	lits     []string
	litKinds uint8
}

type schemaProp struct {
	key  string // as written between the key's quotes (JSON-escaped)
	node *schemaNode
}

// ignoredKeywords are read and not held to: annotations, and bounds left to
// the model.
var ignoredKeywords = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "format": true, "pattern": true,
	"minLength": true, "maxLength": true, "minimum": true, "maximum": true, "exclusiveMinimum": true,
	"exclusiveMaximum": true, "multipleOf": true, "minItems": true, "maxItems": true, "uniqueItems": true,
	"minProperties": true, "maxProperties": true, "$schema": true, "$id": true, "$comment": true, "strict": true,
	"readOnly": true, "writeOnly": true, "deprecated": true, "contentEncoding": true, "contentMediaType": true,
	"$defs": true, "definitions": true,
}

// CompileSchema reads a JSON Schema (an object whose values are objects) for
// JSON mode, or says in plain words what in it cannot be held to.
func CompileSchema(raw []byte) (*Schema, error) {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("the schema must be a JSON object: %v", err)
	}
	c := &schemaCompiler{root: root, refs: map[string]*schemaNode{}}
	n, err := c.node(raw, "schema")
	if err != nil {
		return nil, err
	}
	if n != nil && n.kinds&kObject == 0 {
		return nil, fmt.Errorf(`the schema must describe an object ("type": "object"): the answer is one JSON object`)
	}
	return &Schema{root: n, raw: append([]byte(nil), raw...)}, nil
}

type schemaCompiler struct {
	root map[string]json.RawMessage
	refs map[string]*schemaNode
}

// node compiles the schema raw found at path (for errors).
func (c *schemaCompiler) node(raw []byte, path string) (*schemaNode, error) {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "true" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s must be a schema (a JSON object)", path)
	}
	if ref, ok := m["$ref"]; ok {
		return c.ref(ref, path)
	}
	for _, alt := range []string{"anyOf", "oneOf"} {
		if list, ok := m[alt]; ok {
			return c.anyOf(list, path+"."+alt)
		}
	}
	n := &schemaNode{kinds: kAll}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch k {
		case "type":
			kinds, err := typeKinds(v, path+".type")
			if err != nil {
				return nil, err
			}
			n.kinds = kinds
		case "nullable":
			// read below, with the type
		case "properties", "required", "additionalProperties", "items", "enum", "const":
			// read below
		default:
			if !ignoredKeywords[k] {
				return nil, fmt.Errorf("%s: the keyword %q is not supported: an answer cannot be held to it "+
					"(supported: type, properties, required, additionalProperties, items, enum, const, anyOf, $ref)", path, k)
			}
		}
	}
	if string(bytes.TrimSpace(m["nullable"])) == "true" {
		n.kinds |= kNull
	}
	if n.kinds&kNumber != 0 {
		n.kinds |= kInteger // an integer is a number
	}
	if props, ok := m["properties"]; ok {
		if err := c.properties(n, props, m["required"], path); err != nil {
			return nil, err
		}
		if _, typed := m["type"]; !typed {
			n.kinds = kObject
		}
		// No property declared and none forbidden: any key, as JSON Schema has it.
		n.free = len(n.props) == 0 && string(bytes.TrimSpace(m["additionalProperties"])) != "false"
	} else {
		n.free = true
		if _, ok := m["required"]; ok {
			return nil, fmt.Errorf("%s.required names properties the schema does not declare", path)
		}
	}
	if ap, ok := m["additionalProperties"]; ok && n.free {
		switch s := string(bytes.TrimSpace(ap)); s {
		case "true":
		case "false":
			n.free = false // no key at all: {}
		default:
			addl, err := c.node(ap, path+".additionalProperties")
			if err != nil {
				return nil, err
			}
			n.addl = addl
		}
	}
	if items, ok := m["items"]; ok {
		it, err := c.node(items, path+".items")
		if err != nil {
			return nil, err
		}
		n.items = it
	}
	for _, k := range []string{"enum", "const"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		var lits []json.RawMessage
		if k == "const" {
			lits = []json.RawMessage{v}
		} else if err := json.Unmarshal(v, &lits); err != nil || len(lits) == 0 {
			return nil, fmt.Errorf("%s.enum must be a list of values", path)
		}
		if err := n.literals(lits, path+"."+k); err != nil {
			return nil, err
		}
	}
	if n.kinds == 0 {
		return nil, fmt.Errorf("%s allows no value (its type and enum share none)", path)
	}
	return n, nil
}

// typeKinds reads "type": a name or a list of names.
func typeKinds(v json.RawMessage, path string) (uint8, error) {
	var names []string
	var one string
	if json.Unmarshal(v, &one) == nil {
		names = []string{one}
	} else if json.Unmarshal(v, &names) != nil {
		return 0, fmt.Errorf("%s must be a type name or a list of them", path)
	}
	var kinds uint8
	for _, t := range names {
		k, ok := map[string]uint8{"object": kObject, "array": kArray, "string": kString, "number": kNumber | kInteger,
			"integer": kInteger, "boolean": kBool, "null": kNull}[t]
		if !ok {
			return 0, fmt.Errorf("%s: unknown type %q", path, t)
		}
		kinds |= k
	}
	return kinds, nil
}

// properties reads an object's properties and required.
func (c *schemaCompiler) properties(n *schemaNode, props, required json.RawMessage, path string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(props, &m); err != nil {
		return fmt.Errorf("%s.properties must be an object of schemas", path)
	}
	if len(m) > maxSchemaProps {
		return fmt.Errorf("%s.properties declares %d properties; at most %d are supported", path, len(m), maxSchemaProps)
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		node, err := c.node(m[k], path+".properties."+k)
		if err != nil {
			return err
		}
		n.props = append(n.props, schemaProp{key: jsonKey(k), node: node})
	}
	if len(bytes.TrimSpace(required)) > 0 {
		var req []string
		if err := json.Unmarshal(required, &req); err != nil {
			return fmt.Errorf("%s.required must be a list of property names", path)
		}
		for _, r := range req {
			i := sort.SearchStrings(names, r)
			if i == len(names) || names[i] != r {
				return fmt.Errorf("%s.required names %q, which is not among its properties", path, r)
			}
			n.required |= 1 << i
		}
	}
	return nil
}

// jsonKey is key as a JSON string writes it between its quotes.
func jsonKey(key string) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(key) // a string always encodes
	return strings.TrimSuffix(strings.TrimSpace(b.String()), `"`)[1:]
}

// literals sets n's literals (enum, const): each value's JSON text, compact;
// n's kinds are narrowed to theirs.
func (n *schemaNode) literals(values []json.RawMessage, path string) error {
	if len(values) > maxSchemaProps {
		return fmt.Errorf("%s lists %d values; at most %d are supported", path, len(values), maxSchemaProps)
	}
	var kinds uint8
	n.lits = n.lits[:0]
	for _, v := range values {
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		lit := b.String()
		k := kindOf(lit[0])
		if k&(kObject|kArray) != 0 {
			return fmt.Errorf("%s: an object or a list as a value is not supported", path)
		}
		if k == kNumber|kInteger && strings.ContainsAny(lit, ".eE") {
			k = kNumber
		}
		if k&n.kinds == 0 {
			continue // a value the type does not allow
		}
		kinds |= k
		n.lits = append(n.lits, lit)
	}
	n.kinds &= kinds
	n.litKinds = n.kinds
	return nil
}

// kindOf is the kinds a value beginning with c may be.
func kindOf(c byte) uint8 {
	switch {
	case c == '{':
		return kObject
	case c == '[':
		return kArray
	case c == '"':
		return kString
	case c == '-' || isDigit(c):
		return kNumber | kInteger
	case c == 't' || c == 'f':
		return kBool
	case c == 'n':
		return kNull
	}
	return 0
}

// ref resolves a local $ref, compiling each target once (a recursive schema
// refers to its own node).
func (c *schemaCompiler) ref(raw json.RawMessage, path string) (*schemaNode, error) {
	var ref string
	if err := json.Unmarshal(raw, &ref); err != nil {
		return nil, fmt.Errorf("%s.$ref must be a string", path)
	}
	if n, ok := c.refs[ref]; ok {
		return n, nil
	}
	var target json.RawMessage
	switch {
	case ref == "#":
		target, _ = json.Marshal(c.root)
	case strings.HasPrefix(ref, "#/$defs/"), strings.HasPrefix(ref, "#/definitions/"):
		section, name, _ := strings.Cut(ref[2:], "/")
		var defs map[string]json.RawMessage
		if err := json.Unmarshal(c.root[section], &defs); err != nil || defs[name] == nil {
			return nil, fmt.Errorf("%s.$ref %q names no definition in the schema", path, ref)
		}
		target = defs[name]
	default:
		return nil, fmt.Errorf("%s.$ref %q: only references inside the schema (#/$defs/…) are supported", path, ref)
	}
	n := &schemaNode{}
	c.refs[ref] = n // before its body: a reference to itself finds it
	body, err := c.node(target, ref)
	if err != nil {
		return nil, err
	}
	if body == nil {
		body = &schemaNode{kinds: kAll, free: true}
	}
	if body.kinds == 0 { // (the placeholder itself: a reference that is only itself)
		return nil, fmt.Errorf("%s.$ref %q refers only to itself: it describes no value", path, ref)
	}
	*n = *body
	return n, nil
}

// anyOf compiles alternatives told apart by their value's first byte into one
// node: their kinds may not overlap, but for alternatives that are all
// literals (enums), whose literals are joined.
func (c *schemaCompiler) anyOf(raw json.RawMessage, path string) (*schemaNode, error) {
	var alts []json.RawMessage
	if err := json.Unmarshal(raw, &alts); err != nil || len(alts) == 0 {
		return nil, fmt.Errorf("%s must be a list of schemas", path)
	}
	out := &schemaNode{free: true}
	for i, a := range alts {
		n, err := c.node(a, fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			return nil, err
		}
		if n == nil {
			return nil, nil // any value is one of them
		}
		overlap := out.kinds & n.kinds &^ (kNumber | kInteger)
		if out.kinds&(kNumber|kInteger) != 0 && n.kinds&(kNumber|kInteger) != 0 {
			overlap |= kNumber
		}
		bothLits := out.litKinds&overlap == overlap && n.litKinds&overlap == overlap // enums of one kind: their values joined
		if overlap != 0 && !bothLits {
			return nil, fmt.Errorf("%s: two alternatives allow values of one kind (%s), and an answer cannot be held to "+
				"either as it is written; alternatives must differ in kind (e.g. a string or null)", path, kindNames(overlap))
		}
		out.kinds |= n.kinds
		if n.kinds&kObject != 0 {
			out.props, out.required, out.free, out.addl = n.props, n.required, n.free, n.addl
		}
		if n.kinds&kArray != 0 {
			out.items = n.items
		}
		out.lits, out.litKinds = append(out.lits, n.lits...), out.litKinds|n.litKinds
		if len(out.lits) > maxSchemaProps {
			return nil, fmt.Errorf("%s lists more than %d values in all", path, maxSchemaProps)
		}
	}
	return out, nil
}

func kindNames(k uint8) string {
	var names []string
	for i, name := range []string{"object", "array", "string", "number", "integer", "boolean", "null"} {
		if k&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// schemaFrame is an open container as the schema reads it.
type schemaFrame struct {
	n    *schemaNode
	arr  bool
	used uint64      // an object's properties written
	val  *schemaNode // an object's value being written: its property's node
}

// frameView is the schema's stack as one run sees it, as stackView is the
// automaton's: the constraint's frames down to depth, then the run's own. A
// run that changes a frame below it takes a copy into its own.
type frameView struct {
	base  []schemaFrame
	depth int
	local [16]schemaFrame
	n     int
}

func (f *frameView) top() *schemaFrame {
	if f.n == 0 {
		if f.depth == 0 {
			return nil
		}
		f.depth-- // the run's own copy of the frame below it
		f.local[0] = f.base[f.depth]
		f.n = 1
	}
	return &f.local[f.n-1]
}

func (f *frameView) push(fr schemaFrame) bool {
	if f.n == len(f.local) {
		return false
	}
	f.local[f.n] = fr
	f.n++
	return true
}

func (f *frameView) pop() {
	if f.n > 0 {
		f.n--
	} else if f.depth > 0 {
		f.depth--
	}
}

// schemaState is where the schema's reading is between bytes.
type schemaState struct {
	schema *Schema
	// A key being read: its object's node, the properties it may still be
	// (cand), how many of its bytes are read (pos); free: any key.
	keyNode *schemaNode
	keyCand uint64
	keyPos  int
	keyFree bool
	// A scalar being read: its node, its literals still matching (lits on),
	// how many of its bytes are read.
	cur     *schemaNode
	litCand uint64
	litPos  int
	litOn   bool
}

// constrainsString reports whether the string being read (a key where key)
// is held byte by byte: a declared property's key, or an enum's string.
func (s *schemaState) constrainsString(key bool) bool {
	if key {
		return !s.keyFree
	}
	return s.litOn
}

// observe reads c, which the automaton reads in state st (before it), and
// reports whether the schema allows it there.
func (s *schemaState) observe(st *jsonState, f *frameView, c byte) bool {
	switch st.mode {
	case jString, jEscape, jUnicode:
		closing := st.mode == jString && st.next == 0 && c == '"'
		if st.key {
			if closing {
				return s.keyDone(f)
			}
			return s.keyByte(c)
		}
		if !s.litByte(c) {
			return false
		}
		if closing {
			return s.scalarDone()
		}
		return true
	case jLiteral:
		if !s.litByte(c) {
			return false
		}
		if len(st.lit) == 1 {
			return s.scalarDone()
		}
		return true
	case jNumber:
		probe := *st
		if probe.number(c) {
			if (c == '.' || c == 'e' || c == 'E') && s.cur != nil && s.cur.kinds&kNumber == 0 {
				return false // an integer
			}
			return s.litByte(c)
		}
		if !s.scalarDone() {
			return false
		}
		after := jsonState{mode: jAfterValue} // the number ended: c follows it
		if f.n == 0 && f.depth == 0 {
			after.mode = jDone
		}
		return s.observe(&after, f, c)
	}
	if isSpace(c) {
		return true
	}
	switch st.mode {
	case jTop:
		return c != '{' || s.begin(s.schema.root, f, c)
	case jValue, jArrayFirst:
		if c == ']' && st.mode == jArrayFirst {
			f.pop()
			return true
		}
		return s.begin(s.next(f), f, c)
	case jKeyOrClose, jKey:
		if c == '"' {
			return s.keyStart(f)
		}
		if c == '}' && st.mode == jKeyOrClose {
			return s.close(f)
		}
	case jAfterValue:
		switch c {
		case '}':
			return s.close(f)
		case ']':
			f.pop()
		case ',':
			// A ',' in an object wants a key that may still come: none where
			// every declared property is written.
			if fr := f.top(); fr != nil && !fr.arr && fr.n != nil && !fr.n.free {
				return fr.used != 1<<len(fr.n.props)-1 && !(len(fr.n.props) == maxSchemaProps && fr.used == ^uint64(0))
			}
		}
	}
	return true
}

// next is the node of the value that comes next in the top container.
func (s *schemaState) next(f *frameView) *schemaNode {
	fr := f.top()
	switch {
	case fr == nil:
		return s.schema.root
	case fr.n == nil:
		return nil
	case fr.arr:
		return fr.n.items
	}
	return fr.val
}

// begin starts a value of node n with its first byte c.
func (s *schemaState) begin(n *schemaNode, f *frameView, c byte) bool {
	k := kindOf(c)
	if n != nil && n.kinds&k == 0 {
		return false
	}
	switch k {
	case kObject:
		return f.push(schemaFrame{n: n})
	case kArray:
		return f.push(schemaFrame{n: n, arr: true})
	}
	s.cur, s.litOn, s.litPos, s.litCand = n, false, 0, 0
	if n != nil && n.litKinds&k != 0 {
		s.litOn, s.litCand = true, 1<<len(n.lits)-1
		if len(n.lits) == maxSchemaProps {
			s.litCand = ^uint64(0)
		}
	}
	return s.litByte(c)
}

// litByte reads a scalar's byte against its literals.
func (s *schemaState) litByte(c byte) bool {
	if !s.litOn {
		return true
	}
	cand := s.litCand
	for m := cand; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		if lit := s.cur.lits[i]; len(lit) <= s.litPos || lit[s.litPos] != c {
			cand &^= 1 << i
		}
	}
	s.litCand, s.litPos = cand, s.litPos+1
	return cand != 0
}

// scalarDone ends a scalar: a literal's must be whole.
func (s *schemaState) scalarDone() bool {
	if s.litOn {
		whole := false
		for m := s.litCand; m != 0; m &= m - 1 {
			whole = whole || len(s.cur.lits[bits.TrailingZeros64(m)]) == s.litPos
		}
		if !whole {
			return false
		}
	}
	s.cur, s.litOn = nil, false
	return true
}

// keyStart begins a key of the top object.
func (s *schemaState) keyStart(f *frameView) bool {
	fr := f.top()
	s.keyPos, s.keyFree = 0, fr == nil || fr.n == nil || fr.n.free
	if s.keyFree {
		return true
	}
	s.keyNode, s.keyCand = fr.n, 0
	for i := range fr.n.props {
		if fr.used&(1<<i) == 0 {
			s.keyCand |= 1 << i
		}
	}
	return s.keyCand != 0
}

func (s *schemaState) keyByte(c byte) bool {
	if s.keyFree {
		return true
	}
	cand := s.keyCand
	for m := cand; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		if key := s.keyNode.props[i].key; len(key) <= s.keyPos || key[s.keyPos] != c {
			cand &^= 1 << i
		}
	}
	s.keyCand, s.keyPos = cand, s.keyPos+1
	return cand != 0
}

// keyDone ends the key: a whole property's, whose node its value takes.
func (s *schemaState) keyDone(f *frameView) bool {
	fr := f.top()
	if s.keyFree {
		if fr != nil {
			fr.val = nil
			if fr.n != nil {
				fr.val = fr.n.addl
			}
		}
		return true
	}
	for m := s.keyCand; m != 0; m &= m - 1 {
		if i := bits.TrailingZeros64(m); len(s.keyNode.props[i].key) == s.keyPos {
			fr.used |= 1 << i
			fr.val = s.keyNode.props[i].node
			return true
		}
	}
	return false // the key so far is only the beginning of a property's
}

// close ends the top object: its required properties must be written.
func (s *schemaState) close(f *frameView) bool {
	fr := f.top()
	if fr != nil && fr.n != nil && !fr.n.free && fr.n.required&^fr.used != 0 {
		return false
	}
	f.pop()
	return true
}

// keys reports whether every property the schema declares has a key (as
// written between its quotes) whose bytes all satisfy ok, and the first that
// does not.
func (s *Schema) keys(ok func(byte) bool) (string, bool) {
	seen := map[*schemaNode]bool{}
	var walk func(n *schemaNode) (string, bool)
	walk = func(n *schemaNode) (string, bool) {
		if n == nil || seen[n] {
			return "", true
		}
		seen[n] = true
		for _, p := range n.props {
			for i := 0; i < len(p.key); i++ {
				if !ok(p.key[i]) {
					return p.key, false
				}
			}
			if k, good := walk(p.node); !good {
				return k, false
			}
		}
		for _, m := range []*schemaNode{n.addl, n.items} {
			if k, good := walk(m); !good {
				return k, false
			}
		}
		return "", true
	}
	return walk(s.root)
}
