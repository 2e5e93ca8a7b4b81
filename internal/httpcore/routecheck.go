package httpcore

import (
	"runtime"
	"sync"
	"weak"
)

// PerRouter remembers one *V for each router *K that an adapter's
// CheckRoutes has set up — the Echo adapters' route record, the Fiber
// adapter's hook — so that a second CheckRoutes on the same router finds
// it instead of installing another. It holds neither the router nor the
// value: the value lives as long as the router keeps it (in the hook it
// installed on the router), and an entry goes when its router does. The
// zero value is ready; it is safe for concurrent use.
type PerRouter[K, V any] struct {
	mu sync.Mutex
	m  map[weak.Pointer[K]]weak.Pointer[V]
}

// Get returns router's value, or nil.
func (p *PerRouter[K, V]) Get(router *K) *V {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[weak.Make(router)].Value()
}

// GetOrPut returns router's value, making it with mk (under p's lock) when
// router has none.
func (p *PerRouter[K, V]) GetOrPut(router *K, mk func() *V) *V {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := weak.Make(router)
	if v := p.m[k].Value(); v != nil {
		return v
	}
	v := mk()
	p.put(router, k, v)
	return v
}

// Put makes v router's value.
func (p *PerRouter[K, V]) Put(router *K, v *V) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.put(router, weak.Make(router), v)
}

func (p *PerRouter[K, V]) put(router *K, k weak.Pointer[K], v *V) {
	if p.m == nil {
		p.m = make(map[weak.Pointer[K]]weak.Pointer[V])
	}
	if _, ok := p.m[k]; !ok {
		runtime.AddCleanup(router, p.drop, k)
	}
	p.m[k] = weak.Make(v)
}

func (p *PerRouter[K, V]) drop(k weak.Pointer[K]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, k)
}

// Len returns the number of routers with a value, for tests.
func (p *PerRouter[K, V]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}
