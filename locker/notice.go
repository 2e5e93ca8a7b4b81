package locker

import (
	"time"

	"github.com/locktag/locktag/locker/internal/admin"
)

// The events of a Notice.
const (
	// NoticeGrant: a lock was handed to a queued waiter (on a release, a
	// force-release, or the lapse of its holder's lease found by a later
	// call). A release's hand-over to a waiter of the releasing Locker
	// itself is answered in the script's reply, not published.
	NoticeGrant = "grant"
	// NoticeFree: a Redlock lock with queued waiters was freed; they try
	// again.
	NoticeFree = "free"
	// NoticeDropped: a Locker's queued entries for a lock were dropped (a
	// grant to one of its waiters lapsed unconfirmed).
	NoticeDropped = "dropped"
	// NoticeForced: ForceRelease freed holders. The control channel names
	// their owner tokens, not the lock.
	NoticeForced = "forced"
	// NoticeRecordEnded: an idempotency record in flight was completed or
	// abandoned, and a caller waiting for it was told.
	NoticeRecordEnded = "record-ended"
)

// Notice is one message the Locker's scripts published, as ReadNotice
// reads it. What is never published (a free lock taken at once, a
// release nobody waits for, a lease that runs out, a renewal) has no
// Notice: see docs/protocol.md, "Grants and notices".
type Notice struct {
	// Event is NoticeGrant, NoticeFree, NoticeDropped, NoticeForced or
	// NoticeRecordEnded.
	Event string
	// Name is the lock's or the record's name; "" for NoticeForced.
	Name string
	// Kind is the lock's kind (KindMutex, KindSemaphore, KindRW), or
	// KindIdempotency; "" for NoticeForced.
	Kind string
	// Owners are the owner tokens the notice names: NoticeGrant's new
	// holder, NoticeForced's freed holders, NoticeRecordEnded's waiting
	// caller.
	Owners []string
	// Fence is NoticeGrant's fencing token.
	Fence int64
	// Lease is NoticeGrant's lease: the grant window until the new holder
	// confirms (WithGrantWindow), at most the lease it asked for.
	Lease time.Duration
	// Server is the Redis server's clock at NoticeGrant's grant.
	Server time.Time
	// Reason is NoticeForced's reason, as recorded.
	Reason string
	// Subscriber is NoticeDropped's Locker (its ID).
	Subscriber string
}

// NoticePattern is the channel pattern (for PSUBSCRIBE) that covers every
// channel the Locker's scripts publish on: the key prefix and "*", which
// the channel rule of ACLRules allows as it is. It may cover other
// channels too; ReadNotice tells them apart.
func (l *Locker) NoticePattern() string { return l.o.prefix + "*" }

// ReadNotice reads a message received on channel (one NoticePattern
// covers): a grant, free or dropped notice on a lock's channel, a
// force-release on the control channel, a record's end on its channel.
// It returns false for any other channel or payload (the start-up check's,
// another program's). Notices are hints the scripts send to waiting
// Lockers, not a log: see Notice for what is never published.
func (l *Locker) ReadNotice(channel, payload string) (Notice, bool) {
	n, ok := admin.ReadNotice(l.o.prefix, controlChannel(l.o.prefix), channel, payload)
	return Notice(n), ok
}
