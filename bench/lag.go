package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/synth"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/percentile"
	"github.com/agentrace/agentrace/replay"
	"github.com/agentrace/agentrace/runlog"
)

// lagEndpoint, when set, is the endpoint the lag row replays against instead of
// a local `agentrace sim` child: a server on another machine, or one started by
// hand with its own scheduling (on a shared machine, run the bench under a
// real-time policy, `chrt -f 10`, and the sim at normal priority, so that the
// client and the bare timer see an idle-like machine and the server does not
// compete with them at equal real-time priority, which does not timeslice).
var lagEndpoint = flag.String("lag-endpoint", "", "the lag row's endpoint (an OpenAI-compatible /v1 URL); default: a local agentrace sim child at speedup 60, 64-token answers")

const (
	lagConcurrency = 256
	lagRounds      = 3
	lagDuration    = 15 * time.Second
)

// benchLag measures client lag with delays on: replay keeps 256 trajectories of
// 256 distinct synthetic conversations (both domains) active against the
// embedded simulated server in a child process (speedup 60, 64-token answers),
// or the -lag-endpoint server, delays at scale 1, for 15 s per round; lag is
// issued minus scheduled over every issued turn. Its yardstick, in alternating
// rounds of the same length, is a bare Go timer: 256 goroutines sleeping the
// delays of the same trajectories (goroutine j walks trajectories j, j+256, ...;
// the client's closed loop hands them to whichever slot is free), with a reused
// time.Timer, each late by wake minus due. Both p99s ("lower") per round, and the
// client's CPU per issued turn (this process's, the sim being a child); the row
// compares the p99s' medians.
func benchLag(env Env) (Row, error) {
	row := Row{Name: fmt.Sprintf("client lag with delays: %d active trajectories, delay scale 1, vs a bare Go timer sleeping the same delays", lagConcurrency),
		Goal: "client lag p99 <= bare timer p99 + 0.5 ms (medians of the rounds)"}
	d, endpoint, where, stop, err := lagSetup(env)
	if err != nil {
		return row, err
	}
	defer stop()
	var client, bare, clientP50, bareP50 []time.Duration
	var turns, sleeps []int
	var cpuPerTurn []string
	for round := range lagRounds {
		r, err := lagReplay(env, d, endpoint, fmt.Sprintf("lag-run%d", round), false)
		if err != nil {
			return row, err
		}
		cpuPerTurn = append(cpuPerTurn, r.cpuPerTurn)
		client, clientP50 = append(client, r.sum.LagP99), append(clientP50, r.sum.LagP50)
		turns = append(turns, r.sum.Turns)
		lags := bareTimer(d, lagConcurrency, lagDuration)
		bare, bareP50 = append(bare, lowerPct(lags, 99)), append(bareP50, lowerPct(lags, 50))
		sleeps = append(sleeps, len(lags))
	}
	diff := median(client) - median(bare)
	row.Measured = fmt.Sprintf("client lag p99 per round %v (p50 %v; %v turns issued; client CPU ms per turn %v); bare timer p99 %v (p50 %v; %v sleeps); %d conversations, %s rounds against %s; GOMAXPROCS %d, scheduling policy %s, load average %s",
		roundAll(client), roundAll(clientP50), turns, cpuPerTurn, roundAll(bare), roundAll(bareP50), sleeps,
		len(d.Conversations), lagDuration, where, goMaxProcs(), schedPolicy(), loadAverage())
	row.Ratio = fmt.Sprintf("p99 %v vs %v: %s", median(client).Round(time.Microsecond), median(bare).Round(time.Microsecond), signed(diff))
	row.Met = diff <= 500*time.Microsecond
	return row, nil
}

