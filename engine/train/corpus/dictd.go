package corpus

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
)

// IndexEntry is one line of a dictd .index file: a headword and where its
// definition lies in the uncompressed .dict data.
type IndexEntry struct {
	Headword       string
	Offset, Length int64
}

// ParseIndex reads a dictd .index file: one "headword TAB offset TAB length" per
// line, offset and length in dictd's base64 digits (A–Z a–z 0–9 + /, most
// significant first).
func ParseIndex(r io.Reader) ([]IndexEntry, error) {
	var out []IndexEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if text == "" {
			continue
		}
		f := strings.Split(text, "\t")
		if len(f) < 3 {
			return nil, fmt.Errorf("index line %d: want 3 tab-separated fields, got %d", line, len(f))
		}
		off, err := decodeB64(f[1])
		if err != nil {
			return nil, fmt.Errorf("index line %d (%q): offset: %w", line, f[0], err)
		}
		n, err := decodeB64(f[2])
		if err != nil {
			return nil, fmt.Errorf("index line %d (%q): length: %w", line, f[0], err)
		}
		out = append(out, IndexEntry{Headword: f[0], Offset: off, Length: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	return out, nil
}

const b64Digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// decodeB64 decodes a dictd base64 number.
func decodeB64(s string) (int64, error) {
	if s == "" || len(s) > 10 {
		return 0, fmt.Errorf("bad base64 number %q", s)
	}
	var v int64
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(b64Digits, s[i])
		if d < 0 {
			return 0, fmt.Errorf("bad base64 digit %q in %q", s[i], s)
		}
		v = v*64 + int64(d)
	}
	return v, nil
}

// encodeB64 is decodeB64's inverse (used by tests to write fixtures).
func encodeB64(v int64) string {
	if v == 0 {
		return "A"
	}
	var b []byte
	for v > 0 {
		b = append([]byte{b64Digits[v%64]}, b...)
		v /= 64
	}
	return string(b)
}

// ReadDict returns the uncompressed data of a dictd .dict.dz file. A dictzip
// file is a gzip stream whose extra field indexes its chunks for random access;
// reading it as one plain gzip stream gives the same bytes. A plain (.dict)
// file can be read with io.ReadAll instead.
func ReadDict(r io.Reader) ([]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("open dictzip: %w", err)
	}
	defer zr.Close()
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("decompress dictzip: %w", err)
	}
	return b, nil
}

// Definition returns the bytes an index entry points to.
func Definition(data []byte, e IndexEntry) (string, error) {
	if e.Offset < 0 || e.Length < 0 || e.Offset+e.Length > int64(len(data)) {
		return "", fmt.Errorf("entry %q: offset %d + length %d outside the %d-byte dictionary", e.Headword, e.Offset, e.Length, len(data))
	}
	return string(data[e.Offset : e.Offset+e.Length]), nil
}
