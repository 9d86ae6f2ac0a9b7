package hub

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestRemoteFile reads a file by ranges: the bytes at any offset, across chunks and
// to its end (io.EOF past it), each chunk fetched once; a server that answers a range
// with the whole file gives a *RangeError past the first chunk, as a failing server
// does.
func TestRemoteFile(t *testing.T) {
	data := make([]byte, 3*remoteChunk+12345)
	rand.New(rand.NewSource(1)).Read(data)
	var requests atomic.Int64
	ranges := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path == "/broken" {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		if ranges {
			http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(data))
			return
		}
		w.Write(data) // Range ignored
	}))
	defer srv.Close()
	c := &Client{Endpoint: srv.URL, HTTP: srv.Client()}
	f := c.OpenRemote(context.Background(), srv.URL+"/f", int64(len(data)))
	for _, at := range []struct{ off, n int }{{0, 10}, {remoteChunk - 5, 10}, {2*remoteChunk + 7, remoteChunk + 100}, {len(data) - 3, 3}, {5, 4}} {
		got := make([]byte, at.n)
		if n, err := f.ReadAt(got, int64(at.off)); n != at.n || err != nil || !bytes.Equal(got, data[at.off:at.off+at.n]) {
			t.Errorf("ReadAt(%d, %d): %d, %v", at.off, at.n, n, err)
		}
	}
	if n, err := f.ReadAt(make([]byte, 10), int64(len(data)-4)); n != 4 || err != io.EOF {
		t.Errorf("past the end: %d, %v", n, err)
	}
	if requests.Load() != 4 || f.Fetched() != int64(len(data)) {
		t.Errorf("%d requests, %d bytes fetched; want each of the 4 chunks once", requests.Load(), f.Fetched())
	}

	ranges = false
	whole := c.OpenRemote(context.Background(), srv.URL+"/f", int64(len(data)))
	got := make([]byte, 100)
	if _, err := whole.ReadAt(got, 0); err != nil || !bytes.Equal(got, data[:100]) {
		t.Errorf("the start from a whole file: %v", err)
	}
	var re *RangeError
	if _, err := whole.ReadAt(got, remoteChunk+1); !errors.As(err, &re) {
		t.Errorf("past the first chunk of a whole file: %v, want a RangeError", err)
	}
	broken := c.OpenRemote(context.Background(), srv.URL+"/broken", int64(len(data)))
	if _, err := broken.ReadAt(got, 0); !errors.As(err, &re) {
		t.Errorf("a failing server: %v, want a RangeError", err)
	}
}
