package outguard

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/parquet-go/parquet-go"
)

func write(t *testing.T, p, s string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckPaths(t *testing.T) {
	root := t.TempDir()
	in := filepath.Join(root, "in")
	trace := write(t, filepath.Join(in, "good.jsonl"), "{}\n")
	other := write(t, filepath.Join(root, "other", "x.jsonl"), "{}\n")
	if err := os.Symlink(in, filepath.Join(root, "inlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(trace, filepath.Join(root, "tracelink.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(trace, filepath.Join(root, "hard.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(in, "sub"), filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(root); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		out    string
		inputs []string
		bad    bool
	}{
		{"same.jsonl", []string{"same.jsonl"}, false}, // an input that does not exist is skipped
		{"in/good.jsonl", []string{"in/good.jsonl"}, true},
		{"in/../in/good.jsonl", []string{trace}, true},
		{"tracelink.jsonl", []string{"in/good.jsonl"}, true},
		{"in/good.jsonl", []string{"tracelink.jsonl"}, true},
		{"hard.jsonl", []string{"in/good.jsonl"}, true},
		{"in", []string{"in/good.jsonl"}, true},              // contains
		{root, []string{"in/good.jsonl"}, true},              // contains, from far above
		{"inlink", []string{"in/good.jsonl"}, true},          // contains, through a link
		{"in/ds", []string{"in/good.jsonl", "in"}, true},     // inside an input folder (not yet existing)
		{"in/a/b/c/ds", []string{"in"}, true},                // deep inside, not existing
		{"inlink/ds", []string{"in"}, true},                  // inside, through a link
		{"in/ds", []string{"inlink"}, true},                  // the input is a link to the folder
		{"dangling/x", []string{"in"}, true},                 // a link into the input to a folder not yet made
		{"in", []string{"in"}, true},                         // the same folder
		{"out", []string{"in/good.jsonl", "in"}, false},      // beside
		{"other/ds", []string{"in/good.jsonl", "in"}, false}, //
		{"in2", []string{"in"}, false},                       // a common prefix is not a parent
		{"other", []string{other, ""}, true},
		{"ds", []string{"-", ""}, false},
	} {
		err := CheckPaths(tc.out, tc.inputs...)
		if tc.bad != (err != nil) {
			t.Errorf("CheckPaths(%q, %q) = %v, want error %v", tc.out, tc.inputs, err, tc.bad)
		}
		if err != nil && !errors.Is(err, ErrOverlap) {
			t.Errorf("CheckPaths(%q, %q) = %v, want ErrOverlap", tc.out, tc.inputs, err)
		}
	}
}

func TestCheckReplace(t *testing.T) {
	root := t.TempDir()
	p := func(s string) string { return filepath.Join(root, s) }
	// A marked dataset and run, an unmarked folder, an empty folder, files.
	for _, k := range []struct {
		dir  string
		kind Kind
	}{{"ds", Dataset}, {"run", Run}, {"rep", Report}} {
		write(t, p(k.dir+"/x"), "x")
		if err := MarkDir(p(k.dir), k.kind); err != nil {
			t.Fatal(err)
		}
	}
	write(t, p("mine/notes.txt"), "my only copy")
	if err := os.Mkdir(p("empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, p("user.jsonl"), `{"conversation_id":"a","turn":1,"role":"user","content":"x"}`+"\n")
	write(t, p("synth.jsonl"), `{"_type":"dataset_metadata","generator":"agentrace synth","version":"0.1.0"}`+"\n{}\n")
	write(t, p("other-gen.jsonl"), `{"_type":"dataset_metadata","generator":"someone else"}`+"\n")
	if err := os.Symlink(p("run"), p("runlink")); err != nil {
		t.Fatal(err)
	}
	fifo := p("fifo")
	haveFIFO := runtime.GOOS != "windows" && syscall.Mkfifo(fifo, 0o644) == nil
	writeParquet(t, p("rescore.parquet"), &Rescore)
	writeParquet(t, p("plain.parquet"), nil)

	for _, tc := range []struct {
		out       string
		kind      Kind
		overwrite bool
		want      error
	}{
		{"absent", Dataset, false, nil},
		{"absent/deeper", Run, true, nil},
		{"empty", Dataset, false, nil},
		{"empty", Traces, true, ErrNotOurs}, // a folder where a file goes
		{"ds", Dataset, false, ErrExists},
		{"ds", Dataset, true, nil},
		{"ds", Run, true, ErrNotOurs}, // a run over a dataset: never
		{"run", Run, true, nil},
		{"run", Dataset, true, ErrNotOurs},
		{"rep", Report, true, nil},
		{"runlink", Run, true, ErrNotOurs}, // never through a link
		{"mine", Dataset, true, ErrNotOurs},
		{"mine", Dataset, false, ErrNotOurs},
		{"user.jsonl", Traces, true, ErrNotOurs},
		{"user.jsonl", Dataset, true, ErrNotOurs}, // a file where a folder goes
		{"other-gen.jsonl", Traces, true, ErrNotOurs},
		{"synth.jsonl", Traces, false, ErrExists},
		{"synth.jsonl", Traces, true, nil},
		{"rescore.parquet", Rescore, true, nil},
		{"rescore.parquet", Rescore, false, ErrExists},
		{"rescore.parquet", Kind{"turns", false}, true, ErrNotOurs},
		{"plain.parquet", Rescore, true, ErrNotOurs},
		{"fifo", Traces, true, ErrNotOurs},
	} {
		if tc.out == "fifo" && !haveFIFO {
			continue
		}
		err := Check(p(tc.out), tc.kind, tc.overwrite)
		if (err == nil) != (tc.want == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("Check(%s, %s, overwrite=%v) = %v, want %v", tc.out, tc.kind.Name, tc.overwrite, err, tc.want)
		}
	}
	// Ours recognizes a file format the marks do not cover.
	o := Output{Path: p("user.jsonl"), Kind: Traces, Overwrite: true, Ours: func(string) bool { return true }}
	if err := o.Check(); err != nil {
		t.Errorf("Check with Ours: %v", err)
	}
	if err := Check("", Dataset, true); err == nil {
		t.Error("an empty output path passed")
	}
}

func writeParquet(t *testing.T, path string, kind *Kind) {
	t.Helper()
	type row struct{ A int64 }
	var buf bytes.Buffer
	var opts []parquet.WriterOption
	if kind != nil {
		opts = append(opts, ParquetMetadata(*kind))
	}
	w := parquet.NewGenericWriter[row](&buf, opts...)
	if _, err := w.Write([]row{{1}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	write(t, path, buf.String())
}

// TestLegacyDirKind: folders written before the marker are recognized by their files,
// and near misses are not.
func TestLegacyDirKind(t *testing.T) {
	root := t.TempDir()
	p := func(s string) string { return filepath.Join(root, s) }
	write(t, p("ds/manifest.json"), `{"schema_version":"1","tool_version":"0.1.0","content_hash":"ab","counts":{}}`)
	write(t, p("ds/conversations.parquet"), "PAR1")
	write(t, p("run/manifest.json"), `{"schema_version":"1","tool_version":"0.1.0","config":{},"state":"complete"}`)
	write(t, p("run/turns.arrows"), "")
	write(t, p("notds/manifest.json"), `{"content_hash":"ab"}`)
	write(t, p("notds/conversations.parquet"), "PAR1")
	write(t, p("notrun/manifest.json"), `{"config":{},"state":"complete"}`)
	write(t, p("notrun/turns.arrows"), "")
	write(t, p("sweep/c8/manifest.json"), `{"schema_version":"1","tool_version":"0.1.0","config":{},"state":"complete"}`)
	write(t, p("sweep/c8/turns.arrows"), "")
	write(t, p("notsweep/c8/manifest.json"), `{"schema_version":"1","tool_version":"0.1.0","config":{},"state":"complete"}`)
	write(t, p("notsweep/c8/turns.arrows"), "")
	write(t, p("notsweep/thesis.tex"), "")
	write(t, p("demo/dataset/manifest.json"), `{"schema_version":"1","tool_version":"0.1.0","content_hash":"ab","counts":{}}`)
	write(t, p("demo/dataset/conversations.parquet"), "PAR1")
	write(t, p("demo/report/report.html"), "")
	write(t, p("notdemo/dataset/x"), "")
	write(t, p("rep/report.html"), "")
	write(t, p("rep/points.json"), "[]")
	write(t, p("marked/"+MarkerFile), `{"kind":"sweep","tool":"agentrace"}`)
	write(t, p("badmark/"+MarkerFile), `{"kind":"sweep","tool":"other"}`)
	write(t, p("badmark/c8/turns.arrows"), "")
	for dir, want := range map[string]string{
		"ds": "dataset", "run": "run", "notds": "", "notrun": "", "sweep": "sweep", "notsweep": "",
		"demo": "demo", "notdemo": "", "rep": "report", "marked": "sweep", "badmark": "",
	} {
		if got := DirKind(p(dir)); got != want {
			t.Errorf("DirKind(%s) = %q, want %q", dir, got, want)
		}
	}
}

func TestBeginFinishAbandon(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run")
	ds := filepath.Join(root, "ds")
	write(t, filepath.Join(ds, "manifest.json"), "{}")
	if err := MarkDir(ds, Dataset); err != nil {
		t.Fatal(err)
	}
	// A fresh folder.
	c, err := Begin(Output{Path: run, Kind: Run}, ds)
	if err != nil {
		t.Fatal(err)
	}
	if DirKind(run) != "run" {
		t.Fatalf("new run folder kind %q", DirKind(run))
	}
	write(t, filepath.Join(run, "turns.arrows"), "first")
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	// Without --overwrite: refused, nothing touched.
	if _, err := Begin(Output{Path: run, Kind: Run}, ds); !errors.Is(err, ErrExists) {
		t.Fatalf("Begin over a run without overwrite: %v", err)
	}
	// Over the dataset, or inside it: refused.
	if _, err := Begin(Output{Path: ds, Kind: Run, Overwrite: true}, ds); !errors.Is(err, ErrOverlap) {
		t.Fatalf("Begin over the input dataset: %v", err)
	}
	if _, err := Begin(Output{Path: ds, Kind: Run, Overwrite: true}); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("Begin over a dataset: %v", err)
	}
	// Replace, then abandon: the first run comes back intact.
	c, err = Begin(Output{Path: run, Kind: Run, Overwrite: true}, ds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(run, "turns.arrows")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the new run folder holds the old log: %v", err)
	}
	write(t, filepath.Join(run, "turns.arrows"), "second")
	if err := c.Abandon(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(run, "turns.arrows")); string(b) != "first" {
		t.Fatalf("after Abandon the log reads %q", b)
	}
	// Replace and finish: the old one is gone, no hidden folder is left.
	c, err = Begin(Output{Path: run, Kind: Run, Overwrite: true}, ds)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(run, "turns.arrows"), "third")
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(run, "turns.arrows")); string(b) != "third" {
		t.Fatalf("after Finish the log reads %q", b)
	}
	ents, _ := os.ReadDir(root)
	if len(ents) != 2 {
		t.Fatalf("left in %s: %v", root, ents)
	}
	// An empty folder is used in place; Abandon leaves it empty.
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err = Begin(Output{Path: empty, Kind: Sweep})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Abandon(); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(empty); err != nil || len(ents) != 0 {
		t.Fatalf("empty folder after Abandon: %v %v", ents, err)
	}
	if _, err := Begin(Output{Path: filepath.Join(root, "f"), Kind: Traces}); err == nil {
		t.Fatal("Begin accepted a file kind")
	}
}
