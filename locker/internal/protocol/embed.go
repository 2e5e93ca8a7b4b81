package protocol

import (
	"embed"
	"regexp"
	"slices"
	"strings"
	"sync"
)

var (
	//go:embed lua/fence.lua
	luaFence string
	//go:embed lua/value.lua
	luaValue string
	//go:embed lua/last.lua
	luaLast string
	//go:embed lua/common.lua
	luaCommon string
	//go:embed lua/acquire_free.lua
	luaAcquireFree string
	//go:embed lua/acquire.lua
	luaAcquire string
	//go:embed lua/release.lua
	luaRelease string
	//go:embed lua/release_held.lua
	luaReleaseHeld string
	//go:embed lua/handover.lua
	luaHandOver string
	//go:embed lua/acquire_busy.lua
	luaAcquireBusy string
	//go:embed lua/mutex.lua
	luaMutex string
	//go:embed lua/leave.lua
	luaLeave string
	//go:embed lua/extend.lua
	luaExtend string
	//go:embed lua/pttl.lua
	luaPTTL string
	//go:embed lua/keep.lua
	luaKeep string
	//go:embed lua/sem_common.lua
	luaSemCommon string
	//go:embed lua/sem_kind.lua
	luaSemKind string
	//go:embed lua/rw_kind.lua
	luaRWKind string
	//go:embed lua/rw_acquire.lua
	luaRWAcquire string
	//go:embed lua/sem_acquire.lua
	luaSemAcquire string
	//go:embed lua/sem_release.lua
	luaSemRelease string
	//go:embed lua/sem_idle.lua
	luaSemIdle string
	//go:embed lua/rw_idle.lua
	luaRWIdle string
	//go:embed lua/sem_release_queued.lua
	luaSemReleaseQueued string
	//go:embed lua/sem_acquire_idle.lua
	luaSemAcquireIdle string
	//go:embed lua/rw_acquire_idle.lua
	luaRWAcquireIdle string
	//go:embed lua/sem_leave.lua
	luaSemLeave string
	//go:embed lua/sem_extend.lua
	luaSemExtend string
	//go:embed lua/sem_pttl.lua
	luaSemPTTL string
	//go:embed lua/force.lua
	luaForce string
	//go:embed lua/sem_force.lua
	luaSemForce string
	//go:embed lua/raise.lua
	luaRaise string
	//go:embed lua/multi_acquire.lua
	luaMultiAcquire string
	//go:embed lua/idem_begin.lua
	luaIdemBegin string
	//go:embed lua/idem_end.lua
	luaIdemEnd string
	//go:embed lua/idem_renew.lua
	luaIdemRenew string
	//go:embed lua/idem_inspect.lua
	luaIdemInspect string
	//go:embed lua/inspect.lua
	luaInspect string
	//go:embed lua/list.lua
	luaList string
	//go:embed lua/rate.lua
	luaRate string
	//go:embed lua/rate_inspect.lua
	luaRateInspect string
	//go:embed lua/bridge.lua
	luaBridge string
	//go:embed lua/bridge_gate.lua
	luaBridgeGate string
	//go:embed lua/bridge_post.lua
	luaBridgePost string

	//go:embed lua/info.lua
	luaInfo string
	//go:embed lua/facts.lua
	luaFacts string
	//go:embed lua/check.lua
	luaCheck string

	//go:embed lua/*.lua
	luaFiles embed.FS
)

// Commands are the commands the scripts call, upper case and sorted, read
// once from the embedded scripts themselves: a script that starts calling
// another command is checked for it (Locker.Check, Locker.ACLRules)
// without anyone remembering to add it.
var Commands = sync.OnceValue(func() []string {
	call := regexp.MustCompile(`redis\.p?call\('([A-Za-z]+)'`)
	seen := map[string]bool{}
	files, _ := luaFiles.ReadDir("lua")
	for _, f := range files {
		src, _ := luaFiles.ReadFile("lua/" + f.Name())
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			seen[strings.ToUpper(m[1])] = true
		}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
})
