package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// Bad command lines are usage errors (2) that send nothing; --help and
// help answer on stdout with 0.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // stderr's first line
	}{
		{nil, "locktag reads and repairs"},
		{[]string{"frobnicate"}, `locktag: unknown command "frobnicate"`},
		{[]string{"--nonsense", "ls"}, "locktag: flag provided but not defined: -nonsense"},
		{[]string{"ls", "--nonsense"}, "locktag ls: flag provided but not defined: -nonsense"},
		{[]string{"ls", "a", "b"}, `locktag ls: unexpected argument "b"`},
		{[]string{"ls", "--limit", "-1"}, "locktag ls: --limit -1: want 0 (no limit) or more"},
		{[]string{"-o", "yaml", "ls"}, `locktag ls: -o "yaml": want text or json`},
		{[]string{"inspect"}, "locktag inspect: missing lock name"},
		{[]string{"inspect", ""}, "locktag inspect: empty lock name"},
		{[]string{"release", "x"}, "locktag release: --reason is required"},
		{[]string{"watch", "--interval", "-1s"}, "locktag watch: --interval -1s: want 0 (notices only) or more"},
		{[]string{"check", "x"}, `locktag check: unexpected argument "x"`},
		{[]string{"--addr", "a:1,b:2", "ls"}, "locktag ls: --addr a:1,b:2 names several servers: add --cluster (seed nodes) or --sentinel-master (sentinels)"},
		{[]string{"--cluster", "--sentinel-master", "m", "ls"}, "locktag ls: --cluster and --sentinel-master exclude each other"},
		{[]string{"--cluster", "--db", "1", "ls"}, "locktag ls: --db: a Cluster has database 0 only"},
		{[]string{"--cacert", "x", "ls"}, "locktag ls: --cacert, --cert, --key, --sni and --insecure need --tls"},
		{[]string{"--tls", "--cert", "x", "ls"}, "locktag ls: --cert and --key go together"},
		{[]string{"--timeout", "0s", "ls"}, "locktag ls: --timeout 0s: want a positive duration"},
		{[]string{"help", "frobnicate"}, `locktag: help: unknown command "frobnicate"`},
		{[]string{"--prefix", "a{", "ls"}, "locktag ls: locker: bad option: WithKeyPrefix"},
	} {
		r := locktag(t, tc.args...).want(t, exitUsage)
		if first, _, _ := strings.Cut(r.stderr, "\n"); !strings.HasPrefix(first, tc.want) || r.stdout != "" {
			t.Errorf("locktag %q: stderr %q, stdout %q", tc.args, r.stderr, r.stdout)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, usage},
		{[]string{"-h"}, usage},
		{[]string{"help"}, usage},
		{[]string{"ls", "--help"}, lsUsage},
		{[]string{"help", "ls"}, lsUsage},
		{[]string{"inspect", "-h"}, inspectUsage},
		{[]string{"release", "--help"}, releaseUsage},
		{[]string{"watch", "--help"}, watchUsage},
		{[]string{"check", "--help"}, checkUsage},
		{[]string{"version", "--help"}, versionUsage},
	} {
		if r := locktag(t, tc.args...).want(t, exitOK); r.stdout != tc.want || r.stderr != "" {
			t.Errorf("locktag %q wrote %q", tc.args, r.stdout)
		}
	}
	r := locktag(t, "version").want(t, exitOK)
	if !strings.HasPrefix(r.stdout, "locktag ") || !strings.Contains(r.stdout, "(protocol 1, go") {
		t.Errorf("version: %q", r.stdout)
	}
	var v struct {
		Version  string
		Protocol int
	}
	locktag(t, "version", "-o", "json").want(t, exitOK).decode(t, &v)
	if v.Version == "" || v.Protocol != locker.ProtocolVersion {
		t.Errorf("version -o json: %+v", v)
	}
}

// An interrupt during a call is status 130; watch ends with 0.
func TestInterrupted(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := locktagCtx(t, ctx, "--addr", srv.Addr(), "ls").want(t, exitInterrupted)
	if r.stderr != "locktag ls: interrupted\n" {
		t.Errorf("an interrupted ls: %q", r.stderr)
	}
	locktagCtx(t, ctx, "--addr", srv.Addr(), "watch").want(t, exitOK)
}

// Every option is in the help: the common ones in locktag --help, each
// command's own in its help.
func TestHelpNamesEveryFlag(t *testing.T) {
	var o options
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	o.register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if name := "--" + f.Name; f.Name != "o" && !strings.Contains(usage, name+" ") && !strings.Contains(usage, name+",") {
			t.Errorf("locktag --help does not name %s", name)
		}
	})
	for name, cmd := range commands() {
		if cmd.flags == nil {
			continue
		}
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		cmd.flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(cmd.usage, "--"+f.Name+" ") {
				t.Errorf("locktag %s --help does not name --%s", name, f.Name)
			}
		})
		if !strings.Contains(usage, "\n  "+name+" ") {
			t.Errorf("locktag --help does not list %s", name)
		}
	}
}

