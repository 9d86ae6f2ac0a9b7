package sampler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
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
// additionalProperties, items, prefixItems (a tuple: its first items' schemas,
// one each, as is draft 7's items as a list with additionalItems; items
// false: no more), enum, const, allOf of one schema (Pydantic's wrapping of a
// $ref), anyOf and oneOf (where the
// alternatives are told apart by their value's first byte: a string or null,
// an object or an array, …; or are objects with declared properties, read
// together — each key written leaves the alternatives that declare it, and a
// property they declare differently must be a const or enum in each, a
// discriminator, whose value leaves its own; a key past an alternative's
// maxProperties leaves it too, and the object closes once one of them has its
// required keys and minProperties), nullable, uniqueItems (where the
// items are an enum's literals), local $refs (#/$defs/…, #/definitions/…, #
// itself), and the bounds: minLength and maxLength (a string's characters,
// each escape one), minItems and maxItems, minProperties and maxProperties,
// and minimum, maximum, exclusiveMinimum and exclusiveMaximum (a number is
// held to digits that can still end within them, and written without an
// exponent), multipleOf where it is a whole number (the value written as an
// integer) or a power of ten below 1 (its fraction digits past it zeros), a
// string's pattern, and the formats date, time, date-time, uuid, email, ipv4,
// hostname and uri as patterns (pattern.go; a date's day is held to 01–31,
// whatever its month; a hostname's labels' length is not held). Annotations and
// what the constraint does not hold a value to (description, other formats,
// another multipleOf, …) are read and left to the model; any other keyword (not,
// if, patternProperties, allOf of several schemas, …) is refused by name, since
// the answer could not be held to it. An object with declared properties takes
// no other key (what OpenAI's strict mode asks:
// additionalProperties false), one with none takes any key, its values held to
// additionalProperties where that is a schema.
//
// The subset is about the one OpenAI's structured outputs document (their
// strict mode adds that every property be required). Each constraint is held
// on its own: a schema whose constraints no value meets together (a pattern
// and a maxLength no string meets both) is not refused, and its answer is cut
// at max_tokens.

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
	kinds uint8
	// lits (enum, const) are what a value of the kinds litKinds must be,
	// byte for byte; values of other kinds (another alternative's) are not
	// held to them. litAlts[i]: which of a union's alternatives lits[i]
	// belongs to (a discriminator's merged node).
	lits     []string
	litKinds uint8
	litAlts  []uint8
	// What values of each kind are held to, a kind's rules together (an
	// anyOf takes each kind's from the alternative of that kind).
	objectRules
	arrayRules
	stringRules
	numberRules
}

// objectRules are what an object is held to.
type objectRules struct {
	props    []schemaProp // its declared properties, sorted by key
	required uint64       // bit i: props[i] must be written
	free     bool         // no declared properties: any key
	addl     *schemaNode  // a free object's values (nil: any)
	// minProps and maxProps bound its keys (-1: none); union: it is one of
	// several alternatives, read together.
	minProps, maxProps int
	union              *objUnion
}

// arrayRules are what an array is held to.
type arrayRules struct {
	// prefix holds its first values, one each (a tuple: prefixItems, or
	// draft 7's items as a list), items the rest (nil: any).
	prefix             []*schemaNode
	items              *schemaNode
	minItems, maxItems int // -1: none
	// unique: its items are each a different one of its items' literals
	// (uniqueItems, held where the items are literals: an enum's; other
	// items are left to the model).
	unique bool
}

// stringRules are what a string value is held to.
type stringRules struct {
	minLen, maxLen int      // its characters (-1: none)
	pat            *pattern // its pattern or format (nil: none)
}

// numberRules are what a number is held to.
type numberRules struct {
	lo, hi *numBound // nil: none
	// step and places hold it to multipleOf where that is a whole number
	// (step; 0: none) or a power of ten below 1 (places: the most fraction
	// digits that are not 0; -1: none); another multipleOf is left to the
	// model.
	step   uint64
	places int
}

// numBound is a number's bound: v, and whether v itself is out (exclusive).
type numBound struct {
	v    float64
	open bool
}

