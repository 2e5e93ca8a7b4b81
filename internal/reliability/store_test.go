package reliability

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/locker"
)

// errStale is a read or write the store refused because its fencing token
// was stale.
var errStale = errors.New("store: stale fencing token")

// resource is the protected side: a counter per name, updated by
// read-modify-write. Every call carries the caller's fencing token.
type resource interface {
	Read(ctx context.Context, name string, token int64) (int64, error)
	Write(ctx context.Context, name string, token, read, next int64) error
}

// store is a resource kept in this process. With fencing on, it admits a
// read or a write only if its token is at least the largest it admitted
// for the name (locker.Fence.AdmitAgain: a holder reads and then writes
// with one token), so a holder that lost its lock can neither read nor
// write after a newer holder did. It counts the anomalies it sees.
type store struct {
	fenced bool

	mu     sync.Mutex
	fence  locker.Fence
	values map[string]int64
	writes int64 // writes applied
	lost   int64 // writes applied over a value other than the one read: a lost update
	stale  int64 // reads and writes refused for a stale token
}

func newStore(fenced bool) *store { return &store{fenced: fenced, values: map[string]int64{}} }

func (s *store) Read(_ context.Context, name string, token int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fenced {
		if err := s.fence.AdmitAgain(name, token); err != nil {
			s.stale++
			return 0, errStale
		}
	}
	return s.values[name], nil
}

func (s *store) Write(_ context.Context, name string, token, read, next int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fenced {
		if err := s.fence.AdmitAgain(name, token); err != nil {
			s.stale++
			return errStale
		}
	}
	if s.values[name] != read {
		s.lost++ // another writer's update since our read is overwritten
	}
	s.values[name] = next
	s.writes++
	return nil
}

// stats returns the counters and the named value.
func (s *store) stats(name string) (value, writes, lost, stale int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[name], s.writes, s.lost, s.stale
}

// serve exposes s over HTTP on loopback for child processes:
// GET /read?name=&token= and POST /write?name=&token=&read=&next=; 409 is
// a stale token.
func (s *store) serve(t testing.TB) string {
	mux := http.NewServeMux()
	num := func(r *http.Request, k string) int64 {
		n, _ := strconv.ParseInt(r.URL.Query().Get(k), 10, 64)
		return n
	}
	mux.HandleFunc("GET /read", func(w http.ResponseWriter, r *http.Request) {
		v, err := s.Read(r.Context(), r.URL.Query().Get("name"), num(r, "token"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		fmt.Fprint(w, v)
	})
	mux.HandleFunc("POST /write", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if err := s.Write(r.Context(), q.Get("name"), num(r, "token"), num(r, "read"), num(r, "next")); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// remoteStore is the client of store.serve, used by child processes.
type remoteStore struct {
	url string
	c   *http.Client
}

func newRemoteStore(url string) *remoteStore {
	return &remoteStore{url: url, c: &http.Client{Timeout: 10 * time.Second}}
}

func (r *remoteStore) do(ctx context.Context, method, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, method, r.url+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := r.c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNoContent:
		return string(b), nil
	case http.StatusConflict:
		return "", errStale
	}
	return "", fmt.Errorf("store: %s", resp.Status)
}

func (r *remoteStore) Read(ctx context.Context, name string, token int64) (int64, error) {
	b, err := r.do(ctx, http.MethodGet, fmt.Sprintf("/read?name=%s&token=%d", name, token))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(b, 10, 64)
}

func (r *remoteStore) Write(ctx context.Context, name string, token, read, next int64) error {
	_, err := r.do(ctx, http.MethodPost, fmt.Sprintf("/write?name=%s&token=%d&read=%d&next=%d", name, token, read, next))
	return err
}
