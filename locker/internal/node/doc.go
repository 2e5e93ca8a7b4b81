// Package node is the engine's common ground below package locker: the
// Backend interface both backends (single, quorum) implement, the Redis
// node they run on (a driver, its Hub, and the start-up check), and what
// a Locker shares with them (Shared: the Config taken from its options,
// its key Layout, its subscriber id, the Hooks it is told through).
//
// What crosses the boundary: locker passes names.Names, an owner token and
// Terms down, and gets back a Held grant or an error matching the
// lockerr sentinels; the engine calls back up only through Hooks. Nothing
// here imports locker.
package node
