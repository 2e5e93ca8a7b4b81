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

// fencing is how a store checks fencing tokens.
type fencing int

const (
	// unfenced: no check; a holder that lost its lock reads and writes.
	unfenced fencing = iota
	// claimFenced: a read claims the name with its token
	// (locker.Fence.Claim) and a write is applied only if that claim still
	// stands (Check), so a holder that lost its lock can neither read nor
	// write after a newer holder read: the read-modify-write recipe.
	claimFenced
	// writeFenced: only the write is checked (locker.Fence.Admit: its
	// token must be larger than every token written before) — the
	// write-only recipe, which does not protect a read-modify-write.
	writeFenced
)

func (f fencing) String() string {
	return [...]string{"unfenced", "claim-fenced", "write-fenced"}[f]
}

// store is a resource kept in this process, fenced as its mode says. It
// counts the anomalies it sees.
type store struct {
	mode fencing

	mu     sync.Mutex
	fence  locker.Fence
	values map[string]int64
	writes int64 // writes applied
	lost   int64 // writes applied over a value other than the one read: a lost update
	stale  int64 // reads and writes refused for a stale token
}

// newStore returns a store that fences reads and writes (claimFenced), or
// nothing.
func newStore(fenced bool) *store {
	if fenced {
		return newFencedStore(claimFenced)
	}
	return newFencedStore(unfenced)
}

func newFencedStore(mode fencing) *store { return &store{mode: mode, values: map[string]int64{}} }

// refuse turns a fence's error into the store's, counting stale tokens.
// Called with s.mu held.
func (s *store) refuse(err error) error {
	if errors.Is(err, locker.ErrStaleToken) {
		s.stale++
		return errStale
	}
	return err
}

func (s *store) Read(_ context.Context, name string, token int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode == claimFenced {
		if err := s.fence.Claim(name, token); err != nil {
			return 0, s.refuse(err)
		}
	}
	return s.values[name], nil
}

func (s *store) Write(_ context.Context, name string, token, read, next int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	switch s.mode {
	case claimFenced:
		err = s.fence.Check(name, token)
	case writeFenced:
		err = s.fence.Admit(name, token)
	}
	if err != nil {
		return s.refuse(err)
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
// a stale token, 500 any other refusal.
func (s *store) serve(t testing.TB) string {
	mux := http.NewServeMux()
	status := func(err error) int {
		if errors.Is(err, errStale) {
			return http.StatusConflict
		}
		return http.StatusInternalServerError
	}
	num := func(r *http.Request, k string) int64 {
		n, _ := strconv.ParseInt(r.URL.Query().Get(k), 10, 64)
		return n
	}
	mux.HandleFunc("GET /read", func(w http.ResponseWriter, r *http.Request) {
		v, err := s.Read(r.Context(), r.URL.Query().Get("name"), num(r, "token"))
		if err != nil {
			http.Error(w, err.Error(), status(err))
			return
		}
		fmt.Fprint(w, v)
	})
	mux.HandleFunc("POST /write", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if err := s.Write(r.Context(), q.Get("name"), num(r, "token"), num(r, "read"), num(r, "next")); err != nil {
			http.Error(w, err.Error(), status(err))
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
