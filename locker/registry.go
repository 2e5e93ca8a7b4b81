package locker

import "github.com/locktag/locktag/locker/driver"

// scriptsByName is every script the locker runs, by name, as Redis runs it
// (its fragments assembled). The golden files under testdata/scripts are
// these sources, one file a name, so a reviewer reads exactly what Redis
// runs; TestScriptsGolden keeps the two equal. The start-up check's script
// is left out: it carries the Locker's id.
func scriptsByName() map[string]*driver.Script {
	return map[string]*driver.Script{
		"ping":          scriptPing,
		"mutex_acquire": scriptAcquire,
		"mutex_release": scriptRelease,
		"mutex_leave":   scriptLeave,
		"mutex_extend":  scriptExtend,
		"mutex_pttl":    scriptPTTL,
		"mutex_keep":    scriptKeep,
		"mutex_force":   scriptForce,
		"sem_acquire":   semScripts.acquire,
		"sem_release":   semScripts.release,
		"sem_leave":     semScripts.leave,
		"sem_extend":    semScriptsExtend,
		"sem_pttl":      semScriptsPTTL,
		"sem_force":     scriptSemForce,
		"rw_acquire":    rwScripts.acquire,
		"rw_release":    rwScripts.release,
		"rw_leave":      rwScripts.leave,
		"rw_force":      scriptRWForce,
		"multi_acquire": scriptMultiAcquire,
		"redlock_raise": scriptRaise,
		"idem_begin":    scriptIdemBegin,
		"idem_end":      scriptIdemEnd,
		"idem_renew":    scriptIdemRenew,
		"inspect":       scriptInspect,
		"list":          scriptList,
		"rate":          scriptRate,
		"rate_inspect":  scriptRateInspect,
	}
}
