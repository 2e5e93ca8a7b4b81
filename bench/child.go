package main

import (
	"flag"
	"time"
)

type childFlags struct {
	fs              *flag.FlagSet
	lib, addrs, key *string
	out             *string
	c, base         *int
	t0              *int64
	warm, dur       *time.Duration
	hold, think     *time.Duration
}

func newChildFlags() *childFlags {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	return &childFlags{
		fs:    fs,
		lib:   fs.String("lib", "", ""),
		addrs: fs.String("addrs", "", ""),
		key:   fs.String("key", "", ""),
		out:   fs.String("out", "", ""),
		c:     fs.Int("c", 16, ""),
		base:  fs.Int("base", 0, ""),
		t0:    fs.Int64("t0", 0, ""),
		warm:  fs.Duration("warm", 0, ""),
		dur:   fs.Duration("dur", 0, ""),
		hold:  fs.Duration("hold", 0, ""),
		think: fs.Duration("think", 0, ""),
	}
}
