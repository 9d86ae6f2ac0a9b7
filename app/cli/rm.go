package cli

import (
	"errors"
	"fmt"
)

func init() {
	register(&Command{
		Name:    "rm",
		Summary: "delete a downloaded or converted model",
		Run:     runRm,
	})
}

func runRm(env *Env, args []string) error {
	fs := newFlagSet(env, "rm", "[flags] NAME")
	var lib libraryFlags
	lib.register(fs, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("rm: give one model name (see `darkroom models`)")
	}
	m, err := lib.open()
	if err != nil {
		return err
	}
	if err := m.Delete(fs.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "deleted %s\n", fs.Arg(0))
	return nil
}
