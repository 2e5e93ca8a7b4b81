package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// cpuTicks is the machine-wide line of /proc/stat: every CPU's time in
// clock ticks, and the parts of it that were idle (idle + iowait) and
// stolen by the hypervisor.
type cpuTicks struct{ total, idle, steal uint64 }

// readCPU reads /proc/stat; ok is false where there is none (not Linux).
func readCPU() (t cpuTicks, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return t, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return t, false
	}
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return t, false
		}
		t.total += v
		switch i {
		case 3, 4: // idle, iowait
			t.idle += v
		case 7:
			t.steal += v
		}
	}
	return t, true
}

// loadAvg is the one-minute load average, or -1 where there is none.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// machineState is what the whole machine did during one measurement
// window: how busy its CPUs were (every process: the tool, redis-server
// and anything else running), how much the hypervisor stole, and the load
// average at the end. A ratio measured while busy is far above what the
// tool and Redis use, or while steal is high, depends on the machine's
// state more than on the libraries.
type machineState struct {
	ok          bool
	busy, steal float64 // percent of all CPUs' time in the window
	load        float64
}

// machineBetween is the state over the window from a to b.
func machineBetween(a, b cpuTicks, aok, bok bool) machineState {
	if !aok || !bok || b.total <= a.total {
		return machineState{}
	}
	d := float64(b.total - a.total)
	return machineState{ok: true,
		busy:  100 * (d - float64(b.idle-a.idle)) / d,
		steal: 100 * float64(b.steal-a.steal) / d,
		load:  loadAvg()}
}

func (m machineState) String() string {
	if !m.ok {
		return "–"
	}
	return fmt.Sprintf("%.0f%% / %.1f%% / %.1f", m.busy, m.steal, m.load)
}

// machineRange summarises the states of every round's rows: the range of
// busy, steal and load over the rounds.
func machineRange(byRound []map[string]row) string {
	var lo, hi machineState
	n := 0
	for _, m := range byRound {
		for _, r := range m {
			s := r.mach
			if !s.ok {
				continue
			}
			if n == 0 {
				lo, hi = s, s
			}
			lo.busy, hi.busy = min(lo.busy, s.busy), max(hi.busy, s.busy)
			lo.steal, hi.steal = min(lo.steal, s.steal), max(hi.steal, s.steal)
			lo.load, hi.load = min(lo.load, s.load), max(hi.load, s.load)
			n++
		}
	}
	if n == 0 {
		return "not recorded (no /proc on this system)"
	}
	return fmt.Sprintf("CPUs busy %.0f–%.0f %%, steal %.1f–%.1f %%, load average %.1f–%.1f over %d windows",
		lo.busy, hi.busy, lo.steal, hi.steal, lo.load, hi.load, n)
}
