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
	st := DictStats{Name: name}
	idx, err := ParseIndex(index)
	if err != nil {
		return st, fmt.Errorf("%s: %w", name, err)
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
	for _, d := range defs {
		raw, err := Definition(data, d.IndexEntry)
		if err != nil {
			return st, fmt.Errorf("%s: %w", name, err)
		}
		e, ok := ParseEntry(name, raw)
		if ok && c.Add(e, d.headwords...) {
			st.Entries++
		} else {
			st.Skipped++
		}
	}
	return st, nil
}

// AddDictionaryFiles reads DIR/NAME.index and DIR/NAME.dict.dz (or an
// uncompressed DIR/NAME.dict) into the catalog.
func (c *Catalog) AddDictionaryFiles(dir, name string) (DictStats, error) {
	indexPath := filepath.Join(dir, name+".index")
	idx, err := os.Open(indexPath)
	if err != nil {
		return DictStats{Name: name}, fmt.Errorf("open dictionary %s: %w", name, err)
	}
	defer idx.Close()
	var data []byte
	if f, err := os.Open(filepath.Join(dir, name+".dict.dz")); err == nil {
		data, err = ReadDict(f)
		f.Close()
		if err != nil {
			return DictStats{Name: name}, fmt.Errorf("%s.dict.dz: %w", filepath.Join(dir, name), err)
		}
	} else if data, err = os.ReadFile(filepath.Join(dir, name+".dict")); err != nil {
		return DictStats{Name: name}, fmt.Errorf("open dictionary %s: no %s.dict.dz or %s.dict in %s", name, name, name, dir)
	}
	return c.AddDictionary(name, idx, data)
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