// newNode is a node of kinds with no bounds.
func newNode(kinds uint8) *schemaNode {
	return &schemaNode{kinds: kinds, objectRules: objectRules{minProps: -1, maxProps: -1}, arrayRules: arrayRules{minItems: -1, maxItems: -1},
		stringRules: stringRules{minLen: -1, maxLen: -1}, numberRules: numberRules{places: -1}}
}

type schemaProp struct {
	key  string // as written between the key's quotes (JSON-escaped)
	node *schemaNode
	raw  string // its schema, compact (to tell alternatives' properties apart)
}

// objUnion is an object that is one of several alternatives (anyOf), read
// together while the keys written leave more than one possible: its node's
// props are all of theirs, and masks over them say which each alternative
// declares and requires, and which alternatives declare each. Where two
// declare a property differently, each declares it as literals only (a
// const: a discriminator), which its merged node's litAlts tell apart.
// minProps and maxProps are each alternative's bounds on its keys (-1: none).
type objUnion struct {
	declares, required []uint64
	propAlts           []uint8
	minProps, maxProps []int
}

// roomFor is which of u's alternatives may hold k keys.
func (u *objUnion) roomFor(k int) uint8 {
	var alts uint8
	for a, hi := range u.maxProps {
		if hi < 0 || k <= hi {
			alts |= 1 << a
		}
	}
	return alts
}

// lowBits is a mask of the n lowest bits (n from 0 to 64): a node's
// properties, literals or alternatives, all of them.
func lowBits(n int) uint64 { return ^uint64(0) >> (64 - n) }

// onlyLiterals reports whether n's values are its literals alone (an enum's,
// a const's).
func (n *schemaNode) onlyLiterals() bool { return n != nil && len(n.lits) > 0 && n.litKinds == n.kinds }

// maxUnionAlts is the most object alternatives a union may have: each is a
// bit of a uint8 in the running state.
const maxUnionAlts = 8

// ignoredKeywords are read and not held to: annotations (and the
// definitions a $ref reads).
var ignoredKeywords = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true,
	"$schema": true, "$id": true, "$comment": true, "strict": true,
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
	if all, ok := m["allOf"]; ok {
		return c.allOf(all, m, path)
	}
	for _, alt := range []string{"anyOf", "oneOf"} {
		if list, ok := m[alt]; ok {
			return c.anyOf(list, path+"."+alt)
		}
	}
	n := newNode(kAll)
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
		case "properties", "required", "additionalProperties", "items", "prefixItems", "additionalItems", "enum", "const":
			// read below
		case "pattern", "format":
			var src string
			if err := json.Unmarshal(v, &src); err != nil {
				return nil, fmt.Errorf("%s.%s must be a string", path, k)
			}
			if k == "format" {
				if _, hasPattern := m["pattern"]; hasPattern || formats[src] == "" {
					break // a pattern wins; another format is left to the model
				}
				src = formats[src]
			}
			p, err := compilePattern(src)
			if err != nil {
				return nil, fmt.Errorf("%s.%s %q cannot be held to: %v", path, k, clip(src, 80), err)
			}
			n.pat = p
		case "multipleOf":
			var f float64
			if json.Unmarshal(v, &f) != nil || f <= 0 {
				return nil, fmt.Errorf("%s.multipleOf must be a number above 0", path)
			}
			n.multipleOf(f)
		case "uniqueItems":
			n.unique = string(bytes.TrimSpace(v)) == "true"
		case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
			"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			if err := n.bound(k, v, m, path); err != nil {
				return nil, err
			}
		default:
			if !ignoredKeywords[k] {
				return nil, fmt.Errorf("%s: the keyword %q is not supported: an answer cannot be held to it "+
					"(supported: type, properties, required, additionalProperties, items, enum, const, anyOf, $ref, "+
					"pattern, format, and the bounds minLength, maxItems, minimum, …)", path, k)
			}
		}
	}
	if err := n.checkBounds(path); err != nil {
		return nil, err
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
	if err := c.arrayItems(n, m, path); err != nil {
		return nil, err
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

// bound reads one bounds keyword k (its value v) of the schema m into n.
func (n *schemaNode) bound(k string, v json.RawMessage, m map[string]json.RawMessage, path string) error {
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		var b bool
		if (k == "exclusiveMinimum" || k == "exclusiveMaximum") && json.Unmarshal(v, &b) == nil {
			return nil // draft 4's form, read with minimum and maximum
		}
		return fmt.Errorf("%s.%s must be a number", path, k)
	}
	count := func(dst *int) error {
		if f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
			return fmt.Errorf("%s.%s must be a whole number, 0 or more", path, k)
		}
		*dst = int(f)
		return nil
	}
	counts := map[string]*int{"minLength": &n.minLen, "maxLength": &n.maxLen, "minItems": &n.minItems, "maxItems": &n.maxItems,
		"minProperties": &n.minProps, "maxProperties": &n.maxProps}
	if dst, ok := counts[k]; ok {
		return count(dst)
	}
	draft4 := func(key string) bool { return string(bytes.TrimSpace(m[key])) == "true" }
	switch k {
	case "minimum":
		n.lo = tighter(n.lo, &numBound{v: f, open: draft4("exclusiveMinimum")}, false)
	case "maximum":
		n.hi = tighter(n.hi, &numBound{v: f, open: draft4("exclusiveMaximum")}, true)
	case "exclusiveMinimum":
		n.lo = tighter(n.lo, &numBound{v: f, open: true}, false)
	case "exclusiveMaximum":
		n.hi = tighter(n.hi, &numBound{v: f, open: true}, true)
	}
	return nil
}

