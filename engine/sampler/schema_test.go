package sampler

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"math/rand/v2"
	"net/mail"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// The schemas the tests hold the constraint to, each as a client would send
// it (OpenAI's structured outputs, a zod schema's $defs and nullable fields).
var testSchemas = map[string]string{
	"flat": `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"score":{"type":"number"},
		"ok":{"type":"boolean"},"color":{"type":"string","enum":["red","green","blue"]}},"required":["name","age","ok"],"additionalProperties":false}`,
	"nested": `{"type":"object","properties":{"city":{"type":"object","properties":{"name":{"type":"string"},"pop":{"type":"integer","minimum":0}},
		"required":["name"]},"tags":{"type":"array","items":{"type":"string","maxLength":8}},"note":{"type":["string","null"]}},"required":["city","tags"]}`,
	"arrays": `{"type":"object","properties":{"people":{"type":"array","items":{"type":"object","properties":{"first":{"type":"string"},
		"level":{"enum":[1,2,3,10]}},"required":["first","level"]}},"matrix":{"type":"array","items":{"type":"array","items":{"type":"number"}}}},
		"required":["people"]}`,
	"anyof": `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"null"}]},"w":{"anyOf":[{"type":"object",
		"properties":{"x":{"type":"boolean"}},"required":["x"]},{"type":"array","items":{"type":"integer"}},{"type":"number"}]},
		"k":{"const":"fixed"},"e":{"anyOf":[{"enum":["a","b"]},{"type":"null"}]},
		"n":{"anyOf":[{"type":"integer","multipleOf":5},{"type":"array","items":{"enum":[1,2]},"uniqueItems":true},
		{"type":"string","maxLength":1}]}},"required":["v","w","k"]}`,
	"recursive": `{"$defs":{"node":{"type":"object","properties":{"label":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
		"required":["label","kids"]}},"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"required":["root"]}`,
	"bounds": `{"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":4},"i":{"type":"integer","minimum":-5,
		"exclusiveMaximum":120},"x":{"type":"number","exclusiveMinimum":0.5,"maximum":3.25},"n":{"type":["number","null"],"maximum":-0.5},
		"list":{"type":"array","items":{"type":"integer","minimum":0},"minItems":1,"maxItems":2},"o":{"type":"object","minProperties":1,
		"maxProperties":2},"tags":{"type":"array","items":{"enum":["a","b","c"]},"uniqueItems":true}},"required":["s","i"]}`,
	"multiples": `{"type":"object","properties":{"m":{"type":"integer","multipleOf":5,"minimum":-12,"maximum":40},
		"price":{"type":"number","multipleOf":0.01},"big":{"type":"integer","multipleOf":7}},"required":["m"]}`,
	"pattern": `{"type":"object","properties":{"code":{"type":"string","pattern":"^[A-Z]{2}-\\d{3}$"},"day":{"type":"string","format":"date"},
		"mail":{"type":"string","format":"email"},"has":{"type":"string","pattern":"a.c","maxLength":6},"id":{"type":"string","format":"uuid"},
		"host":{"type":"string","format":"hostname"},"url":{"type":"string","format":"uri","maxLength":40},"dur":{"type":"string","format":"duration"},"either":{"anyOf":[{"type":"string","pattern":"^(yes|no)$"},{"type":"null"}]}},"required":["code"]}`,
	"union": `{"type":"object","properties":{"shape":{"anyOf":[
		{"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"number","minimum":0}},"required":["kind","r"],"additionalProperties":false},
		{"type":"object","properties":{"kind":{"const":"rect"},"w":{"type":"number"},"h":{"type":"number"},"label":{"type":"string"}},"required":["kind","w","h"]},
		{"type":"object","properties":{"kind":{"enum":["dot","pixel"]},"label":{"type":"string"}},"required":["kind"]},{"type":"null"}]},
		"events":{"type":"array","items":{"$ref":"#/$defs/ev"}},"maybe":{"anyOf":[{"$ref":"#/$defs/ev"},{"type":"null"}]},
		"boxed":{"anyOf":[{"type":"object","properties":{"t":{"const":"a"},"x":{"type":"integer"},"y":{"type":"integer"}},"required":["t"],
		"minProperties":2,"maxProperties":2},{"type":"object","properties":{"t":{"const":"b"},"x":{"type":"integer"}},"required":["t"],"maxProperties":1}]}},"required":["shape"],
		"$defs":{"ev":{"oneOf":[{"type":"object","properties":{"type":{"const":"click"},"x":{"type":"integer"}},"required":["type","x"]},
		{"type":"object","properties":{"type":{"const":"key"},"key":{"type":"string","maxLength":1}},"required":["type","key"]}]}}}`,
	"tuple": `{"type":"object","properties":{"pair":{"type":"array","prefixItems":[{"type":"integer"},{"type":"string","maxLength":3}],
		"minItems":2,"maxItems":2},"point":{"type":"array","items":[{"type":"number"},{"type":"number"}],"additionalItems":false},
		"head":{"type":"array","prefixItems":[{"const":"h"},{"enum":[1,2]}],"items":{"type":"boolean"}},"none":{"type":"array","items":false},
		"wrapped":{"allOf":[{"$ref":"#/$defs/p"}],"description":"Pydantic's $ref with a description"}},"required":["pair"],
		"$defs":{"p":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}}}`,
	"free": `{"type":"object","properties":{"counts":{"type":"object","additionalProperties":{"type":"integer"}},"any":{},
		"loose":{"type":"object","properties":{}},"none":{"type":"object","properties":{},"additionalProperties":false},
		"esc":{"type":"string","enum":["quote \" and é","tab\t"]}},"required":["counts"]}`,
}

