package locktest

import (
	"io"
	"net"
	"sync"
)

// cutter is a TCP proxy between the Lockers and the server that can cut
// them off: while down it drops every open connection and closes new ones
// as they come, so every call fails at once, as with a Redis that went
// away; up again, new connections reach the server with its data intact.
type cutter struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newCutter(target string) (*cutter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &cutter{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	c.wg.Add(1)
	go c.serve()
	return c, nil
}

func (c *cutter) addr() string { return c.ln.Addr().String() }

func (c *cutter) serve() {
	defer c.wg.Done()
	for {
		in, err := c.ln.Accept()
		if err != nil {
			return // closed
		}
		if !c.track(in) {
			_ = in.Close()
			continue
		}
		out, err := net.Dial("tcp", c.target)
		if err != nil || !c.track(out) {
			c.drop(in)
			if out != nil {
				_ = out.Close()
			}
			continue
		}
		c.wg.Add(2)
		go c.pipe(in, out)
		go c.pipe(out, in)
	}
}

// track registers conn unless the proxy is down.
func (c *cutter) track(conn net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down || c.conns == nil {
		return false
	}
	c.conns[conn] = struct{}{}
	return true
}

func (c *cutter) drop(conn net.Conn) {
	c.mu.Lock()
	delete(c.conns, conn)
	c.mu.Unlock()
	_ = conn.Close()
}

func (c *cutter) pipe(dst, src net.Conn) {
	defer c.wg.Done()
	_, _ = io.Copy(dst, src)
	c.drop(dst)
	c.drop(src)
}

// setDown cuts every connection and refuses new ones (down), or lets them
// through again.
func (c *cutter) setDown(down bool) {
	c.mu.Lock()
	c.down = down
	var open []net.Conn
	if down {
		for conn := range c.conns {
			open = append(open, conn)
		}
	}
	c.mu.Unlock()
	for _, conn := range open {
		_ = conn.Close()
	}
}

func (c *cutter) close() {
	_ = c.ln.Close()
	c.mu.Lock()
	open := c.conns
	c.conns = nil
	c.mu.Unlock()
	for conn := range open {
		_ = conn.Close()
	}
	c.wg.Wait()
}