// multipleOf reads multipleOf f: a whole number, or a power of ten below 1;
// another is left to the model.
func (n *schemaNode) multipleOf(f float64) {
	switch {
	case f == math.Trunc(f) && f < 1<<53:
		n.step = uint64(f)
	default:
		for p := 1; p <= 15; p++ {
			if f == math.Pow10(-p) {
				n.places = p
			}
		}
	}
}

// tighter is the tighter of two lower bounds (upper where upper).
func tighter(a, b *numBound, upper bool) *numBound {
	switch {
	case a == nil:
		return b
	case a.v == b.v:
		return &numBound{v: a.v, open: a.open || b.open}
	case (b.v < a.v) == upper:
		return b
	}
	return a
}

// checkBounds refuses bounds that allow no value of the kind they bound.
func (n *schemaNode) checkBounds(path string) error {
	for _, b := range []struct {
		lo, hi int
		what   string
	}{{n.minLen, n.maxLen, "Length"}, {n.minItems, n.maxItems, "Items"}, {n.minProps, n.maxProps, "Properties"}} {
		if b.lo >= 0 && b.hi >= 0 && b.lo > b.hi {
			return fmt.Errorf("%s: min%s %d is more than max%s %d: no value is within them", path, b.what, b.lo, b.what, b.hi)
		}
	}
	if n.lo != nil && n.hi != nil && (n.lo.v > n.hi.v || n.lo.v == n.hi.v && (n.lo.open || n.hi.open)) {
		return fmt.Errorf("%s: no number is within its minimum and maximum", path)
	}
	return nil
}

// allOf reads an allOf of one schema, which Pydantic writes around a $ref
// that has a description or a default beside it: the schema itself. Its
// siblings must be annotations; more schemas are refused (their merge is
// left to the client).
func (c *schemaCompiler) allOf(raw json.RawMessage, m map[string]json.RawMessage, path string) (*schemaNode, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || len(list) != 1 {
		return nil, fmt.Errorf(`%s: the keyword "allOf" is supported with one schema only: merge its schemas into one`, path)
	}
	for k := range m {
		if k != "allOf" && !ignoredKeywords[k] {
			return nil, fmt.Errorf(`%s: the keyword "allOf" is supported with nothing beside it but annotations (%q is): move %[2]q into its schema`, path, k)
		}
	}
	return c.node(list[0], path+".allOf[0]")
}