// benchLagScrape measures what scraping the server's Prometheus /metrics every
// second (replay's default) adds to the client's lag: the lag row's replay,
// in rounds alternating without and with scraping (the order swapped every
// round), against the same server; the row compares the p99s' medians.
func benchLagScrape(env Env) (Row, error) {
	row := Row{Name: fmt.Sprintf("client lag with delays, %d active trajectories, scraping the server's /metrics every 1 s vs not scraping", lagConcurrency),
		Goal: "scraping adds <= 0.5 ms to the client's lag p99 (medians of alternating rounds)"}
	d, endpoint, where, stop, err := lagSetup(env)
	if err != nil {
		return row, err
	}
	defer stop()
	var off, on []time.Duration
	var cpuOff, cpuOn, scrapes []string
	for round := range lagRounds {
		for i := range 2 {
			metrics := (round+i)%2 == 1
			r, err := lagReplay(env, d, endpoint, fmt.Sprintf("lag-scrape%d-%t", round, metrics), metrics)
			if err != nil {
				return row, err
			}
			if metrics {
				on, cpuOn, scrapes = append(on, r.sum.LagP99), append(cpuOn, r.cpuPerTurn), append(scrapes, r.scrapes...)
			} else {
				off, cpuOff = append(off, r.sum.LagP99), append(cpuOff, r.cpuPerTurn)
			}
		}
	}
	diff := median(on) - median(off)
	row.Measured = fmt.Sprintf("client lag p99 per round scraping %v (CPU ms per turn %v; scrapes read/skipped late/failed %v), not scraping %v (CPU ms per turn %v); %s rounds against %s; GOMAXPROCS %d, scheduling policy %s, load average %s",
		roundAll(on), cpuOn, scrapes, roundAll(off), cpuOff, lagDuration, where, goMaxProcs(), schedPolicy(), loadAverage())
	row.Ratio = fmt.Sprintf("p99 %v vs %v: %s", median(on).Round(time.Microsecond), median(off).Round(time.Microsecond), signed(diff))
	row.Met = diff <= 500*time.Microsecond
	return row, nil
}

// signed prints a difference with its sign.
func signed(d time.Duration) string {
	if d < 0 {
		return d.Round(time.Microsecond).String() // a Duration prints its own minus
	}
	return "+" + d.Round(time.Microsecond).String()
}

// lagSetup makes the lag rows' dataset and starts their server: the
// -lag-endpoint one, or a local sim child (stop ends it).
func lagSetup(env Env) (d *datasets.Dataset, endpoint, where string, stop func(), err error) {
	if d, err = lagDataset(env); err != nil {
		return nil, "", "", nil, err
	}
	endpoint, where, stop = *lagEndpoint, "the endpoint "+*lagEndpoint, func() {}
	if endpoint != "" {
		return d, endpoint, where, stop, nil
	}
	bin, err := buildBinary(env)
	if err != nil {
		return nil, "", "", nil, err
	}
	if endpoint, stop, err = startSim(bin); err != nil {
		return nil, "", "", nil, err
	}
	return d, endpoint, "a local agentrace sim child (speedup 60, 64-token answers)", stop, nil
}

// lagResult is one lag replay: its summary, the client's CPU per issued turn,
// and with scraping each endpoint's scrapes read/skipped late/failed.
type lagResult struct {
	sum        *replay.Summary
	cpuPerTurn string
	scrapes    []string
}

// lagReplay replays lagConcurrency trajectories against endpoint for
// lagDuration into the work folder's out, scraping the server's /metrics
// every second when metrics is set.
func lagReplay(env Env, d *datasets.Dataset, endpoint, out string, metrics bool) (lagResult, error) {
	var r lagResult
	dir := filepath.Join(env.Work, out)
	cpu0 := cpuTime()
	sum, err := replay.Run(context.Background(), replay.Options{
		Data: d, Dataset: filepath.Join(env.Work, "lag-ds"), Endpoint: endpoint, Out: dir,
		Concurrency: lagConcurrency, Trajectories: 4 * lagConcurrency, MaxDuration: lagDuration,
		Profile:   "qwen3.6-35b-a3b",
		Telemetry: replay.Telemetry{Metrics: metrics},
	})
	if err != nil {
		return r, err
	}
	if sum.Turns == 0 || sum.Counts["ok"] == 0 {
		return r, fmt.Errorf("replay: no turn completed (%v)", sum.Counts)
	}
	r.sum = sum
	r.cpuPerTurn = fmt.Sprintf("%.3f", (cpuTime()-cpu0).Seconds()*1e3/float64(sum.Turns))
	if metrics {
		m, err := runlog.ReadManifest(dir)
		if err != nil {
			return r, err
		}
		for _, e := range m.ServerMetrics.Endpoints {
			r.scrapes = append(r.scrapes, fmt.Sprintf("%d/%d/%d", e.Scrapes, e.Skipped, e.Failed))
		}
	}
	return r, nil
}

