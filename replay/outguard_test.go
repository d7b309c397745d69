package replay

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
)

// TestRunNeverOverwritesItsDataset: `replay --dataset ds --out ds
// --overwrite` replaced the dataset's manifest.json with the run manifest. The run
// folder may not be, contain or sit inside the dataset; --overwrite replaces only a
// run; a run that cannot start leaves the earlier one as it was.
func TestRunNeverOverwritesItsDataset(t *testing.T) {
	d := makeDataset(t, chat("a", 2), chat("b", 1))
	f := newFake(t)
	root := t.TempDir()
	ds := filepath.Join(root, "ds")
	manifest := []byte(`{"schema_version":"1","content_hash":"abc"}`)
	if err := os.MkdirAll(ds, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ds, schemas.DatasetManifestFile), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := outguard.MarkDir(ds, outguard.Dataset); err != nil {
		t.Fatal(err)
	}
	opts := func(out string, overwrite bool) Options {
		return Options{Data: d, Dataset: ds, Endpoint: f.srv.URL, Out: out, Overwrite: overwrite, Concurrency: 1}
	}
	for _, out := range []string{ds, filepath.Join(ds, "run"), root} {
		if _, err := Run(context.Background(), opts(out, true)); !errors.Is(err, outguard.ErrOverlap) {
			t.Errorf("run into %s: %v, want ErrOverlap", out, err)
		}
	}
	// The dataset, given under another name than the one it is read from: still a
	// dataset, and never a run's to replace.
	o := opts(ds, true)
	o.Dataset = "mem"
	if _, err := Run(context.Background(), o); !errors.Is(err, outguard.ErrNotOurs) {
		t.Errorf("run over a dataset: %v, want ErrNotOurs", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ds, schemas.DatasetManifestFile)); !bytes.Equal(b, manifest) {
		t.Fatalf("the dataset's manifest changed: %s", b)
	}
	if len(f.requests()) != 0 {
		t.Fatalf("%d requests sent by refused runs", len(f.requests()))
	}

	run := filepath.Join(root, "run")
	if _, err := Run(context.Background(), opts(run, false)); err != nil {
		t.Fatal(err)
	}
	if k := outguard.DirKind(run); k != outguard.Run.Name {
		t.Fatalf("run folder kind %q", k)
	}
	if _, err := Run(context.Background(), opts(run, false)); !errors.Is(err, outguard.ErrExists) {
		t.Errorf("second run without overwrite: %v, want ErrExists", err)
	}
	first, _ := os.ReadFile(filepath.Join(run, schemas.RunManifestFile))
	// An endpoint that does not answer: the earlier run stays as it was.
	down := opts(run, true)
	down.Endpoint = "http://127.0.0.1:1"
	if _, err := Run(context.Background(), down); err == nil {
		t.Fatal("a run against a closed port started")
	}
	if b, _ := os.ReadFile(filepath.Join(run, schemas.RunManifestFile)); !bytes.Equal(b, first) {
		t.Fatal("a run that could not start changed the earlier run")
	}
	// A stale file of the earlier run does not survive a replacement, nor does the
	// folder it was moved aside to.
	if err := os.WriteFile(filepath.Join(run, schemas.ScoresFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), opts(run, true)); err != nil {
		t.Fatalf("run with overwrite: %v", err)
	}
	if _, err := os.Stat(filepath.Join(run, schemas.ScoresFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the earlier run's scores.json survived the replacement: %v", err)
	}
	ents, _ := os.ReadDir(root)
	if len(ents) != 2 {
		t.Errorf("left in %s: %v", root, ents)
	}
	// A folder agentrace did not write is never replaced.
	mine := filepath.Join(root, "mine")
	os.MkdirAll(mine, 0o755)
	os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("x"), 0o644)
	if _, err := Run(context.Background(), opts(mine, true)); !errors.Is(err, outguard.ErrNotOurs) {
		t.Errorf("run over a user's folder: %v, want ErrNotOurs", err)
	}
}

// TestSweepFolder: a sweep adds points to an earlier sweep, refuses a point it holds,
// and with --overwrite replaces the whole sweep (no stale point is left to report).
func TestSweepFolder(t *testing.T) {
	d := makeDataset(t, chat("a", 1))
	f := newFake(t)
	sweep := filepath.Join(t.TempDir(), "sweep")
	o := Options{Data: d, Endpoint: f.srv.URL, Out: sweep}
	if err := Sweep(context.Background(), o, []int{1, 2}); err != nil {
		t.Fatal(err)
	}
	if k := outguard.DirKind(sweep); k != outguard.Sweep.Name {
		t.Fatalf("sweep kind %q", k)
	}
	if err := Sweep(context.Background(), o, []int{4}); err != nil {
		t.Fatalf("add a point: %v", err)
	}
	if err := Sweep(context.Background(), o, []int{8, 2}); err == nil {
		t.Fatal("a point the sweep holds was not refused")
	}
	if _, err := os.Stat(filepath.Join(sweep, "c8")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused sweep ran a point")
	}
	o.Overwrite = true
	if err := Sweep(context.Background(), o, []int{1}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(sweep)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[0] != outguard.MarkerFile || names[1] != "c1" {
		t.Fatalf("after an overwrite the sweep holds %v, want [.agentrace c1]", names)
	}
	// A run folder is not a sweep.
	if err := Sweep(context.Background(), o, []int{1}); err != nil {
		t.Fatal(err)
	}
	o.Out = filepath.Join(sweep, "c1")
	if err := Sweep(context.Background(), o, []int{1}); !errors.Is(err, outguard.ErrNotOurs) {
		t.Errorf("sweep over a run: %v, want ErrNotOurs", err)
	}
}

// progressHook calls hook once, the first time the progress written contains
// want.
type progressHook struct {
	want string
	hook func()
	buf  bytes.Buffer
	done bool
}

func (p *progressHook) Write(b []byte) (int, error) {
	p.buf.Write(b)
	if !p.done && bytes.Contains(p.buf.Bytes(), []byte(p.want)) {
		p.done = true
		p.hook()
	}
	return len(b), nil
}

// TestSweepOverwriteKeepsTheEarlierSweep: `sweep --overwrite` whose second point
// fails (the endpoint went away) replaces nothing: the earlier sweep stays byte
// for byte, and nothing is left beside it.
func TestSweepOverwriteKeepsTheEarlierSweep(t *testing.T) {
	d := makeDataset(t, chat("a", 1))
	f := newFake(t)
	root := t.TempDir()
	sweep := filepath.Join(root, "sweep")
	if err := Sweep(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: sweep}, []int{1, 2}); err != nil {
		t.Fatal(err)
	}
	before := testenv.Snapshot(t, root)
	g := newFake(t)
	o := Options{Data: d, Endpoint: g.srv.URL, Out: sweep, Overwrite: true,
		Events: eventLines(&progressHook{want: "sweep point 2/", hook: g.srv.Close})}
	if err := Sweep(context.Background(), o, []int{1, 2}); err == nil {
		t.Fatal("a sweep whose second point could not start succeeded")
	}
	testenv.SameFiles(t, root, before)
}
