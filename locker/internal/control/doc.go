// Package control is the control channel, which tells a Locker that one
// of its leases was force-released, so the holder's context is cancelled
// at once rather than at its next renewal.
//
// Every Locker on one deployment subscribes to the same channel (Channel)
// on its hub's listener: lazily, when its first lease is made, so a
// Locker that never holds a lock opens no subscriber connection and no
// call of the hot path pays a round trip for it. The lock value does not
// record which Locker holds it, and need not: a force-release publishes
// "token[,token...] reason" to all, and each Locker looks the tokens up
// among its own leases (a Table). Force-releases are rare operator
// actions, so the fan-out costs less than a write per acquire would.
//
// A notice missed (the listener broke, or the lease was made in the
// instant before it was registered) costs the holder the prompt
// cancellation only: its next renewal is refused and loses the lease.
package control
