package locker

// DisableForceNotices makes l deaf to force-release notices (the control
// runs of the force-release tests): its leases learn of a force-release
// only when a renewal or Extend is refused. Call it before l's first lease.
func DisableForceNotices(l *Locker) { l.ctl.ctl = "" }

// ControlReady reports whether l's control channel is subscribed.
func ControlReady(l *Locker) bool {
	h := l.ctl
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ctlLis != nil
}
