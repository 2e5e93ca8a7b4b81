package faults

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
)

// Certs are a CA and a server certificate for 127.0.0.1 and localhost,
// signed by it, written as PEM files in a temporary directory.
type Certs struct {
	Dir      string
	CAFile   string
	CertFile string
	KeyFile  string
	CAPool   *x509.CertPool
}

// NewCerts generates a fresh CA and server certificate (ECDSA P-256, valid
// for an hour).
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "locktag test CA"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := &Certs{
		Dir:      dir,
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "server.pem"),
		KeyFile:  filepath.Join(dir, "server-key.pem"),
		CAPool:   x509.NewCertPool(),
	}
	c.CAPool.AddCert(caCert)
	for path, blk := range map[string]*pem.Block{
		c.CAFile:   {Type: "CERTIFICATE", Bytes: caDER},
		c.CertFile: {Type: "CERTIFICATE", Bytes: der},
		c.KeyFile:  {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TLSConfig is the client configuration that trusts only the test CA.
func (c *Certs) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: c.CAPool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// SecureOptions say how StartSecure protects the server.
type SecureOptions struct {
	Certs       *Certs // non-nil: TLS only (--port 0 --tls-port P), no client certificates
	RequirePass string // non-empty: --requirepass (the "default" user's password)
}

// SecureServer is a redis-server started by StartSecure.
type SecureServer struct {
	t    testing.TB
	addr string
	o    SecureOptions
	cmd  *exec.Cmd
	dir  string
}

// StartSecure starts redis-server on a free loopback port with TLS and/or a
// password, waits until it answers PING with the right credentials, and
// stops it when the test ends. It skips the test if redis-server was built
// without TLS.
func StartSecure(t testing.TB, o SecureOptions) *SecureServer {
	t.Helper()
	if _, err := exec.LookPath(redistest.ServerBinary()); err != nil {
		t.Fatalf("faults: %s not found on PATH: install it (apt-get install -y redis-server)", redistest.ServerBinary())
	}
	s := &SecureServer{t: t, o: o, dir: t.TempDir()}
	var lastErr error
	for range 5 {
		port, err := redistest.FreePort()
		if err != nil {
			lastErr = err
			continue
		}
		if lastErr = s.start(port); lastErr == nil {
			t.Cleanup(s.stop)
			return s
		}
		if strings.Contains(lastErr.Error(), "tls-port") && strings.Contains(lastErr.Error(), "Bad directive") {
			t.Skip("faults: this redis-server was built without TLS")
		}
	}
	t.Fatalf("faults: cannot start a secure redis-server: %v", lastErr)
	return nil
}

func (s *SecureServer) start(port int) error {
	args := []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", s.dir, "--protected-mode", "no"}
	if c := s.o.Certs; c != nil {
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(port),
			"--tls-cert-file", c.CertFile, "--tls-key-file", c.KeyFile, "--tls-ca-cert-file", c.CAFile,
			"--tls-auth-clients", "no")
	} else {
		args = append(args, "--port", strconv.Itoa(port))
	}
	if s.o.RequirePass != "" {
		args = append(args, "--requirepass", s.o.RequirePass)
	}
	logPath := filepath.Join(s.dir, "redis.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(redistest.ServerBinary(), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.addr = "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := redis.Dial("tcp", s.addr, s.DialOptions("", s.o.RequirePass)...)
		if err == nil {
			_, err = c.Do("PING")
			c.Close()
			if err == nil {
				s.cmd = cmd
				return nil
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("redis-server exited: %s", b)
		case <-time.After(10 * time.Millisecond): // polling for readiness, with a deadline
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redis-server did not answer within 10s: %v", err)
		}
	}
}

func (s *SecureServer) stop() {
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		_, _ = s.cmd.Process.Wait()
	}
}

// Addr is the server's host:port (its TLS port when TLS is on).
func (s *SecureServer) Addr() string { return s.addr }

// DialOptions are the redigo dial options for user (empty: the default
// user) with pass, with TLS configured from the server's CA when TLS is on.
func (s *SecureServer) DialOptions(user, pass string) []redis.DialOption {
	opts := []redis.DialOption{
		redis.DialConnectTimeout(2 * time.Second),
		redis.DialReadTimeout(2 * time.Second),
		redis.DialWriteTimeout(2 * time.Second),
	}
	if s.o.Certs != nil {
		opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(s.o.Certs.TLSConfig()))
	}
	if user != "" {
		opts = append(opts, redis.DialUsername(user))
	}
	if pass != "" {
		opts = append(opts, redis.DialPassword(pass))
	}
	return opts
}

// Do runs one command as the default user with the right credentials.
func (s *SecureServer) Do(cmd string, args ...any) (any, error) {
	c, err := redis.DialContext(context.Background(), "tcp", s.addr, s.DialOptions("", s.o.RequirePass)...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Do(cmd, args...)
}
