package main

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// What the burst's parent watches on the lock's Redis while the buyers run,
// each on a connection of its own.

// queueSampler polls ZCARD of a waiter queue from its own connection and
// keeps the largest value.
type queueSampler struct {
	done chan struct{}
	max  atomic.Int64
	wg   sync.WaitGroup
}

func sampleQueue(addr, qkey string, every time.Duration) *queueSampler {
	q := &queueSampler{done: make(chan struct{})}
	q.wg.Go(func() {
		var c redis.Conn
		defer func() {
			if c != nil {
				c.Close()
			}
		}()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-q.done:
				return
			case <-t.C:
			}
			if c == nil {
				var err error
				if c, err = redis.Dial("tcp", addr, redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(2*time.Second)); err != nil {
					c = nil
					continue
				}
			}
			n, err := redis.Int64(c.Do("ZCARD", qkey))
			if err != nil {
				c.Close()
				c = nil // a slow Redis timed the sample out; dial again next tick
				continue
			}
			if n > q.max.Load() {
				q.max.Store(n)
			}
		}
	})
	return q
}

func (q *queueSampler) stop() int64 {
	close(q.done)
	q.wg.Wait()
	return q.max.Load()
}

// noticeCounter counts the messages on a lock's channel, and those whose
// payload starts with "!".
type noticeCounter struct {
	conn        redis.Conn
	all, ghosts atomic.Int64
	stopping    atomic.Bool
	dropped     atomic.Bool // the subscription ended before stop: counts are low
	wg          sync.WaitGroup
}

// countNotices returns once the subscription is confirmed, so no message
// of the run is missed.
func countNotices(addr, channel string) (*noticeCounter, error) {
	c, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	psc := redis.PubSubConn{Conn: c}
	if err := psc.Subscribe(channel); err != nil {
		c.Close()
		return nil, err
	}
	if _, ok := psc.Receive().(redis.Subscription); !ok {
		c.Close()
		return nil, fmt.Errorf("no subscription confirmed for %s", channel)
	}
	nc := &noticeCounter{conn: c}
	nc.wg.Go(func() {
		for {
			switch m := psc.Receive().(type) {
			case redis.Message:
				nc.all.Add(1)
				if bytes.HasPrefix(m.Data, []byte("!")) {
					nc.ghosts.Add(1)
				}
			case error:
				nc.dropped.Store(!nc.stopping.Load())
				return
			}
		}
	})
	return nc, nil
}

func (nc *noticeCounter) stop() (all, ghosts int64) {
	nc.stopping.Store(true)
	nc.conn.Close()
	nc.wg.Wait()
	return nc.all.Load(), nc.ghosts.Load()
}

// awaitIdle waits, up to bound, until addr answers three PINGs in a row
// within 5ms each. It returns how long that took and whether it happened.
func awaitIdle(addr string, bound time.Duration) (time.Duration, bool) {
	start := time.Now()
	var c redis.Conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for fast := 0; time.Since(start) < bound; {
		if c == nil {
			var err error
			if c, err = redis.Dial("tcp", addr, redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(2*time.Second)); err != nil {
				c, fast = nil, 0
				time.Sleep(20 * time.Millisecond)
				continue
			}
		}
		t := time.Now()
		_, err := c.Do("PING")
		switch {
		case err != nil:
			c.Close()
			c, fast = nil, 0
		case time.Since(t) > 5*time.Millisecond:
			fast = 0
		default:
			if fast++; fast == 3 {
				return time.Since(start), true
			}
			continue
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start), false
}