// lagDataset is 257 synthetic conversations (47 coding, 210 workflow) with the
// synthesizer's delays, made by the first lag row of a run and opened by the next.
func lagDataset(env Env) (*datasets.Dataset, error) {
	dir := filepath.Join(env.Work, "lag-ds")
	if d, err := datasets.Open(context.Background(), dir); err == nil {
		return d, nil
	}
	traces := filepath.Join(env.Work, "lag.jsonl")
	if _, err := synth.WriteFile(context.Background(), traces, synth.Options{Scale: 0.42, Seed: 1}); err != nil {
		return nil, err
	}
	if err := ingest.Files(context.Background(), dir, traces); err != nil {
		return nil, err
	}
	d, err := datasets.Open(context.Background(), dir)
	if err != nil {
		return nil, err
	}
	if len(d.Conversations) < lagConcurrency {
		return nil, fmt.Errorf("lag dataset: %d conversations, want at least %d", len(d.Conversations), lagConcurrency)
	}
	return d, nil
}

var simAddr = regexp.MustCompile(`on (http://[^ ]+/v1)`)

// startSim runs `agentrace sim` on a free loopback port and returns its URL.
func startSim(bin string) (string, func(), error) {
	cmd := exec.Command(bin, "sim", "--listen", "127.0.0.1:0", "--speedup", "60",
		"--output-mean", "64", "--output-sigma", "0", "--output-min", "64", "--output-max", "64")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := simAddr.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return m[1], stop, nil
		}
	}
	stop()
	return "", nil, errors.New("agentrace sim did not say where it listens")
}

// bareTimer runs n goroutines for dur, goroutine j sleeping the delays of
// trajectories j, j+n, j+2n, ... (trajectory k replaying the conversation
// replay's start order gives it, its client turns in order) one after another with one reused time.Timer, and
// returns how late each wake was (zero-delay turns count as on time, as an
// issue with no delay does).
func bareTimer(d *datasets.Dataset, n int, dur time.Duration) []time.Duration {
	order := datasets.NewStartOrder(len(d.Conversations), big.NewInt(datasets.DefaultSeed))
	convs := make([]int, 64*len(d.Conversations))
	for k := range convs {
		convs[k] = order.Next()
	}
	start := time.Now()
	deadline := start.Add(dur)
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	for j := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTimer(time.Hour)
			t.Stop()
			var lags []time.Duration
			last := time.Now()
			for k := j; ; k += n {
				for _, tr := range d.ConversationTurns(convs[k%len(convs)]) {
					due := last.Add(time.Duration(tr.DelaySeconds * float64(time.Second)))
					if due.After(deadline) {
						mu.Lock()
						all = append(all, lags...)
						mu.Unlock()
						return
					}
					if wait := time.Until(due); wait > 0 {
						t.Reset(wait)
						<-t.C
					}
					now := time.Now()
					lags = append(lags, max(0, now.Sub(due)))
					last = now
				}
			}
		}()
	}
	wg.Wait()
	return all
}

// lowerPct is the "lower" percentile p (0 to 100) of v.
func lowerPct(v []time.Duration, p float64) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	d, _ := percentile.Lower(s, p)
	return d
}

func goMaxProcs() int { return runtime.GOMAXPROCS(0) }

// schedPolicy is this process's Linux scheduling policy and priority as
// /proc/self/sched states them ("normal" where it cannot tell).
func schedPolicy() string {
	data, err := os.ReadFile("/proc/self/sched")
	if err != nil {
		return "normal"
	}
	policy, prio := "", ""
	for _, l := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "policy":
			policy = strings.TrimSpace(v)
		case "prio":
			prio = strings.TrimSpace(v)
		}
	}
	switch policy {
	case "1":
		return "SCHED_FIFO (kernel prio " + prio + ")"
	case "2":
		return "SCHED_RR (kernel prio " + prio + ")"
	}
	return "normal (kernel prio " + prio + ")"
}
