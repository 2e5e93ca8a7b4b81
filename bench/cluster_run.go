package main

import (
	"fmt"
	"os"
	"strings"
)

// clusterHotC is the cluster scenario's hot-key contention level.
const clusterHotC = 16

// runCluster measures the libraries of clusterSubjects on the Cluster's
// masters: uncontended pairs with keys spread over the slots, one hot key,
// and a burst, each library in the same interleaved rounds as the others.
func runCluster(cfg *config, rep *report) {
	md := &rep.md
	rounds := max(cfg.rounds, 1)
	fmt.Fprintf(md, "### Redis Cluster: %d masters, no replicas\n\n", len(cfg.cluster))
	fmt.Fprintf(md, "Command: `cd bench && go run . %s`\n\n", strings.Join(os.Args[1:], " "))
	md.WriteString("locktag through each driver that serves a Cluster (go-redis `ClusterClient` set as `goredisClient`, pool c + 8 per node; rueidis' Cluster client with its defaults) and the peers that run on one: redislock on the same go-redis settings; rueidislock on the rueidis Cluster client it builds, with KeyMajority 1 (one key per lock) and, as rueidislock-m2, its default KeyMajority 2 (three keys in three slots, two needed). Server columns add up every master; set+del is a SET and a DEL through a go-redis `ClusterClient`.\n\n")

	var libs, locks []subject
	for _, s := range clusterSubjects() {
		if cfg.wantLib(s.name) || s.name == "set+del" {
			libs = append(libs, s)
			if s.isLock {
				locks = append(locks, s)
			}
		}
	}
	if rounds > 1 {
		fmt.Fprintf(md, "%d interleaved rounds per contention level; ratios are medians of the per-round ratios (range), other columns come from the median round.\n\n", rounds)
	}

	fmt.Fprintf(md, "#### Uncontended: each worker on its own key, keys spread over the slots\n\n")
	md.WriteString(uncontendedHeader)
	uload := func(c int, tag string) load { return cfg.uncontendedLoad(c, "cluster:"+tag) }
	var machines, peers []string
	for _, c := range cfg.clusterCs {
		byRound := measureRoundsOn(cfg.cluster, "cluster-uncontended", libs, c, rounds, uload, false)
		rows := map[string]row{}
		for _, s := range libs {
			r := pairedMedian(byRound, s.name, rounds > 1)
			rows[s.name] = r
			rep.rows = append(rep.rows, r)
		}
		for _, s := range libs {
			rep.uncontendedLine(rows[s.name], rows["set+del"])
		}
		machines = append(machines, fmt.Sprintf("- uncontended c = %d: %s\n", c, machineRange(byRound)))
		peers = append(peers, samePeerRatios(byRound, c, func(r row) float64 { return r.st.rate })...)
	}
	md.WriteString("\n")
	writeSamePeerRatios(md, "pairs/s", peers)

	if len(locks) > 0 {
		fmt.Fprintf(md, "#### Hot key: %d workers on one key (hold %s, think %s)\n\n", clusterHotC, cfg.hold, cfg.think)
		md.WriteString("As the single-server hot key: one key, so one master; wait is Lock's call to return, the ideal (c−1)·(hold + hand-over p50). Loaded RTT is PINGs to the first master.\n\n")
		md.WriteString(hotHeader)
		hload := func(c int, tag string) load { return cfg.hotLoad(c, "cluster:"+tag) }
		byRound := measureRoundsOn(cfg.cluster, "cluster-hot", locks, clusterHotC, rounds, hload, true)
		for _, s := range locks {
			r := medianBy(byRound, s.name, func(r row) float64 { return r.st.rate })
			rep.rows = append(rep.rows, r)
			rep.hotLine(r)
		}
		md.WriteString("\n")
		writeSamePeerRatios(md, "CS/s", samePeerRatios(byRound, clusterHotC, func(r row) float64 { return r.st.rate }))
		machines = append(machines, fmt.Sprintf("- hot key c = %d: %s\n", clusterHotC, machineRange(byRound)))
	}

	md.WriteString("The machine during the windows:\n\n")
	for _, m := range machines {
		md.WriteString(m)
	}
	md.WriteString("\n")

	if len(cfg.clusterBurst) > 0 {
		runClusterBurst(cfg, rep)
	}
}

// runClusterBurst is the burst scenario's flash sale on the Cluster: per
// library the 16-at-a-time baseline, then each of cfg.clusterBurst buyers
// at once, in cfg.burstProcs processes; the stock on its own server.
func runClusterBurst(cfg *config, rep *report) {
	md := &rep.md
	fmt.Fprintf(md, "#### Burst: a flash sale on one key (%d processes, hold %s, wait %s, limit %s)\n\n", cfg.burstProcs, cfg.burstHold, cfg.burstWait, cfg.burstLimit)
	fmt.Fprintf(md, "The burst scenario's sale (see its section) on the Cluster: the lock on the master of its slot, the stock on a server of its own. %d buyers at a time until %d are sold, then each burst. Redis CPU adds up every master; Redis busy after is the time until every master answered PINGs quickly again.\n\n", burstBase, cfg.burstBaseStock)
	rep.burstSales(cfg, clusterBurstLibs(), cfg.clusterBurst)
	md.WriteString("\n")
}