func compileTest(t *testing.T, name string) *Schema {
	t.Helper()
	s, err := CompileSchema([]byte(testSchemas[name]))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// TestSchemaAcceptsInstances: whole instances of each schema, written as
// encoding/json writes them and with whitespace between tokens, are accepted
// and closed; a byte that would break the schema is refused where it comes.
func TestSchemaAcceptsInstances(t *testing.T) {
	for name, text := range map[string][]string{
		"flat": {`{"name":"Ada","age":36,"ok":true}`, `{"color":"green","score":-1.5e3,"ok":false,"age":0,"name":""}`,
			"{\n  \"name\": \"A\\\"da\",\n  \"age\": 7,\n  \"ok\": true\n}"},
		"nested":    {`{"city":{"name":"Oslo"},"tags":[]}`, `{"tags":["a","b"],"city":{"pop":5,"name":"X"},"note":null}`, `{"city":{"name":"Y"},"tags":["q"],"note":"n"}`},
		"arrays":    {`{"people":[]}`, `{"people":[{"first":"A","level":10},{"level":1,"first":"B"}],"matrix":[[1,2.5],[]]}`},
		"anyof":     {`{"v":null,"w":{"x":true},"k":"fixed"}`, `{"v":"s","w":[1,2],"k":"fixed","e":"b"}`, `{"v":"s","w":3.5,"k":"fixed","e":null}`},
		"recursive": {`{"root":{"label":"a","kids":[{"label":"b","kids":[]},{"label":"c","kids":[{"label":"d","kids":[]}]}]}}`},
		"free":      {`{"counts":{}}`, `{"counts":{"x":1,"y z":-2},"any":{"deep":[1,"two",null,{"t":true}]},"esc":"quote \" and é"}`},
		"pattern": {`{"code":"AB-123"}`, `{"code":"ZZ-000","day":"2024-02-29","mail":"ada@example.org","has":"xabcx","id":"123e4567-E89B-12d3-a456-426614174000"}`,
			`{"has":"a\tc","code":"\u0041B-\u0031\u00323","either":"no","host":"a-1.Example.org","dur":"anything at all"}`,
			`{"code":"XY-001","url":"https://example.org/a_b?q=1&r=%C3%A9#top","host":"localhost"}`, `{"code":"XY-001","url":"urn:isbn:0451450523"}`, `{"code":"QQ-999","has":"aéc","either":null}`},
		"union": {`{"shape":{"kind":"circle","r":1}}`, `{"shape":{"r":2.5,"kind":"circle"}}`, `{"shape":{"w":1,"label":"x","h":2,"kind":"rect"}}`,
			`{"shape":{"label":"p","kind":"pixel"}}`, `{"shape":{"kind":"dot"},"events":[]}`,
			`{"shape":null,"events":[{"type":"click","x":3},{"key":"a","type":"key"},{"x":-1,"type":"click"}]}`,
			`{"shape":null,"maybe":{"key":"a","type":"key"}}`, `{"shape":null,"maybe":null}`,
			`{"shape":null,"boxed":{"t":"a","x":1}}`, `{"shape":null,"boxed":{"y":2,"t":"a"}}`, `{"shape":null,"boxed":{"t":"b"}}`},
		"bounds": {`{"s":"ab","i":-5}`, `{"s":"é✓\n\u0041","i":119,"x":0.5000001,"n":-0.5,"list":[0,7],"o":{"a":[]}}`, `{"i":0,"s":"\"\\","x":3.25,"n":null,"list":[3],"o":{"a":1,"b":{}}}`,
			`{"s":"abcd","i":12,"x":1,"n":-12.5}`, `{"s":"ab","i":-0,"x":0.75,"n":-0.50,"tags":["c","a","b"]}`,
		},
		"multiples": {`{"m":-10,"price":2.5,"big":-14}`, `{"m":0,"price":1.230,"big":700}`, `{"m":40,"price":-0.07}`},
		"tuple": {`{"pair":[1,"ab"]}`, `{"pair":[-7,""],"point":[],"head":[],"none":[]}`, `{"pair":[0,"xyz"],"point":[1.5,2],"head":["h",2,true,false]}`,
			`{"pair":[3,"a"],"point":[0.5],"head":["h"],"wrapped":{"x":4}}`},
	} {
		s := compileTest(t, name)
		for _, x := range text {
			if ok, closed := SchemaPrefix(s, x); !ok || !closed {
				t.Errorf("%s: %s: ok %v closed %v, want an instance", name, x, ok, closed)
			}
		}
	}
	// Each ends with the first byte the schema refuses.
	for name, bad := range map[string][]string{
		"flat":   {`{"name":"A","age":1,"ok":true,"score":1,"color":"red",`, `{"name":"A","age":1.`, `{"name":1`, `{"nam"`, `{"name":"A","n`, `{"name":"A","age":1,"e`, `{"name":"A","age":1}`, `{"color":"p`, `{"color":"redd`},
		"nested": {`{"city":{"pop":1}`, `{"tags":[1`, `{"note":t`, `{"city":{"name":"x","pop":-1`, `{"city":{"name":"x","pop":1e`, `{"tags":["123456789`},
		"pattern": {`{"host":"-`, `{"host":"a-"`, `{"host":"a..`, `{"host":"a `, `{"url":"1`, `{"url":"http `, `{"url":"http:// `, `{"url":"a:%g`, `{"url":"a:\"`, `{"url":"a:<`,
			`{"code":"a`, `{"code":"AB1`, `{"code":"AB-1234`, `{"code":"AB-12"`, `{"day":"2024-13`, `{"day":"2024-02-32`, `{"mail":"a@@`, `{"mail":"a@b"`,
			`{"has":"xxxx"`, `{"has":"xxxxa"`, `{"id":"123g`, `{"either":"ye"`, `{"either":"x`, `{"has":"a\nc"`, `{"code":"AB-\u0031\u0032\u004`, `{"code":"AB-123\`, `{"code":"A\u003`, `{"code":"` + "\xc3"},
		"union": {`{"shape":{"kind":"circle","w`, `{"shape":{"r":1,"kind":"r`, `{"shape":{"kind":"circle"}`, `{"shape":{"kind":"rect","w":1}`,
			`{"shape":{"label":"x","r`, `{"shape":{"label":"x","kind":"c`, `{"shape":{"kind":"s`, `{"shape":{}`, `{"shape":{"r":-1`,
			`{"events":[{"type":"click","k`, `{"events":[{"key":"ab`, `{"events":[{"x":1,"type":"k`, `{"events":[{"type":"key"}`, `{"maybe":{"type":"click","k`,
			`{"boxed":{"t":"a"}`, `{"boxed":{"t":"a","x":1,`, `{"boxed":{"t":"b",`, `{"boxed":{"x":1,"t":"b`, `{"boxed":{"x":1}`},
		"bounds": {`{"s":"a"`, `{"s":"abcde`, `{"i":-6`, `{"i":-51`, `{"i":120`, `{"i":12.`, `{"i":121`, `{"x":0.5,`, `{"x":0.4`, `{"x":3.26`, `{"x":4`,
			`{"x":0,`, `{"x":-`, `{"x":1e`, `{"n":-0.4`, `{"n":0`, `{"list":[]`, `{"list":[1,2,`, `{"list":[-1`, `{"o":{}`, `{"o":{"a":1,"b":2,`, `{"tags":["a","b","a`, `{"tags":["a","b","c",`},
		"multiples": {`{"m":3,`, `{"m":41`, `{"m":-13`, `{"m":-1}`, `{"m":5.`, `{"m":45`, `{"price":1.234`, `{"price":0.001`, `{"big":15,`, `{"big":1e`},
		"arrays":    {`{"people":[{"first":"A","level":4`, `{"people":[{"first":"A","level":10.`, `{"people":[{"first":"A","level":100`, `{"matrix":[["`},
		"anyof":     {`{"v":1`, `{"w":"`, `{"k":"fixe"`, `{"e":"c`, `{"w":{"x":1`, `{"w":[1.`, `{"n":[1,1`, `{"n":7}`, `{"n":"ab`},
		"recursive": {`{"root":{"label":"a","kids":[{"label":"b"}`, `{"root":{"kids":[{"kids":[],"label":1`},
		"free":      {`{"counts":{"x":"`, `{"esc":"quote \u`, `{"esc":"tab\u`},
		"tuple": {`{"pair":["`, `{"pair":[1,2`, `{"pair":[1,"abcd`, `{"pair":[1]`, `{"pair":[1,"a",`, `{"point":[1,2,`, `{"point":["`,
			`{"head":["g`, `{"head":["h",3`, `{"head":["h",1,n`, `{"none":[1`, `{"wrapped":{"x":1,`, `{"wrapped":{"y`, `{"wrapped":{}`},
	} {
		s := compileTest(t, name)
		for _, x := range bad {
			if ok, _ := SchemaPrefix(s, x); ok {
				t.Errorf("%s: %s accepted", name, x)
			}
			if ok, _ := SchemaPrefix(s, x[:len(x)-1]); !ok {
				t.Errorf("%s: %s refused before its last byte: the test's prefix is wrong", name, x)
			}
		}
	}
}

// TestSchemaAgainstReference: random values of each schema's shape — valid
// ones made from the schema, and mutations of them — are accepted whole by the
// constraint exactly when an independent validator (written over decoded
// values, not the constraint's automaton) finds them instances; an invalid
// one is refused at some byte or left unclosed.
func TestSchemaAgainstReference(t *testing.T) {
	againstReference(t, rand.NewPCG(7, 9), func(name string, v any, want bool) {
		text := canonical(v)
		ok, closed := SchemaPrefix(compileTest(t, name), text)
		if got := ok && closed; got != want {
			t.Fatalf("%s: %s: constraint says %v (ok %v closed %v), the validator %v", name, text, got, ok, closed, want)
		}
	})
}

// againstReference draws 400 values of each test schema's shape — made from
// the schema, half of them then mutated — and hands each to check with the
// independent validator's verdict; it fails where a schema's values are too
// one-sided to test anything.
func againstReference(t *testing.T, src rand.Source, check func(name string, v any, valid bool)) {
	t.Helper()
	rng := rand.New(src)
	for _, name := range slices.Sorted(maps.Keys(testSchemas)) { // (in one order: the draws are the same each run)
		root, ref := refOf(t, name)
		valid, invalid := 0, 0
		for range 400 {
			v := ref.generate(rng, root, 0)
			if rng.IntN(2) == 0 {
				v = mutate(rng, v)
			}
			want := ref.valid(root, v)
			check(name, v, want)
			if want {
				valid++
			} else {
				invalid++
			}
		}
		if valid < 50 || invalid < 50 {
			t.Errorf("%s: %d valid and %d invalid values: the test's values are too one-sided", name, valid, invalid)
		}
	}
}

// refOf is the test schema name decoded (numbers as written) and the
// independent validator of it.
func refOf(t *testing.T, name string) (map[string]any, *refValidator) {
	t.Helper()
	var root map[string]any
	dec := json.NewDecoder(strings.NewReader(testSchemas[name]))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		t.Fatal(err)
	}
	return root, &refValidator{root: root}
}

// canonical writes v as the constraint expects an instance written: compact,
// object keys sorted, no HTML escaping.
func canonical(v any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// refValidator is the tests' own reading of the schema subset, over decoded
// values: independent of the constraint's compiled nodes and automaton.
type refValidator struct{ root map[string]any }

func (r *refValidator) resolve(s map[string]any) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		if ref == "#" {
			s = r.root
			continue
		}
		parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
		s = r.root[parts[0]].(map[string]any)[parts[1]].(map[string]any)
	}
}

func kindName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return "number"
		}
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "?"
}

func (r *refValidator) valid(s map[string]any, v any) bool {
	s = r.resolve(s)
	if all, ok := s["allOf"].([]any); ok {
		for _, a := range all {
			if !r.valid(a.(map[string]any), v) {
				return false
			}
		}
		return true
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok {
			n := 0
			for _, a := range alts {
				if r.valid(a.(map[string]any), v) {
					n++
				}
			}
			return n > 0
		}
	}
	if types, ok := s["type"]; ok {
		var names []any
		if one, ok := types.(string); ok {
			names = []any{one}
		} else {
			names = types.([]any)
		}
		k := kindName(v)
		match := false
		for _, n := range names {
			match = match || n == k || n == "number" && k == "integer"
		}
		if !match {
			return false
		}
	}
	if c, ok := s["const"]; ok && canonical(c) != canonical(v) {
		return false
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return canonical(x) == canonical(v) }) {
		return false
	}
	num := func(k string) (float64, bool) {
		n, ok := s[k].(json.Number)
		if !ok {
			return 0, false
		}
		f, err := n.Float64()
		return f, err == nil
	}
	count := func(n int, minKey, maxKey string) bool {
		lo, hasLo := num(minKey)
		hi, hasHi := num(maxKey)
		return (!hasLo || float64(n) >= lo) && (!hasHi || float64(n) <= hi)
	}
	switch x := v.(type) {
	case string:
		if !count(utf8.RuneCountInString(x), "minLength", "maxLength") {
			return false
		}
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(x) {
			return false
		}
		if f, ok := s["format"].(string); ok && !validFormat(f, x) {
			return false
		}
	case json.Number:
		if k, ok := s["multipleOf"].(json.Number); ok {
			v, vok := new(big.Rat).SetString(x.String())
			d, dok := new(big.Rat).SetString(k.String())
			if !vok || !dok || !new(big.Rat).Quo(v, d).IsInt() {
				return false
			}
		}
		f, _ := x.Float64()
		for k, ok := range map[string]func(b float64) bool{"minimum": func(b float64) bool { return f >= b }, "maximum": func(b float64) bool { return f <= b },
			"exclusiveMinimum": func(b float64) bool { return f > b }, "exclusiveMaximum": func(b float64) bool { return f < b }} {
			if b, has := num(k); has && !ok(b) {
				return false
			}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		if !count(len(x), "minProperties", "maxProperties") {
			return false
		}
		props, declared := s["properties"].(map[string]any)
		declared = declared && (len(props) > 0 || s["additionalProperties"] == false)
		if req, ok := s["required"].([]any); ok {
			for _, k := range req {
				if _, ok := x[k.(string)]; !ok {
					return false
				}
			}
		}
		for k, val := range x {
			switch {
			case declared:
				p, ok := props[k].(map[string]any)
				if !ok || !r.valid(p, val) {
					return false
				}
			case s["additionalProperties"] == false:
				return false
			default:
				if ap, ok := s["additionalProperties"].(map[string]any); ok && !r.valid(ap, val) {
					return false
				}
			}
		}
	case []any:
		if !count(len(x), "minItems", "maxItems") {
			return false
		}
		if s["uniqueItems"] == true {
			seen := map[string]bool{}
			for _, it := range x {
				if seen[canonical(it)] {
					return false
				}
				seen[canonical(it)] = true
			}
		}
		prefix, rest := tupleOf(s)
		for i, it := range x {
			switch {
			case i < len(prefix):
				if !r.valid(prefix[i].(map[string]any), it) {
					return false
				}
			case rest == false:
				return false
			default:
				if items, ok := rest.(map[string]any); ok && !r.valid(items, it) {
					return false
				}
			}
		}
	}
	return true
}

// tupleOf is an array schema's items: its first ones' schemas (prefixItems,
// or items as a list), and what the rest are held to (a schema, false: none,
// nil: any).
func tupleOf(s map[string]any) (prefix []any, rest any) {
	if list, ok := s["items"].([]any); ok {
		return list, s["additionalItems"]
	}
	prefix, _ = s["prefixItems"].([]any)
	return prefix, s["items"]
}

// validFormat is the tests' own reading of the formats the constraint holds
// (others pass): by the standard library where it has one.
func validFormat(f, x string) bool {
	switch f {
	case "date":
		_, err := time.Parse("2006-01-02", x)
		return err == nil
	case "email":
		a, err := mail.ParseAddress(x)
		at := strings.LastIndex(x, "@")
		return err == nil && a.Address == x && at > 0 && strings.Contains(x[at:], ".")
	case "hostname": // labels of letters, digits and '-', which neither begins nor ends one
		for _, l := range strings.Split(x, ".") {
			if l == "" || l[0] == '-' || l[len(l)-1] == '-' || strings.Trim(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != "" {
				return false
			}
		}
		return true
	case "uri": // a scheme, ':', then RFC 3986's unreserved, reserved and %HH
		scheme, rest, ok := strings.Cut(x, ":")
		if !ok || scheme == "" || !unicode.IsLetter(rune(scheme[0])) || scheme[0] >= utf8.RuneSelf ||
			strings.Trim(scheme, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") != "" {
			return false
		}
		for i := 0; i < len(rest); i++ {
			switch c := rest[i]; {
			case c == '%':
				if _, err := hex.DecodeString(rest[i+1 : min(i+3, len(rest))]); err != nil || i+3 > len(rest) {
					return false
				}
				i += 2
			case c >= utf8.RuneSelf || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:/?#[]@!$&'()*+,;=", rune(c)):
				return false
			}
		}
		return true
	case "uuid":
		_, err := hex.DecodeString(strings.ReplaceAll(x, "-", ""))
		return err == nil && len(x) == 36 && x[8] == '-' && x[13] == '-' && x[18] == '-' && x[23] == '-' && strings.Count(x, "-") == 4
	}
	return true
}

// generate makes a random value of s's shape (an instance, but for depth's
// bound on recursion).
func (r *refValidator) generate(rng *rand.Rand, s map[string]any, depth int) any {
	s = r.resolve(s)
	if all, ok := s["allOf"].([]any); ok {
		return r.generate(rng, all[rng.IntN(len(all))].(map[string]any), depth)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok {
			return r.generate(rng, alts[rng.IntN(len(alts))].(map[string]any), depth)
		}
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok {
		return e[rng.IntN(len(e))]
	}
	kind := "any"
	switch t := s["type"].(type) {
	case string:
		kind = t
	case []any:
		kind = t[rng.IntN(len(t))].(string)
	}
	if _, ok := s["properties"]; ok && kind == "any" {
		kind = "object"
	}
	if kind == "any" {
		kind = []string{"string", "integer", "boolean", "null", "object", "array"}[rng.IntN(6)]
		if depth > 2 {
			kind = "string"
		}
	}
	// Most values are drawn among those within the schema's bounds, where it
	// has some (the validator's own reading of them), the rest from all.
	within := func(vals []any) any {
		if rng.IntN(4) > 0 {
			if in := slices.DeleteFunc(slices.Clone(vals), func(v any) bool { return !r.valid(s, v) }); len(in) > 0 {
				return in[rng.IntN(len(in))]
			}
		}
		return vals[rng.IntN(len(vals))]
	}
	switch kind {
	case "string":
		return within([]any{"", "a", "Oslo", `q"uote`, "é✓", "line\nbreak", "back\\slash", "AB-123", "ab-123", "2024-05-17", "2024-5-17",
			"ada@example.org", "ada@", "xabcx", "abcdefg", "123e4567-e89b-12d3-a456-426614174000", "yes", "no",
			"example.org", "a-b.c9", "-x.org", "x-.org", "https://example.org/a?b=c#d", "mailto:ada@example.org", "http://a b", "a:%4", "a:%41"})
	case "integer":
		if rng.IntN(2) == 0 {
			var vals []any
			for range 8 {
				vals = append(vals, json.Number(fmt.Sprint(rng.IntN(200)-50)))
			}
			for _, k := range []int{5, 7} { // (multiples of a multipleOf's)
				vals = append(vals, json.Number(fmt.Sprint(k*(rng.IntN(12)-3))))
			}
			return within(vals)
		}
		return json.Number(fmt.Sprint(rng.IntN(2000) - 1000))
	case "number":
		vals := []any{json.Number("0"), json.Number("-1.5"), json.Number("7"), json.Number("0.001"),
			json.Number("0.75"), json.Number("3.25"), json.Number("-0.5"), json.Number("2.5"), json.Number("0.5")}
		if !slices.ContainsFunc([]string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}, func(k string) bool { return s[k] != nil }) {
			vals = append(vals, json.Number("3.25e2")) // (a bounded number is written without an exponent: the constraint refuses one)
		}
		return within(vals)
	case "boolean":
		return rng.IntN(2) == 0
	case "null":
		return nil
	case "array":
		prefix, rest := tupleOf(s)
		n := rng.IntN(3 + len(prefix))
		if lo, ok := s["minItems"].(json.Number); ok && rng.IntN(4) > 0 {
			k, _ := lo.Int64()
			n = max(n, int(k))
		}
		if rest == false && rng.IntN(4) > 0 {
			n = min(n, len(prefix))
		}
		if depth > 3 {
			n = 0
		}
		out := []any{}
		for i := range n {
			items, _ := rest.(map[string]any)
			if i < len(prefix) {
				items = prefix[i].(map[string]any)
			}
			if items == nil {
				items = map[string]any{}
			}
			out = append(out, r.generate(rng, items, depth+1))
		}
		return out
	}
	out := map[string]any{}
	props, declared := s["properties"].(map[string]any)
	req := map[string]bool{}
	if list, ok := s["required"].([]any); ok {
		for _, k := range list {
			req[k.(string)] = true
		}
	}
	if declared {
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if req[k] || rng.IntN(2) == 0 {
				out[k] = r.generate(rng, props[k].(map[string]any), depth+1)
			}
		}
	} else if s["additionalProperties"] != false {
		ap, _ := s["additionalProperties"].(map[string]any)
		n := rng.IntN(3)
		if lo, ok := s["minProperties"].(json.Number); ok && rng.IntN(4) > 0 {
			k, _ := lo.Int64()
			n = max(n, int(k))
		}
		for i := range n {
			if ap == nil {
				out[fmt.Sprint("k", i)] = r.generate(rng, map[string]any{}, depth+1)
			} else {
				out[fmt.Sprint("k", i)] = r.generate(rng, ap, depth+1)
			}
		}
	}
	return out
}

// mutate changes one random place of v: a value of another kind, a key
// dropped or added, an array item replaced.
func mutate(rng *rand.Rand, v any) any {
	others := []any{"s", json.Number("5"), json.Number("2.5"), true, nil, map[string]any{}, []any{}}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := map[string]any{}
		for k, val := range x {
			out[k] = val
		}
		switch n := rng.IntN(4); {
		case n == 0 || len(keys) == 0:
			out[[]string{"extra", "name", "kids", "x"}[rng.IntN(4)]] = others[rng.IntN(len(others))]
		case n == 1:
			delete(out, keys[rng.IntN(len(keys))])
		default:
			k := keys[rng.IntN(len(keys))]
			out[k] = mutate(rng, out[k])
		}
		return out
	case []any:
		if len(x) == 0 {
			return []any{others[rng.IntN(len(others))]}
		}
		out := slices.Clone(x)
		i := rng.IntN(len(out))
		out[i] = mutate(rng, out[i])
		return out
	}
	return others[rng.IntN(len(others))]
}

// TestCompileSchemaRefuses: what the constraint cannot hold an answer to is
// refused in words that name it.
func TestCompileSchemaRefuses(t *testing.T) {
	for schema, says := range map[string]string{
		`{"type":"object","allOf":[{}]}`:                                                       `"allOf" is supported with nothing beside it but annotations ("type" is)`,
		`{"type":"object","properties":{"a":{"allOf":[{},{}]}}}`:                               `schema.properties.a: the keyword "allOf" is supported with one schema only`,
		`{"type":"object","properties":{"a":{"prefixItems":[{}],"items":[{}]}}}`:               "items as a list and prefixItems both",
		`{"type":"object","properties":{"a":{"prefixItems":{}}}}`:                              "prefixItems must be a list of schemas",
		`{"type":"object","properties":{"a":{"prefixItems":[{}],"items":false,"minItems":2}}}`: "minItems 2 is more than the 1 items its prefixItems allows",
		`{"type":"object","properties":{"a":{"not":{}}}}`:                                      `schema.properties.a: the keyword "not"`,
		`{"type":"array"}`: "must describe an object",
		`{"type":"object","properties":{"a":{"type":"str"}}}`:                                                                                                            `unknown type "str"`,
		`{"type":"object","properties":{"a":{}},"required":["b"]}`:                                                                                                       `required names "b"`,
		`{"type":"object","properties":{"a":{"anyOf":[{"type":"object"},{"type":"object"}]}}}`:                                                                           "two alternatives allow values of one kind (object)",
		`{"type":"object","properties":{"a":{"anyOf":[{"type":"object","properties":{"x":{"type":"string"}}},{"type":"object","properties":{"x":{"type":"number"}}}]}}}`: `declare the property "x" differently`,
		`{"type":"object","properties":{"a":{"$ref":"http://x/y"}}}`:                                                                                                     "only references inside the schema",
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/none"}}}`:                                                                                                   "names no definition",
		`{"type":"object","properties":{"a":{"enum":[{"x":1}]}}}`:                                                                                                        "an object or a list as a value",
		`{"type":"object","properties":{"a":{"type":"string","enum":[1,2]}}}`:                                                                                            "allows no value",
		`[1]`: "must be a JSON object",
		`{"type":"object","properties":{"a":{"type":"string","pattern":"\\bx"}}}`:                                               "word boundaries",
		`{"type":"object","properties":{"a":{"type":"string","pattern":"a{300}"}}}`:                                             "instructions",
		`{"type":"object","properties":{"a":{"type":"string","pattern":"(x"}}}`:                                                 "missing closing )",
		`{"type":"object","properties":{"a":{"type":"string","pattern":7}}}`:                                                    "pattern must be a string",
		`{"type":"object","properties":{"a":{"type":"string","minLength":-1}}}`:                                                 "whole number",
		`{"type":"object","properties":{"a":{"type":"string","minLength":"2"}}}`:                                                "must be a number",
		`{"type":"object","properties":{"a":{"minItems":3,"maxItems":2}}}`:                                                      "minItems 3 is more than maxItems 2",
		`{"type":"object","properties":{"a":{"minimum":3,"exclusiveMaximum":3}}}`:                                               "no number is within",
		`{"$defs":{"a":{"$ref":"#/$defs/a"}},"type":"object","properties":{"x":{"$ref":"#/$defs/a"}}}`:                          "refers only to itself",
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"type":"object","properties":{"x":{"$ref":"#/$defs/a"}}}`: "refers only to itself",
	} {
		_, err := CompileSchema([]byte(schema))
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want an error saying %q", schema, err, says)
		}
	}
}

// TestSchemaBannedMatchesAccepts: over a vocabulary of pieces of every kind,
// the schema constraint's bans are exactly the ids whose text it refuses, at
// every step of writing an instance (the fast paths of Banned decide as a run
// would: inside strings held to enums, bounds and patterns too).
func TestSchemaBannedMatchesAccepts(t *testing.T) {
	texts := []string{`{"`, `"`, `name`, `na`, `me`, `":`, `"A`, `da"`, `,"`, `age`, `":`, `3`, `6`, `}`, ` `, `.`, `5`, `ok`, `true`,
		`tr`, `ue`, `"}`, `,`, `"color":"`, `red`, `"`, `x`, `é`, `\"`, `color`, `": "`, `null`, `score`, `{`, `e`, `code`, `AB`, `-`, `12`, `has`,
		`a`, `b`, `c`, `abc`, `xx`, `\n`, `s`, `i`, `1`, `0`, `9`, `99`, `-5`}
	var special []bool
	for range texts {
		special = append(special, false)
	}
	texts = append(texts, "<eos>")
	special = append(special, true)
	v := NewJSONVocab(texts, special, []int{len(texts) - 1})
	for _, c := range []struct {
		schema string
		pieces []string
	}{
		{"flat", []string{`{"`, `name`, `":`, `"A`, `da"`, `,"`, `age`, `":`, `3`, `6`, `,"`, `ok`, `":`, `true`, `}`}},
		{"pattern", []string{`{"`, `code`, `":`, `"`, `AB`, `-`, `12`, `3`, `"`, `,"`, `has`, `":`, `"`, `xx`, `\n`, `a`, `b`, `c`, `"`, `}`}},
		{"bounds", []string{`{"`, `s`, `":`, `"`, `xx`, `x`, `"`, `,"`, `i`, `":`, `-5`, `,"`, `x`, `":`, `1`, `.`, `0`, `}`}},
	} {
		j := v.ObjectOf(compileTest(t, c.schema))
		for _, piece := range c.pieces {
			banned := j.Banned()
			for id, text := range texts[:len(texts)-1] {
				if want := !j.accepts([]byte(text)); banned[id] != want {
					t.Fatalf("%s: before %q: id %q banned %v, a run says %v", c.schema, piece, text, banned[id], want)
				}
			}
			id := slices.Index(texts, piece)
			if banned[id] {
				t.Fatalf("%s: %q banned where the instance goes on with it", c.schema, piece)
			}
			j.Picked(id)
		}
		if !j.Done() {
			t.Errorf("%s: the instance is written but the constraint is not done", c.schema)
		}
	}
}

// FuzzCompileSchema: a schema is the API's input, written by anyone: whatever
// it is, compiling it and holding text to it never fails but with an error,
// and an instance the constraint closes is JSON.
func FuzzCompileSchema(f *testing.F) {
	for _, s := range testSchemas {
		f.Add(s, `{"name":"A","age":1,"ok":true}`)
	}
	f.Add(`{"$defs":{"a":{"$ref":"#/$defs/a"}},"type":"object","properties":{"x":{"$ref":"#/$defs/a"}}}`, `{"x":1}`)
	f.Add(`{"type":"object","properties":{"a":{"anyOf":[{"enum":["x"]},{"enum":["y"]},{"type":"null"}]}}}`, `{"a":"y"}`)
	f.Add(`{"$ref":"#"}`, `{}`)
	f.Add(`{"type":"object","properties":{"a":{"type":"string","pattern":"^(x|y+)z?$","maxLength":3}}}`, `{"a":"yyz"}`)
	f.Add(`{"type":"object","properties":{"a":{"type":"number","minimum":-1.5,"exclusiveMaximum":2}}}`, `{"a":-1.25}`)
	f.Add(`{"type":"object","properties":{"a":{"anyOf":[{"type":"object","properties":{"k":{"const":1},"x":{}},"required":["k"]},`+
		`{"type":"object","properties":{"k":{"enum":[2,"b"]},"y":{"type":"null"}}}]}}}`, `{"a":{"y":null,"k":"b"}}`)
	f.Fuzz(func(t *testing.T, schema, text string) {
		s, err := CompileSchema([]byte(schema))
		if err != nil {
			return
		}
		if ok, closed := SchemaPrefix(s, text); ok && closed && !json.Valid([]byte(text)) {
			t.Errorf("schema %s: %q closed but is not JSON", schema, text)
		}
	})
}

// TestBannedMatchesAcceptsWalks: random walks through each test schema's
// language, as JSON and as a call's arguments — each step a random id among
// those Banned allows — over a vocabulary cut from its instances (and pieces
// of every kind), where Banned must equal, id for id, what a run of the
// automaton says: the fast paths (plain text in a string, a maxLength's
// budget, a pattern's automaton, the first two bytes' groups) decide as the
// automaton would.
func TestBannedMatchesAcceptsWalks(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	for _, name := range slices.Sorted(maps.Keys(testSchemas)) {
		root, ref := refOf(t, name)
		s := compileTest(t, name)
		pieces := []string{`"`, `\`, `\n`, `\u00e9`, ` `, `,`, `:`, `{`, `}`, `[`, `]`, `é`, "\xc3", "\xa9", `a`, `ab`, `abc`, `-`, `1`, `12`, `.`, `e`,
			`null`, `None`, `true`, `false`, `":`, `",`, `"}`, `AB`, `-12`, `3"`, `aé`, `x"`, `<`, `<tool_call|`, ">", "\u2713"}
		cut := func(text string) { // into pieces of 1 to 4 bytes
			for i := 0; i < len(text); {
				n := min(1+rng.IntN(4), len(text)-i)
				pieces = append(pieces, text[i:i+n])
				i += n
			}
		}
		for range 30 {
			v := ref.generate(rng, root, 0)
			cut(canonical(v))
			cut(callText("f", v))
		}
		pieces = slices.DeleteFunc(pieces, func(p string) bool { return strings.ContainsAny(p, CallQuote+CallStart+CallEnd) }) // (the control tokens are ids of their own)
		slices.Sort(pieces)
		pieces = slices.Compact(pieces)
		texts := append(pieces, CallQuote, CallStart, CallEnd, "<eos>")
		special := make([]bool, len(texts))
		for i := len(pieces); i < len(texts); i++ {
			special[i] = true
		}
		v := NewJSONVocab(texts, special, []int{len(texts) - 1})
		for _, as := range []string{"JSON", "call"} {
			steps, rules := 0, map[string]int{}
			for walk := range 20 {
				var h walker = v.ObjectOf(s)
				if as == "call" {
					calls, err := v.Calls(CallRules{Tools: []CallTool{{Name: "f", Schema: s}}, Only: true, Single: true})
					if err != nil {
						t.Fatal(err)
					}
					calls.Opening([]int{slices.Index(texts, CallStart)})
					calls.advance([]byte("call:f"))
					h = calls
				}
				written := ""
				for step := range 80 {
					switch r := h.plainRule(); {
					case !r.inString:
						rules["pairs"]++
					case r.pat != nil:
						rules["pattern"]++
					case r.budget >= 0:
						rules["budget"]++
					default:
						rules["plain"]++
					}
					banned := h.Banned()
					var open []int
					for id, text := range texts[:len(texts)-1] {
						if want := !h.accepts([]byte(text)); banned[id] != want {
							t.Fatalf("%s as %s, walk %d step %d (after %q): id %q banned %v, a run says %v", name, as, walk, step, written, text, banned[id], want)
						}
						if !banned[id] {
							open = append(open, id)
						}
					}
					if len(open) == 0 || h.Done() {
						break
					}
					id := open[rng.IntN(len(open))]
					h.Picked(id)
					written += texts[id]
					steps++
				}
			}
			t.Logf("%s as %s: %d steps, bans decided by %v", name, as, steps, rules)
		}
	}
}

// walker is a constraint as TestBannedMatchesAcceptsWalks walks it.
type walker interface {
	Banned() []bool
	Picked(id int)
	Done() bool
	accepts(text []byte) bool
	plainRule() plainRule
}

// TestPatternDFAKeepsItsBound: a pattern whose automaton has more sets than
// a generation keeps as states (the 13th character from the end an a:
// thousands) is still held exactly — bans equal a run's answer at each step of
// a long walk — and keeps at most maxDFAStates states.
func TestPatternDFAKeepsItsBound(t *testing.T) {
	s, err := CompileSchema([]byte(`{"type":"object","properties":{"s":{"type":"string","pattern":"^(a|b)*a(a|b){12}$"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{`{"s":"`, `"`, `"}`, `a`, `b`, `ab`, `ba`, `aab`, `bba`, `abab`, `bbbb`, `aaaa`, `abba`, `baab`, "é", `c`, `<eos>`}
	special := make([]bool, len(texts))
	special[len(texts)-1] = true
	v := NewJSONVocab(texts, special, []int{len(texts) - 1})
	j := v.ObjectOf(s)
	j.Picked(0)
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 3000 {
		banned := j.Banned()
		var open []int
		for id, text := range texts[:len(texts)-1] {
			if want := !j.accepts([]byte(text)); banned[id] != want {
				t.Fatalf("step %d: id %q banned %v, a run says %v", step, text, banned[id], want)
			}
			if !banned[id] && !strings.HasPrefix(text, `"`) {
				open = append(open, id)
			}
		}
		j.Picked(open[rng.IntN(len(open))])
	}
	for p, d := range j.pats {
		if len(d.sets) > maxDFAStates {
			t.Errorf("%s: %d states kept", p.src, len(d.sets))
		}
		t.Logf("%s: %d states", p.src, len(d.sets))
	}
}
