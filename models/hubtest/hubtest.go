// Package hubtest is a local stand-in for the Hugging Face Hub for tests: it
// serves the revision API, resolve URLs (302 to a "CDN" path for LFS files, with
// X-Linked-Etag / X-Linked-Size / ETag), Range and If-Range, 401 for gated repos
// without the token and 404 for unknown ones, and can inject faults: connections
// cut at given offsets, stalls, corrupted bodies and throttling. It counts the
// body bytes it sends per file and records where each body request starts.
package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// File is one file of a fake repo.
type File struct {
	Name    string
	Data    []byte
	LFS     bool // served through the CDN redirect, listed with lfs.sha256
	Corrupt bool // the body served differs from the listed hash (one byte flipped)
	// Changed makes the resolve redirect announce another version (X-Linked-Etag),
	// as when a file is replaced on the Hub after the file list was fetched.
	Changed bool
}

// SHA256 is the hex sha256 of the file's listed content.
func (f *File) SHA256() string { s := sha256.Sum256(f.Data); return hex.EncodeToString(s[:]) }

// GitOID is the git blob sha1 of the content.
func (f *File) GitOID() string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(f.Data))
	h.Write(f.Data)
	return hex.EncodeToString(h.Sum(nil))
}

// Repo is a fake model repo.
type Repo struct {
	Files  []*File
	Token  string // non-empty: gated, requests need "Authorization: Bearer Token"
	Commit string
}

// Hub is the fake server.
type Hub struct {
	*httptest.Server
	mu    sync.Mutex
	repos map[string]*Repo
	sent  map[string]int64 // body bytes sent per file name
	reqs  map[string]int   // body requests per file name
	// starts holds each body request's first byte, per file name, in order.
	starts map[string][]int64

	// Fault, if set, is asked before each body: for file name, the n-th request
	// (0-based) starting at byte start, how many bytes to send before cutting the
	// connection (-1: no cut) and whether to stall after them instead of cutting.
	Fault func(name string, n int, start int64) (cutAfter int64, stall bool)
	// BytesPerSec throttles bodies (0: unthrottled).
	BytesPerSec int64
}

// New starts a fake hub.
func New() *Hub {
	h := &Hub{repos: map[string]*Repo{}, sent: map[string]int64{}, reqs: map[string]int{}, starts: map[string][]int64{}}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	return h
}

// Add registers a repo.
func (h *Hub) Add(name string, r *Repo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Commit == "" {
		r.Commit = strings.Repeat("c0ffee", 6) + "abcd"
	}
	h.repos[name] = r
}

// SetBytesPerSec throttles bodies from now on (0: unthrottled); safe while serving.
func (h *Hub) SetBytesPerSec(n int64) {
	h.mu.Lock()
	h.BytesPerSec = n
	h.mu.Unlock()
}

// Sent is the number of body bytes sent for a file so far.
func (h *Hub) Sent(name string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sent[name]
}

// Requests is the number of body requests for a file so far.
func (h *Hub) Requests(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reqs[name]
}

// Starts is the first byte each body request for a file asked for, in the order
// they came. A client that resumes asks for the bytes after what it kept; this
// says so exactly, where Sent also counts what the hub wrote into a connection
// the client had already dropped (a pause, a kill, a stall), which on a busy
// machine can be megabytes waiting in the sockets' buffers.
func (h *Hub) Starts(name string) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int64(nil), h.starts[name]...)
}

// Resumed checks that every body request for a file after its first resumed
// from what the client kept: none asked from byte 0 again, nor from before the
// request it followed. It returns how many requests resumed, and an error
// naming the first that did not.
func (h *Hub) Resumed(name string) (int, error) { return CheckResumed(name, h.Starts(name)) }

// CheckResumed is Resumed for any server that records where a file's body
// requests start (starts, in the order they came; gpuruntimetest's index is one).
func CheckResumed(name string, starts []int64) (int, error) {
	for i := 1; i < len(starts); i++ {
		if starts[i] == 0 || starts[i] < starts[i-1] {
			return i - 1, fmt.Errorf("%s: request %d of %v did not resume from the bytes kept", name, i, starts)
		}
	}
	return max(len(starts)-1, 0), nil
}

func (h *Hub) repo(w http.ResponseWriter, r *http.Request, name string) *Repo {
	h.mu.Lock()
	rp := h.repos[name]
	h.mu.Unlock()
	if rp == nil {
		w.Header().Set("X-Error-Message", "Repository not found")
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
		return nil
	}
	if rp.Token != "" && r.Header.Get("Authorization") != "Bearer "+rp.Token {
		w.Header().Set("X-Error-Message", "Access to model "+name+" is restricted.")
		http.Error(w, `{"error":"Access restricted"}`, http.StatusUnauthorized)
		return nil
	}
	return rp
}

