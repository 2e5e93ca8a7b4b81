package hub

import "context"

// SetControl makes the hub carry the control channel: fn gets each message
// published on channel once WatchControl has subscribed it.
func (h *Hub) SetControl(channel string, fn func(payload string)) {
	h.ctl, h.ctlFn = channel, fn
}

// DisableControl makes the hub deaf to the control channel (tests: a
// Locker whose leases learn of a force-release only at a renewal).
func (h *Hub) DisableControl() { h.ctl = "" }

// ControlReady reports whether the control channel is subscribed.
func (h *Hub) ControlReady() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ctlLis != nil
}

// WatchControl subscribes the hub's control channel unless it is
// subscribed or being subscribed: one atomic load when it is.
func (h *Hub) WatchControl() {
	if h.ctl == "" || h.ctlOn.Load() || !h.ctlOn.CompareAndSwap(false, true) {
		return
	}
	go h.subscribeControl()
}

// subscribeControl subscribes the control channel on the hub's listener,
// opening it if needed. On failure the next lease or renewal tries again.
func (h *Hub) subscribeControl() {
	ctx, cancel := context.WithTimeout(context.Background(), h.bounds.Timeout)
	defer cancel()
	lis, err := h.listener(ctx)
	if err == nil {
		err = lis.Subscribe(ctx, h.ctl)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil && h.lis == lis && !h.closed {
		h.ctlLis = lis
		return
	}
	// Failed, or the listener broke (or closed) since: broken saw no
	// ctlLis of its own to clear.
	h.ctlOn.Store(false)
}