// arrayItems reads what an array's values are held to: items (a schema; false:
// none past a tuple's), a tuple's prefixItems, or draft 7's items as a list of
// schemas with additionalItems for the rest.
func (c *schemaCompiler) arrayItems(n *schemaNode, m map[string]json.RawMessage, path string) error {
	prefixKey, prefix := "prefixItems", m["prefixItems"]
	restKey, rest := "items", m["items"]
	if items := bytes.TrimSpace(rest); len(items) > 0 && items[0] == '[' {
		if prefix != nil {
			return fmt.Errorf("%s: items as a list and prefixItems both give a tuple's items: send one", path)
		}
		prefixKey, prefix = "items", items
		restKey, rest = "additionalItems", m["additionalItems"]
	}
	if prefix != nil {
		var list []json.RawMessage
		if err := json.Unmarshal(prefix, &list); err != nil {
			return fmt.Errorf("%s.%s must be a list of schemas", path, prefixKey)
		}
		for i, raw := range list {
			it, err := c.node(raw, fmt.Sprintf("%s.%s[%d]", path, prefixKey, i))
			if err != nil {
				return err
			}
			n.prefix = append(n.prefix, it)
		}
		n.unique = false // (held only where the items are one enum's literals)
	}
	switch {
	case rest == nil:
	case string(bytes.TrimSpace(rest)) == "false":
		if n.maxItems < 0 || n.maxItems > len(n.prefix) {
			n.maxItems = len(n.prefix)
		}
		if n.minItems > n.maxItems {
			return fmt.Errorf("%s: minItems %d is more than the %d items its %s allows", path, n.minItems, n.maxItems, prefixKey)
		}
	default:
		it, err := c.node(rest, path+"."+restKey)
		if err != nil {
			return err
		}
		n.items = it
	}
	return nil
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
		var raw bytes.Buffer
		_ = json.Compact(&raw, m[k]) // (valid: it was read)
		n.props = append(n.props, schemaProp{key: jsonKey(k), node: node, raw: raw.String()})
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
		body = newNode(kAll)
		body.free = true
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
	out := newNode(0)
	out.free = true
	var objs []*schemaNode // the object alternatives: several are read together (union)
	for i, a := range alts {
		n, err := c.node(a, fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			return nil, err
		}
		if n == nil {
			return nil, nil // any value is one of them
		}
		if n.kinds&kObject != 0 {
			objs = append(objs, n)
		}
		overlap := out.kinds & n.kinds &^ (kNumber | kInteger)
		if overlap&kObject != 0 && n.kinds == kObject && !n.free && len(objs) > 1 && allDeclared(objs) {
			overlap &^= kObject // objects with declared properties: a union
		}
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
			out.objectRules = n.objectRules
		}
		if n.kinds&kArray != 0 {
			out.arrayRules = n.arrayRules
		}
		if n.kinds&kString != 0 {
			out.stringRules = n.stringRules
		}
		if n.kinds&(kNumber|kInteger) != 0 {
			out.numberRules = n.numberRules
		}
		out.lits, out.litKinds = append(out.lits, n.lits...), out.litKinds|n.litKinds
		if len(out.lits) > maxSchemaProps {
			return nil, fmt.Errorf("%s lists more than %d values in all", path, maxSchemaProps)
		}
	}
	if len(objs) > 1 {
		if err := out.unite(objs, path); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// allDeclared reports whether every node is an object with declared
// properties and nothing else.
func allDeclared(objs []*schemaNode) bool {
	for _, o := range objs {
		if o.kinds != kObject || o.free || o.union != nil {
			return false
		}
	}
	return true
}

// unite makes n the union of the object alternatives objs: all their
// properties, each alternative's by masks. A property two declare differently
// must be literals in each (a discriminator: its values tell them apart once
// written); otherwise no answer could be held to either as it is written.
func (n *schemaNode) unite(objs []*schemaNode, path string) error {
	if len(objs) > maxUnionAlts {
		return fmt.Errorf("%s has %d object alternatives; at most %d are supported", path, len(objs), maxUnionAlts)
	}
	byKey := map[string][]int{} // key → the alternatives declaring it
	var keys []string
	for a, o := range objs {
		for _, p := range o.props {
			if byKey[p.key] == nil {
				keys = append(keys, p.key)
			}
			byKey[p.key] = append(byKey[p.key], a)
		}
	}
	if len(keys) > maxSchemaProps {
		return fmt.Errorf("%s: its object alternatives declare %d properties in all; at most %d are supported", path, len(keys), maxSchemaProps)
	}
	sort.Strings(keys)
	u := &objUnion{declares: make([]uint64, len(objs)), required: make([]uint64, len(objs)), propAlts: make([]uint8, len(keys))}
	for _, o := range objs {
		u.minProps, u.maxProps = append(u.minProps, o.minProps), append(u.maxProps, o.maxProps)
	}
	n.objectRules = objectRules{minProps: -1, maxProps: -1}
	for i, k := range keys {
		var decl []schemaProp // each declaring alternative's
		for _, a := range byKey[k] {
			o := objs[a]
			j := slices.IndexFunc(o.props, func(p schemaProp) bool { return p.key == k })
			decl = append(decl, o.props[j])
			u.declares[a] |= 1 << i
			u.propAlts[i] |= 1 << a
			if o.required&(1<<j) != 0 {
				u.required[a] |= 1 << i
			}
		}
		same := true
		for _, p := range decl[1:] {
			same = same && p.raw == decl[0].raw
		}
		if same {
			n.props = append(n.props, decl[0])
			continue
		}
		merged := newNode(0)
		for x, p := range decl {
			if !p.node.onlyLiterals() {
				return fmt.Errorf("%s: alternatives declare the property %q differently, and an answer cannot be held to either as "+
					"it is written; give them the same schema for it, or make it a const in each (a discriminator)", path, k)
			}
			a := byKey[k][x]
			merged.kinds, merged.litKinds = merged.kinds|p.node.kinds, merged.litKinds|p.node.litKinds
			for _, l := range p.node.lits {
				if w := slices.Index(merged.lits, l); w >= 0 {
					merged.litAlts[w] |= 1 << a
				} else {
					merged.lits, merged.litAlts = append(merged.lits, l), append(merged.litAlts, 1<<a)
				}
			}
		}
		if len(merged.lits) > maxSchemaProps {
			return fmt.Errorf("%s: the property %q has more than %d values in all its alternatives", path, k, maxSchemaProps)
		}
		n.props = append(n.props, schemaProp{key: k, node: merged})
	}
	n.union = u
	return nil
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
	n     *schemaNode
	arr   bool
	used  uint64      // an object's properties written
	val   *schemaNode // an object's value being written: its property's node
	count int         // an array's items, an object's keys, begun so far
	cand  uint8       // a union's alternatives the keys and values written leave possible
}

// keysLeft are the properties the object may still take: those of its
// alternatives still possible (a union's), not yet written.
func (fr *schemaFrame) keysLeft() uint64 { return fr.keysOf(fr.cand) }

// keysOf are the properties not yet written that alts declare (all the
// object's where it is no union).
func (fr *schemaFrame) keysOf(alts uint8) uint64 {
	n := fr.n
	all := lowBits(len(n.props))
	if u := n.union; u != nil {
		all = 0
		for c := alts; c != 0; c &= c - 1 {
			all |= u.declares[bits.TrailingZeros8(c)]
		}
	}
	return all &^ fr.used
}

// closable reports whether the object's required properties are written:
// those of one of a union's alternatives still possible, with its
// minProperties.
func (fr *schemaFrame) closable() bool {
	n := fr.n
	if n.union == nil {
		return n.required&^fr.used == 0
	}
	for c := fr.cand; c != 0; c &= c - 1 {
		if a := bits.TrailingZeros8(c); n.union.required[a]&^fr.used == 0 && fr.count >= n.union.minProps[a] {
			return true
		}
	}
	return false
}

// frameView is the schema's stack as one run sees it (json.go's overlay).
type frameView = overlay[schemaFrame]

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
	// A string value being read: its characters so far (an escape one), and
	// where its node has a pattern, the pattern's states (patOn) and the
	// character being decoded (rr).
	strLen int
	patOn  bool
	pat    patSet
	rr     rune
	// A number being read, where its node bounds it or has a multipleOf
	// (counted): its sign, its digits as an integer (mant), how many of them
	// follow the '.' (fd; frac: a '.' is read).
	neg   bool
	digit bool // a digit is read
	frac  bool
	fd    int16
	mant  uint64
}

