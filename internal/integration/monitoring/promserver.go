package monitoring

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Server is a prometheus process this package started: its own config
// and storage in Dir, listening on a loopback port. Stop ends it by its
// pid; nothing else (such as a system service of the same program) is
// touched.
type Server struct {
	Client
	Dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
}

// ServerConfig says what a Server scrapes and evaluates.
type ServerConfig struct {
	Binary    string        // the prometheus program; "prometheus" on PATH when empty
	Dir       string        // config, rules and storage go here (a fresh directory)
	Targets   []string      // host:port of each /metrics endpoint, one job "locktag"
	Interval  time.Duration // scrape and rule evaluation interval
	RuleFiles []string      // rule files, copied into Dir
}

// StartServer starts prometheus and waits until it is ready. The port is
// chosen free just before the start; a clash (another process took it in
// between) is retried on another port.
func StartServer(ctx context.Context, c ServerConfig) (*Server, error) {
	bin := c.Binary
	if bin == "" {
		bin = "prometheus"
	}
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	var rules []string
	for i, f := range c.RuleFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dst := filepath.Join(c.Dir, fmt.Sprintf("rules-%d.yml", i))
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return nil, err
		}
		rules = append(rules, dst)
	}
	cfg := configYAML(c, rules)
	cfgPath := filepath.Join(c.Dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := launch(ctx, bin, c.Dir, cfgPath, port)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	return nil, lastErr
}

func configYAML(c ServerConfig, rules []string) string {
	var b strings.Builder
	iv := c.Interval.String()
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n", iv, iv, iv)
	if len(rules) > 0 {
		b.WriteString("rule_files:\n")
		for _, r := range rules {
			fmt.Fprintf(&b, "  - %q\n", r)
		}
	}
	b.WriteString("scrape_configs:\n  - job_name: locktag\n    static_configs:\n      - targets:\n")
	for _, t := range c.Targets {
		fmt.Fprintf(&b, "          - %q\n", t)
	}
	return b.String()
}

func launch(ctx context.Context, bin, dir, cfgPath string, port int) (*Server, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	data := filepath.Join(dir, "data")
	logPath := filepath.Join(dir, "prometheus.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+data,
		"--storage.tsdb.retention.time=1d",
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	s := &Server{Client: Client{URL: "http://" + addr, HTTP: &http.Client{Timeout: 30 * time.Second}},
		Dir: dir, cmd: cmd, exited: make(chan struct{}), log: logf}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-s.exited:
			logf.Close()
			return nil, fmt.Errorf("prometheus exited at start: %s", tailFile(logPath))
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.Stop()
			return nil, fmt.Errorf("prometheus not ready on %s: %v; log: %s", addr, errors.Join(err, ctx.Err()), tailFile(logPath))
		}
		time.Sleep(50 * time.Millisecond) // polling its readiness endpoint
	}
}

// Pid is the prometheus process's id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop ends the process (SIGTERM, then SIGKILL after 10s) and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.log.Close()
}

// LogTail is the end of the process's log.
func (s *Server) LogTail() string { return tailFile(filepath.Join(s.Dir, "prometheus.log")) }

func tailFile(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
