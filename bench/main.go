// Command bench is locktag's side-by-side load tool: it measures locktag,
// go-redsync/redsync v4, bsm/redislock, redis/rueidis' rueidislock, the
// seed articles' sleep-retry lock and a SET+DEL pair (not a lock: the
// two-round-trip floor) on the same redis-server in the same run, and on a
// Redis Cluster those that run on one, and prints markdown tables.
//
//	cd bench && go run . [flags]
//
// See docs/benchmarks-load.md for the scenarios and how to read the tables.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

type config struct {
	cs          []int
	warm, dur   time.Duration
	hold, think time.Duration
	libs        map[string]bool // nil: all
	scenarios   map[string]bool // nil: all
	addrs       []string        // the single-node server
	redlock     []string        // the five Redlock masters
	charts      string
	procs       int
	procWorkers int
	control     bool
	runID       string
	rounds      int // uncontended: interleaved rounds per contention level
	// burst
	burstNs        []int
	burstProcs     int
	burstHold      time.Duration
	burstWait      time.Duration
	burstLimit     time.Duration
	burstBaseStock int
	stockAddr      string // burst: the server holding the stock (the shop's own store)
	// cluster
	cluster      []string // the Cluster's masters
	clusterCs    []int    // uncontended contention levels
	clusterBurst []int    // buyer counts; none: no burst
}

func (c *config) want(scenario string) bool { return c.scenarios == nil || c.scenarios[scenario] }
func (c *config) wantLib(lib string) bool {
	if c.libs == nil {
		return !onlyWhenNamed[lib]
	}
	return c.libs[lib]
}

// onlyWhenNamed are libraries that run only when -libs names them.
var onlyWhenNamed = map[string]bool{"locktag-1conn": true}

