package corpus

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// DictStats counts what one dictionary contributed.
type DictStats struct {
	Name        string `json:"name"`
	Headwords   int    `json:"headwords"`   // index lines
	Definitions int    `json:"definitions"` // distinct definitions the index points to
	Entries     int    `json:"entries"`     // added to the catalog (usable, title not seen before)
	Skipped     int    `json:"skipped"`     // metadata, empty after cleaning, or a duplicate title
}

// AddDictionary parses one dictd dictionary (its .index and uncompressed .dict
// data) into the catalog, in the dictionary's own order.
func (c *Catalog) AddDictionary(name string, index io.Reader, data []byte) (DictStats, error) {
	defs, st, err := ReadDictionary(name, index, data, func(raw string) (Entry, bool) { return ParseEntry(name, raw) })
	if err != nil {
		return st, err
	}
	for _, d := range defs {
		if c.Add(d.Entry, d.Headwords...) {
			st.Entries++
		} else {
			st.Skipped++
		}
	}
	return st, nil
}

// ParsedDefinition is a parsed dictionary definition and the headwords that point to it.
type ParsedDefinition struct {
	Entry
	Headwords []string
}

// ReadDictionary parses the definitions of one dictd dictionary with parse, in
// the order they lie in data (index lines that point to the same bytes are one
// definition with several headwords). st counts headwords and definitions, and
// as skipped those parse refused; Entries is left for the caller.
func ReadDictionary(name string, index io.Reader, data []byte, parse func(raw string) (Entry, bool)) ([]ParsedDefinition, DictStats, error) {
	st := DictStats{Name: name}
	idx, err := ParseIndex(index)
	if err != nil {
		return nil, st, fmt.Errorf("%s: %w", name, err)
	}
	st.Headwords = len(idx)
	type def struct {
		IndexEntry
		headwords []string
	}
	byPos := map[[2]int64]*def{}
	var defs []*def
	for _, e := range idx {
		k := [2]int64{e.Offset, e.Length}
		if d, ok := byPos[k]; ok {
			d.headwords = append(d.headwords, e.Headword)
			continue
		}
		d := &def{IndexEntry: e, headwords: []string{e.Headword}}
		byPos[k] = d
		defs = append(defs, d)
	}
	sort.SliceStable(defs, func(i, j int) bool { return defs[i].Offset < defs[j].Offset })
	st.Definitions = len(defs)
	var out []ParsedDefinition
	for _, d := range defs {
		raw, err := Definition(data, d.IndexEntry)
		if err != nil {
			return nil, st, fmt.Errorf("%s: %w", name, err)
		}
		if e, ok := parse(raw); ok {
			out = append(out, ParsedDefinition{Entry: e, Headwords: d.headwords})
		} else {
			st.Skipped++
		}
	}
	return out, st, nil
}

// AddDictionaryFiles reads DIR/NAME.index and DIR/NAME.dict.dz (or an
// uncompressed DIR/NAME.dict) into the catalog.
func (c *Catalog) AddDictionaryFiles(dir, name string) (DictStats, error) {
	idx, data, err := openDictionary(dir, name)
	if err != nil {
		return DictStats{Name: name}, err
	}
	defer idx.Close()
	return c.AddDictionary(name, idx, data)
}

// openDictionary opens DIR/NAME.index and reads the uncompressed data of
// DIR/NAME.dict.dz (or DIR/NAME.dict).
func openDictionary(dir, name string) (io.ReadCloser, []byte, error) {
	idx, err := os.Open(filepath.Join(dir, name+".index"))
	if err != nil {
		return nil, nil, fmt.Errorf("open dictionary %s: %w", name, err)
	}
	var data []byte
	if f, err := os.Open(filepath.Join(dir, name+".dict.dz")); err == nil {
		data, err = ReadDict(f)
		f.Close()
		if err != nil {
			idx.Close()
			return nil, nil, fmt.Errorf("%s.dict.dz: %w", filepath.Join(dir, name), err)
		}
	} else if data, err = os.ReadFile(filepath.Join(dir, name+".dict")); err != nil {
		idx.Close()
		return nil, nil, fmt.Errorf("open dictionary %s: no %s.dict.dz or %s.dict in %s", name, name, name, dir)
	}
	return idx, data, nil
}

// hasDictionaries reports whether dir holds NAME.index and NAME.dict(.dz) for every name.
func hasDictionaries(dir string, names []string) bool {
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n+".index")); err != nil {
			return false
		}
		_, errDz := os.Stat(filepath.Join(dir, n+".dict.dz"))
		_, errPlain := os.Stat(filepath.Join(dir, n+".dict"))
		if errDz != nil && errPlain != nil {
			return false
		}
	}
	return true
}
