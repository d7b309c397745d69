package outguard

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// tree is every file under root (but the claim's own names), path to content.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if d.Type().IsRegular() && d.Name() != MarkerFile {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(root, p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

// noLeftovers fails the test when a lock, a folder being built or one moved
// aside is left under root.
func noLeftovers(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".agentrace-") {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

// build writes a folder output at path of kind with the files given, committed.
func build(t *testing.T, o Output, files map[string]string) error {
	t.Helper()
	return BuildDir(o, nil, func(dir string) error {
		for n, s := range files {
			write(t, filepath.Join(dir, n), s)
		}
		return nil
	})
}

// TestClaimKeepsTheEarlierOutput: a replacement that fails, is interrupted
// (Release without Commit) or whose path is spelled X/../X leaves the earlier
// output whole; a committed one replaces it wholly; nothing is left beside.
func TestClaimKeepsTheEarlierOutput(t *testing.T) {
	root := t.TempDir()
	x := filepath.Join(root, "x")
	first := map[string]string{"a": "first", "sub/b": "first b"}
	if err := build(t, Output{Path: x, Kind: Dataset}, first); err != nil {
		t.Fatal(err)
	}
	// A failing build.
	boom := errors.New("boom")
	err := BuildDir(Output{Path: x, Kind: Dataset, Overwrite: true}, nil, func(dir string) error {
		write(t, filepath.Join(dir, "a"), "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failing build: %v", err)
	}
	if got := tree(t, x); fmt.Sprint(got) != fmt.Sprint(first) {
		t.Fatalf("after a failed replacement: %v", got)
	}
	// Interrupted: released before Commit.
	c, err := Take(Output{Path: x, Kind: Dataset, Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Dir() == x {
		t.Fatal("a replacement is written at the earlier output's path")
	}
	write(t, filepath.Join(c.Dir(), "a"), "interrupted")
	c.Release()
	if got := tree(t, x); fmt.Sprint(got) != fmt.Sprint(first) {
		t.Fatalf("after an interrupted replacement: %v", got)
	}
	noLeftovers(t, root)
	// The same output spelled X/../X, and dir/.
	for i, spelled := range []string{x + "/../x", x + "/", x + "/."} {
		want := map[string]string{"a": fmt.Sprint("new ", i)}
		if err := build(t, Output{Path: spelled, Kind: Dataset, Overwrite: true}, want); err != nil {
			t.Fatalf("%s: %v", spelled, err)
		}
		if got := tree(t, x); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: %v, want %v", spelled, got, want)
		}
		noLeftovers(t, root)
	}
}

// TestClaimEmptyFolderKept: . in an empty folder is written into: the folder
// itself (the working folder of a shell) stays the same folder.
func TestClaimEmptyFolderKept(t *testing.T) {
	root := t.TempDir()
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(empty)
	t.Chdir(empty)
	if err := build(t, Output{Path: ".", Kind: Report}, map[string]string{"report.html": "x"}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(empty)
	if !os.SameFile(before, after) {
		t.Error("the empty folder was replaced by another")
	}
	if DirKind(empty) != Report.Name || tree(t, empty)["report.html"] != "x" {
		t.Errorf("kind %q, files %v", DirKind(empty), tree(t, empty))
	}
	noLeftovers(t, root)
}

// TestClaimLock: a second claim of one output is refused while the first holds
// it, naming the holder's pid and command; Check says so without taking it;
// the lock file goes with the claim.
func TestClaimLock(t *testing.T) {
	root := t.TempDir()
	x := filepath.Join(root, "rep")
	c, err := Take(Output{Path: x, Kind: Report})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Output{{Path: x, Kind: Report}, {Path: x + "/../rep", Kind: Report, Overwrite: true}, {Path: x, Kind: Run, Live: true}} {
		_, err := Take(o)
		if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) ||
			!strings.Contains(err.Error(), filepath.Base(os.Args[0])) {
			t.Errorf("second Take(%+v): %v, want ErrBusy naming pid %d", o, err, os.Getpid())
		}
		if err := o.Check(); !errors.Is(err, ErrBusy) {
			t.Errorf("Check while held: %v, want ErrBusy", err)
		}
	}
	// The same output through a link to its folder.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Take(Output{Path: filepath.Join(link, "rep"), Kind: Report}); !errors.Is(err, ErrBusy) {
		t.Errorf("second Take through a link to the folder: %v, want ErrBusy", err)
	}
	if _, err := os.Stat(x); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused claim wrote %s: %v", x, err)
	}
	write(t, filepath.Join(c.Dir(), "report.html"), "one")
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 {
		t.Errorf("beside the output: %v", ents)
	}
	c2, err := Take(Output{Path: x, Kind: Report, Overwrite: true})
	if err != nil {
		t.Fatalf("after the first let go: %v", err)
	}
	c2.Release()
	noLeftovers(t, root)
}

// TestClaimMarker: a folder is agentrace's only by its marker, never by its
// file names; a marked folder holding an entry agentrace did not write is
// refused, naming the entry.
func TestClaimMarker(t *testing.T) {
	root := t.TempDir()
	site := filepath.Join(root, "mysite")
	mine := map[string]string{"report.html": "mine", "points.json": "[]", "thesis.tex": "x"}
	for n, s := range mine {
		write(t, filepath.Join(site, n), s)
	}
	if k := DirKind(site); k != "" {
		t.Errorf("DirKind of the user's site: %q", k)
	}
	if err := build(t, Output{Path: site, Kind: Report, Overwrite: true}, map[string]string{"report.html": "ours"}); !errors.Is(err, ErrNotOurs) {
		t.Errorf("report over the user's site: %v, want ErrNotOurs", err)
	}
	if got := tree(t, site); fmt.Sprint(got) != fmt.Sprint(mine) {
		t.Errorf("the user's site changed: %v", got)
	}
	// An agentrace report, then a file of the user's in it.
	rep := filepath.Join(root, "rep")
	if err := build(t, Output{Path: rep, Kind: Report}, map[string]string{"report.html": "ours", "plots/a.svg": "svg"}); err != nil {
		t.Fatal(err)
	}
	m, ok := readMarker(rep)
	if !ok || m.Kind != Report.Name || len(m.ID) != 24 || fmt.Sprint(m.Entries) != "[plots report.html]" {
		t.Fatalf("marker %+v", m)
	}
	write(t, filepath.Join(rep, "notes.txt"), "mine")
	err := build(t, Output{Path: rep, Kind: Report, Overwrite: true}, map[string]string{"report.html": "new"})
	if !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("over a report holding the user's notes.txt: %v", err)
	}
	os.Remove(filepath.Join(rep, "notes.txt"))
	// Inside a listed folder that is an output of its own (a run in a sweep).
	sweep := filepath.Join(root, "sweep")
	if err := build(t, Output{Path: sweep, Kind: Sweep}, nil); err != nil {
		t.Fatal(err)
	}
	if err := build(t, Output{Path: filepath.Join(sweep, "c1"), Kind: Run}, map[string]string{"turns.arrows": "log"}); err != nil {
		t.Fatal(err)
	}
	// c1 was not written by the sweep: it is named.
	if err := Check(sweep, Sweep, true); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "c1") {
		t.Errorf("a sweep holding a run it did not write: %v", err)
	}
	// Scores written into a run later are agentrace's.
	run := filepath.Join(root, "run")
	if err := build(t, Output{Path: run, Kind: Run}, map[string]string{"turns.arrows": "log"}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(run, "scores.json"), "{}")
	if err := Check(run, Run, true); err != nil {
		t.Errorf("a run with its scores: %v", err)
	}
	write(t, filepath.Join(run, "thesis.tex"), "mine")
	if err := Check(run, Run, true); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "thesis.tex") {
		t.Errorf("a run holding thesis.tex: %v", err)
	}
}

