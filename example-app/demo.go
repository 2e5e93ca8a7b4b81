package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/locktag/locktag/locker"
)

// demoConfig sizes the flash sale.
type demoConfig struct {
	Buyers  int           // concurrent purchases per round
	Stock   int           // units of the item in stock
	Latency time.Duration // the store's write latency
}

// roundResult counts the answers of one round of the demo.
type roundResult struct {
	Route     string
	Confirmed int // 200: the buyer was told it got one
	SoldOut   int // 409 sold out
	Other     int // anything else (busy after the wait, errors)
	StockLeft int64
	Elapsed   time.Duration
}

// Oversold is how many confirmed purchases the stock could not cover.
func (r roundResult) Oversold(stock int) int {
	return max(r.Confirmed-stock, 0)
}

// runDemo serves the shop's HTTP API on a free loopback port and fires
// cfg.Buyers concurrent purchases of one item at it twice: at the route
// without a lock, then at the route with the lock tag. It prints and returns
// both rounds' counts.
func runDemo(ctx context.Context, lk *locker.Locker, out io.Writer, cfg demoConfig) ([]roundResult, error) {
	const sku = "apple"
	db := newStore(cfg.Latency, map[string]int64{sku: int64(cfg.Stock)})
	s := newShop(lk, db)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: newRouter(s, nil), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() { _ = hs.Serve(ln); close(served) }()
	defer func() {
		_ = hs.Close()
		<-served
	}()
	tr := &http.Transport{MaxIdleConnsPerHost: cfg.Buyers, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	fmt.Fprintf(out, "Flash sale: %d buyers at once, %d %ss in stock, store write latency %v.\n",
		cfg.Buyers, cfg.Stock, sku, cfg.Latency)
	base := "http://" + ln.Addr().String() + "/items/" + sku
	var results []roundResult
	for _, round := range []struct{ label, path string }{
		{"without a lock", "/buy-unlocked"},
		{"with the lock tag", "/buy"},
	} {
		db.Set(sku, int64(cfg.Stock))
		r, err := fire(ctx, client, base+round.path, cfg.Buyers)
		if err != nil {
			return results, err
		}
		it, _ := db.Get(sku)
		r.StockLeft = it.Stock
		results = append(results, r)
		fmt.Fprintf(out, "  %-18s POST /items/%s%-14s confirmed %4d  sold out %4d  other %3d  -> oversold %4d  (store says %d left)  %v\n",
			round.label, sku, round.path, r.Confirmed, r.SoldOut, r.Other, r.Oversold(cfg.Stock),
			r.StockLeft, r.Elapsed.Round(time.Millisecond))
	}
	if len(results) == 2 && results[1].Oversold(cfg.Stock) == 0 && results[0].Oversold(cfg.Stock) > 0 {
		fmt.Fprintf(out, "Without a lock %d buyers were promised an %s that does not exist; with the tag, none.\n",
			results[0].Oversold(cfg.Stock), sku)
	}
	return results, nil
}

// fire sends n purchases to url at once (they all wait at a start line) and
// counts the answers.
func fire(ctx context.Context, client *http.Client, url string, n int) (roundResult, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		res   = roundResult{Route: url}
		errs  []error
		start = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			req.Header.Set("X-User", fmt.Sprintf("buyer-%d", i))
			<-start
			resp, err := client.Do(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK:
				res.Confirmed++
			case resp.StatusCode == http.StatusConflict && bytes.Contains(body, []byte(`"sold out"`)):
				res.SoldOut++ // the handler's 409; a busy lock's 409 is a problem+json body
			default:
				res.Other++
			}
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	res.Elapsed = time.Since(t0)
	if len(errs) > 0 {
		return res, fmt.Errorf("demo: %d of %d requests failed: %w", len(errs), n, errs[0])
	}
	return res, nil
}
