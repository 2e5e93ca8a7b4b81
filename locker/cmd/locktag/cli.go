package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/locktag/locktag/locker"
)

// Exit statuses: what a script can rely on (documented in usage and in
// docs/operations.md).
const (
	exitOK          = 0 // done
	exitNotFound    = 1 // nothing held or found; --token names no holder
	exitUsage       = 2 // a bad command line: nothing was sent to Redis
	exitUnavailable = 3 // Redis did not answer (or answered with an error the command cannot classify)
	exitRefused     = 4 // Redis answered and refused: a record of another protocol, a permission, what Check finds missing
	exitConflict    = 5 // release --token freed a holder other than the one named: the lock changed hands meanwhile
	// exitInterrupted: SIGINT or SIGTERM cut a call short (the shells'
	// 128+SIGINT); watch ends with exitOK instead.
	exitInterrupted = 130
)

// cli is one run of the command: where it writes, and its environment.
type cli struct {
	stdout, stderr io.Writer
	lookup         func(string) (string, bool) // os.LookupEnv
	opts           options
}

// command is one subcommand.
type command struct {
	name  string
	usage string
	// flags registers the command's own flags on fs.
	flags func(fs *flag.FlagSet)
	// args checks the positional arguments.
	args func(args []string) error
	// run runs the command on a session and returns the exit status.
	run func(ctx context.Context, c *cli, s *session, args []string) int
	// offline: the command needs no session.
	offline bool
}

// run runs the command line args (without the program name) and returns
// the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookup func(string) (string, bool)) int {
	c := &cli{stdout: stdout, stderr: stderr, lookup: lookup, opts: defaultOptions(lookup)}
	global := flag.NewFlagSet("locktag", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	c.opts.register(global)
	switch err := global.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return exitOK
	case err != nil:
		return c.usageError("", err)
	}
	rest := global.Args()
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	name, rest := rest[0], rest[1:]
	if name == "help" {
		return c.help(rest)
	}
	cmd := commands()[name]
	if cmd == nil {
		return c.usageError("", fmt.Errorf("unknown command %q", name))
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.opts.register(fs)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	pos, err := parseInterspersed(fs, rest)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, cmd.usage)
		return exitOK
	case err != nil:
		return c.usageError(name, err)
	}
	if err := c.opts.check(); err != nil {
		return c.usageError(name, err)
	}
	if cmd.args != nil {
		if err := cmd.args(pos); err != nil {
			return c.usageError(name, err)
		}
	}
	if cmd.offline {
		return cmd.run(ctx, c, nil, pos)
	}
	s, err := c.opts.open(stderr)
	if err != nil {
		return c.fail(name, "", err)
	}
	defer s.Close()
	return cmd.run(ctx, c, s, pos)
}

// commands are the subcommands by name.
func commands() map[string]*command {
	return map[string]*command{
		"ls":      lsCommand(),
		"inspect": inspectCommand(),
		"release": releaseCommand(),
		"watch":   watchCommand(),
		"check":   checkCommand(),
		"version": versionCommand(),
	}
}

// help answers "locktag help [command]".
func (c *cli) help(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stdout, usage)
		return exitOK
	}
	cmd := commands()[args[0]]
	if cmd == nil {
		return c.usageError("", fmt.Errorf("help: unknown command %q", args[0]))
	}
	fmt.Fprint(c.stdout, cmd.usage)
	return exitOK
}

// parseInterspersed parses fs's flags anywhere among args (the flag
// package stops at the first argument that is not a flag) and returns the
// other arguments in order; every argument after "--" is one of them.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError reports a bad command line and returns exitUsage.
func (c *cli) usageError(cmd string, err error) int {
	if cmd == "" {
		fmt.Fprintf(c.stderr, "locktag: %v\nRun 'locktag --help' for usage.\n", err)
	} else {
		fmt.Fprintf(c.stderr, "locktag %s: %v\nRun 'locktag %s --help' for usage.\n", cmd, err, cmd)
	}
	return exitUsage
}

// fail reports err of command cmd about name ("" for none) and returns its
// exit status (exitFor).
func (c *cli) fail(cmd, name string, err error) int {
	code := exitFor(err)
	what := "locktag " + cmd
	if name != "" {
		what += " " + quoteName(name)
	}
	switch code {
	case exitInterrupted:
		fmt.Fprintf(c.stderr, "%s: interrupted\n", what)
	case exitUnavailable:
		fmt.Fprintf(c.stderr, "%s: Redis unavailable (%s): %v\n", what, c.opts.where(), err)
	case exitRefused:
		fmt.Fprintf(c.stderr, "%s: refused: %v\n", what, err)
		if hint := refusalHint(err); hint != "" {
			fmt.Fprintf(c.stderr, "%s: %s\n", what, hint)
		}
	default: // a bad option (exitUsage), nothing held (exitNotFound)
		fmt.Fprintf(c.stderr, "%s: %v\n", what, err)
	}
	return code
}

// exitFor is the exit status of a failed call's error.
func exitFor(err error) int {
	switch {
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.Is(err, locker.ErrNotHeld):
		return exitNotFound
	case errors.Is(err, locker.ErrProtocol), errors.Is(err, locker.ErrUnsupported),
		errors.Is(err, locker.ErrKindUnsupported), errors.Is(err, locker.ErrIdempotencyUnsupported),
		refusedByServer(err):
		return exitRefused
	case errors.Is(err, locker.ErrBadOption), errors.Is(err, locker.ErrEmptyKey):
		return exitUsage
	}
	return exitUnavailable
}

// refusedByServer reports whether Redis refused the connection's user: a
// permission (NOPERM), or its credentials (WRONGPASS, NOAUTH).
func refusedByServer(err error) bool {
	msg := err.Error()
	for _, code := range [...]string{"NOPERM", "WRONGPASS", "NOAUTH"} {
		if strings.Contains(msg, code) {
			return true
		}
	}
	return false
}

// refusalHint says what to do about a refusal.
func refusalHint(err error) string {
	switch {
	case errors.Is(err, locker.ErrProtocol):
		return fmt.Sprintf("this command speaks protocol %d and changes nothing it cannot read: use the locktag command of the release that wrote the record (docs/versioning.md)", locker.ProtocolVersion)
	case errors.Is(err, locker.ErrUnsupported), refusedByServer(err):
		return "run 'locktag check' for what to allow"
	}
	return ""
}

// quoteName quotes a name for a message when it holds spaces or control
// characters.
func quoteName(name string) string {
	if strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Sprintf("%q", name)
	}
	return name
}

// argCount checks the number of positional arguments: between min and
// max, each named in what.
func argCount(min, max int, what string) func([]string) error {
	return func(args []string) error {
		switch {
		case len(args) < min:
			return fmt.Errorf("missing %s", what)
		case len(args) > max:
			return fmt.Errorf("unexpected argument %q", args[max])
		}
		for _, a := range args {
			if a == "" {
				return fmt.Errorf("empty %s", what)
			}
		}
		return nil
	}
}