// TestClaimLive: a live output is written at its path when nothing is there to
// keep (and stays when released after being committed, goes when released
// before); over an earlier one it is written beside.
func TestClaimLive(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run")
	c, err := Take(Output{Path: run, Kind: Run, Live: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Dir() != run || !c.InPlace() || DirKind(run) != Run.Name {
		t.Fatalf("fresh live run: dir %s, in place %v, kind %q", c.Dir(), c.InPlace(), DirKind(run))
	}
	c.Release() // never started
	if _, err := os.Stat(run); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a run that never started left %s", run)
	}
	c, _ = Take(Output{Path: run, Kind: Run, Live: true})
	write(t, filepath.Join(c.Dir(), "turns.arrows"), "first")
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	c, err = Take(Output{Path: run, Kind: Run, Live: true, Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Dir() == run || c.InPlace() || !c.Replacing() {
		t.Fatalf("live run over a run: dir %s", c.Dir())
	}
	write(t, filepath.Join(c.Dir(), "turns.arrows"), "second")
	c.Release()
	if got := tree(t, run)["turns.arrows"]; got != "first" {
		t.Fatalf("after a dropped replacement: %q", got)
	}
	noLeftovers(t, root)
}

// TestClaimShared: a Shared kind (the demo's folder) replaces only its own
// entries: the user's files beside them survive, a file of the user's inside
// one of them is refused by name, and an interrupted replacement puts the
// earlier entries back.
func TestClaimShared(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "demo")
	entries := []string{"runs", "report"}
	o := Output{Path: d, Kind: Demo, Overwrite: true, Entries: entries}
	demo := func(tag string) error {
		c, err := Take(o)
		if err != nil {
			return err
		}
		defer c.Release()
		if c.Dir() != d {
			t.Fatalf("the demo is written at %s", c.Dir())
		}
		rc, err := Take(Output{Path: filepath.Join(d, "runs"), Kind: Sweep, Live: true})
		if err != nil {
			return err
		}
		defer rc.Release()
		if err := build(t, Output{Path: filepath.Join(d, "runs", "c1"), Kind: Run}, map[string]string{"turns.arrows": tag}); err != nil {
			return err
		}
		if err := rc.Commit(); err != nil {
			return err
		}
		if err := build(t, Output{Path: filepath.Join(d, "report"), Kind: Report}, map[string]string{"report.html": tag}); err != nil {
			return err
		}
		if tag == "interrupted" {
			return errors.New("interrupted")
		}
		return c.Commit()
	}
	if err := demo("first"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d, "request.json"), "mine")
	write(t, filepath.Join(d, "runs", "c1", "scores.json"), "{}") // agentrace score
	if err := demo("interrupted"); err == nil {
		t.Fatal("interrupted demo: no error")
	}
	want := map[string]string{"request.json": "mine", "runs/c1/scores.json": "{}", "runs/c1/turns.arrows": "first", "report/report.html": "first"}
	if got := tree(t, d); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after an interrupted second demo: %v, want %v", got, want)
	}
	noLeftovers(t, root)
	if err := demo("second"); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"request.json": "mine", "runs/c1/turns.arrows": "second", "report/report.html": "second"}
	if got := tree(t, d); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a second demo: %v, want %v", got, want)
	}
	m, _ := readMarker(d)
	if sort.Strings(m.Entries); fmt.Sprint(m.Entries) != "[report runs]" {
		t.Errorf("the demo's marker lists %v", m.Entries)
	}
	write(t, filepath.Join(d, "runs", "c99", "notes.txt"), "mine")
	if err := demo("third"); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "c99") {
		t.Errorf("a demo over runs/ holding the user's c99: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "runs", "c99", "notes.txt")); string(b) != "mine" {
		t.Error("the user's runs/c99/notes.txt is gone")
	}
	noLeftovers(t, root)
}

