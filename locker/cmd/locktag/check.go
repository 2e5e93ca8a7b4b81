package main

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/locktag/locktag/locker"
)

// watchRules are what watch needs beyond the library's ACL rules: a
// pattern subscription (the channel rule is the library's).
var watchRules = []string{"+psubscribe", "+punsubscribe"}

// checked is what check found.
type checked struct {
	// OK: the start-up check (Locker.Check) passed.
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Watch says whether this user may subscribe as watch does; "" when
	// it may.
	Watch string `json:"watch,omitempty"`
	// ACLRules are Locker.ACLRules for the prefix; SetUser the ACL SETUSER
	// line made of them for --acl-user.
	ACLRules []string `json:"aclRules"`
	SetUser  string   `json:"setUser"`
	// CommandRules are what this command needs beyond them (watch).
	CommandRules []string `json:"commandRules"`
}

func checkCommand() *command {
	var aclUser string
	return &command{
		name:  "check",
		usage: checkUsage,
		flags: func(fs *flag.FlagSet) { fs.StringVar(&aclUser, "acl-user", "locktag", "") },
		args:  argCount(0, 0, ""),
		run: func(ctx context.Context, c *cli, s *session, _ []string) int {
			out := checked{ACLRules: s.lk.ACLRules(), CommandRules: watchRules}
			out.SetUser = "ACL SETUSER " + aclUser + " on >PASSWORD " + strings.Join(out.ACLRules, " ")
			err := s.lk.Check(ctx)
			code := exitOK
			if err != nil {
				code = exitFor(err)
				out.Error = err.Error()
			} else {
				out.OK = true
				if werr := canWatch(ctx, s); werr != nil {
					out.Watch = werr.Error()
				}
			}
			if c.opts.output == "json" {
				writeJSON(c.stdout, out)
			} else {
				writeChecked(c, out)
			}
			if code == exitUnavailable {
				fmt.Fprintf(c.stderr, "locktag check: Redis unavailable (%s): %v\n", c.opts.where(), err)
			}
			return code
		},
	}
}

// canWatch subscribes as watch does and returns the refusal, or nil.
func canWatch(ctx context.Context, s *session) error {
	ps := s.rdb.PSubscribe(ctx, s.lk.NoticePattern())
	defer ps.Close()
	_, err := ps.Receive(ctx)
	return err
}

func writeChecked(c *cli, out checked) {
	w := c.stdout
	switch {
	case out.OK:
		fmt.Fprintf(w, "ok: %s serves locktag's locks (protocol %d) under the prefix %q", c.opts.where(), locker.ProtocolVersion, c.opts.prefix)
		if c.opts.user != "" {
			fmt.Fprintf(w, " as the user %q", c.opts.user)
		}
		fmt.Fprintln(w)
	default:
		fmt.Fprintf(w, "not ok: %s\n", out.Error)
	}
	if out.Watch != "" {
		fmt.Fprintf(w, "watch: refused (%s): allow %s\n", out.Watch, strings.Join(out.CommandRules, " "))
	}
	fmt.Fprintf(w, "\nThe ACL rules a service's user needs under this prefix (Locker.ACLRules):\n  %s\n", out.SetUser)
	fmt.Fprintf(w, "This command also needs %s for watch. A go-redis Cluster client also needs +cluster|slots +cluster|shards and +command (docs/servers.md).\n",
		strings.Join(out.CommandRules, " "))
}

func versionCommand() *command {
	return &command{
		name:    "version",
		usage:   versionUsage,
		args:    argCount(0, 0, ""),
		offline: true,
		run: func(_ context.Context, c *cli, _ *session, _ []string) int {
			v := "(devel)"
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
				v = bi.Main.Version
			}
			if c.opts.output == "json" {
				writeJSON(c.stdout, map[string]any{"version": v, "protocol": locker.ProtocolVersion, "go": runtime.Version()})
				return exitOK
			}
			fmt.Fprintf(c.stdout, "locktag %s (protocol %d, %s)\n", v, locker.ProtocolVersion, runtime.Version())
			return exitOK
		},
	}
}
