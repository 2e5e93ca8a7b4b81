package locker

// DisableForceNotices makes l deaf to force-release notices (the control
// runs of the force-release tests): its leases learn of a force-release
// only when a renewal or Extend is refused. Call it before l's first lease.
func DisableForceNotices(l *Locker) {
	for _, h := range l.ctl {
		h.DisableControl()
	}
}

// ControlReady reports whether l's control channel is subscribed on every
// node.
func ControlReady(l *Locker) bool {
	for _, h := range l.ctl {
		if !h.ControlReady() {
			return false
		}
	}
	return true
}