// patByte reads a string's byte (which the automaton reads in state st) into
// its pattern's states, a character at a time — an escape's, a UTF-8
// sequence's — and reports whether the pattern can still match.
func (s *schemaState) patByte(st *jsonState, c byte) bool {
	var r rune
	switch {
	case st.mode == jEscape:
		switch c {
		case 'u':
			s.rr = 0
			return s.cur.pat.canTake(&s.pat, 0, 0xFFFF)
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		default: // '"', '\\', '/'
			r = rune(c)
		}
	// A character's first bytes must begin one the pattern can still take.
	case st.mode == jUnicode:
		if s.rr = s.rr<<4 | rune(hexValue(c)); st.hex < 3 {
			return s.canTakeFrom(4 * (3 - int(st.hex)))
		}
		r = s.rr
	case st.next > 0: // a continuation byte
		if s.rr = s.rr<<6 | rune(c&0x3F); st.next > 1 {
			return s.canTakeFrom(6 * (int(st.next) - 1))
		}
		r = s.rr
	case c == '\\':
		return s.cur.pat.canTake(&s.pat, 0, 0xFFFF)
	case c >= 0xF0:
		s.rr = rune(c & 0x07)
		return s.canTakeFrom(18)
	case c >= 0xE0:
		s.rr = rune(c & 0x0F)
		return s.canTakeFrom(12)
	case c >= 0xC0:
		s.rr = rune(c & 0x1F)
		return s.canTakeFrom(6)
	default:
		r = rune(c)
	}
	s.pat = s.cur.pat.step(&s.pat, r)
	return s.cur.pat.alive(&s.pat)
}

