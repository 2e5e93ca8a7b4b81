package locker

import "github.com/locktag/locktag/locker/internal/scripts"

// ProtocolVersion is the version of the Redis protocol this release
// speaks: the keys it stores, their values and its scripts
// (docs/protocol.md). It is versioned apart from the module: releases
// that speak the same protocol share one Redis safely, and a release
// interoperates with the one before it (docs/versioning.md).
const ProtocolVersion = scripts.ProtocolVersion
