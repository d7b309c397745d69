package score_test

import (
	"encoding/json"
	"math"

	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/runread"
	"github.com/klauspost/compress/gzip"
	"github.com/parquet-go/parquet-go"
)

// packTree writes every file under dir into a .tar.gz or a .zip (by out's name),
// under prefix, plus the extra entries given (name -> body; a "->" body makes a
// symbolic link).
func packTree(t *testing.T, dir, prefix, out string, extra map[string]string) {
	t.Helper()
	files := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[prefix+"/"+filepath.ToSlash(rel)], _ = os.ReadFile(p)
		return nil
	})
	var buf bytes.Buffer
	if strings.HasSuffix(out, ".zip") {
		zw := zip.NewWriter(&buf)
		for n, b := range files {
			w, _ := zw.Create(n)
			w.Write(b)
		}
		for n, b := range extra {
			w, _ := zw.Create(n)
			io.WriteString(w, b)
		}
		zw.Close()
	} else {
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		for n, b := range files {
			tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
			tw.Write(b)
		}
		for n, b := range extra {
			if target, ok := strings.CutPrefix(b, "->"); ok {
				tw.WriteHeader(&tar.Header{Name: n, Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: target})
				continue
			}
			tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
			io.WriteString(tw, b)
		}
		tw.Close()
		gz.Close()
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fixtureTree(t *testing.T) (tree, dataset string) {
	repo := testenv.RepoRoot(t)
	return filepath.Join(repo, "testdata", "submission-tree"), filepath.Join(repo, "testdata", "reference-run", "dataset.jsonl")
}

// TestRescoreSubmissionTree re-scores the submission tree fixture as a folder, a
// .tar.gz and a .zip: one row per point, the re-derived inline accuracy equal to
// the published one, the point without an event log judged on its published
// figures, the same rows whatever the form.
func TestRescoreSubmissionTree(t *testing.T) {
	tree, ds := fixtureTree(t)
	work := t.TempDir()
	tgz := filepath.Join(work, "sub.tgz")
	zp := filepath.Join(work, "sub.zip")
	packTree(t, tree, "acme", tgz, nil)
	packTree(t, tree, "acme", zp, nil)
	var forms [][]schemas.RescoreRow
	for _, src := range []string{tree, tgz, zp} {
		out := filepath.Join(work, filepath.Base(src)+".parquet")
		rows, err := score.Rescore(context.Background(), score.RescoreOptions{Archives: []string{src}, Dataset: ds, Jobs: 2, Out: out,
			MaxExpansion: -1})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(fixturePoints) {
			t.Fatalf("%s: %d rows", src, len(rows))
		}
		for i, r := range rows {
			c := fixturePoints[i]
			if r.Error != "" || r.Kind != score.KindSubmission || int(r.Concurrency) != c || r.Curve == "" || r.Model != "Qwen/Qwen3.6-35B-A3B" ||
				r.Ruleset != "checker-2026-10-qwen3.6" || r.Score == nil || r.PublishedAccuracy == nil || *r.Score != *r.PublishedAccuracy {
				t.Errorf("%s: r%d: %+v", src, c, r)
				continue
			}
			wantRegion := map[int]string{32: "low_latency", 36: "low_concurrency", 40: "low_concurrency", 48: "med_concurrency",
				64: "med_concurrency", 100: "med_concurrency", 200: "high_concurrency", 512: "high_concurrency"}[c]
			if r.Region != wantRegion {
				t.Errorf("%s: r%d region %q, want %q", src, c, r.Region, wantRegion)
			}
			wantSource := score.AccuracyFromEvents
			if c == fixtureNoEvents {
				wantSource = score.AccuracyPublished
			}
			if r.AccuracySource != wantSource || r.OSLMean == nil || r.OSLSource != score.OSLSourceSummary {
				t.Errorf("%s: r%d: accuracy source %q, OSL %v %q", src, c, r.AccuracySource, r.OSLMean, r.OSLSource)
			}
			// The OSL gate reads the checker's field; the fixture's answers are short.
			if r.OSLPass == nil || *r.OSLPass || r.Pass == nil || *r.Pass {
				t.Errorf("%s: r%d: OSL %v pass %v", src, c, r.OSLPass, r.Pass)
			}
		}
		back, err := parquet.ReadFile[schemas.RescoreRow](out)
		if err != nil || len(back) != len(rows) || back[2].Score == nil || *back[2].Score != *rows[2].Score {
			t.Errorf("%s: results table %v", src, err)
		}
		forms = append(forms, rows)
	}
	for i := range forms[0] {
		a, b, c := forms[0][i], forms[1][i], forms[2][i]
		if *a.Score != *b.Score || *a.Score != *c.Score || *a.OSLMean != *b.OSLMean || a.Curve != "h200-sim/qwen3_6-35b-a3b" ||
			b.Curve != "acme/h200-sim/qwen3_6-35b-a3b" || !strings.HasPrefix(b.Path, tgz+"/acme/") {
			t.Errorf("row %d differs between forms: %+v / %+v / %+v", i, a, b, c)
		}
	}

	// The reference run folder fixture, and a folder inside an archive named by path.
	rf := filepath.Join(testenv.RepoRoot(t), "testdata", "reference-runfolder")
	s, err := score.ScoreRun(context.Background(), score.Options{Run: rf, Dataset: ds})
	if err != nil || s.Run.Kind != score.KindReference || s.Run.Concurrency != 64 || s.OSL == nil || s.OSL.Source != score.OSLSourceSummary {
		t.Fatalf("reference run folder: %+v %v", s, err)
	}
	// Events compress far past 10x: the default limit refuses the archive.
	if _, err := score.ScoreRun(context.Background(), score.Options{Run: tgz + "/acme/h200-sim/qwen3_6-35b-a3b/r64", Dataset: ds}); err == nil ||
		!strings.Contains(err.Error(), "expands past") {
		t.Errorf("the 10x limit: %v", err)
	}
	p, err := score.ScoreRun(context.Background(), score.Options{Run: tgz + "/acme/h200-sim/qwen3_6-35b-a3b/r64", Dataset: ds, MaxExpansion: -1})
	if err != nil || p.Score != s.Score || p.OSL.Mean != s.OSL.Mean {
		t.Errorf("r64 in the archive %+v, the same run as a folder %+v (%v)", p, s, err)
	}
}

// TestRescoreBadInput: broken files and unsafe archive entries are error rows
// naming the file; the rest of the tree is still scored; nothing panics; values
// not evaluated are null.
func TestRescoreBadInput(t *testing.T) {
	tree, ds := fixtureTree(t)
	work := t.TempDir()
	bad := filepath.Join(work, "tree")
	if err := os.CopyFS(bad, os.DirFS(tree)); err != nil {
		t.Fatal(err)
	}
	curve := filepath.Join(bad, "h200-sim", "qwen3_6-35b-a3b")
	// r32: a detail log cut in the middle of an event (a truncated upload).
	det := filepath.Join(curve, "r32", "mlperf_endpoints_log_detail.json")
	b, _ := os.ReadFile(det)
	os.WriteFile(det, b[:len(b)/2], 0o644)
	// r36: garbage lines in the middle of an event log.
	os.Remove(filepath.Join(curve, "r36", "mlperf_endpoints_log_detail.json"))
	ev, _ := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata", "reference-runfolder", "events.jsonl"))
	lines := strings.SplitAfter(string(ev), "\n")
	lines = append(lines[:5], append([]string{"\x00\x01garbage\n", "{\"event_type\": \"sample.issued\", \"timestamp_ns\": \n", "[1,2\n"}, lines[5:]...)...)
	os.WriteFile(filepath.Join(curve, "r36", "events.jsonl"), []byte(strings.Join(lines, "")), 0o644)
	// r40: no summary at all; r48: a summary without the fields.
	os.Remove(filepath.Join(curve, "r40", "mlperf_endpoints_log_summary.json"))
	os.WriteFile(filepath.Join(curve, "r48", "mlperf_endpoints_log_summary.json"), []byte(`{"state": "complete"}`), 0o644)
	// r64: a summary that is not JSON.
	os.WriteFile(filepath.Join(curve, "r64", "mlperf_endpoints_log_summary.json"), []byte("{not json"), 0o644)
	// r200 ships no events: its accuracy results are removed too.
	os.Remove(filepath.Join(curve, "r200", "accuracy", "accuracy_results.json"))

	tgz := filepath.Join(work, "evil.tgz")
	packTree(t, bad, "sub", tgz, map[string]string{
		"../escape.txt":    "x",
		"/etc/cron.d/evil": "x",
		"sub/h200-sim/qwen3_6-35b-a3b/r512/leak.txt": "->/etc/passwd",
	})
	out := filepath.Join(work, "out", "results.parquet")
	os.MkdirAll(filepath.Dir(out), 0o755)
	rows, err := score.Rescore(context.Background(), score.RescoreOptions{Archives: []string{tgz, filepath.Join(work, "bomb.tgz")},
		Dataset: ds, Jobs: 2, Out: out, MaxExpansion: -1})
	if err != nil {
		t.Fatal(err)
	}
	byLabel := map[string]schemas.RescoreRow{}
	for _, r := range rows {
		byLabel[strings.TrimPrefix(r.Path, tgz+"/")] = r
	}
	pt := func(c string) schemas.RescoreRow { return byLabel["sub/h200-sim/qwen3_6-35b-a3b/r"+c] }
	if r := pt("32"); r.Error != "" && !strings.Contains(r.Error, "mlperf_endpoints_log_detail.json") {
		t.Errorf("r32: %+v", r)
	}
	if r := pt("36"); r.Error != "" || !strings.Contains(r.Warnings, "skipped 1 malformed lines") || r.Score == nil {
		t.Errorf("r36 (garbage lines skipped as the reference does): %+v", r)
	}
	// No result summary is the checker's error (result-summary-present): the OSL
	// gate is not evaluated with severity error, so the verdict fails.
	if r := pt("40"); r.Error != "" || r.OSLMean != nil || r.OSLPass != nil || r.OSLOutcome != schemas.OutcomeNotEvaluated ||
		r.Pass == nil || *r.Pass || !strings.Contains(r.NotEvaluated, "osl_window (error): no result summary") {
		t.Errorf("r40 (no summary): %+v", r)
	}
	// A summary without n_samples_completed and duration_ns fails the checker's
	// schema of it (result-file-valid, an error): the OSL gate is not evaluated
	// with severity error, so the verdict fails.
	if r := pt("48"); r.Error != "" || r.OSLMean != nil || r.Pass == nil || *r.Pass || !strings.Contains(r.NotEvaluated, "result-file-valid") {
		t.Errorf("r48 (summary without the fields): %+v", r)
	}
	if r := pt("64"); r.Error != "" || r.OSLMean != nil || !strings.Contains(r.Warnings, "mlperf_endpoints_log_summary.json") {
		t.Errorf("r64 (summary not JSON): %+v", r)
	}
	// Nothing to judge inline accuracy on: null; its OSL fails, so the verdict is false.
	if r := pt("200"); r.Error != "" || r.Score != nil || r.ScoredTurns != nil || r.AccuracyPass != nil || r.Pass == nil || *r.Pass {
		t.Errorf("r200 (nothing to judge accuracy on): %+v", r)
	}
	if r := pt("512"); !strings.Contains(r.Error, "leak.txt") || !strings.Contains(r.Error, "links are not followed") || r.Score != nil {
		t.Errorf("r512 (a link inside): %+v", r)
	}
	for _, want := range []string{"../escape.txt", "/etc/cron.d/evil"} {
		if r, ok := byLabel[want]; !ok || r.Error == "" {
			t.Errorf("no error row for %s: %v", want, byLabel)
		}
	}
	if r := byLabel[filepath.Join(work, "bomb.tgz")]; r.Error == "" {
		// A missing archive is an error row too (it may be one of many).
		t.Errorf("no error row for the missing archive: %+v", rows)
	}
	if pt("100").Error != "" || pt("100").Score == nil {
		t.Errorf("a good point of the same tree: %+v", pt("100"))
	}
	// Nothing was written outside the output folder, nor extracted.
	entries, _ := os.ReadDir(work)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "evil.tgz out tree" {
		t.Errorf("the work folder holds %v", names)
	}

	// An archive expanding past 10x is one error row, the rest still scored.
	bomb := filepath.Join(work, "bomb.tgz")
	var zeros bytes.Buffer
	gz := gzip.NewWriter(&zeros)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "x/events.jsonl", Mode: 0o644, Size: 8 << 20, Typeflag: tar.TypeReg})
	tw.Write(make([]byte, 8<<20))
	tw.Close()
	gz.Close()
	os.WriteFile(bomb, zeros.Bytes(), 0o644)
	rows, err = score.Rescore(context.Background(), score.RescoreOptions{Archives: []string{bomb, filepath.Join(testenv.RepoRoot(t), "testdata", "reference-runfolder")}, Dataset: ds})
	if err != nil || len(rows) != 2 || !strings.Contains(rows[0].Error, "expands past") || !strings.Contains(rows[0].Error, "bomb.tgz") ||
		rows[1].Error != "" || rows[1].Score == nil {
		t.Errorf("bomb: %+v %v", rows, err)
	}
}

