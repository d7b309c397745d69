package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/tokens"
)

const islRounds = 3

// benchISL counts the ISL of every client turn of the shared sample as ingest
// --tokenizer does (salted system message, the history up to the turn, its tools,
// the default ISL profile's kwargs) two ways, in alternating rounds: the naive
// way the rules state it (tokens.CountISL: render the chat template over the
// whole history and encode it, for each turn) and incrementally
// (tokens.ISLCounter, one per conversation). Every count must agree. It then
// times `agentrace ingest --tokenizer` of the sample tiled 30 times, gzipped (the
// case that once took 82 s), in a child process.
func benchISL(env Env) (Row, error) {
	row := Row{Name: "ISL: every client turn of the sample (1007), incremental vs naive render-and-encode per turn; ingest --tokenizer of the sample x30 (gzipped)",
		Goal: ">= 10x (naive time / incremental time); ingest --tokenizer of the x30 file < 10 s"}
	if env.Shared == "" || env.Tokenizer == "" {
		return row, errors.New("needs AGENTRACE_SHARED (the sample) and AGENTRACE_TOKENIZER")
	}
	tok, err := tokens.Load(context.Background(), env.Tokenizer)
	if err != nil {
		return row, err
	}
	convs, kw, nturns, err := islSample(env)
	if err != nil {
		return row, err
	}
	count := func(naive bool) ([]int, time.Duration, time.Duration, error) { return countISL(tok, convs, kw, naive) }
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
	tiles, err := newTiledIngest(env, "isl-tiled.jsonl", "isl-tiled-ds")
	if err != nil {
		return row, err
	}
	tiled, tiledCPU, err := tiles.run("--tokenizer", env.Tokenizer)
	if err != nil {
		return row, err
	}

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

// islConv is one conversation of the sample as ingest hands it to the counter:
// one slice per message, shared from turn to turn, and its client turns.
type islConv struct {
	msgs  [][]byte
	turns []schemas_turn
}

// islSample ingests the shared sample and returns its conversations (salted
// system message first), the default ISL profile's kwargs and the number of
// client turns.
func islSample(env Env) ([]islConv, map[string]any, int, error) {
	_, d, err := sampleDataset(env, "isl-ds")
	if err != nil {
		return nil, nil, 0, err
	}
	p, err := datasets.LookupProfile(ingest.DefaultISLProfile)
	if err != nil {
		return nil, nil, 0, err
	}
	var convs []islConv
	nturns := 0
	for ci := range d.Conversations {
		c := &d.Conversations[ci]
		var cv islConv
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
	return convs, p.ChatTemplateKwargs, nturns, nil
}

// countISL counts every client turn of convs, naively (tokens.CountISL: a full
// render and encode per turn) or incrementally (one tokens.ISLCounter per
// conversation), and returns the counts, the wall time and the CPU time.
func countISL(tok *tokens.Tokenizer, convs []islConv, kw map[string]any, naive bool) ([]int, time.Duration, time.Duration, error) {
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

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

// median is the middle value (the lower of the two middle ones).
func median(v []time.Duration) time.Duration {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// benchISLAnyTemplate measures ISL counting with a template ISLCounter has no
// native build of: a Qwen3.6-shaped tokenizer folder (Qwen3's vocabulary with
// Qwen3.5's split pattern and the shared Qwen3.6 chat_template.jinja), which
// the counter renders incrementally through the template engine (the message
// loop's body run only for the new messages). Every client turn of the sample
// is counted naively and incrementally (the counts must agree); then the sample
// x30, gzipped, is ingested by the binary plain and with --tokenizer, side by
// side, in alternating child processes. The goal is judged on CPU time (user
// and system), which a loaded machine inflates far less than wall time.
func benchISLAnyTemplate(env Env) (Row, error) {
	row := Row{Name: "ISL with Qwen3.6's template (no native build): ingest --tokenizer vs plain ingest of the sample x30 (gzipped); every client turn incremental vs naive",
		Goal: "ingest --tokenizer <= 10x the CPU time of plain ingest"}
	if env.Shared == "" || env.Tokenizer == "" {
		return row, errors.New("needs AGENTRACE_SHARED (the sample and the template) and AGENTRACE_TOKENIZER")
	}
	folder, err := qwen36Folder(env)
	if err != nil {
		return row, err
	}
	tok, err := tokens.Load(context.Background(), folder)
	if err != nil {
		return row, err
	}
	convs, kw, nturns, err := islSample(env)
	if err != nil {
		return row, err
	}
	want, naiveT, naiveCPU, err := countISL(tok, convs, kw, true)
	if err != nil {
		return row, err
	}
	got, incrT, incrCPU, err := countISL(tok, convs, kw, false)
	if err != nil {
		return row, err
	}
	for i := range want {
		if got[i] != want[i] {
			return row, fmt.Errorf("incremental ISL differs from the naive count on turn %d: %d against %d", i, got[i], want[i])
		}
	}
	tiles, err := newTiledIngest(env, "isl-any-tiled.jsonl", "isl-any-ds")
	if err != nil {
		return row, err
	}
	var plainT, tokT, plainCPU, tokCPU []time.Duration
	for range 2 {
		p, pc, err := tiles.run()
		if err != nil {
			return row, err
		}
		k, kc, err := tiles.run("--tokenizer", folder)
		if err != nil {
			return row, err
		}
		plainT, tokT = append(plainT, p), append(tokT, k)
		plainCPU, tokCPU = append(plainCPU, pc), append(tokCPU, kc)
	}
	cpuRatio := median(tokCPU).Seconds() / median(plainCPU).Seconds()
	tiled := ingestTiles * nturns
	row.Measured = fmt.Sprintf("x30 (%d turns): ingest --tokenizer %.2f s CPU, %.1f s wall (%.0f µs CPU per turn more than plain); plain ingest %.2f s CPU, %.2f s wall; wall ratio %.1fx (medians of 2 alternating rounds); sample (%d turns) incremental %.0f ms CPU (%.0f ms wall), naive %.0f ms CPU (%.0f ms wall), counts equal %d/%d; load average %s",
		tiled, median(tokCPU).Seconds(), median(tokT).Seconds(), float64((median(tokCPU)-median(plainCPU)).Microseconds())/float64(tiled),
		median(plainCPU).Seconds(), median(plainT).Seconds(), median(tokT).Seconds()/median(plainT).Seconds(),
		nturns, ms(incrCPU), ms(incrT), ms(naiveCPU), ms(naiveT), len(want), len(want), loadAverage())
	row.Ratio = fmt.Sprintf("%.1fx plain (CPU)", cpuRatio)
	row.Met = cpuRatio <= 10
	return row, nil
}

// qwen36Folder writes the Qwen3.6-shaped tokenizer folder into the work folder.
func qwen36Folder(env Env) (string, error) {
	dir := filepath.Join(env.Work, "qwen3.6-shaped")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var tj map[string]any
	data, err := os.ReadFile(filepath.Join(env.Tokenizer, tokens.HFTokenizerFile))
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(data, &tj); err != nil {
		return "", err
	}
	tj["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]string{"Regex": tokens.PatternQwen35}, "behavior": "Isolated", "invert": false},
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
	}}
	if data, err = json.Marshal(tj); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, tokens.HFTokenizerFile), data, 0o644); err != nil {
		return "", err
	}
	var cfg map[string]any
	if data, err = os.ReadFile(filepath.Join(env.Tokenizer, tokens.ConfigFile)); err != nil {
		return "", err
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", err
	}
	delete(cfg, "chat_template")
	if data, err = json.Marshal(cfg); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, tokens.ConfigFile), data, 0o644); err != nil {
		return "", err
	}
	tmpl, err := os.ReadFile(filepath.Join(env.Shared, "data", "templates", "qwen3.6-35b-a3b.chat_template.jinja"))
	if err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, tokens.TemplateFile), tmpl, 0o644)
}