// TestClaimRecoversAfterKill: what a killed claim left beside its output is
// cleared by the next claim: a folder being built is removed, an earlier output
// moved aside is put back.
func TestClaimRecoversAfterKill(t *testing.T) {
	root := t.TempDir()
	x := filepath.Join(root, "x")
	if err := build(t, Output{Path: x, Kind: Dataset}, map[string]string{"a": "first"}); err != nil {
		t.Fatal(err)
	}
	// Killed while building beside it, then killed between the two renames of
	// a swap: the earlier output is aside, nothing at x.
	write(t, filepath.Join(root, ".x"+newInfix+"123", "a"), "half")
	if err := os.Rename(x, filepath.Join(root, ".x"+oldInfix+"456")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, ".x"+lockSuffix), `{"pid":1,"command":"agentrace ingest"}`)
	c, err := Take(Output{Path: x, Kind: Dataset})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("Take after a killed swap: %v, want ErrExists (the earlier dataset back)", err)
	}
	if got := tree(t, x)["a"]; got != "first" {
		t.Fatalf("after recovery x/a = %q", got)
	}
	c.Release()
	noLeftovers(t, root)
	// A demo killed while it ran: its earlier entries are aside.
	d := filepath.Join(root, "d")
	if err := build(t, Output{Path: d, Kind: Demo, Entries: []string{"report"}}, map[string]string{"report/r": "first", "mine": "mine"}); err != nil {
		t.Fatal(err)
	}
	aside := filepath.Join(root, ".d"+oldInfix+"9")
	write(t, filepath.Join(aside, "keep"), "")
	if err := os.Rename(filepath.Join(d, "report"), filepath.Join(aside, "report")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(aside, "keep"))
	write(t, filepath.Join(d, "report", "r"), "half")
	c, err = Take(Output{Path: d, Kind: Demo, Overwrite: true, Entries: []string{"report"}})
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	if got := tree(t, d); got["report/r"] != "first" || got["mine"] != "mine" {
		t.Errorf("after recovery: %v", got)
	}
	noLeftovers(t, root)
}

