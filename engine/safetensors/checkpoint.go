package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/darkroomlabs/darkroom/engine/atomicfile"
)

// File names of a Hugging Face checkpoint.
const (
	SingleFile = "model.safetensors"
	IndexFile  = "model.safetensors.index.json"
)

// Index is model.safetensors.index.json.
type Index struct {
	Metadata  map[string]any    `json:"metadata,omitempty"`
	WeightMap map[string]string `json:"weight_map"`
}

// Checkpoint is a set of safetensors files seen as one name space: either a single
// model.safetensors or the shards listed by model.safetensors.index.json.
type Checkpoint struct {
	// Name is the file that lists the tensors (IndexFile or SingleFile), for errors.
	Name  string
	Files []*File
	where map[string]*File
	read  func(string) ([]byte, error)
}

// ReadFile reads another file of the checkpoint's directory (config.json,
// hf_quant_config.json, …) through the same file system the checkpoint came from.
// A missing file is an error satisfying errors.Is(err, fs.ErrNotExist).
func (c *Checkpoint) ReadFile(name string) ([]byte, error) {
	if c.read == nil || name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return nil, fmt.Errorf("read %q: %w", name, fs.ErrNotExist)
	}
	return c.read(name)
}

// OpenCheckpoint opens the checkpoint in dir.
func OpenCheckpoint(dir string) (*Checkpoint, error) { return OpenCheckpointProgress(dir, nil) }

// OpenCheckpointProgress is OpenCheckpoint, with progress, if not nil, hearing the
// bytes of the checkpoint's files read into memory so far of all of theirs, where they
// are read rather than mapped (mapfile: with DARKROOM_NO_MMAP, or where mapping fails): the int4
// 26B's 15 GB take minutes from a hard disk. Mapped files report nothing.
func OpenCheckpointProgress(dir string, progress func(done, total int64)) (*Checkpoint, error) {
	var total, before int64 // all the files' bytes, and those of the files opened
	size := map[string]int64{}
	var opening func([]string) // sizes the files, for a progress to count against
	if progress != nil {
		opening = func(names []string) {
			for _, n := range names {
				if st, err := os.Stat(filepath.Join(dir, n)); err == nil {
					size[n], total = st.Size(), total+st.Size()
				}
			}
		}
	}
	return openCheckpoint(func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, name)) },
		func(name string) (*File, error) {
			var read func(int64)
			if progress != nil {
				read = func(done int64) { progress(before+done, total) }
			}
			f, err := openCounted(filepath.Join(dir, name), read)
			before += size[name]
			return f, err
		}, opening)
}

// OpenCheckpointFS opens the checkpoint in directory dir of fsys.
func OpenCheckpointFS(fsys fs.FS, dir string) (*Checkpoint, error) {
	return openCheckpoint(func(name string) ([]byte, error) { return fs.ReadFile(fsys, path.Join(dir, name)) },
		func(name string) (*File, error) {
			b, err := fs.ReadFile(fsys, path.Join(dir, name))
			if err != nil {
				return nil, err
			}
			return FromBytes(name, b)
		}, nil)
}

// openCheckpoint opens the checkpoint whose files read and open reach: the index's
// shards, else the single file. opening, if not nil, hears the files' names before
// they are opened.
func openCheckpoint(read func(string) ([]byte, error), open func(string) (*File, error), opening func([]string)) (*Checkpoint, error) {
	ck := &Checkpoint{where: map[string]*File{}, read: read}
	ib, err := read(IndexFile)
	if errors.Is(err, fs.ErrNotExist) {
		if opening != nil {
			opening([]string{SingleFile})
		}
		f, err := open(SingleFile)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("no %s or %s in the model directory", SingleFile, IndexFile)
			}
			return nil, fmt.Errorf("%s: %w", SingleFile, err)
		}
		ck.Name = SingleFile
		ck.add(f)
		return ck, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", IndexFile, err)
	}
	ck.Name = IndexFile
	var idx Index
	if err := json.Unmarshal(ib, &idx); err != nil {
		return nil, fmt.Errorf("%s: malformed: %v", IndexFile, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("%s: weight_map is missing or empty", IndexFile)
	}
	var shards []string
	seen := map[string]bool{}
	for _, s := range idx.WeightMap {
		if !seen[s] {
			if s == "" || strings.Contains(s, "/") || strings.Contains(s, `\`) || s == "." || s == ".." {
				return nil, fmt.Errorf("%s: bad shard file name %q", IndexFile, s)
			}
			seen[s] = true
			shards = append(shards, s)
		}
	}
	sort.Strings(shards)
	if opening != nil {
		opening(shards)
	}
	files := map[string]*File{}
	for _, s := range shards {
		f, err := open(s)
		if err != nil {
			ck.Close()
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s: listed in %s but missing", s, IndexFile)
			}
			if strings.HasPrefix(err.Error(), s) {
				return nil, err
			}
			return nil, fmt.Errorf("%s: %w", s, err)
		}
		files[s] = f
		ck.Files = append(ck.Files, f)
	}
	names := make([]string, 0, len(idx.WeightMap))
	for n := range idx.WeightMap {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := files[idx.WeightMap[n]]
		if _, ok := f.Info(n); !ok {
			ck.Close()
			return nil, fmt.Errorf("%s: missing tensor %s (listed in %s)", f.Name, n, IndexFile)
		}
		ck.where[n] = f
	}
	return ck, nil
}

func (c *Checkpoint) add(f *File) {
	c.Files = append(c.Files, f)
	for _, n := range f.order {
		c.where[n] = f
	}
}

// Names lists every tensor, sorted.
func (c *Checkpoint) Names() []string {
	ns := make([]string, 0, len(c.where))
	for n := range c.where {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Lookup finds a tensor: its file and description.
func (c *Checkpoint) Lookup(name string) (*File, Info, bool) {
	f, ok := c.where[name]
	if !ok {
		return nil, Info{}, false
	}
	i, _ := f.Info(name)
	return f, i, true
}

// Tensor loads one tensor (see File.Tensor).
func (c *Checkpoint) Tensor(name string) (*tensors.Tensor, error) {
	f, ok := c.where[name]
	if !ok {
		return nil, fmt.Errorf("missing tensor %s", name)
	}
	return f.Tensor(name)
}

// Close closes every file.
func (c *Checkpoint) Close() error {
	var first error
	for _, f := range c.Files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// WriteIndex writes dir/model.safetensors.index.json atomically, readable by all
// like the shards it lists.
func WriteIndex(dir string, idx Index) error {
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", IndexFile, err)
	}
	return atomicfile.WriteFile(filepath.Join(dir, IndexFile), append(b, '\n'), 0o644)
}