// tiledIngest is the ISL rows' child ingest: the binary, the gzipped tiled
// sample it reads and the dataset folder it writes.
type tiledIngest struct{ bin, gz, out string }

// newTiledIngest builds the binary and writes the tiled sample as
// env.Work/name.gz (gzippedTiles), to be ingested into env.Work/out.
func newTiledIngest(env Env, name, out string) (tiledIngest, error) {
	gz, err := gzippedTiles(env, name)
	if err != nil {
		return tiledIngest{}, err
	}
	bin, err := buildBinary(env)
	if err != nil {
		return tiledIngest{}, err
	}
	return tiledIngest{bin: bin, gz: gz, out: filepath.Join(env.Work, out)}, nil
}

// run ingests the tiled sample in a child process with args (--overwrite, so that
// a row may ingest it again) and returns the wall time and the CPU time (user and
// system): on this shared machine the CPU time says what the work costs whatever
// the load, the wall time what a user waits.
func (t tiledIngest) run(args ...string) (wall, cpu time.Duration, err error) {
	args = append(append([]string{"ingest", "--overwrite", "--out", t.out}, args...), t.gz)
	cmd := exec.Command(t.bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("agentrace %v: %v\n%s", args, err, stderr.Bytes())
	}
	return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// gzippedTiles writes the shared sample tiled ingestTiles times to env.Work/name
// and gzips it beside it: the path of the .gz, the input of the ISL rows.
func gzippedTiles(env Env, name string) (string, error) {
	plain := filepath.Join(env.Work, name)
	if _, err := tileSample(env.sample(), plain, ingestTiles, false); err != nil {
		return "", err
	}
	gz := plain + ".gz"
	if out, err := exec.Command("sh", "-c", "gzip -c "+plain+" > "+gz).CombinedOutput(); err != nil {
		return "", fmt.Errorf("gzip: %v: %s", err, out)
	}
	return gz, nil
}
