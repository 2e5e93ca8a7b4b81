package admin

import (
	"strconv"
	"strings"
	"time"
)

// The events of a Notice (locker.NoticeGrant ...).
const (
	noticeGrant       = "grant"
	noticeFree        = "free"
	noticeDropped     = "dropped"
	noticeForced      = "forced"
	noticeRecordEnded = "record-ended"
)

// Notice is one message the scripts published (locker.Notice).
type Notice struct {
	Event      string
	Name       string
	Kind       string
	Owners     []string
	Fence      int64
	Lease      time.Duration
	Server     time.Time
	Reason     string
	Subscriber string
}

// noticeChannels are the channels the scripts publish on for a name, by
// what follows its hash tag (docs/protocol.md, "Grants and notices"):
// each kind's lock channel, and an idempotency record's. Their bytes
// before the last differ, so a channel ends in at most one of them.
var noticeChannels = [...]struct{ suffix, kind string }{
	{"}:c", kindMutex},
	{"}:s:c", kindSemaphore},
	{"}:rw:c", kindRW},
	{"}:rc", kindIdempotency},
}

// ReadNotice reads a message published on channel under the key prefix
// keyPrefix, whose control channel is control (locker.ReadNotice).
func ReadNotice(keyPrefix, control, channel, payload string) (Notice, bool) {
	if channel == control {
		// "token[,token...] reason" (force.lua, sem_force.lua)
		tokens, reason, ok := strings.Cut(payload, " ")
		if !ok || tokens == "" {
			return Notice{}, false
		}
		return Notice{Event: noticeForced, Owners: strings.Split(tokens, ","), Reason: reason}, true
	}
	rest, ok := strings.CutPrefix(channel, keyPrefix)
	if !ok || !strings.HasPrefix(rest, "{") {
		return Notice{}, false
	}
	for _, c := range noticeChannels {
		if !strings.HasSuffix(rest, c.suffix) || len(rest) < 1+len(c.suffix) {
			continue
		}
		n := Notice{Name: rest[1 : len(rest)-len(c.suffix)], Kind: c.kind}
		return readPayload(n, payload)
	}
	return Notice{}, false
}

// readPayload reads the payload of a notice on a lock's or record's
// channel into n.
func readPayload(n Notice, payload string) (Notice, bool) {
	switch {
	case n.Kind != kindIdempotency && payload == "-":
		n.Event = noticeFree
		return n, true
	case n.Kind != kindIdempotency && strings.HasPrefix(payload, "!"):
		n.Event, n.Subscriber = noticeDropped, payload[1:]
		return n, n.Subscriber != ""
	}
	// A grant "token fence server_ms pttl_ms"; a record's waiter is told
	// "token 0 0".
	f := strings.Fields(payload)
	if len(f) < 3 || len(f) > 4 {
		return Notice{}, false
	}
	fence, err1 := strconv.ParseInt(f[1], 10, 64)
	server, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return Notice{}, false
	}
	n.Owners = []string{f[0]}
	if n.Kind == kindIdempotency {
		n.Event = noticeRecordEnded
		return n, true
	}
	n.Event, n.Fence, n.Server = noticeGrant, fence, time.UnixMilli(server)
	if len(f) == 4 {
		pttl, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return Notice{}, false
		}
		n.Lease = time.Duration(pttl) * time.Millisecond
	}
	return n, true
}