// canTakeFrom reports whether the pattern can take a character that begins
// with the bits read so far (rr), shift bits still to come.
func (s *schemaState) canTakeFrom(shift int) bool {
	lo := s.rr << shift
	return s.cur.pat.canTake(&s.pat, lo, lo|(1<<shift-1))
}

func hexValue(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
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
			return (s.cur == nil || s.strLen >= s.cur.minLen && (!s.patOn || s.cur.pat.matches(&s.pat, s.strLen == 0))) && s.scalarDone(f)
		}
		// A character begins at a byte that is not a continuation, nor inside
		// an escape.
		if st.mode == jString && st.next == 0 && (c < 0x80 || c >= 0xC0) {
			if s.strLen++; s.cur != nil && s.cur.maxLen >= 0 && s.strLen > s.cur.maxLen {
				return false
			}
		}
		return !s.patOn || s.patByte(st, c)
	case jLiteral:
		if !s.litByte(c) {
			return false
		}
		if len(st.lit) == 1 {
			return s.scalarDone(f)
		}
		return true
	case jNumber:
		probe := *st
		if probe.number(c) {
			if (c == '.' || c == 'e' || c == 'E') && s.cur != nil && s.cur.kinds&kNumber == 0 {
				return false // an integer
			}
			return s.litByte(c) && s.numByte(c)
		}
		if !s.numDone() || !s.scalarDone(f) {
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
			return s.closeArray(f)
		}
		if fr := f.top(); fr != nil && fr.arr {
			if fr.count++; fr.n != nil && fr.n.maxItems >= 0 && fr.count > fr.n.maxItems {
				return false
			}
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
			return s.closeArray(f)
		case ',':
			// A ',' wants another item or key: none past maxItems or
			// maxProperties, nor where every declared property is written.
			fr := f.top()
			switch {
			case fr == nil || fr.n == nil:
			case fr.arr:
				if it := fr.n.items; fr.n.unique && it.onlyLiterals() && fr.used == lowBits(len(it.lits)) {
					return false // every literal an item may be is written
				}
				return fr.n.maxItems < 0 || fr.count < fr.n.maxItems
			case fr.n.maxProps >= 0 && fr.count >= fr.n.maxProps:
				return false
			case fr.n.union != nil: // an alternative with room for another key, and keys left
				return fr.keysOf(fr.cand&fr.n.union.roomFor(fr.count+1)) != 0
			case !fr.n.free:
				return fr.keysLeft() != 0
			}
		}
	}
	return true
}

// next is the node of the value that comes next in the top container (an
// array's counted already).
func (s *schemaState) next(f *frameView) *schemaNode {
	fr := f.top()
	switch {
	case fr == nil:
		return s.schema.root
	case fr.n == nil:
		return nil
	case fr.arr:
		if k := fr.count - 1; k < len(fr.n.prefix) {
			return fr.n.prefix[k]
		}
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
		fr := schemaFrame{n: n}
		if n != nil && n.union != nil {
			fr.cand = uint8(lowBits(len(n.union.declares)))
		}
		return f.push(fr)
	case kArray:
		return f.push(schemaFrame{n: n, arr: true})
	}
	s.cur, s.litOn, s.litPos, s.litCand = n, false, 0, 0
	s.strLen, s.neg, s.digit, s.frac, s.fd, s.mant = 0, false, false, false, 0, 0
	if s.patOn = k == kString && n != nil && n.pat != nil; s.patOn {
		s.pat = n.pat.start
	}
	if n != nil && n.litKinds&k != 0 {
		s.litOn, s.litCand = true, lowBits(len(n.lits))
		if fr := f.top(); fr != nil && fr.arr && fr.n != nil && fr.n.unique { // an item not written yet
			s.litCand &^= fr.used
		}
		if n.litAlts != nil { // a discriminator: the literals of the alternatives still possible
			if fr := f.top(); fr != nil && fr.n != nil && fr.n.union != nil {
				for i, alts := range n.litAlts {
					if alts&fr.cand == 0 {
						s.litCand &^= 1 << i
					}
				}
			}
		}
	}
	return s.litByte(c) && (k != kNumber|kInteger || s.numByte(c))
}