// allScenarios run by default; burst, burst-kinds, waiters, hotloop and
// cluster run only when named.
var allScenarios = []string{"uncontended", "hot", "procs", "redlock", "e2e", "kinds"}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-child" {
		os.Exit(childMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "-burst-child" {
		os.Exit(burstChildMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "-waiters-child" {
		os.Exit(waitersChildMain(os.Args[2:])) // bench/waiters.go
	}
	if len(os.Args) > 1 && os.Args[1] == "-burst-kinds-child" {
		os.Exit(burstKindsChildMain(os.Args[2:])) // bench/burst_kinds.go
	}
	var (
		cfg        config
		csFlag     = flag.String("c", "2,16,64", "worker counts (contention levels), comma-separated")
		quick      = flag.Bool("quick", false, "CI-sized run: 400ms windows, c=2,16")
		libs       = flag.String("libs", "", "libraries to run, comma-separated (default all): "+libNames())
		scen       = flag.String("scenarios", "", "scenarios to run, comma-separated (default all): "+strings.Join(allScenarios, ",")+"; and burst, burst-kinds, waiters, hotloop and cluster, which run only when named")
		burst      = flag.String("burst", "1000,6000", "burst: buyer counts, comma-separated (stock N·5/12)")
		addr       = flag.String("addr", "", "use this redis-server (host:port) instead of starting one; it must be idle, since INFO commandstats deltas are read")
		addrs      = flag.String("addrs", "", "five redis-server masters for Redlock (comma-separated) instead of starting them")
		clAddrs    = flag.String("cluster-addrs", "", "cluster: the masters of an idle Redis Cluster (comma-separated) instead of starting a 3-master one")
		clCs       = flag.String("cluster-c", "1,16,64", "cluster: uncontended worker counts, comma-separated (the hot key runs at 16)")
		clBurst    = flag.String("cluster-burst", "1000", "cluster: burst buyer counts, comma-separated (stock N·5/12); 0: no burst")
		cpuprofile = flag.String("cpuprofile", "", "write a CPU profile of this process to `file`")
		out        = flag.String("o", "", "also write the markdown report to `file`")
	)
	flag.DurationVar(&cfg.dur, "d", 2*time.Second, "measured window per run")
	flag.IntVar(&cfg.rounds, "rounds", 1, "uncontended and hot: run every library this many times per contention level, interleaved, and report the targets' ratios as medians of the per-round ratios (each round's own baseline cells)")
	flag.DurationVar(&cfg.warm, "warm", 300*time.Millisecond, "warm-up before each window")
	flag.DurationVar(&cfg.hold, "hold", time.Millisecond, "hot key: time the lock is held")
	flag.DurationVar(&cfg.think, "think", 5*time.Millisecond, "hot key: time between a release and the next lock call")
	flag.StringVar(&cfg.charts, "charts", "", "write PNG charts into `dir`")
	flag.IntVar(&cfg.procs, "procs", 4, "many processes: number of OS processes; burst: the same, but 3 unless set")
	flag.DurationVar(&cfg.burstHold, "burst-hold", 2*time.Millisecond, "burst: time a buyer holds the lock to sell")
	flag.DurationVar(&cfg.burstWait, "burst-wait", 5*time.Second, "burst: wait of one Lock call")
	flag.DurationVar(&cfg.burstLimit, "burst-limit", time.Minute, "burst: time limit of one run; buyers still waiting then give up")
	flag.IntVar(&cfg.procWorkers, "proc-workers", 16, "many processes: workers per process")
	flag.BoolVar(&cfg.control, "control", false, "control run: show the overlap detector catching the SET+DEL reference (exit 1 if it does not)")
	flag.DurationVar(&redislockBackoff, "redislock-backoff", redislockBackoff, "bsm/redislock LinearBackoff interval")
	flag.BoolVar(&rueidislockNoLoop, "rueidislock-noloop", false, "rueidislock: set LockerOption.NoLoopTracking (off by default, as in rueidislock; its README turns it on for Redis 7.0.5 and later)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: cd bench && go run . [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	cfg.burstProcs, cfg.burstBaseStock = 3, 500
	if flagSet("procs") {
		cfg.burstProcs = cfg.procs
	}
	if *quick {
		cfg.dur, cfg.warm = 400*time.Millisecond, 150*time.Millisecond
		if !flagSet("c") {
			*csFlag = "2,16"
		}
		if !flagSet("burst") {
			*burst = "300"
		}
		if !flagSet("cluster-c") {
			*clCs = "1,16"
		}
		if !flagSet("cluster-burst") {
			*clBurst = "300"
		}
		if !flagSet("burst-limit") {
			cfg.burstLimit = 20 * time.Second
		}
		cfg.burstBaseStock = 100
	}
	cfg.burstNs = counts("burst", *burst, 20000)
	if cfg.burstProcs < 1 || cfg.burstLimit <= 0 || cfg.burstWait <= 0 {
		fatalf("-procs, -burst-limit and -burst-wait must be positive")
	}
	cfg.cs = counts("c", *csFlag, 1<<20)
	cfg.clusterCs = counts("cluster-c", *clCs, 1<<20)
	if *clBurst != "0" {
		cfg.clusterBurst = counts("cluster-burst", *clBurst, 20000)
	}
	cfg.libs = set(*libs)
	cfg.scenarios = set(*scen)
	cfg.runID = strconv.FormatInt(time.Now().UnixNano()%1e9, 36)

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fatalf("%v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatalf("%v", err)
		}
		defer pprof.StopCPUProfile()
	}

	needRedlock := !cfg.control && cfg.want("redlock")
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	n := 0
	if *addr == "" {
		n++
	}
	if needRedlock && *addrs == "" {
		n += 5
	}
	if n > 0 {
		logf("starting %d redis-server(s)", n)
		var err error
		if servers, err = startServers(n); err != nil {
			fatalf("%v", err)
		}
	}
	i := 0
	if *addr != "" {
		cfg.addrs = []string{*addr}
	} else {
		cfg.addrs = []string{servers[0].addr}
		i = 1
	}
	if needRedlock {
		if *addrs != "" {
			cfg.redlock = strings.Split(*addrs, ",")
			if len(cfg.redlock) != 5 {
				fatalf("-addrs wants five addresses")
			}
		} else {
			for _, s := range servers[i : i+5] {
				cfg.redlock = append(cfg.redlock, s.addr)
			}
		}
	}

	if !cfg.control && cfg.scenarios["cluster"] {
		if *clAddrs != "" {
			cfg.cluster = strings.Split(*clAddrs, ",")
		} else {
			logf("starting a %d-master Redis Cluster", clusterMasters)
			cl, err := startCluster(clusterMasters)
			if err != nil {
				fatalf("%v", err)
			}
			servers = append(servers, cl...)
			cfg.cluster = serverAddrs(cl)
		}
	}

	clusterBurst := cfg.scenarios["cluster"] && len(cfg.clusterBurst) > 0
	if cfg.control || cfg.scenarios["burst"] || cfg.scenarios["burst-kinds"] || clusterBurst {
		// The burst's stock lives on a server of its own, as a shop's data
		// would: its reads and writes neither queue behind the lock's
		// Redis (stretching the hold) nor count in that server's INFO.
		logf("starting the burst's stock redis-server")
		s, err := startServer()
		if err != nil {
			fatalf("%v", err)
		}
		servers = append(servers, s)
		cfg.stockAddr = s.addr
	}

	var rep report
	code := 0
	if cfg.control {
		code = runControl(&cfg, &rep)
	} else {
		runAll(&cfg, &rep)
	}
	text := rep.String()
	fmt.Print(text)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
	if cfg.charts != "" && !cfg.control {
		if err := writeCharts(cfg.charts, &rep); err != nil {
			fatalf("charts: %v", err)
		}
		logf("charts written to %s", cfg.charts)
	}
	if code != 0 {
		for _, s := range servers {
			s.stop()
		}
		pprof.StopCPUProfile()
		os.Exit(code)
	}
}

func libNames() string {
	var n []string
	for _, s := range slices.Concat(subjects(), redlockSubjects(), clusterSubjects()) {
		if !slices.Contains(n, s.name) {
			n = append(n, s.name)
		}
	}
	return strings.Join(n, ",")
}

// counts parses the comma-separated counts of flag name, each 1 to most.
func counts(name, s string, most int) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > most {
			fatalf("bad -%s %q (counts 1 to %d)", name, s, most)
		}
		out = append(out, n)
	}
	return out
}

func set(s string) map[string]bool {
	if s == "" {
		return nil
	}
	m := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		m[strings.TrimSpace(f)] = true
	}
	return m
}

func flagSet(name string) bool {
	found := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(2)
}
