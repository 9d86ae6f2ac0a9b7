// Package mapfile maps a model file into memory read-only, so its tensors are views
// of the page cache instead of copies on the heap: a model opens in the time its pages
// take to arrive (none, when the file is in the page cache from the last run), and a
// file read once is not held twice, in the cache and in the process.
//
// On Unix it is mmap(2) with PROT_READ and MAP_SHARED, through package syscall; on
// Windows a read-only file mapping and a view of it (CreateFileMapping, MapViewOfFile:
// x/sys/windows); writing to a view faults. A file mapped on Windows cannot be
// deleted, renamed over or truncated until every process mapping it lets it go: the
// app unloads its own model before the Library deletes or moves it, and a model
// another process has mapped (a `darkroom serve` beside the app) is renamed out of
// the Library before its files are removed (models/store's Delete), so a refused
// delete leaves it whole. (golang.org/x/exp/mmap maps too, but gives an io.ReaderAt,
// not the []byte views the kernels multiply in place.) Windows had read every model
// file onto the heap until this was run there (under Wine): 15 GB read at each start,
// held twice while the system's file cache kept it too.
//
// DARKROOM_NO_MMAP=1 in the environment turns mapping off, as llama.cpp's --no-mmap
// does: every model file is then read onto the heap (for a file system
// whose mappings misbehave — some network shares — and for the tests, which run the
// reading way of loading here).
package mapfile

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Map maps f's first size bytes read-only. unmap releases the mapping; the views
// taken from data are invalid after it. f may be closed once Map returns.
func Map(f *os.File, size int64) (data []byte, unmap func() error, err error) {
	if size <= 0 {
		return nil, nil, errors.New("map: an empty file")
	}
	if size > math.MaxInt {
		return nil, nil, fmt.Errorf("map: %d bytes are more than this system can address", size)
	}
	if Off() {
		return nil, nil, errors.New("map: mapping is turned off (DARKROOM_NO_MMAP)")
	}
	return mapFile(f, int(size))
}

// Off reports whether DARKROOM_NO_MMAP turns mapping off (read at each call).
func Off() bool {
	v := os.Getenv("DARKROOM_NO_MMAP")
	return v != "" && v != "0"
}

// MapOrRead is Map, or where mapping fails (an unsupported system, a file system that
// does not map, an empty file) f's first size bytes read into memory, with unmap nil.
// read, if not nil, hears the bytes read so far as they arrive, readChunk at a time (a
// 5 GB shard takes a minute from a hard disk); a mapping reads nothing now and says
// nothing.
func MapOrRead(f *os.File, size int64, read func(done int64)) (data []byte, unmap func() error, err error) {
	if data, unmap, err = Map(f, size); err == nil {
		return data, unmap, nil
	}
	if size < 0 || size > math.MaxInt {
		return nil, nil, err
	}
	data = make([]byte, size) // one allocation, not io.ReadAll's growing copies
	sr := io.NewSectionReader(f, 0, size)
	for done := int64(0); done < size; {
		n := min(readChunk, size-done)
		if _, err := io.ReadFull(sr, data[done:done+n]); err != nil {
			return nil, nil, fmt.Errorf("read: %w", err)
		}
		if done += n; read != nil {
			read(done)
		}
	}
	return data, nil, nil
}

// readChunk is how much MapOrRead reads between its reports.
const readChunk = 64 << 20
