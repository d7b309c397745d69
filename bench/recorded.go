package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/agentrace/agentrace/bench/yardstick"
	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/replay"
	"github.com/agentrace/agentrace/simserver"
)

const (
	recordedConcurrency = 256
	recordedPasses      = 13 // trajectories = 13 × the sample's 20 conversations
	recordedSpeedup     = 1000
	recordedRounds      = 2
	recordedGoalMs      = 0.15 // agentrace's CPU per turn
)

// The recorded row's child process: one client, replay or the yardstick, run
// against the sim at url with the dataset in dir; it prints a recordedResult.
var (
	recordedChild   = flag.String("recorded-child", "", "internal: run this client (replay, replay-salted or minimal) as the recorded row's child process")
	recordedURL     = flag.String("recorded-url", "", "internal: the recorded row's endpoint")
	recordedDataset = flag.String("recorded-dataset", "", "internal: the recorded row's dataset")
	recordedProfile = flag.String("recorded-cpuprofile", "", "write CPU profiles of each recorded-row run into this folder: the client's (SIDE-ROUND.pprof) and the sim's (sim-SIDE-ROUND.pprof)")
)

// recordedResult is what a child prints: the turns it completed.
type recordedResult struct {
	Turns int64 `json:"turns"`
	OK    int64 `json:"ok"`
}

// benchRecorded replays the shared sample (13 passes, 260 trajectories) at 256
// active trajectories against the embedded sim serving the dataset's recorded
// answers at x1000, side by side with the yardstick client posting precomputed
// bodies under the same session ids (so the sim finds the same recorded
// answers). The two send the same bytes: the unsalted bodies, every pass the
// same (the minimal client cannot hold 13 passes of salted bodies), so that the
// sim does the same work for each, prefix-cache hits across passes included. A
// third run, agentrace with a real run's salted bodies, tells what the salt
// costs: the sim's prefix cache no longer shares a conversation's passes, so
// the sim works more and longer, and the client waits on more, smaller reads.
// Each client runs in a child process of its own, so that its CPU time and peak
// RSS are its own; the sim runs here, a fresh one per run, and this process's
// CPU over a run is the sim's. Rounds alternate; each side keeps its lowest CPU
// per turn, and every round's figure is listed.
func benchRecorded(env Env) (Row, error) {
	row := Row{
		Name: fmt.Sprintf("replay vs minimal Go client: sample x%d, %d active trajectories, sim x%d serving recorded answers, each client in its own process, the same (unsalted) bodies", recordedPasses, recordedConcurrency, recordedSpeedup),
		Goal: fmt.Sprintf("agentrace CPU/turn <= %.2f ms", recordedGoalMs),
	}
	if env.Shared == "" {
		return row, errors.New("needs AGENTRACE_SHARED (the sample)")
	}
	dir := filepath.Join(env.Work, "recorded-ds")
	if err := ingest.Files(context.Background(), dir, filepath.Join(env.Shared, "data", "deepswe-sample-20.jsonl")); err != nil {
		return row, err
	}
	d, err := datasets.Open(context.Background(), dir)
	if err != nil {
		return row, err
	}
	sides := []string{"replay", "minimal", "replay-salted"}
	best := map[string]clientUsage{}
	peak := map[string]float64{}
	simRate := map[string]float64{}
	rounds := map[string][]string{}
	var turns int64
	perTurn := func(u clientUsage) float64 { return float64(u.cpu.Microseconds()) / 1e3 / float64(turns) }
	for round := range recordedRounds {
		for _, side := range sides {
			var prof string
			if *recordedProfile != "" {
				prof = filepath.Join(*recordedProfile, fmt.Sprintf("%s-%d.pprof", side, round+1))
			}
			res, use, simCPU, err := recordedRun(env, d, dir, side, prof)
			if err != nil {
				return row, fmt.Errorf("%s: %w", side, err)
			}
			if res.OK != res.Turns || (turns != 0 && res.Turns != turns) {
				return row, fmt.Errorf("%s: %d of %d turns ok (the other client did %d)", side, res.OK, res.Turns, turns)
			}
			turns = res.Turns
			if b, ok := best[side]; !ok || use.cpu < b.cpu {
				best[side] = use
			}
			peak[side] = max(peak[side], use.rssMB)
			simRate[side] = max(simRate[side], float64(res.Turns)/simCPU.Seconds())
			rounds[side] = append(rounds[side], fmt.Sprintf("%.3f", perTurn(use)))
		}
	}
	r, m, salted := perTurn(best["replay"]), perTurn(best["minimal"]), perTurn(best["replay-salted"])
	list := func(side string) string { return strings.Join(rounds[side], ", ") }
	row.Measured = fmt.Sprintf("%d turns; CPU per turn: agentrace %.3f ms (rounds %s), minimal %.3f ms (rounds %s), agentrace with salted bodies %.3f ms (rounds %s); peak RSS: agentrace %.0f MB, minimal %.0f MB, salted %.0f MB; the sim served %.0f requests per CPU-second under agentrace, %.0f under minimal, %.0f salted; load average %s",
		turns, r, list("replay"), m, list("minimal"), salted, list("replay-salted"), peak["replay"], peak["minimal"], peak["replay-salted"],
		simRate["replay"], simRate["minimal"], simRate["replay-salted"], loadAverage())
	row.Ratio = fmt.Sprintf("%.2fx of goal; CPU/turn %.2fx minimal's, peak RSS %.2fx; salted %.2fx of goal", recordedGoalMs/r, r/m, peak["replay"]/peak["minimal"], recordedGoalMs/salted)
	// Met only when a real run (salted bodies) meets the goal too.
	row.Met = r <= recordedGoalMs && salted <= recordedGoalMs
	return row, nil
}

