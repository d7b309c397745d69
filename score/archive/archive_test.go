package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/klauspost/compress/gzip"
)

// tarEntry is one entry of a test archive.
type tarEntry struct {
	name, body, link string
	typ              byte
}

func writeTarGz(t *testing.T, p string, entries []tarEntry) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: typ, Linkname: e.link}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			io.WriteString(tw, e.body)
		}
	}
	tw.Close()
	gz.Close()
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeZip(t *testing.T, p string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
	}
	zw.Close()
	os.WriteFile(p, buf.Bytes(), 0o644)
}

// A submission tree: two points of one curve (one of them shipping its events as a
// JSON array), a reference run folder beside it, and an agentrace run.
func treeEntries(big string) []tarEntry {
	return []tarEntry{
		{name: "acme/sys1/qwen3_6-35b-a3b/sweep_summary.csv", body: "concurrency,system_tps\n1,10\n"},
		{name: "acme/sys1/qwen3_6-35b-a3b/r1/point.yaml", body: "concurrency: 1\nregion: low_latency\nmax_supported_concurrency: 64\nruntime_settings:\n  load_pattern: agentic_inference\n"},
		{name: "acme/sys1/qwen3_6-35b-a3b/r1/mlperf_endpoints_log_summary.json", body: `{"n_samples_completed": 3, "duration_ns": 5, "state": "complete"}`},
		{name: "acme/sys1/qwen3_6-35b-a3b/r1/mlperf_endpoints_log_detail.json", body: "[\n  {\n    \"event_type\": \"session.started\"\n  }\n]"},
		{name: "acme/sys1/qwen3_6-35b-a3b/r16/point.yaml", body: "concurrency: 16\n"},
		{name: "acme/sys1/qwen3_6-35b-a3b/r16/result_summary.json", body: `{}`},
		{name: "acme/sys1/qwen3_6-35b-a3b/r16/system_desc.json", body: `{"max_supported_concurrency": 128}`},
		{name: "acme/sys1/qwen3_6-35b-a3b/r16/events.jsonl", body: big},
		{name: "refrun/config.yaml", body: "model_params:\n  name: Qwen/Qwen3.6-35B-A3B\ndatasets:\n  - name: agentic\n    type: performance\n    path: ./combined.jsonl\n    agentic_inference:\n      enable_salt: true\n      num_trajectories_to_issue: 613\nsettings:\n  load_pattern:\n    type: agentic_inference\n    target_concurrency: 8\n"},
		{name: "refrun/events.jsonl", body: "{}\n"},
		{name: "refrun/performance/result_summary.json", body: `{"state": "complete"}`},
	}
}

