package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/locktag/locktag/locker"
)

// released is what release did.
type released struct {
	Name     string `json:"name"`
	Released bool   `json:"released"`
	Reason   string `json:"reason"`
	Actor    string `json:"actor"`
	// Token is --token, or "".
	Token string `json:"token,omitempty"`
	// Freed are the holders the release freed, as Inspect showed them
	// just before (only the owner when it was not shown).
	Freed []holderOut `json:"freed"`
	// Now is the lock just after: the waiter it was handed to, if any.
	Now *lockOut `json:"now"`
}

func releaseCommand() *command {
	var reason, token, actor string
	return &command{
		name:  "release",
		usage: releaseUsage,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&reason, "reason", "", "")
			fs.StringVar(&token, "token", "", "")
			fs.StringVar(&actor, "actor", defaultActor(), "")
		},
		args: func(args []string) error {
			if err := argCount(1, 1, "lock name")(args); err != nil {
				return err
			}
			if strings.TrimSpace(reason) == "" {
				return errors.New(`--reason is required: say why, e.g. --reason "holder hung on a dead NFS mount" (the holder's context is cancelled with it, and the audit records it)`)
			}
			return nil
		},
		run: func(ctx context.Context, c *cli, s *session, args []string) int {
			return release(ctx, c, s, args[0], reason, token, actor)
		},
	}
}

// defaultActor names who runs the command in the audit: the user and the
// host.
func defaultActor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host + " (locktag command)"
}

// betweenCheckAndRelease runs between release's Inspect and its
// ForceRelease: a seam for the test of a lock that changes hands there.
var betweenCheckAndRelease = func() {}

// release force-releases name as the ops page does (Locker.ForceRelease),
// with --token's check first.
func release(ctx context.Context, c *cli, s *session, name, reason, token, actor string) int {
	before, err := s.lk.Inspect(ctx, name)
	if err != nil {
		return c.fail("release", name, err)
	}
	var named *locker.Holder
	if token != "" {
		for i, h := range before.Holders {
			if h.Owner == token || strconv.FormatInt(h.Fence, 10) == token {
				named = &before.Holders[i]
				break
			}
		}
		if named == nil {
			held := "nobody holds it"
			if len(before.Holders) > 0 {
				var who []string
				for _, h := range before.Holders {
					who = append(who, fmt.Sprintf("owner %s fence %d", h.Owner, h.Fence))
				}
				held = "it is held by " + strings.Join(who, ", ")
			}
			fmt.Fprintf(c.stderr, "locktag release %s: not released: no holder has the token %s (%s)\n", quoteName(name), token, held)
			return exitNotFound
		}
	}
	betweenCheckAndRelease()
	err = s.lk.ForceRelease(locker.WithActor(ctx, actor), name, reason)
	out := released{Name: name, Reason: reason, Actor: actor, Token: token, Freed: []holderOut{}}
	freed := s.forced.Freed()
	for _, owner := range freed {
		h := holderOut{Owner: owner}
		if i := slices.IndexFunc(before.Holders, func(h locker.Holder) bool { return h.Owner == owner }); i >= 0 {
			h = holderOf(before.Holders[i])
		}
		out.Freed = append(out.Freed, h)
	}
	if err != nil {
		if errors.Is(err, locker.ErrNotHeld) {
			fmt.Fprintf(c.stderr, "locktag release %s: nothing was held: nothing changed\n", quoteName(name))
			return exitNotFound
		}
		return c.fail("release", name, err)
	}
	out.Released = true
	if after, err := s.lk.Inspect(ctx, name); err == nil && after.Kind != "" {
		l := lockOf(after)
		out.Now = &l
	}
	code := exitOK
	if named != nil && !slices.Contains(freed, named.Owner) {
		code = exitConflict
		fmt.Fprintf(c.stderr, "locktag release %s: CONFLICT: the holder with the token %s was gone when the release ran; it freed %s instead (the lock changed hands between the check and the release)\n",
			quoteName(name), token, strings.Join(freed, ", "))
	}
	if c.opts.output == "json" {
		writeJSON(c.stdout, out)
		return code
	}
	for _, h := range out.Freed {
		fmt.Fprintf(c.stdout, "released %s: freed owner %s (fence %d, held for %s, label %q); reason %q\n",
			clean(name), h.Owner, h.Fence, duration(ms(h.HeldMs)), h.Label, reason)
	}
	if out.Now != nil && len(out.Now.Holders) > 0 {
		for _, h := range out.Now.Holders {
			fmt.Fprintf(c.stdout, "now held by owner %s (fence %d, label %q)\n", h.Owner, h.Fence, h.Label)
		}
	} else {
		fmt.Fprintln(c.stdout, "now free")
	}
	return code
}
