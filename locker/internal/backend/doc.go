// Package backend is the contract between package locker and the
// backends that run its locks on Redis (single: one deployment; quorum:
// Redlock): the Backend interface both implement, with Admin (what the
// operator's calls need) and MultiFast (ObtainMany's one-script path);
// the values that cross it (Terms down, Held up); the Redis Node a backend
// runs on (a driver and its Hub; package preflight checks it) and Fanout over several;
// and what a Locker shares with its backend (Shared: the Config taken
// from its options, its key Layout, its subscriber id, the Hooks it is
// told through).
//
// What crosses the boundary: locker passes names.Names, an owner token and
// Terms down, and gets back a Held grant or an error matching the
// lockerr sentinels; the engine calls back up only through Hooks. Nothing
// here imports locker.
package backend