func TestSourcesFindTheSameRuns(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat(`{"event_type": "sample.issued"}`+"\n", 40000) // > the 1 MiB cache
	entries := treeEntries(big)
	tgz := filepath.Join(dir, "sub.tar.gz")
	writeTarGz(t, tgz, entries)
	files := map[string]string{}
	tree := filepath.Join(dir, "tree")
	for _, e := range entries {
		files[e.name] = e.body
		p := filepath.Join(tree, filepath.FromSlash(e.name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(e.body), 0o644)
	}
	zp := filepath.Join(dir, "sub.zip")
	writeZip(t, zp, files)

	for _, p := range []string{tree, zp} {
		_ = p
	}
	for _, p := range []string{tgz, zp, tree} {
		// Archives expand well past 10x here (repetitive events): lift the limit.
		src, err := Open(p, Limits{MaxExpansion: -1})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		runs := Find(src)
		var got []string
		for _, r := range runs {
			got = append(got, r.Kind+":"+r.Dir)
		}
		want := "submission:acme/sys1/qwen3_6-35b-a3b/r1 submission:acme/sys1/qwen3_6-35b-a3b/r16 reference:refrun"
		if strings.Join(got, " ") != want {
			t.Errorf("%s: runs %v, want %s", p, got, want)
			src.Close()
			continue
		}
		r1, r16, ref := runs[0], runs[1], runs[2]
		if r1.Point != 1 || r1.Model != "qwen3_6-35b-a3b" || r1.System != "sys1" {
			t.Errorf("%s: point identity %+v", p, r1)
		}
		if n, f := r1.EventsName(); n != LogDetailFile || f != EventsArray {
			t.Errorf("%s: r1 events %s %s", p, n, f)
		}
		if n, f := r16.EventsName(); n != EventsFile || f != EventsJSONL {
			t.Errorf("%s: r16 events %s %s", p, n, f)
		}
		if r1.SummaryName() != LogSummaryFile || r16.SummaryName() != SummaryFile || ref.SummaryName() != PerfSummaryFile {
			t.Errorf("%s: summaries %q %q %q", p, r1.SummaryName(), r16.SummaryName(), ref.SummaryName())
		}
		f1, _ := r1.Facts()
		if f1.Concurrency != 1 || f1.Region != "low_latency" || f1.MaxSupportedConcurrency != 64 || f1.LoadPattern != "agentic_inference" || f1.Model != "qwen3_6-35b-a3b" {
			t.Errorf("%s: r1 facts %+v", p, f1)
		}
		f16, _ := r16.Facts()
		if f16.Concurrency != 16 || f16.MaxSupportedConcurrency != 128 {
			t.Errorf("%s: r16 facts %+v", p, f16)
		}
		fr, _ := ref.Facts()
		if fr.Model != "Qwen/Qwen3.6-35B-A3B" || fr.Concurrency != 8 || fr.Trajectories != 613 || fr.Salt == nil || !*fr.Salt ||
			fr.Dataset != "./combined.jsonl" || fr.State != "complete" {
			t.Errorf("%s: reference facts %+v", p, fr)
		}
		if b, ok, err := r16.CurveFile(SweepSummaryFile); !ok || err != nil || !strings.HasPrefix(string(b), "concurrency") {
			t.Errorf("%s: curve file %q %v %v", p, b, ok, err)
		}
		// The big entry streams whole (from the tar.gz: decompressed to it).
		rc, err := r16.Open(EventsFile)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(b) != big {
			t.Errorf("%s: events read %d bytes, want %d (%v)", p, len(b), len(big), err)
		}
		// ReadFile refuses what is over its limit.
		src.lim.MaxFileBytes = 1000
		if _, err := r16.ReadFile(EventsFile); err == nil || !strings.Contains(err.Error(), "more than") {
			t.Errorf("%s: ReadFile over the limit: %v", p, err)
		}
		src.lim.MaxFileBytes = 0
		if cs := Curves(runs); len(cs) != 1 || len(cs[0].Points) != 2 || cs[0].Dir != "acme/sys1/qwen3_6-35b-a3b" {
			t.Errorf("%s: curves %+v", p, cs)
		}
		src.Close()
	}

	// A path inside an archive names the run.
	r, err := OpenRun(tgz+"/acme/sys1/qwen3_6-35b-a3b/r16", Limits{MaxExpansion: -1})
	if err != nil || r.Point != 16 || r.Label != tgz+"/acme/sys1/qwen3_6-35b-a3b/r16" {
		t.Fatalf("OpenRun inside an archive: %+v %v", r, err)
	}
	r.Source.Close()
	if _, err := OpenRun(tgz, Limits{MaxExpansion: -1}); err == nil || !strings.Contains(err.Error(), "holds 3 runs") {
		t.Errorf("an archive of three runs as one: %v", err)
	}
	if _, err := OpenRun(tgz+"/nope", Limits{MaxExpansion: -1}); err == nil {
		t.Error("a missing folder inside an archive")
	}
}

func TestUnsafeArchives(t *testing.T) {
	dir := t.TempDir()
	tgz := filepath.Join(dir, "evil.tgz")
	writeTarGz(t, tgz, []tarEntry{
		{name: "run/events.jsonl", body: "{}\n"},
		{name: "run/config.yaml", link: "/etc/passwd", typ: tar.TypeSymlink},
		{name: "../escape.txt", body: "x"},
		{name: "/abs/file", body: "x"},
		{name: "ok/../../up", body: "x"},
		{name: "dev", typ: tar.TypeFifo},
	})
	src, err := Open(tgz, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	runs := Find(src)
	var errs []string
	var run *Run
	for _, r := range runs {
		if r.Kind != "" {
			run = r
			continue
		}
		errs = append(errs, r.Err.Error())
	}
	if run == nil || run.Err == nil || !strings.Contains(run.Err.Error(), "run/config.yaml") || !strings.Contains(run.Err.Error(), "links are not followed") {
		t.Errorf("the run with a link inside: %+v", run)
	}
	all := strings.Join(errs, "\n")
	for _, want := range []string{"../escape.txt: path leads out", "/abs/file: absolute path", "ok/../../up: path leads out", "dev: special entry"} {
		if !strings.Contains(all, want) {
			t.Errorf("no error row %q in:\n%s", want, all)
		}
	}
	if src.IsFile("escape.txt") || src.IsFile("abs/file") || src.IsFile("up") {
		t.Error("a refused entry was indexed")
	}

	// A zip with ../ and an expansion bomb.
	zp := filepath.Join(dir, "evil.zip")
	writeZip(t, zp, map[string]string{"../x": "a", "run/events.jsonl": "{}\n"})
	zs, err := Open(zp, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(zs.Problems) != 1 || !strings.Contains(zs.Problems[0].Reason, "leads out") {
		t.Errorf("zip problems %+v", zs.Problems)
	}
	zs.Close()
	bomb := map[string]string{"run/events.jsonl": strings.Repeat("a", 1<<20)}
	writeZip(t, zp, bomb)
	if _, err := Open(zp, Limits{}); !errors.Is(err, infile.ErrExpansion) || !strings.Contains(err.Error(), "evil.zip") {
		t.Errorf("zip bomb: %v", err)
	}
	if s, err := Open(zp, Limits{MaxExpansion: -1}); err != nil {
		t.Errorf("zip bomb with the limit lifted: %v", err)
	} else {
		s.Close()
	}
	writeTarGz(t, tgz, []tarEntry{{name: "run/events.jsonl", body: strings.Repeat("a", 1<<20)}})
	if _, err := Open(tgz, Limits{}); !errors.Is(err, infile.ErrExpansion) || !strings.Contains(err.Error(), "evil.tgz") {
		t.Errorf("tar.gz bomb: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "none.tgz"), Limits{}); err == nil {
		t.Error("a missing archive")
	}
	os.WriteFile(filepath.Join(dir, "garbage.tgz"), []byte("not gzip at all"), 0o644)
	if _, err := Open(filepath.Join(dir, "garbage.tgz"), Limits{}); err == nil || !strings.Contains(err.Error(), "garbage.tgz") {
		t.Errorf("a garbage archive: %v", err)
	}
}

func TestDirectorySymlinksAndSpecialFiles(t *testing.T) {
	root := t.TempDir()
	tree := filepath.Join(root, "tree")
	outside := filepath.Join(root, "outside")
	os.MkdirAll(filepath.Join(tree, "run"), 0o755)
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "config.yaml"), []byte("secret"), 0o644)
	os.WriteFile(filepath.Join(tree, "run", "events.jsonl"), []byte("{}\n"), 0o644)
	os.Symlink(filepath.Join(outside, "config.yaml"), filepath.Join(tree, "run", "config.yaml"))
	os.Symlink(outside, filepath.Join(tree, "away"))
	os.WriteFile(filepath.Join(tree, "run", "real.json"), []byte("{}"), 0o644)
	os.Symlink("real.json", filepath.Join(tree, "run", "result_summary.json"))
	src, err := Open(tree, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	runs := Find(src)
	if len(runs) != 2 || runs[1].Dir != "run" || runs[1].Err == nil || !strings.Contains(runs[1].Err.Error(), "config.yaml") {
		t.Fatalf("runs %+v", runs)
	}
	if runs[0].Kind != "" || !strings.Contains(runs[0].Err.Error(), "away") {
		t.Errorf("the link out: %+v", runs[0])
	}
	if _, err := runs[1].ReadFile("config.yaml"); err == nil {
		t.Error("read a file through a link out of the tree")
	}
	if b, err := runs[1].ReadFile("result_summary.json"); err != nil || string(b) != "{}" {
		t.Errorf("a link inside the tree: %q %v", b, err)
	}
}

// TestClaimFoldersAreNotRuns: a run folder being built beside its output, or an
// earlier one moved aside (internal/outguard's names), is not found as a run.
func TestClaimFoldersAreNotRuns(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"sweep/c8", "sweep/.c8.agentrace-new-123", "sweep/.c4.agentrace-old-9"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"turns.arrows", "manifest.json"} {
			if err := os.WriteFile(filepath.Join(root, d, f), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	src, err := Open(root, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var found []string
	for _, r := range Find(src) {
		found = append(found, r.Dir)
	}
	if strings.Join(found, ",") != "sweep/c8" {
		t.Errorf("runs found: %q, want only sweep/c8", found)
	}
}

// TestReferenceRunsInPointFolders: a reference client's run folders named r<N>
// (events.jsonl, performance/, no point.yaml) are reference runs, which the
// rules of a submission tree do not judge; one with point.yaml is a point.
func TestReferenceRunsInPointFolders(t *testing.T) {
	tree := t.TempDir()
	for name, body := range map[string]string{
		"sweep/r8/events.jsonl":                           "{}\n",
		"sweep/r8/config.yaml":                            "settings: {}\n",
		"sweep/r8/performance/result_summary.json":        "{}",
		"sub/sys/m/r16/events.jsonl":                      "{}\n",
		"sub/sys/m/r16/point.yaml":                        "concurrency: 16\n",
		"sub/sys/m/r32/mlperf_endpoints_log_summary.json": "{}",
	} {
		p := filepath.Join(tree, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	src, err := Open(tree, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	kinds := map[string]string{}
	for _, r := range Find(src) {
		kinds[r.Dir] = r.Kind
	}
	want := map[string]string{"sweep/r8": KindReference, "sub/sys/m/r16": KindSubmission, "sub/sys/m/r32": KindSubmission}
	for dir, k := range want {
		if kinds[dir] != k {
			t.Errorf("%s: kind %q, want %q (all: %v)", dir, kinds[dir], k, kinds)
		}
	}
}

// TestPointFolderGivenItself: a submission point's folder named on its own
// (sys/model/r100) is the point it is inside its tree, with its concurrency,
// model and system from its path.
func TestPointFolderGivenItself(t *testing.T) {
	point := filepath.Join(t.TempDir(), "h200", "qwen", "r100")
	if err := os.MkdirAll(point, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(point, PointFile), []byte("concurrency: 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := OpenRun(point, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Source.Close()
	if run.Kind != KindSubmission || run.Point != 100 || run.Model != "qwen" || run.System != "h200" {
		t.Errorf("OpenRun(%s) = kind %q point %d model %q system %q; want submission 100 qwen h200", point, run.Kind, run.Point, run.Model, run.System)
	}
}
