package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// TestChaosOutputOverInput: `ingest --overwrite --out indir indir/good.jsonl`,
// `--out same.jsonl same.jsonl` and `replay --dataset ds --out ds --overwrite`
// once destroyed their input. Every command that writes refuses an output
// that is, contains or sits inside an input, and one that is not agentrace's of
// the same kind, with or without --overwrite: exit 2, every input byte for byte
// as it was.
func TestChaosOutputOverInput(t *testing.T) {
	h := chaos(t)
	root := t.TempDir()
	traces, ds := h.dataset(root)
	indir := filepath.Join(root, "indir")
	if err := os.MkdirAll(indir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The user's own trace: synth's output without its agentrace record.
	good := filepath.Join(indir, "good.jsonl")
	b, _ := os.ReadFile(traces)
	_, rows, _ := strings.Cut(string(b), "\n")
	if err := os.WriteFile(good, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(indir, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	sim, endpoint := h.sim(small, "--speedup", "2000")
	run := filepath.Join(root, "sweep", "c2")
	h.run(spec{budget: small}, minute, "agentrace", "replay", "--dataset", ds, "--endpoint", endpoint, "--concurrency", "2",
		"--no-delays", "--out", run).expectExit(0)
	h.run(spec{budget: small}, minute, "agentrace", "score", run).expectExit(0, 1) // a verdict, passed or not
	report := filepath.Join(root, "rep")
	h.run(spec{budget: small}, minute, "agentrace", "report", "--out", report, filepath.Join(root, "sweep")).expectExit(0, 1)
	mine := filepath.Join(root, "mine")
	if err := os.MkdirAll(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("only copy"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testenv.Snapshot(t, root)

	for _, argv := range [][]string{
		{"ingest", "--overwrite", "--out", indir, good},
		{"ingest", "--overwrite", "--out", indir, good},
		{"ingest", "--overwrite", "--out", good, good},
		{"ingest", "--overwrite", "--out", filepath.Join(root, "link"), good},
		{"ingest", "--overwrite", "--out", filepath.Join(indir, "ds"), good, indir},
		{"ingest", "--overwrite", "--out", mine, good},
		{"ingest", "--overwrite", "--out", run, good},
		{"export", "--dataset", ds, "--overwrite", "--out", filepath.Join(ds, "back.jsonl")},
		{"export", "--dataset", ds, "--overwrite", "--out", good},
		{"synth", "--overwrite", "--scale", "0.01", "--out", good},
		{"replay", "--dataset", ds, "--endpoint", endpoint, "--concurrency", "1", "--overwrite", "--out", ds},
		{"replay", "--dataset", ds, "--endpoint", endpoint, "--concurrency", "1", "--overwrite", "--out", filepath.Join(ds, "run")},
		{"replay", "--dataset", ds, "--endpoint", endpoint, "--concurrency", "1", "--overwrite", "--out", mine},
		{"replay", "--dataset", ds, "--endpoint", endpoint, "--concurrency", "1", "--overwrite", "--out", report},
		{"sweep", "--dataset", ds, "--endpoint", endpoint, "--concurrency", "1", "--overwrite", "--out", run},
		{"report", "--overwrite", "--out", run, filepath.Join(root, "sweep")},
		{"report", "--overwrite", "--out", filepath.Join(root, "sweep", "report"), filepath.Join(root, "sweep")},
		{"report", "--overwrite", "--out", ds, filepath.Join(root, "sweep")},
		{"rescore", "--overwrite", "--out", filepath.Join(root, "sweep", "r.parquet"), filepath.Join(root, "sweep")},
		{"rescore", "--overwrite", "--out", good, filepath.Join(root, "sweep")},
		{"audit", "--overwrite", "--out", run, filepath.Join(root, "sweep")},
		{"audit", "--overwrite", "--out", mine, filepath.Join(root, "sweep")},
		{"log", "export", "--overwrite", "--out", good, run},
		{"log", "export", "--overwrite", "--out", filepath.Join(run, "manifest.json"), run},
		{"stats", "--dataset", ds, "--card", "--overwrite", "--out", ds},
		{"stats", "--dataset", ds, "--card", "--overwrite", "--out", mine},
		{"rulesets", "derive", "--overwrite", "--out", good, "--like", "blog-2026-07-qwen3.6", "--inline-mean", "0.5", "--osl-mean", "400", "--swebench-mean", "0.7"},
		{"rulesets", "derive", "--overwrite", "--out", traces, "--like", "blog-2026-07-qwen3.6", "--inline-mean", "0.5", "--osl-mean", "400", "--swebench-mean", "0.7"},
		{"demo", "--out", mine},
		{"demo", "--out", ds},
	} {
		p := h.run(spec{budget: small}, minute, append([]string{"agentrace"}, argv...)...)
		p.expectExit(2) // nothing done: the output may not be written
		if !strings.Contains(p.stderr.String(), "output") {
			t.Errorf("%s: the error does not say why:\n%s", p.name, p.stderr.String())
		}
	}
	sim.signal(15)
	sim.wait(minute)
	testenv.SameFiles(t, root, before)
	noTemps(t, root)
}