// recordedRun serves a fresh sim and runs one client against it in a child
// process (which writes a CPU profile to prof, when given, while this process
// profiles the sim into sim-prof); it returns what the child did and used, and
// the sim's CPU time.
func recordedRun(env Env, d *datasets.Dataset, dir, side, prof string) (recordedResult, clientUsage, time.Duration, error) {
	var res recordedResult
	p, err := simserver.LookupHardware(simserver.DefaultHardware)
	if err != nil {
		return res, clientUsage{}, 0, err
	}
	s, err := simserver.New(simserver.Config{Hardware: p, Speedup: recordedSpeedup, Dataset: d, Fidelity: 1, Seed: 1})
	if err != nil {
		return res, clientUsage{}, 0, err
	}
	defer s.Close()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	cpu0 := cpuTime()
	args := []string{"-recorded-child", side, "-recorded-url", hs.URL, "-recorded-dataset", dir}
	if prof != "" {
		args = append(args, "-recorded-cpuprofile", prof)
		f, err := os.Create(filepath.Join(filepath.Dir(prof), "sim-"+filepath.Base(prof)))
		if err != nil {
			return res, clientUsage{}, 0, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return res, clientUsage{}, 0, err
		}
	}
	out, use, err := runChild(env, false, args...)
	simCPU := cpuTime() - cpu0
	if prof != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return res, use, 0, err
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return res, use, 0, fmt.Errorf("child printed %q: %w", out, err)
	}
	return res, use, simCPU, nil
}

// runRecordedChild is the recorded row's child: one client's run.
// With -recorded-cpuprofile it profiles the run into that file.
func runRecordedChild(side string) int {
	if *recordedProfile != "" {
		f, err := os.Create(*recordedProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if err := recordedClient(side); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", side+":", err)
		return 1
	}
	return 0
}

func recordedClient(side string) error {
	ctx := context.Background()
	d, err := datasets.Open(context.Background(), *recordedDataset)
	if err != nil {
		return err
	}
	prof, err := datasets.LookupProfile("qwen3.6-35b-a3b")
	if err != nil {
		return err
	}
	n := len(d.Conversations)
	trajectories := recordedPasses * n
	var res recordedResult
	switch side {
	case "replay", "replay-salted":
		out, err := os.MkdirTemp("", "agentrace-bench-recorded-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(out)
		sum, err := replay.Run(ctx, replay.Options{Data: d, Dataset: *recordedDataset, Endpoint: *recordedURL, Out: filepath.Join(out, "run"),
			Concurrency: recordedConcurrency, Trajectories: trajectories, NoDelays: true, Profile: prof.Name, NoSalt: side == "replay"})
		if err != nil {
			return err
		}
		res = recordedResult{Turns: int64(sum.Turns), OK: int64(sum.Counts["ok"])}
	case "minimal":
		bodies := yardstick.Bodies(d, datasets.BodyOptions{Profile: &prof, Salt: false, Repeat: 1, Stream: true, IncludeUsage: true})
		r, err := yardstick.Minimal(ctx, *recordedURL+"/v1/chat/completions", recordedConcurrency, trajectories,
			func(k int) [][]byte { return bodies[k%n] },
			func(k int) string { return datasets.SessionID(d.Conversations[k%n].ConversationID, k/n+1) })
		if err != nil {
			return err
		}
		res = recordedResult{Turns: r.Turns, OK: r.Turns}
	default:
		return fmt.Errorf("unknown client %q (want replay, replay-salted or minimal)", side)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(b)
	return err
}
