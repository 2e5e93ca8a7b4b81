package scripts

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
		"ping":           Ping,
		"replica_facts":  Facts,
		"mutex_acquire":  Acquire,
		"mutex_release":  Release,
		"mutex_leave":    Leave,
		"mutex_extend":   Extend,
		"mutex_pttl":     PTTL,
		"mutex_keep":     Keep,
		"mutex_force":    Force,
		"bridge_acquire": MutexBridge.Acquire,
		"bridge_release": MutexBridge.Release,
		"bridge_leave":   MutexBridge.Leave,
		"bridge_extend":  MutexBridge.Extend,
		"bridge_pttl":    MutexBridge.PTTL,
		"bridge_keep":    MutexBridge.Keep,
		"sem_acquire":    Sem.Acquire,
		"sem_release":    Sem.Release,
		"sem_leave":      Sem.Leave,
		"sem_extend":     semExtend,
		"sem_pttl":       semPTTL,
		"sem_force":      SemForce,
		"rw_acquire":     RW.Acquire,
		"rw_release":     RW.Release,
		"rw_leave":       RW.Leave,
		"rw_force":       RWForce,
		"multi_acquire":  MultiAcquire,
		"redlock_raise":  Raise,
		"idem_begin":     IdemBegin,
		"idem_end":       IdemEnd,
		"idem_renew":     IdemRenew,
		"idem_inspect":   IdemInspect,
		"inspect":        Inspect,
		"list":           List,
		"rate":           Rate,
		"rate_inspect":   RateInspect,
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