// TestGenuineReferenceRuns reads the run folders the reference client itself wrote
// (testdata/refruns): the inline accuracy re-derived from each events.jsonl equals
// the one the client published in accuracy/accuracy_results.json, the turns issued
// inside the performance window equal its n_samples_issued, and with the reference
// tokenizer the full-run OSL mean of c001 (every turn in the window) equals the
// client's own output_sequence_lengths.avg.
func TestGenuineReferenceRuns(t *testing.T) {
	root := filepath.Join(testenv.RepoRoot(t), "testdata", "refruns")
	ds := filepath.Join(root, "dataset.jsonl")
	rows, err := score.Rescore(context.Background(), score.RescoreOptions{Archives: []string{root}, Dataset: ds, Tokenizer: os.Getenv("AGENTRACE_TOKENIZER")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 {
		t.Fatalf("%d runs", len(rows))
	}
	for _, r := range rows {
		run, err := archiveRun(r.Path)
		if err != nil {
			t.Fatal(err)
		}
		pa, err := score.ReadPublishedAccuracy(run)
		if err != nil || pa.Inline == nil || r.Score == nil || *r.Score != *pa.Inline || r.Kind != score.KindReference {
			t.Errorf("%s: re-derived %v, published %v (%v)", r.Path, r.Score, pa.Inline, err)
		}
		var sum struct {
			Issued int `json:"n_samples_issued"`
			OSL    struct {
				Avg float64 `json:"avg"`
			} `json:"output_sequence_lengths"`
		}
		b, _ := run.ReadFile(run.SummaryName())
		json.Unmarshal(b, &sum)
		inWindow := 0
		if _, err := runread.ScanTurns(context.Background(), run, func(rec *schemas.TurnRecord) error {
			if rec.InWindow {
				inWindow++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if inWindow != sum.Issued {
			t.Errorf("%s: %d turns issued in the window, the client published %d", r.Path, inWindow, sum.Issued)
		}
		if strings.HasSuffix(r.Path, "c001") && r.OSLMean != nil && math.Abs(*r.OSLMean-sum.OSL.Avg) > 1e-9 {
			t.Errorf("c001: full-run OSL %v, the client's %v", *r.OSLMean, sum.OSL.Avg)
		}
		run.Source.Close()
	}
	if os.Getenv("AGENTRACE_TOKENIZER") == "" {
		t.Log("AGENTRACE_TOKENIZER unset: the OSL comparison was skipped")
	}
}

func archiveRun(p string) (*archive.Run, error) { return archive.OpenRun(p, archive.Limits{}) }
