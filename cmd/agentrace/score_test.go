package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// packDir writes every regular file under dir into an archive at out (.tgz or
// .zip by its name), named prefix/relative-path.
func packDir(t *testing.T, dir, prefix, out string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var add func(name string, b []byte) error
	var closers []io.Closer
	if strings.HasSuffix(out, ".zip") {
		zw := zip.NewWriter(f)
		add = func(name string, b []byte) error {
			w, err := zw.Create(name)
			if err != nil {
				return err
			}
			_, err = w.Write(b)
			return err
		}
		closers = append(closers, zw)
	} else {
		gw := gzip.NewWriter(f)
		tw := tar.NewWriter(gw)
		add = func(name string, b []byte) error {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			_, err := tw.Write(b)
			return err
		}
		closers = append(closers, tw, gw)
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return add(filepath.ToSlash(filepath.Join(prefix, rel)), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range closers {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestScoreRunInArchive: `agentrace score` scores a run read from an archive
// (.tgz and .zip, named alone or by a folder inside it), prints the same verdict
// as for the folder, exits as it does (1: the fixture's OSL gate fails), says the
// scores were not written, and writes nothing anywhere; a folder on disk still
// gets scores.json and scores.parquet.
func TestScoreRunInArchive(t *testing.T) {
	repo := testenv.RepoRoot(t)
	src := filepath.Join(repo, "testdata", "reference-runfolder")
	ds := filepath.Join(repo, "testdata", "reference-run", "dataset.jsonl")
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	if err := os.CopyFS(folder, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	want, err := runApp(t, "score", "--dataset", ds, folder)
	if exitCode(err) != exitNo || !strings.Contains(want, "verdict                              FAIL") {
		t.Fatalf("score of the folder (its OSL gate fails): %v (status %d), want exit status 1\n%s", err, exitCode(err), want)
	}
	for _, f := range []string{"scores.json", "scores.parquet"} {
		if _, err := os.Stat(filepath.Join(folder, f)); err != nil {
			t.Errorf("score of a folder on disk did not write %s: %v", f, err)
		}
	}
	// The table, without the run's name, warnings and notes (a run inside
	// sys/model/r8 is a submission point, judged on its published figures with a
	// note saying so: the outcomes are the same).
	verdict := func(out string) string {
		var keep []string
		note := -1
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "warning:") {
				continue
			}
			if i := strings.Index(l, " run): "); i >= 0 {
				l = l[i:]
			}
			if i := strings.Index(l, "NOTE"); i >= 0 && strings.HasPrefix(l, "GATE") {
				note = i
			}
			if note >= 0 && len(l) > note {
				l = l[:note]
			}
			l = strings.TrimRight(l, " ")
			keep = append(keep, l)
		}
		return strings.Join(keep, "\n")
	}
	arch := filepath.Join(dir, "arch")
	os.MkdirAll(arch, 0o755)
	for _, tc := range []struct{ archive, prefix, run string }{
		{"one.tgz", "", "one.tgz"},
		{"one.zip", "", "one.zip"},
		{"sub.tgz", "sys/model/r8", "sub.tgz/sys/model/r8"},
		{"sub.zip", "sys/model/r8", "sub.zip/sys/model/r8"},
	} {
		packDir(t, src, tc.prefix, filepath.Join(arch, tc.archive))
		run := filepath.Join(arch, tc.run)
		out, err := runApp(t, "score", "--dataset", ds, "--max-expansion", "0", run)
		if exitCode(err) != exitNo {
			t.Errorf("score %s: %v (status %d), want exit status 1 as the folder's\n%s", tc.run, err, exitCode(err), out)
			continue
		}
		if !strings.Contains(out, "inside an archive: scores.json and scores.parquet not written") {
			t.Errorf("score %s does not say the scores were not written:\n%s", tc.run, out)
		}
		if got := verdict(out); got != verdict(want) {
			t.Errorf("score %s printed\n%s\nthe folder\n%s", tc.run, got, verdict(want))
		}
	}
	ents, _ := os.ReadDir(arch)
	if len(ents) != 4 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("score of archived runs wrote beside them: %v", names)
	}
}

// Scoring several runs prints each warning once, naming its runs, and ends with
// one summary line.
func TestScoreManyRunsOneSummary(t *testing.T) {
	root, _, run := readersFixture(t)
	runs := []string{run, filepath.Join(root, "run2"), filepath.Join(root, "run3")}
	copyRun(t, run, runs[1])
	copyRun(t, run, runs[2])
	out, err := runApp(t, append([]string{"score"}, runs...)...)
	if !doneWithVerdict(err) {
		t.Fatalf("score: %v\n%s", err, out)
	}
	// without a tokenizer or usage counts every run warns that its OSL mean leaves turns out
	warn := regexp.MustCompile(`(?m)^agentrace score: warning: .*the OSL mean leaves them out \(every run\)$`)
	if n := len(warn.FindAllString(out, -1)); n != 1 {
		t.Errorf("the OSL warning printed %d times, want once for every run:\n%s", n, out)
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "warning: ") && seen[l] {
			t.Errorf("warning repeated: %s", l)
		}
		seen[l] = true
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; !regexp.MustCompile(`^scored 3 runs: \d PASS, \d not PASS$`).MatchString(last) {
		t.Errorf("last line %q, want the summary", last)
	}
}
