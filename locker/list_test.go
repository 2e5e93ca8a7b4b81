package locker_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// listAll pages through List and returns the distinct names and the number
// of pages.
func listAll(t *testing.T, lk *locker.Locker, prefix string) ([]string, int) {
	t.Helper()
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		names, next, err := lk.List(context.Background(), prefix, cursor)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, n := range names {
			seen[n] = true
		}
		if next == "" {
			break
		}
		if pages > 10000 {
			t.Fatal("List does not end")
		}
		cursor = next
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, pages
}

// List pages through a keyspace larger than one SCAN step and returns
// exactly the locks under the prefix, glob characters taken literally.
func TestList(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	var want []string
	names := []string{"job:a*b", "job:a?", "other:1", "jo", "job:[1]"}
	for i := range 1200 {
		names = append(names, fmt.Sprintf("job:%04d", i))
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, n := range names {
		if len(n) > 4 && n[:4] == "job:" {
			want = append(want, n)
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := lk.Obtain(ctx, n, locker.Params{TTL: time.Minute}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	sort.Strings(want)

	got, pages := listAll(t, lk, "job:")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("List(job:) = %d names, want %d", len(got), len(want))
	}
	if pages < 2 {
		t.Errorf("%d page(s) for %d keys: SCAN steps are not paged", pages, 2*len(names))
	}
	for prefix, want := range map[string]string{"job:a*": "[job:a*b]", "job:[": "[job:[1]]", "job:a?": "[job:a?]", "nope": "[]"} {
		if got, _ := listAll(t, lk, prefix); fmt.Sprint(got) != want {
			t.Errorf("List(%q) = %v, want %s", prefix, got, want)
		}
	}
	if _, _, err := lk.List(ctx, "", "garbage"); !errors.Is(err, locker.ErrBadOption) {
		t.Errorf("bad cursor: %v", err)
	}
	srv.Stop()
	if _, _, err := lk.List(ctx, "", ""); !errors.Is(err, locker.ErrUnavailable) {
		t.Errorf("Redis down: %v", err)
	}
}