func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/api/models/"):
		// /api/models/{owner}/{name}/revision/{rev}
		parts := strings.Split(strings.TrimPrefix(p, "/api/models/"), "/")
		if len(parts) != 4 || parts[2] != "revision" {
			http.NotFound(w, r)
			return
		}
		rp := h.repo(w, r, parts[0]+"/"+parts[1])
		if rp == nil {
			return
		}
		type lfs struct {
			SHA256      string `json:"sha256"`
			Size        int64  `json:"size"`
			PointerSize int    `json:"pointerSize"`
		}
		type sib struct {
			RFilename string `json:"rfilename"`
			Size      int64  `json:"size"`
			BlobID    string `json:"blobId"`
			LFS       *lfs   `json:"lfs,omitempty"`
		}
		out := struct {
			ID       string `json:"id"`
			SHA      string `json:"sha"`
			Siblings []sib  `json:"siblings"`
		}{ID: parts[0] + "/" + parts[1], SHA: rp.Commit}
		for _, f := range rp.Files {
			s := sib{RFilename: f.Name, Size: int64(len(f.Data)), BlobID: f.GitOID()}
			if f.LFS {
				s.LFS = &lfs{SHA256: f.SHA256(), Size: int64(len(f.Data)), PointerSize: 134}
			}
			out.Siblings = append(out.Siblings, s)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	case strings.HasPrefix(p, "/cdn/"):
		// /cdn/{repo-with-dashes}/{file} — the signed URL needs no token.
		rest := strings.TrimPrefix(p, "/cdn/")
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		h.mu.Lock()
		rp := h.repos[strings.Replace(rest[:i], "--", "/", 1)]
		h.mu.Unlock()
		if rp == nil {
			http.NotFound(w, r)
			return
		}
		f := find(rp, rest[i+1:])
		if f == nil {
			http.NotFound(w, r)
			return
		}
		h.body(w, r, f, `"`+f.SHA256()+`"`)
	default:
		// /{owner}/{name}/resolve/{rev}/{file...}
		parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 5)
		if len(parts) != 5 || parts[2] != "resolve" {
			http.NotFound(w, r)
			return
		}
		repo := parts[0] + "/" + parts[1]
		rp := h.repo(w, r, repo)
		if rp == nil {
			return
		}
		if parts[3] != rp.Commit && parts[3] != "main" {
			http.Error(w, "revision not found", http.StatusNotFound)
			return
		}
		f := find(rp, parts[4])
		if f == nil {
			w.Header().Set("X-Error-Code", "EntryNotFound")
			http.Error(w, "Entry not found", http.StatusNotFound)
			return
		}
		w.Header().Set("X-Repo-Commit", rp.Commit)
		if f.LFS {
			linked := f.SHA256()
			if f.Changed {
				linked = strings.Repeat("0", 64)
			}
			w.Header().Set("X-Linked-Etag", `"`+linked+`"`)
			w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.Data)))
			w.Header().Set("ETag", `"`+f.GitOID()+`"`)
			w.Header().Set("Location", "/cdn/"+strings.Replace(repo, "/", "--", 1)+"/"+f.Name+"?X-Amz-Signature=fake")
			w.WriteHeader(http.StatusFound)
			return
		}
		h.body(w, r, f, `"`+f.GitOID()+`"`)
	}
}

func find(rp *Repo, name string) *File {
	for _, f := range rp.Files {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// body serves f's content honouring Range and If-Range, with the faults.
func (h *Hub) body(w http.ResponseWriter, r *http.Request, f *File, etag string) {
	data := f.Data
	if f.Corrupt {
		data = append([]byte(nil), f.Data...)
		data[len(data)/2] ^= 0xFF
	}
	size := int64(len(data))
	start := int64(0)
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("ETag", etag)
	status := http.StatusOK
	if rg := r.Header.Get("Range"); rg != "" {
		ifr := r.Header.Get("If-Range")
		if ifr == "" || ifr == etag {
			var end int64 = -1
			spec := strings.TrimPrefix(rg, "bytes=")
			a, b, _ := strings.Cut(spec, "-")
			s, err := strconv.ParseInt(a, 10, 64)
			if err != nil || s > size {
				w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
				w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
				return
			}
			if b != "" {
				end, _ = strconv.ParseInt(b, 10, 64)
			}
			if s == size {
				w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
				w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
				return
			}
			start = s
			if end >= 0 && end < size-1 {
				data = data[:end+1]
			}
			status = http.StatusPartialContent
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, int64(len(data))-1, size))
		}
	}
	body := data[start:]
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	h.mu.Lock()
	n := h.reqs[f.Name]
	h.reqs[f.Name]++
	h.starts[f.Name] = append(h.starts[f.Name], start)
	fault := h.Fault
	bps := h.BytesPerSec
	h.mu.Unlock()
	cut, stall := int64(-1), false
	if fault != nil {
		cut, stall = fault(f.Name, n, start)
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	send := body
	if cut >= 0 && cut < int64(len(body)) {
		send = body[:cut]
	}
	fl, _ := w.(http.Flusher)
	chunk := 32 << 10
	if bps > 0 && int64(chunk) > bps/20 {
		chunk = int(bps / 20)
		if chunk < 1 {
			chunk = 1
		}
	}
	for len(send) > 0 {
		k := chunk
		if k > len(send) {
			k = len(send)
		}
		m, err := w.Write(send[:k])
		h.mu.Lock()
		h.sent[f.Name] += int64(m)
		h.mu.Unlock()
		if err != nil {
			return
		}
		send = send[k:]
		if bps > 0 {
			if fl != nil {
				fl.Flush()
			}
			select {
			case <-time.After(time.Duration(int64(k) * int64(time.Second) / bps)):
			case <-r.Context().Done():
				return
			}
		}
	}
	if fl != nil {
		fl.Flush()
	}
	if cut >= 0 && cut < int64(len(body)) {
		if stall {
			<-r.Context().Done() // hold the connection open, sending nothing
			return
		}
		// Cut: hijack and close so the client sees a truncated body.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
	}
}
