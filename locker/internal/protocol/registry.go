package protocol

import (
	"sync"

	"github.com/locktag/locktag/locker/driver"
)

// ByName is every script the locker runs, by name, as Redis runs it (its
// fragments assembled). The golden files under testdata/scripts are these
// sources, one file a name, so a reviewer reads exactly what Redis runs;
// TestScriptsGolden keeps the two equal. The start-up check's script is
// left out: it carries the Locker's id.
func ByName() map[string]*driver.Script {
	return map[string]*driver.Script{
		"ping":           Ping.Script,
		"replica_facts":  Facts.Script,
		"mutex_acquire":  Mutex.Acquire.Script,
		"mutex_release":  Mutex.Release.Script,
		"mutex_leave":    Mutex.Leave.Script,
		"mutex_extend":   Mutex.Extend.Script,
		"mutex_pttl":     Mutex.PTTL.Script,
		"mutex_keep":     Mutex.Keep.Script,
		"mutex_force":    Force.Script,
		"bridge_acquire": MutexBridge.Acquire.Script,
		"bridge_release": MutexBridge.Release.Script,
		"bridge_leave":   MutexBridge.Leave.Script,
		"bridge_extend":  MutexBridge.Extend.Script,
		"bridge_pttl":    MutexBridge.PTTL.Script,
		"bridge_keep":    MutexBridge.Keep.Script,
		"sem_acquire":    Sem.Acquire.Script,
		"sem_release":    Sem.Release.Script,
		"sem_leave":      Sem.Leave.Script,
		"sem_extend":     semExtend.Script,
		"sem_pttl":       semPTTL.Script,
		"sem_force":      SemForce.Script,
		"rw_acquire":     RW.Acquire.Script,
		"rw_release":     RW.Release.Script,
		"rw_leave":       RW.Leave.Script,
		"rw_force":       RWForce.Script,
		"multi_acquire":  MultiAcquire.Script,
		"redlock_raise":  Raise.Script,
		"idem_begin":     IdemBegin.Script,
		"idem_end":       IdemEnd.Script,
		"idem_renew":     IdemRenew.Script,
		"idem_inspect":   IdemInspect.Script,
		"inspect":        Inspect.Script,
		"list":           List.Script,
		"rate":           Rate.Script,
		"rate_inspect":   RateInspect.Script,
	}
}

// Named reports whether s is the script registered as name: tests pick
// the calls they intercept by it.
func Named(s *driver.Script, name string) bool {
	r, ok := registered()[name]
	return ok && r == s
}

// registered is ByName made once, for Named.
var registered = sync.OnceValue(ByName)
