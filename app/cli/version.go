package cli

import (
	"encoding/json"
	"errors"
	"fmt"
)

func init() {
	register(&Command{
		Name:    "version",
		Summary: "which Darkroom this is: version, build, commit, Go and platform (also --version)",
		Run:     runVersion,
	})
}

func runVersion(env *Env, args []string) error {
	fs := newFlagSet(env, "version", "[--json]")
	asJSON := fs.Bool("json", false, `print JSON: {"name", "version", "build", "commit", "modified", "go", "platform"}`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("version: takes no arguments, got %q", fs.Arg(0))
	}
	if env.Version.Version == "" {
		// Only a caller that forgot WithVersion gets here; main always gives it.
		return errors.New("version: this build was not given its version (FyneApp.toml)")
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(env.Version)
	}
	fmt.Fprintln(env.Stdout, env.Version.String())
	return nil
}
