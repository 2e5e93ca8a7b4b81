// Package bridge tests locker.WithPlainLockBridge against the libraries
// teams migrate from: go-redsync/redsync (redigo) and bsm/redislock
// (go-redis), each taking the plain lock of the same name while locktag
// workers take their bridged mutex.
package bridge
