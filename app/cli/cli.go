// Package cli implements darkroom's command-line subcommands (generate, tokenize,
// wiki, pull, models, rm, quantize, hw, gpu, bench, serve, train).
//
// Each subcommand lives in its own file and registers itself in init. Every
// subcommand has --help, exits with code 1 and a one-line reason on error, and
// offers --json where its output is data. The CLI calls the same engine and models
// APIs as the desktop app; it never imports Fyne.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"

	"github.com/darkroomlabs/darkroom/app/version"
)

// Command is one darkroom subcommand.
type Command struct {
	Name    string // as typed: "generate"
	Summary string // one line for `darkroom help`
	// Run executes the command. args excludes the command name. Output goes to
	// stdout (data) and stderr (progress, diagnostics). A returned error is printed
	// as one line, "darkroom NAME: reason" (see errorLine), and turns into exit code 1.
	Run func(env *Env, args []string) error
}

// Env carries the process streams a command writes to, and which Darkroom this is.
type Env struct {
	Stdout, Stderr io.Writer
	Version        version.Info // the zero Info where the caller gave none (tests)
}

// An Option sets something of the Env that Run builds.
type Option func(*Env)

// WithVersion gives the binary's version (main reads it from the embedded
// FyneApp.toml) to `darkroom version`, `--version` and the help's first line.
func WithVersion(v version.Info) Option { return func(e *Env) { e.Version = v } }

var commands = map[string]*Command{}

// register adds a subcommand; called from init functions of the command files.
func register(c *Command) {
	if _, dup := commands[c.Name]; dup {
		panic("cli: duplicate command " + c.Name) // programming error, caught by any test run
	}
	commands[c.Name] = c
}

// errHelp is returned by a command that printed its usage on request (--help):
// exit code 0, no error line.
var errHelp = flag.ErrHelp

// subcommands is a command made of verbs (darkroom gpu install, darkroom train run):
// runSub picks the verb args[0] names.
type subcommands struct {
	name  string                                // the command, prefixed to its errors
	usage func()                                // prints the command's help
	none  string                                // the error when no verb is given
	list  string                                // the verbs, as the unknown-verb error names them
	verbs map[string]func(*Env, []string) error // by name; each gets the arguments after its name
}

// runSub runs the verb args[0] names with the rest of args. No arguments print
// the usage and return the none error; help, --help and -h print it and return
// errHelp.
func (s subcommands) runSub(env *Env, args []string) error {
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
		s.usage()
		if len(args) == 0 {
			return errors.New(s.name + ": " + s.none)
		}
		return errHelp
	}
	if run, ok := s.verbs[args[0]]; ok {
		return run(env, args[1:])
	}
	return fmt.Errorf("%s: unknown subcommand %q (%s)", s.name, args[0], s.list)
}

// Run dispatches args (without the program name) to a subcommand and returns the
// process exit code.
func Run(args []string, stdout, stderr io.Writer, opts ...Option) int {
	env := &Env{Stdout: stdout, Stderr: stderr}
	for _, o := range opts {
		o(env)
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return exitCode(env, c.Name, c.Run(env, []string{"--help"}))
			}
		}
		usage(env)
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" || args[0] == "-V" {
		args = append([]string{"version"}, args[1:]...)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "darkroom: unknown command %q (run `darkroom help` for the list)\n", args[0])
		return 1
	}
	return exitCode(env, c.Name, c.Run(env, args[1:]))
}

// exitCode prints err, if any, as command name's one error line and returns the
// exit code.
func exitCode(env *Env, name string, err error) int {
	if err == nil || errors.Is(err, errHelp) {
		return 0
	}
	fmt.Fprintln(env.Stderr, errorLine(name, err))
	return 1
}

// errorLine is the one line an error of command name prints:
// "darkroom NAME: reason". A reason that already starts with the command's name
// ("wiki: …", "train run: …", "pull acme/tiny: …") names it once, not twice.
func errorLine(name string, err error) string {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if head, _, ok := strings.Cut(msg, ": "); ok {
		if rest, sub := strings.CutPrefix(head, name+" "); head == name || sub && rest != "" && !strings.Contains(rest, " ") {
			return "darkroom " + msg
		}
	}
	return "darkroom " + name + ": " + msg
}

func usage(env *Env) {
	w := env.Stdout
	name := "Darkroom"
	if env.Version.Version != "" {
		name += " " + env.Version.Version
	}
	fmt.Fprintln(w, name+" runs block-diffusion language models on your PC.")
	fmt.Fprintln(w, "\nUsage:\n  darkroom                 open the desktop app\n  darkroom COMMAND [flags] run a command\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].Summary)
	}
	fmt.Fprintln(w, "\nRun `darkroom COMMAND --help` for a command's flags.")
}

// newFlagSet returns a FlagSet for a command that reports parse errors as values
// and prints its usage on --help to env.Stdout.
func newFlagSet(env *Env, name, usageLine string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stdout)
	fs.Usage = func() {
		fmt.Fprintf(env.Stdout, "Usage: darkroom %s %s\n\nFlags:\n", name, usageLine)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, keeping parse errors on one line (the usage is printed
// only for --help).
func parseFlags(fs *flag.FlagSet, args []string) error {
	// The flag package prints the usage on --help and on every parse error; keep it
	// quiet while parsing and print the usage only for --help, once.
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	// Allow flags after positional arguments (`darkroom wiki "Unix" --json`):
	// parse, set aside the first positional argument, parse the rest again.
	var positional []string
	err := fs.Parse(args)
	for err == nil && fs.NArg() > 0 {
		rest := fs.Args()
		if rest[0] == "--" {
			positional = append(positional, rest[1:]...)
			break
		}
		positional = append(positional, rest[0])
		err = fs.Parse(rest[1:])
	}
	fs.SetOutput(out)
	fs.Usage = usage
	if err == nil {
		// Re-parse only the positional arguments so fs.Args() returns them.
		_ = fs.Parse(append([]string{"--"}, positional...))
	}
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
		return errHelp
	}
	if err != nil {
		// The subcommand too ("train run: …"), and where its flags are listed.
		return fmt.Errorf("%s: %w (see `darkroom %s --help`)", fs.Name(), err, fs.Name())
	}
	return nil
}

// interruptContext is the context a command's work runs under: Ctrl-C cancels
// it, and a second Ctrl-C, while the first is still stopping the work (a big
// model's step can take seconds), ends the program at once.
var interruptContext = func() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}

// noteAfter is how long a step runs before whileNoting says what it is doing.
var noteAfter = 500 * time.Millisecond

// whileNoting runs f and, once it has taken noteAfter, writes note on w: a step
// that can take seconds (measuring this PC, loading a big model) should not leave
// a command silent, and a quick one stays quiet. The note is written before
// whileNoting returns, so it never lands in the middle of what follows.
func whileNoting(w io.Writer, note string, f func()) {
	start := time.Now()
	done, noted := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(noted)
		select {
		case <-time.After(noteAfter):
		case <-done:
			if time.Since(start) < noteAfter {
				return // quick: nothing to say
			}
		}
		fmt.Fprintln(w, note)
	}()
	f()
	close(done)
	<-noted
}
