package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// RemoteFile reads a file on the Hub by byte ranges (HTTP Range requests), a chunk
// at a time, keeping what it has read: what is needed of a large file before it is
// downloaded — a GGUF's header and the few tensors its configuration reads — at the
// cost of a few requests. A read the server cannot answer with the range asked is a
// *RangeError (the network, the server: not the file's fault).
type RemoteFile struct {
	c    *Client
	ctx  context.Context
	url  string
	size int64

	mu      sync.Mutex
	chunks  map[int64][]byte // by chunk index
	fetched int64
}

// remoteChunk is how much one request reads: a GGUF's header with a 262,144-token
// vocabulary is about 6 MB.
const remoteChunk = 4 << 20

// RangeError is a failed read of a RemoteFile.
type RangeError struct{ Err error }

func (e *RangeError) Error() string { return "read by ranges: " + e.Err.Error() }
func (e *RangeError) Unwrap() error { return e.Err }

// OpenRemote is the file at url (ResolveURL's), size bytes long, read by ranges.
func (c *Client) OpenRemote(ctx context.Context, url string, size int64) *RemoteFile {
	return &RemoteFile{c: c, ctx: ctx, url: url, size: size, chunks: map[int64][]byte{}}
}

// Fetched is how many bytes the file's reads have fetched so far.
func (r *RemoteFile) Fetched() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fetched
}

// ReadAt reads len(p) bytes at off (io.ReaderAt), fetching the chunks they lie in.
func (r *RemoteFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= r.size {
			return n, io.EOF
		}
		chunk, err := r.chunk(at / remoteChunk)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], chunk[at%remoteChunk:])
	}
	return n, nil
}

// chunk is the i'th chunk of the file, fetched once.
func (r *RemoteFile) chunk(i int64) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.chunks[i]; ok {
		return b, nil
	}
	start := i * remoteChunk
	end := min(start+remoteChunk, r.size) // exclusive
	req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return nil, &RangeError{err}
	}
	r.c.Authorize(req)
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", start, end-1))
	resp, err := r.c.HTTP.Do(req)
	if err != nil {
		return nil, &RangeError{err}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent:
	case resp.StatusCode == http.StatusOK && start == 0: // the whole file: its start will do
	case resp.StatusCode == http.StatusOK:
		return nil, &RangeError{errors.New("the server sends whole files only")}
	default:
		return nil, &RangeError{StatusError(resp)}
	}
	b := make([]byte, end-start)
	if _, err := io.ReadFull(resp.Body, b); err != nil {
		return nil, &RangeError{fmt.Errorf("bytes %d-%d: %w", start, end-1, err)}
	}
	r.chunks[i] = b
	r.fetched += int64(len(b))
	return b, nil
}