// Options go before or after the command, and flags among the arguments;
// "--" ends them; the environment gives defaults.
func TestArguments(t *testing.T) {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	reason := fs.String("reason", "", "")
	pos, err := parseInterspersed(fs, []string{"a", "--reason", "r", "b", "--", "--c", "-d"})
	if err != nil || *reason != "r" || strings.Join(pos, " ") != "a b --c -d" {
		t.Errorf("parseInterspersed: %q %q %v", pos, *reason, err)
	}
	env := map[string]string{"LOCKTAG_ADDR": "r:1", "LOCKTAG_PASSWORD": "pw", "LOCKTAG_PREFIX": ""}
	o := defaultOptions(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if o.addr != "r:1" || o.password != "pw" || o.prefix != "" || o.timeout != 5*time.Second {
		t.Errorf("defaultOptions from the environment: %+v", o)
	}
	srv := redistest.Start(t)
	a := sessionFor(t, "--addr", srv.Addr(), "--prefix", "shop:")
	if _, err := a.lk.Obtain(t.Context(), "order:1", locker.Params{}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--addr", srv.Addr(), "--prefix", "shop:", "inspect", "order:1"},
		{"inspect", "--addr", srv.Addr(), "order:1", "--prefix=shop:"},
		{"--prefix", "shop:", "inspect", "--addr", srv.Addr(), "--", "order:1"},
	} {
		locktag(t, args...).want(t, exitOK)
	}
	env = map[string]string{"LOCKTAG_ADDR": srv.Addr(), "LOCKTAG_PREFIX": "shop:"}
	var out, errs strings.Builder
	if code := run(t.Context(), []string{"inspect", "order:1"}, &out, &errs, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); code != exitOK {
		t.Errorf("inspect with the environment's address and prefix: %d %s", code, errs.String())
	}
}

// A Redis that does not answer is status 3, one that refuses the user 4;
// check passes, or names what to allow, and prints the ACL rules.
func TestConnectionFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	r := locktag(t, "--addr", closed, "--timeout", "500ms", "ls").want(t, exitUnavailable)
	if !strings.HasPrefix(r.stderr, "locktag ls: Redis unavailable (Redis at "+closed+"): ") {
		t.Errorf("ls of a closed port: %s", r.stderr)
	}
	r = locktag(t, "--addr", closed, "--timeout", "500ms", "release", "x", "--reason", "why").want(t, exitUnavailable)
	if !strings.HasPrefix(r.stderr, "locktag release x: Redis unavailable") {
		t.Errorf("release on a closed port: %s", r.stderr)
	}

	srv := redistest.Start(t, redistest.WithArgs("--requirepass", "secret"))
	r = locktag(t, "--addr", srv.Addr(), "--password", "wrong", "inspect", "x").want(t, exitRefused)
	if !strings.Contains(r.stderr, "WRONGPASS") || !strings.Contains(r.stderr, "run 'locktag check' for what to allow") {
		t.Errorf("a wrong password: %s", r.stderr)
	}
	r = locktag(t, "--addr", srv.Addr(), "--password", "secret", "check").want(t, exitOK)
	if !strings.HasPrefix(r.stdout, "ok: Redis at "+srv.Addr()+` serves locktag's locks (protocol 1) under the prefix "locktag:"`) ||
		!strings.Contains(r.stdout, "ACL SETUSER locktag on >PASSWORD resetkeys ~locktag:* resetchannels &locktag:* -@all +evalsha") ||
		strings.Contains(r.stdout, "watch: refused") {
		t.Errorf("check:\n%s", r.stdout)
	}

	a := sessionFor(t, "--addr", srv.Addr(), "--password", "secret", "--prefix", "shop:")
	rules := a.lk.ACLRules()
	srv.SetUser(t, "shop", "pw", rules...)
	r = locktag(t, "--addr", srv.Addr(), "--user", "shop", "--password", "pw", "--prefix", "shop:", "check", "--acl-user", "shop").want(t, exitOK)
	if !strings.Contains(r.stdout, `under the prefix "shop:" as the user "shop"`) || !strings.Contains(r.stdout, "ACL SETUSER shop on >PASSWORD "+strings.Join(rules, " ")+"\n") ||
		!strings.Contains(r.stdout, "watch: refused (NOPERM") {
		t.Errorf("check as the service's user:\n%s", r.stdout)
	}
	var c checked
	srv.SetUser(t, "shop", "pw", append(rules, "-zadd")...)
	r = locktag(t, "--addr", srv.Addr(), "--user", "shop", "--password", "pw", "--prefix", "shop:", "-o", "json", "check").want(t, exitRefused)
	r.decode(t, &c)
	if c.OK || !strings.Contains(c.Error, "ZADD") || !slices.Equal(c.ACLRules, rules) || !slices.Equal(c.CommandRules, watchRules) {
		t.Errorf("check -o json as a user without ZADD: %+v", c)
	}
	r = locktag(t, "--addr", srv.Addr(), "--user", "shop", "--password", "pw", "--prefix", "shop:", "check").want(t, exitRefused)
	if !strings.HasPrefix(r.stdout, "not ok: locker: ") || !strings.Contains(r.stdout, "ZADD") {
		t.Errorf("check as a user without ZADD:\n%s", r.stdout)
	}
	if !errors.Is(locker.ErrEvictionPolicy, locker.ErrUnsupported) || exitFor(locker.ErrEvictionPolicy) != exitRefused {
		t.Error("Check's eviction finding is not a refusal")
	}
}

