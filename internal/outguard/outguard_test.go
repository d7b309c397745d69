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
		{"rescore.parquet", Kind{Name: "turns"}, true, ErrNotOurs},
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
