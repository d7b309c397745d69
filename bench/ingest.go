package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// ingestTiles is how many times the shared sample is tiled (600 trajectories,
// about 61 MB: close to the full dataset's size).
const ingestTiles = 30

// ingestRounds is the number of alternating rounds of the ingest row.
const ingestRounds = 5

// benchIngest times `agentrace ingest` (the built binary, in a child process, so
// that its peak RSS is its own) against DuckDB converting the same JSONL to Parquet
// with read_json_auto and COPY ... TO ... (FORMAT parquet), in 5 alternating
// rounds, and compares the medians. DuckDB's time is measured inside node around
// the COPY (its process start and module load excluded); agentrace's is the
// child's whole wall time. Both sides' CPU time (user + system) is reported
// beside: on a loaded machine it says how much of the wall time was waiting. Both
// sides write Snappy (the script names DuckDB's codec), and the row checks every
// column chunk of both outputs for it, so a codec change cannot skew the ratio.
// agentrace's time includes syncing its tables to disk (a dataset is whole once
// it exists); DuckDB's COPY does not sync.
func benchIngest(env Env) (Row, error) {
	row := Row{Name: fmt.Sprintf("ingest: sample x%d (%d trajectories) to Parquet vs DuckDB", ingestTiles, 20*ingestTiles),
		Goal: ">= 1.5x (DuckDB time / agentrace time, medians of 5 alternating rounds), peak RSS < 2x input"}
	if env.Shared == "" || env.JS == "" {
		return row, errors.New("needs AGENTRACE_SHARED (the sample) and AGENTRACE_JS (DuckDB)")
	}
	bin, err := buildBinary(env)
	if err != nil {
		return row, err
	}
	sample := filepath.Join(env.Shared, "data", "deepswe-sample-20.jsonl")
	input := filepath.Join(env.Work, "tiled.jsonl")
	size, err := tileSample(sample, input, ingestTiles, false)
	if err != nil {
		return row, err
	}
	m, err := ingestVsDuckDB(env, bin, input)
	if err != nil {
		return row, err
	}
	// The same tiles with each tile's texts made distinct, as a real dataset's
	// are: DuckDB's dictionary encoding then cannot keep one copy for 30.
	distinct := filepath.Join(env.Work, "tiled-distinct.jsonl")
	if _, err := tileSample(sample, distinct, ingestTiles, true); err != nil {
		return row, err
	}
	d, err := ingestVsDuckDB(env, bin, distinct)
	if err != nil {
		return row, err
	}
	_ = os.Remove(distinct)
	ratio := m.ratio()
	rssX := float64(m.rss) / float64(size)
	row.Measured = fmt.Sprintf("both Snappy (agentrace synced to disk, DuckDB not); agentrace %.2f s (rounds %s; CPU %.2f s), peak RSS %.0f MB (%.2fx input); DuckDB %.2f s (rounds %s; node process CPU %.2f s); input %.1f MB; "+
		"each tile's texts made distinct (DuckDB's dictionary cannot store one copy for 30): agentrace %.2f s (CPU %.2f s), DuckDB %.2f s: %.2fx; load average %s",
		median(m.ours).Seconds(), secondsList(m.ours), median(m.ourCPU).Seconds(), float64(m.rss)/1e6, rssX,
		median(m.duck).Seconds(), secondsList(m.duck), median(m.duckCPU).Seconds(), float64(size)/1e6,
		median(d.ours).Seconds(), median(d.ourCPU).Seconds(), median(d.duck).Seconds(), d.ratio(), loadAverage())
	if m.rss <= m.benchPeak {
		row.Measured += fmt.Sprintf("; agentrace's peak RSS not known: the kernel's count is this bench's own peak, %.0f MB", float64(m.benchPeak)/1e6)
	}
	row.Ratio = fmt.Sprintf("%.2fx", ratio)
	row.Met = ratio >= 1.5 && rssX < 2 && m.rss > m.benchPeak
	return row, nil
}

// ingestTimes are the alternating rounds of agentrace and DuckDB on one file.
type ingestTimes struct {
	ours, duck, ourCPU, duckCPU []time.Duration
	rss                         int64 // agentrace's peak
	// benchPeak is this process's own peak RSS when it started agentrace: the
	// kernel's count for the child is at least that (runChild), so rss tells
	// agentrace's own peak only when it is larger.
	benchPeak int64
}

func (t ingestTimes) ratio() float64 { return median(t.duck).Seconds() / median(t.ours).Seconds() }