// TLS: verified with --cacert, with a client certificate, or not verified
// with --insecure; a server certificate it cannot verify is refused.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := certificate(t, dir, "ca", nil, nil)
	certificate(t, dir, "server", ca, caKey)
	certificate(t, dir, "client", ca, caKey)
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := redistest.Launch(redistest.WithArgs("--tls-port", strconv.Itoa(port),
		"--tls-cert-file", filepath.Join(dir, "server.pem"), "--tls-key-file", filepath.Join(dir, "server.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.pem"), "--tls-auth-clients", "optional"))
	switch {
	case err != nil && strings.Contains(strings.ToLower(err.Error()), "tls"):
		t.Skipf("%s refuses the TLS options (built without TLS?): %v", redistest.ServerBinary(), err)
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	a := sessionFor(t, "--addr", srv.Addr())
	if _, err := a.lk.Obtain(t.Context(), "tls:1", locker.Params{}); err != nil {
		t.Fatal(err)
	}
	locktag(t, "--addr", addr, "--tls", "--cacert", filepath.Join(dir, "ca.pem"), "inspect", "tls:1").want(t, exitOK)
	locktag(t, "--addr", addr, "--tls", "--cacert", filepath.Join(dir, "ca.pem"), "--cert", filepath.Join(dir, "client.pem"),
		"--key", filepath.Join(dir, "client.key"), "--sni", "localhost", "inspect", "tls:1").want(t, exitOK)
	locktag(t, "--addr", addr, "--tls", "--insecure", "inspect", "tls:1").want(t, exitOK)
	r := locktag(t, "--addr", addr, "--tls", "--timeout", "2s", "inspect", "tls:1").want(t, exitUnavailable)
	if !strings.Contains(r.stderr, "certificate") {
		t.Errorf("an unverified server: %s", r.stderr)
	}
	r = locktag(t, "--addr", addr, "--tls", "--cacert", filepath.Join(dir, "nothere.pem"), "inspect", "tls:1").want(t, exitUnavailable)
	if !strings.Contains(r.stderr, "--cacert: open ") {
		t.Errorf("a missing CA file: %s", r.stderr)
	}
}

// certificate writes name.pem and name.key in dir: a CA's when parent is
// nil, else one for 127.0.0.1 and localhost signed by parent.
func certificate(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "locktag test " + name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		parent, parentKey = tmpl, key
	} else {
		tmpl.IPAddresses, tmpl.DNSNames = []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, kind string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(name+".pem", "CERTIFICATE", der)
	write(name+".key", "EC PRIVATE KEY", kb)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// The built command's main exits with the status run returns and writes
// to the process's stdout and stderr.
func TestMainExitStatus(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		args   []string
		code   int
		stream string // what stdout or stderr starts with
	}{
		{[]string{"--help"}, exitOK, "locktag reads and repairs"},
		{[]string{"release", "x"}, exitUsage, "locktag release: --reason is required"},
		{[]string{"--addr", srv.Addr(), "inspect", "nothing"}, exitNotFound, "locktag inspect nothing: nothing held"},
		{[]string{"--addr", srv.Addr(), "ls"}, exitOK, "nothing under the prefix"},
	} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), roleEnv+"=main", argsEnv+"="+strings.Join(tc.args, argsSep))
		var out, errs strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errs
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.HasPrefix(out.String()+errs.String(), tc.stream) {
			t.Errorf("locktag %q: status %d, want %d; stdout %q stderr %q", tc.args, code, tc.code, out.String(), errs.String())
		}
	}
}

// docs/operations.md shows locktag --help as it is, and every exit status.
func TestOperationsDoc(t *testing.T) {
	b, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if !strings.Contains(doc, "### `locktag --help`\n\n```\n"+usage+"```\n") {
		t.Error("docs/operations.md does not show locktag --help as it is: paste its output under \"### `locktag --help`\"")
	}
	for _, code := range []int{exitOK, exitNotFound, exitUsage, exitUnavailable, exitRefused, exitConflict, exitInterrupted} {
		if !strings.Contains(doc, "\n| "+strconv.Itoa(code)+" | ") {
			t.Errorf("docs/operations.md's exit status table lacks %d", code)
		}
	}
}