// bounded reports whether the number being read is held to bounds.
func (s *schemaState) bounded() bool { return s.cur != nil && (s.cur.lo != nil || s.cur.hi != nil) }

// counted reports whether the number being read is held to bounds or to a
// multipleOf: its digits are read into mant.
func (s *schemaState) counted() bool {
	return s.cur != nil && (s.cur.lo != nil || s.cur.hi != nil || s.cur.step > 0 || s.cur.places >= 0)
}

// numByte reads a number's byte against its bounds: the digits must still be
// able to end within them (and no exponent comes).
func (s *schemaState) numByte(c byte) bool {
	if !s.counted() {
		return true
	}
	n := s.cur
	switch {
	case c == '-':
		s.neg = true
	case c == '.':
		if n.step > 0 {
			return false // a multiple of a whole number is written as an integer
		}
		s.frac = true
	case isDigit(c):
		if s.frac && n.places >= 0 && int(s.fd) >= n.places && c != '0' {
			return false // a fraction digit past multipleOf's places
		}
		if s.mant > (math.MaxUint64-9)/10 || s.fd == math.MaxInt16 {
			return false // past float64's precision many times over
		}
		s.mant, s.digit = s.mant*10+uint64(c-'0'), true
		if s.frac {
			s.fd++
		}
	default:
		return false // an exponent: written out instead
	}
	return !s.bounded() || s.reach()
}

// numDone ends a number: its value must be within its bounds.
func (s *schemaState) numDone() bool {
	if !s.counted() {
		return true
	}
	if step := s.cur.step; step > 0 && s.mant%step != 0 {
		return false
	}
	if !s.bounded() {
		return true
	}
	v := float64(s.mant) / math.Pow10(int(s.fd))
	if s.neg {
		v = -v
	}
	return within(v, s.cur.lo, s.cur.hi)
}

func within(v float64, lo, hi *numBound) bool {
	return (lo == nil || v > lo.v || v == lo.v && !lo.open) && (hi == nil || v < hi.v || v == hi.v && !hi.open)
}

// reach reports whether the number read so far can still end within its
// bounds: whether the values its digits may end as meet them. Those are, for
// a fraction's digits d (f of them), [d, d+1)/10^f; for an integer part's
// digits d, [d, d+1)·10^k for every k (more digits, then maybe a fraction) —
// only d·10^k to (d+1)·10^k−1 for an integer; after a leading 0, [0, 1); after
// a '-' alone, any magnitude. The bounds are turned into bounds on the
// magnitude (-v within [lo, hi] is v within [-hi, -lo]).
func (s *schemaState) reach() bool {
	n := s.cur
	lo, hi := n.lo, n.hi
	if s.neg {
		lo, hi = negBound(n.hi), negBound(n.lo)
	}
	integer := n.kinds&kNumber == 0 || n.step > 0 // (a whole multipleOf's values are integers)
	step := max(n.step, 1)
	switch {
	case !s.digit: // '-' alone
		return meets(0, math.Inf(1), integer, step, lo, hi)
	case s.frac && n.places >= 0 && int(s.fd) >= n.places: // only zeros may follow
		return within(float64(s.mant)/math.Pow10(int(s.fd)), lo, hi)
	case s.frac: // (mant holds the fraction's digits too)
		p := math.Pow10(int(s.fd))
		return meets(float64(s.mant)/p, float64(s.mant+1)/p, false, 1, lo, hi)
	case s.mant == 0: // a leading 0: 0, or a fraction
		if integer {
			return within(0, lo, hi)
		}
		return meets(0, 1, false, 1, lo, hi)
	}
	a := float64(s.mant)
	for k := 0; k <= 400 && !math.IsInf(a, 1); k++ {
		if meets(a, float64(s.mant+1)*math.Pow10(k), integer, step, lo, hi) {
			return true
		}
		if hi != nil && a > hi.v {
			return false
		}
		a *= 10
	}
	return false
}

