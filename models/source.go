package models

import (
	"errors"
	"fmt"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/catalog"
)

// Source is Resolve for engine.Load: it also returns the built-in Darkroom Mini
// (from package assets). `darkroom generate --model NAME` calls it.
func Source(nameOrDir string) (engine.Source, error) {
	m, err := New(Options{})
	if err != nil {
		return engine.Source{}, err
	}
	return m.Source(nameOrDir)
}

// Source resolves nameOrDir (see Resolve) into something engine.Load accepts.
func (m *Manager) Source(nameOrDir string) (engine.Source, error) {
	dir, err := m.Resolve(nameOrDir)
	if errors.Is(err, ErrBuiltin) {
		fsys, err := assets.Mini()
		if err != nil {
			return engine.Source{}, fmt.Errorf("%s: %w", catalog.MiniID, err)
		}
		return engine.FS(fsys, catalog.MiniID), nil
	}
	if err != nil {
		return engine.Source{}, err
	}
	return engine.Dir(dir), nil
}