// TestSwapByRenames: where folders cannot be exchanged at once, a swap whose
// second rename fails puts the earlier output back (it never removes it before
// the new one is in place).
func TestSwapByRenames(t *testing.T) {
	root := t.TempDir()
	dst := filepath.Join(root, "x")
	write(t, filepath.Join(dst, "a"), "first")
	if err := swapByRenames(filepath.Join(root, "gone"), dst); err == nil {
		t.Fatal("a swap from a missing folder succeeded")
	}
	if got := tree(t, dst)["a"]; got != "first" {
		t.Fatalf("after a failed swap x/a = %q", got)
	}
	src := filepath.Join(root, ".x"+newInfix+"1")
	write(t, filepath.Join(src, "a"), "second")
	if err := swapByRenames(src, dst); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dst)["a"]; got != "second" {
		t.Fatalf("after a swap x/a = %q", got)
	}
	noLeftovers(t, root)
}

// TestWriteFile: a file output is replaced at once, never half-written; an
// error leaves the earlier file.
func TestWriteFile(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "t.jsonl")
	o := Output{Path: p, Kind: Traces, Overwrite: true}
	line := `{"_type":"dataset_metadata","generator":"agentrace synth"}` + "\n"
	if err := WriteFile(o, nil, func(w io.Writer) error { _, err := io.WriteString(w, line); return err }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := WriteFile(o, nil, func(w io.Writer) error { io.WriteString(w, "half"); return boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != line {
		t.Fatalf("after a failed write: %q", b)
	}
	noLeftovers(t, root)
}

// TestCommandLine: the holder's command line names the command and never a
// secret.
func TestCommandLine(t *testing.T) {
	got := commandLine([]string{"/usr/bin/agentrace", "replay", "--header", "X-Password: hunter2", "--api-key=sk-1",
		"--endpoint", "http://u:pw@host/v1", "--out", "runs/c8", "-H=Auth: x"})
	want := "agentrace replay --header <redacted> --api-key=<redacted> --endpoint http://<redacted>@host/v1 --out runs/c8 -H=<redacted>"
	if got != want {
		t.Errorf("commandLine = %q\nwant          %q", got, want)
	}
}
