package main

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// childSet is a set of child processes of this binary (mode is -child or
// -burst-child), each writing its JSON result into a file of dir. The
// kernel kills them if the tool dies first.
type childSet struct {
	dir  string
	cmds []*exec.Cmd
}

// startChildren starts n children in mode; args(p) are child p's flags,
// to which its -out is added.
func startChildren(mode string, n int, args func(p int) []string) *childSet {
	exe, err := os.Executable()
	if err != nil {
		fatalf("%v", err)
	}
	dir, err := os.MkdirTemp("", "locktag-bench"+mode+"-")
	if err != nil {
		fatalf("%v", err)
	}
	cs := &childSet{dir: dir}
	for p := range n {
		cmd := exec.Command(exe, append(append([]string{mode}, args(p)...), "-out", cs.out(p))...)
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			cs.remove()
			fatalf("start child: %v", err)
		}
		cs.cmds = append(cs.cmds, cmd)
	}
	return cs
}

func (cs *childSet) out(p int) string { return filepath.Join(cs.dir, strconv.Itoa(p)+".json") }

// read decodes child p's result into v.
func (cs *childSet) read(p int, v any) error {
	b, err := os.ReadFile(cs.out(p))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// remove deletes the result files; the children must have ended.
func (cs *childSet) remove() { os.RemoveAll(cs.dir) }

type childFlags struct {
	fs              *flag.FlagSet
	lib, addrs, key *string
	out             *string
	c, base         *int
	t0              *int64
	warm, dur       *time.Duration
	hold, think     *time.Duration
	// burst only
	stock     *string // the key holding the stock left
	stockAddr *string // the server holding it
	wait      *time.Duration
	end       *int64 // mono time at which the buyers give up
	closed    *bool  // a new buyer takes the place of each one that bought
	cluster   *bool  // -addrs are a Cluster's masters (the cluster scenario's libraries)
}

func newChildFlags() *childFlags {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	return &childFlags{
		fs:        fs,
		lib:       fs.String("lib", "", ""),
		addrs:     fs.String("addrs", "", ""),
		key:       fs.String("key", "", ""),
		out:       fs.String("out", "", ""),
		c:         fs.Int("c", 16, ""),
		base:      fs.Int("base", 0, ""),
		t0:        fs.Int64("t0", 0, ""),
		warm:      fs.Duration("warm", 0, ""),
		dur:       fs.Duration("dur", 0, ""),
		hold:      fs.Duration("hold", 0, ""),
		think:     fs.Duration("think", 0, ""),
		stock:     fs.String("stock", "", ""),
		stockAddr: fs.String("stock-addr", "", ""),
		wait:      fs.Duration("wait", 0, ""),
		end:       fs.Int64("end", 0, ""),
		closed:    fs.Bool("closed", false, ""),
		cluster:   fs.Bool("cluster", false, ""),
	}
}
