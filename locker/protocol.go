package locker

import (
	"context"
	"errors"

	"github.com/locktag/locktag/locker/internal/protocol"
)

// ProtocolVersion is the version of the Redis protocol this release
// speaks: the keys it stores, their values and its scripts
// (docs/protocol.md). It is versioned apart from the module: releases
// that speak the same protocol share one Redis safely, and a release
// interoperates with the one before it (docs/versioning.md).
const ProtocolVersion = protocol.ProtocolVersion

// protocolMet logs, once per Locker, the first record of another protocol
// its calls met (ErrProtocol): the calls fail with the error each time,
// the log says it once. Healthy is not made to fail: the record concerns
// one name, and a failing probe would take every process of the release
// out of service.
func (l *Locker) protocolMet(ctx context.Context, err error) {
	if errors.Is(err, ErrProtocol) && l.protocolLogged.CompareAndSwap(false, true) {
		l.log.Protocol(ctx, err)
	}
}
