package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/tokens"
	"github.com/agentrace/agentrace/ingest"
)

const islRounds = 3

// benchISL counts the ISL of every client turn of the shared sample as ingest
// --tokenizer does (salted system message, the history up to the turn, its tools,
// the default ISL profile's kwargs) two ways, in alternating rounds: the naive
// way the rules state it (tokens.CountISL: render the chat template over the
// whole history and encode it, for each turn) and incrementally
// (tokens.ISLCounter, one per conversation). Every count must agree. It then
// times `agentrace ingest --tokenizer` of the sample tiled 30 times, gzipped (the
// issue's 82 s case), in a child process.
func benchISL(env Env) (Row, error) {
	row := Row{Name: "ISL: every client turn of the sample (1007), incremental vs naive render-and-encode per turn; ingest --tokenizer of the sample x30 (gzipped)",
		Goal: ">= 10x (naive time / incremental time); ingest --tokenizer of the x30 file < 10 s"}
	if env.Shared == "" || env.Tokenizer == "" {
		return row, errors.New("needs AGENTRACE_SHARED (the sample) and AGENTRACE_TOKENIZER")
	}
	dir := filepath.Join(env.Work, "isl-ds")
	if err := ingest.Files(context.Background(), dir, filepath.Join(env.Shared, "data", "deepswe-sample-20.jsonl")); err != nil {
		return row, err
	}
	d, err := datasets.Open(dir)
	if err != nil {
		return row, err
	}
	tok, err := tokens.Load(env.Tokenizer)
	if err != nil {
		return row, err
	}
	p, err := datasets.LookupProfile(ingest.DefaultISLProfile)
	if err != nil {
		return row, err
	}
	kw := p.ChatTemplateKwargs
	// Each turn's messages as ingest hands them to the counter: one slice per
	// message, shared from turn to turn.
	type conv struct {
		msgs  [][]byte
		turns []schemas_turn
	}
	var convs []conv
	nturns := 0
	for ci := range d.Conversations {
		c := &d.Conversations[ci]
		var cv conv
		if c.HasSystem {
			cv.msgs = append(cv.msgs, datasets.AppendSystemMessage(nil, c.SystemEscaped, datasets.RepeatSalt(1), datasets.SaltHex(c.ConversationID)))
		}
		sys := len(cv.msgs)
		for _, m := range d.Messages(ci) {
			cv.msgs = append(cv.msgs, m.Wire)
		}
		for _, t := range d.ConversationTurns(ci) {
			cv.turns = append(cv.turns, schemas_turn{end: sys + int(t.MsgEnd), tools: []byte(t.Tools)})
		}
		nturns += len(cv.turns)
		convs = append(convs, cv)
	}
	count := func(naive bool) ([]int, time.Duration, time.Duration, error) {
		var counts []int
		cpu0 := cpuTime()
		start := time.Now()
		for _, cv := range convs {
			ctr := tok.NewISLCounter(kw)
			for _, t := range cv.turns {
				var n int
				var err error
				if naive {
					n, err = tok.CountISL(append(append([]byte{'['}, bytes.Join(cv.msgs[:t.end], []byte{','})...), ']'), t.tools, kw)
				} else {
					n, err = ctr.Count(cv.msgs[:t.end], t.tools)
				}
				if err != nil {
					return nil, 0, 0, err
				}
				counts = append(counts, n)
			}
		}
		return counts, time.Since(start), cpuTime() - cpu0, nil
	}
	var naiveT, incrT, naiveCPU, incrCPU []time.Duration
	equal := 0
	for range islRounds {
		want, dn, cn, err := count(true)
		if err != nil {
			return row, err
		}
		got, di, ci, err := count(false)
		if err != nil {
			return row, err
		}
		equal = 0
		for i := range want {
			if got[i] == want[i] {
				equal++
			}
		}
		if equal != len(want) {
			return row, fmt.Errorf("incremental ISL differs from the naive count on %d of %d turns", len(want)-equal, len(want))
		}
		naiveT, incrT = append(naiveT, dn), append(incrT, di)
		naiveCPU, incrCPU = append(naiveCPU, cn), append(incrCPU, ci)
	}
	ratio := median(naiveT).Seconds() / median(incrT).Seconds()

	// The tiled file, gzipped, through the binary.
	plain := filepath.Join(env.Work, "isl-tiled.jsonl")
	if _, err := tileSample(filepath.Join(env.Shared, "data", "deepswe-sample-20.jsonl"), plain, ingestTiles, false); err != nil {
		return row, err
	}
	gz := plain + ".gz"
	if out, err := exec.Command("sh", "-c", "gzip -c "+plain+" > "+gz).CombinedOutput(); err != nil {
		return row, fmt.Errorf("gzip: %v: %s", err, out)
	}
	bin, err := buildBinary(env)
	if err != nil {
		return row, err
	}
	cmd := exec.Command(bin, "ingest", "--out", filepath.Join(env.Work, "isl-tiled-ds"), "--tokenizer", env.Tokenizer, gz)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return row, fmt.Errorf("agentrace ingest --tokenizer: %v\n%s", err, stderr.Bytes())
	}
	tiled := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	tiledCPU := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())

	row.Measured = fmt.Sprintf("incremental %.0f ms (CPU %.0f ms), naive %.0f ms (CPU %.0f ms): medians of %d alternating rounds, %d turns, counts equal %d/%d, Qwen3 template; x30 gzipped (%d turns): %.1f s (CPU %.1f s); load average %s",
		ms(median(incrT)), ms(median(incrCPU)), ms(median(naiveT)), ms(median(naiveCPU)), islRounds, nturns, equal, nturns,
		30*nturns, tiled.Seconds(), tiledCPU.Seconds(), loadAverage())
	row.Ratio = fmt.Sprintf("%.1fx", ratio)
	row.Met = ratio >= 10 && tiled < 10*time.Second
	return row, nil
}

type schemas_turn struct {
	end   int
	tools []byte
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

// median is the middle value (the lower of the two middle ones).
func median(v []time.Duration) time.Duration {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