// ingestVsDuckDB runs agentrace ingest and DuckDB's conversion of input in
// ingestRounds alternating rounds, checking on the first that both wrote Snappy.
func ingestVsDuckDB(env Env, bin, input string) (ingestTimes, error) {
	var t ingestTimes
	for i := range ingestRounds {
		out := filepath.Join(env.Work, fmt.Sprintf("ds%d", i))
		cmd := exec.Command(bin, "ingest", "--out", out, input)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		t.benchPeak = max(t.benchPeak, testenv.PeakRSS("/proc/self/status"))
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return t, fmt.Errorf("agentrace ingest: %v\n%s", err, stderr.Bytes())
		}
		t.ours = append(t.ours, time.Since(start))
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			t.rss = max(t.rss, ru.Maxrss*1024) // Linux reports KiB
			t.ourCPU = append(t.ourCPU, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
		}
		if i == 0 {
			for _, table := range []string{schemas.ConversationsFile, schemas.MessagesFile, schemas.TurnsFile} {
				if err := snappyOnly(filepath.Join(out, table)); err != nil {
					return t, err
				}
			}
		}
		_ = os.RemoveAll(out)
		duckOut := filepath.Join(env.Work, "duck.parquet")
		js := exec.Command("node", filepath.Join(env.JS, "duckdb-ingest.mjs"), input, duckOut)
		js.Dir = env.JS
		res, err := js.Output()
		if err != nil {
			return t, fmt.Errorf("duckdb-ingest.mjs: %v", err)
		}
		var r struct {
			Seconds float64 `json:"seconds"`
			Rows    int     `json:"rows"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return t, fmt.Errorf("duckdb-ingest.mjs output %q: %v", res, err)
		}
		if i == 0 {
			if err := snappyOnly(duckOut); err != nil {
				return t, err
			}
		}
		t.duck = append(t.duck, time.Duration(r.Seconds*float64(time.Second)))
		if ru, ok := js.ProcessState.SysUsage().(*syscall.Rusage); ok {
			t.duckCPU = append(t.duckCPU, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
		}
	}
	return t, nil
}

// snappyOnly checks that every column chunk of a Parquet file is Snappy-compressed.
func snappyOnly(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for _, rg := range pf.Metadata().RowGroups {
		for _, c := range rg.Columns {
			if c.MetaData.Codec != format.Snappy {
				return fmt.Errorf("%s: column %s is %s, not SNAPPY: the ingest row compares Snappy with Snappy", path, strings.Join(c.MetaData.PathInSchema, "."), c.MetaData.Codec)
			}
		}
	}
	return nil
}

func secondsList(v []time.Duration) string {
	s := make([]string, len(v))
	for i, d := range v {
		s[i] = fmt.Sprintf("%.2f", d.Seconds())
	}
	return strings.Join(s, " ")
}

// buildBinary builds agentrace into the work folder (once) and returns its path.
func buildBinary(env Env) (string, error) {
	bin := filepath.Join(env.Work, "agentrace")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	build := exec.Command("go", "build", "-o", bin, "./cmd/agentrace")
	build.Dir = env.Root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build agentrace: %v\n%s", err, out)
	}
	return bin, nil
}

// tileSample writes the flat sample n times to out, each tile's conversation ids
// suffixed with _tNN so that they stay unique, and returns out's size. With
// distinct, every content (message, reasoning, tool result) and tool-call
// arguments string of a tile also starts with "tNN ", so that no text repeats
// across tiles.
func tileSample(in, out string, n int, distinct bool) (int64, error) {
	data, err := os.ReadFile(in)
	if err != nil {
		return 0, err
	}
	f, err := os.Create(out)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	key := []byte(`"conversation_id": "`)
	texts := [][]byte{[]byte(`content": "`), []byte(`"arguments": "`)}
	for t := range n {
		tag := fmt.Appendf(nil, "t%02d ", t)
		for _, line := range bytes.Split(data, []byte{'\n'}) {
			i := bytes.Index(line, key)
			if i < 0 {
				continue
			}
			j := i + len(key) + bytes.IndexByte(line[i+len(key):], '"')
			line = slices.Concat(line[:j], fmt.Appendf(nil, "_t%02d", t), line[j:])
			if distinct {
				for _, k := range texts {
					line = bytes.ReplaceAll(line, k, slices.Concat(k, tag))
				}
			}
			w.Write(line)
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	st, err := os.Stat(out)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// benchBody measures request-body assembly (datasets.AppendBody over every client
// turn of the sample, salted) against a plain copy of the same bytes, in MB/s.
func benchBody(env Env) (Row, error) {
	row := Row{Name: "body assembly: AppendBody vs copy of the same bytes (sample, all 1007 turns)", Goal: ">= 0.5x copy throughput"}
	if env.Shared == "" {
		return row, errors.New("needs AGENTRACE_SHARED (the sample)")
	}
	dir := filepath.Join(env.Work, "body-ds")
	if err := ingest.Files(context.Background(), dir, filepath.Join(env.Shared, "data", "deepswe-sample-20.jsonl")); err != nil {
		return row, err
	}
	d, err := datasets.Open(context.Background(), dir)
	if err != nil {
		return row, err
	}
	p, err := datasets.LookupProfile("qwen3.6-35b-a3b")
	if err != nil {
		return row, err
	}
	o := datasets.BodyOptions{Profile: &p, Salt: true, Repeat: 2, Stream: true, IncludeUsage: true}
	bodies := make([][]byte, len(d.Turns))
	var total int
	for i := range d.Turns {
		bodies[i] = d.AppendBody(nil, &d.Turns[i], o)
		total += len(bodies[i])
	}
	buf := make([]byte, 0, 1<<20)
	// Best of 30 rounds each, alternating, so that both sides see the same
	// machine (it is shared).
	var assemble, copied float64
	best := func(cur *float64, f func()) {
		start := time.Now()
		f()
		if mbs := float64(total) / 1e6 / time.Since(start).Seconds(); mbs > *cur {
			*cur = mbs
		}
	}
	for range 30 {
		best(&assemble, func() {
			for i := range d.Turns {
				buf = d.AppendBody(buf[:0], &d.Turns[i], o)
			}
		})
		best(&copied, func() {
			for i := range bodies {
				buf = append(buf[:0], bodies[i]...)
			}
		})
	}
	ratio := assemble / copied
	row.Measured = fmt.Sprintf("AppendBody %.0f MB/s, copy %.0f MB/s (%.0f MB of bodies)", assemble, copied, float64(total)/1e6)
	row.Ratio = fmt.Sprintf("%.2fx", ratio)
	row.Met = ratio >= 0.5
	return row, nil
}
