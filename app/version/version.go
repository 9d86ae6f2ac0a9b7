// Package version says which Darkroom a binary is: the name, version and build
// number written once in FyneApp.toml (which the packagers, dist.sh and Fyne's
// tools, read too), and the commit, Go version and platform Go's build information
// records. The main package embeds FyneApp.toml and hands it to Parse; the CLI's
// `darkroom version` prints what comes back, for bug reports and for checking an
// install.
//
// FyneApp.toml is read with BurntSushi/toml (already in the module graph through
// Fyne's tools) rather than by matching lines: it is TOML, and the packagers read
// it as TOML.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/BurntSushi/toml"
)

// Info is what `darkroom version` reports.
type Info struct {
	Name     string `json:"name"`               // "Darkroom"
	Version  string `json:"version"`            // "0.1.0"
	Build    int    `json:"build"`              // FyneApp.toml's Build
	Commit   string `json:"commit,omitempty"`   // the VCS revision the binary was built from, when Go recorded one
	Modified bool   `json:"modified,omitempty"` // built from a work tree with uncommitted changes
	Go       string `json:"go"`                 // "go1.26.8"
	Platform string `json:"platform"`           // "linux/amd64"
}

// Parse reads the [Details] Name, Version and Build of a FyneApp.toml and adds
// the build information of the running binary.
func Parse(fyneApp []byte) (Info, error) {
	var f struct {
		Details struct {
			Name    string
			Version string
			Build   int
		}
	}
	if err := toml.Unmarshal(fyneApp, &f); err != nil {
		return Info{}, fmt.Errorf("read FyneApp.toml: %w", err)
	}
	if f.Details.Name == "" || f.Details.Version == "" {
		return Info{}, fmt.Errorf("read FyneApp.toml: [Details] has no Name or Version")
	}
	info := Info{Name: f.Details.Name, Version: f.Details.Version, Build: f.Details.Build, Go: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	return info, nil
}

// String is the one line `darkroom version` prints:
// "Darkroom 0.1.0 (build 1, commit 1a2b3c4d5e6f, go1.26.8, linux/amd64)".
// A binary built from a work tree with changes says "1a2b3c4d5e6f+changes"; one
// built without VCS information (go run, -buildvcs=false) leaves the commit out.
func (i Info) String() string {
	if i.Version == "" {
		return "Darkroom (version unknown: built without FyneApp.toml)"
	}
	s := fmt.Sprintf("%s %s (build %d", i.Name, i.Version, i.Build)
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if i.Modified {
			c += "+changes"
		}
		s += ", commit " + c
	}
	return s + ", " + i.Go + ", " + i.Platform + ")"
}
