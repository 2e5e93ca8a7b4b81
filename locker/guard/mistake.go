package guard

import (
	"runtime"
	"slices"
	"sync"
	"time"
	"weak"

	"github.com/locktag/locktag/locker"
)

// Mistake is a mistake in a lock tag that a lock guard found at request
// time: the tag names something its route can never have, such as a
// {path.X} the route lacks (docs/routes.md). The route's requests are
// refused with TagMistake until the tag or the route is fixed.
type Mistake struct {
	Tag   string    // the tag, as written
	Name  string    // the guard's name: the tag's name field, or the route
	Route string    // where it was found: the adapter's route ("POST /items/:name")
	Err   error     // the guard's error, naming the placeholder
	At    time.Time // when it was found
}

// MistakeWindow is how long after the process started a tag mistake found
// at request time makes Health report the Locker as not serving
// (ReasonMisconfigured): long enough that a rolling deploy stops on the
// new replicas that meet it, short enough that a mistake first met by a
// fleet long in service (on a route that answered 500 all along) does not
// take every replica out of service at once. A mistake found later is
// logged and counted all the same.
const MistakeWindow = 10 * time.Minute

// started is when the process started, as near as this package can tell.
var started = time.Now()

// maxMistakes bounds the mistakes kept for one Locker.
const maxMistakes = 64

// Mistakes returns the tag mistakes lock guards on lk have found at
// request time since the process started, oldest first, one per tag and
// route (the first 64). Health reports a Locker with one found within
// MistakeWindow of the process's start as not serving
// (ReasonMisconfigured): a misconfigured route does not fix itself, and a
// new replica that has one should not take traffic.
func Mistakes(lk *locker.Locker) []Mistake {
	mistakes.mu.Lock()
	defer mistakes.mu.Unlock()
	return slices.Clone(mistakes.m[weak.Make(lk)])
}

// mistakes holds each Locker's Mistakes. It does not keep a Locker alive:
// its entry goes when the Locker does.
var mistakes struct {
	mu sync.Mutex
	m  map[weak.Pointer[locker.Locker]][]Mistake
}

// noteMistake adds m to lk's Mistakes, once per tag and route.
func noteMistake(lk *locker.Locker, m Mistake) {
	k := weak.Make(lk)
	mistakes.mu.Lock()
	defer mistakes.mu.Unlock()
	list, ok := mistakes.m[k]
	if slices.ContainsFunc(list, func(o Mistake) bool { return o.Tag == m.Tag && o.Route == m.Route }) || len(list) >= maxMistakes {
		return
	}
	if mistakes.m == nil {
		mistakes.m = make(map[weak.Pointer[locker.Locker]][]Mistake)
	}
	if !ok {
		runtime.AddCleanup(lk, forgetMistakes, k)
	}
	mistakes.m[k] = append(list, m)
}

func forgetMistakes(k weak.Pointer[locker.Locker]) {
	mistakes.mu.Lock()
	defer mistakes.mu.Unlock()
	delete(mistakes.m, k)
}