func negBound(b *numBound) *numBound {
	if b == nil {
		return nil
	}
	return &numBound{v: -b.v, open: b.open}
}

// meets reports whether some value in [a, b) — an integer in [a, b-1] where
// integer, a multiple of step — is within lo and hi.
func meets(a, b float64, integer bool, step uint64, lo, hi *numBound) bool {
	if integer {
		first, last := a, b-1
		if lo != nil {
			l := math.Ceil(lo.v)
			if l == lo.v && lo.open {
				l++
			}
			first = math.Max(first, l)
		}
		if hi != nil {
			h := math.Floor(hi.v)
			if h == hi.v && hi.open {
				h--
			}
			last = math.Min(last, h)
		}
		if step > 1 {
			first = math.Ceil(first/float64(step)) * float64(step)
		}
		return first <= last
	}
	l, lOpen := a, false
	if lo != nil && (lo.v > a || lo.v == a && lo.open) {
		l, lOpen = lo.v, lo.open
	}
	u, uOpen := b, true
	if hi != nil && hi.v <= b {
		u, uOpen = hi.v, hi.open || hi.v == b
	}
	return l < u || l == u && !lOpen && !uOpen
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

// scalarDone ends a scalar: a literal's must be whole. A discriminator's
// (a union's property whose alternatives hold it to different literals)
// leaves possible only the alternatives of the literal written.
func (s *schemaState) scalarDone(f *frameView) bool {
	if s.litOn {
		var whole uint64 // the literals still matching that are written whole (one)
		for m := s.litCand; m != 0; m &= m - 1 {
			if i := bits.TrailingZeros64(m); len(s.cur.lits[i]) == s.litPos {
				whole |= 1 << i
			}
		}
		if whole == 0 {
			return false
		}
		fr := f.top()
		switch {
		case fr == nil || fr.n == nil:
		case fr.arr && fr.n.unique:
			fr.used |= whole
		case fr.n.union != nil && s.cur.litAlts != nil:
			var alts uint8
			for m := whole; m != 0; m &= m - 1 {
				alts |= s.cur.litAlts[bits.TrailingZeros64(m)]
			}
			if fr.cand &= alts; fr.cand == 0 {
				return false
			}
		}
	}
	s.cur, s.litOn = nil, false
	return true
}

// keyStart begins a key of the top object: none past maxProperties.
func (s *schemaState) keyStart(f *frameView) bool {
	fr := f.top()
	if fr != nil {
		if fr.count++; fr.n != nil && fr.n.maxProps >= 0 && fr.count > fr.n.maxProps {
			return false
		}
		if fr.n != nil && fr.n.union != nil {
			fr.cand &= fr.n.union.roomFor(fr.count) // the alternatives whose maxProperties this key passes are out
		}
	}
	s.keyPos, s.keyFree = 0, fr == nil || fr.n == nil || fr.n.free
	if s.keyFree {
		return true
	}
	s.keyNode, s.keyCand = fr.n, fr.keysLeft()
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
			if u := s.keyNode.union; u != nil {
				fr.cand &= u.propAlts[i]
			}
			return true
		}
	}
	return false // the key so far is only the beginning of a property's
}

// close ends the top object: its required properties must be written, and
// minProperties.
func (s *schemaState) close(f *frameView) bool {
	fr := f.top()
	if fr != nil && fr.n != nil && (!fr.n.free && !fr.closable() || fr.count < fr.n.minProps) {
		return false
	}
	f.pop()
	return true
}

// closeArray ends the top array: minItems must be written.
func (s *schemaState) closeArray(f *frameView) bool {
	if fr := f.top(); fr != nil && fr.n != nil && fr.count < fr.n.minItems {
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
		for _, m := range append([]*schemaNode{n.addl, n.items}, n.prefix...) {
			if k, good := walk(m); !good {
				return k, false
			}
		}
		return "", true
	}
	return walk(s.root)
}
