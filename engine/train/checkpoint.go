package train

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/atomicfile"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// A checkpoint is a directory ckpt-NNNNNNN/ holding state.json (the trainer's
// State) plus vars.json/vars.bin (every context variable: parameters, AdamW
// moments, step counter). It is written into a temporary directory and renamed
// into place, and the file "latest" (also replaced atomically) names the newest,
// so a crash at any moment leaves the previous checkpoint intact.

// State is the host-side training state saved with each checkpoint. Together
// with the variables it determines the next step exactly: the data order and the
// noise are pure functions of (Seed, Step).
type State struct {
	Step    int     `json:"step"` // number of steps done
	Seed    uint64  `json:"seed"`
	Tokens  int64   `json:"tokens"`  // canvas+prefix positions processed so far
	Elapsed float64 `json:"elapsed"` // seconds of training so far (across resumes)
}

type varEntry struct {
	Scope  string `json:"scope"`
	Name   string `json:"name"`
	DType  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	Offset int64  `json:"offset"`
	Bytes  int64  `json:"bytes"`
}

// SaveCheckpoint writes state and every variable of ctx under dir, atomically,
// and keeps only the newest keep checkpoints (keep ≤ 0 keeps all).
func SaveCheckpoint(dir string, ctx *context.Context, st State, keep int) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	name := fmt.Sprintf("ckpt-%07d", st.Step)
	tmp, err := os.MkdirTemp(dir, ".tmp-"+name+"-")
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	defer os.RemoveAll(tmp) // no-op after the rename
	if err := writeVars(tmp, ctx); err != nil {
		return "", err
	}
	if err := writeJSON(filepath.Join(tmp, "state.json"), st); err != nil {
		return "", err
	}
	final := filepath.Join(dir, name)
	_ = os.RemoveAll(final) // a stale checkpoint of the same step (e.g. after a resume)
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "latest"), []byte(name+"\n"), 0o600); err != nil {
		return "", err
	}
	if keep > 0 {
		pruneCheckpoints(dir, keep)
	}
	return final, nil
}

func writeVars(dir string, ctx *context.Context) error {
	var vars []*context.Variable
	for v := range ctx.IterVariables() {
		vars = append(vars, v)
	}
	sort.Slice(vars, func(i, j int) bool { return vars[i].ScopeAndName() < vars[j].ScopeAndName() })
	f, err := os.Create(filepath.Join(dir, "vars.bin"))
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	var entries []varEntry
	var off int64
	for _, v := range vars {
		t, err := v.Value()
		if err != nil {
			f.Close()
			return fmt.Errorf("checkpoint: variable %s: %w", v.ScopeAndName(), err)
		}
		var werr error
		var n int
		if err := t.ConstBytes(func(b []byte) { n, werr = f.Write(b) }); err != nil {
			werr = err
		}
		if werr != nil {
			f.Close()
			return fmt.Errorf("checkpoint: write %s: %w", v.ScopeAndName(), werr)
		}
		entries = append(entries, varEntry{Scope: v.Scope(), Name: v.Name(), DType: t.DType().String(),
			Shape: t.Shape().Dimensions, Offset: off, Bytes: int64(n)})
		off += int64(n)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return writeJSON(filepath.Join(dir, "vars.json"), entries)
}

// LatestCheckpoint returns the path of the newest complete checkpoint in dir, or
// "" if there is none.
func LatestCheckpoint(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "latest"))
	if err != nil {
		return ""
	}
	p := filepath.Join(dir, strings.TrimSpace(string(b)))
	if _, err := os.Stat(filepath.Join(p, "state.json")); err != nil {
		return ""
	}
	return p
}

// LoadCheckpoint reads a checkpoint directory: it sets every saved variable in
// ctx (creating it when absent) and returns the saved State.
func LoadCheckpoint(path string, ctx *context.Context) (State, error) {
	var st State
	if err := readJSON(filepath.Join(path, "state.json"), &st); err != nil {
		return st, err
	}
	var entries []varEntry
	if err := readJSON(filepath.Join(path, "vars.json"), &entries); err != nil {
		return st, err
	}
	data, err := os.ReadFile(filepath.Join(path, "vars.bin"))
	if err != nil {
		return st, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	for _, e := range entries {
		dt, err := dtypes.DTypeString(e.DType)
		if err != nil {
			return st, fmt.Errorf("checkpoint %s: variable %s/%s: dtype %q", path, e.Scope, e.Name, e.DType)
		}
		t := tensors.FromShape(shapes.Make(dt, e.Shape...))
		if e.Offset < 0 || e.Offset+e.Bytes > int64(len(data)) {
			return st, fmt.Errorf("checkpoint %s: variable %s/%s: data out of range", path, e.Scope, e.Name)
		}
		var cerr error
		t.MutableBytes(func(b []byte) {
			if int64(len(b)) != e.Bytes {
				cerr = fmt.Errorf("checkpoint %s: variable %s/%s: %d bytes, want %d", path, e.Scope, e.Name, e.Bytes, len(b))
				return
			}
			copy(b, data[e.Offset:e.Offset+e.Bytes])
		})
		if cerr != nil {
			return st, cerr
		}
		if v := ctx.GetVariableByScopeAndName(e.Scope, e.Name); v != nil {
			if !v.Shape().Equal(t.Shape()) {
				return st, fmt.Errorf("checkpoint %s: variable %s/%s has shape %s, the model wants %s",
					path, e.Scope, e.Name, t.Shape(), v.Shape())
			}
			if err := v.SetValue(t); err != nil {
				return st, fmt.Errorf("checkpoint %s: variable %s/%s: %w", path, e.Scope, e.Name, err)
			}
			continue
		}
		c := ctx.InAbsPath(e.Scope).Checked(false)
		c.VariableWithValue(e.Name, t).SetTrainable(false)
	}
	return st, nil
}

func pruneCheckpoints(dir string, keep int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "ckpt-") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for len(names) > keep {
		_ = os.RemoveAll(filepath.Join(dir, names[0]))
		names = names[1:]
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o600)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}
