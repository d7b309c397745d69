package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// claimFixture is a dataset and a reference run folder: the inputs of the
// folder-writing commands below.
func claimFixture(t *testing.T) (root, traces, ds, runs string) {
	t.Helper()
	root = t.TempDir()
	traces, ds = filepath.Join(root, "t.jsonl"), filepath.Join(root, "ds")
	ingestText(t, traces, ds, diffTrace)
	runs = filepath.Join(root, "runs", "c008")
	if err := os.CopyFS(runs, os.DirFS(filepath.Join(testenv.RepoRoot(t), "testdata", "refruns", "c008"))); err != nil {
		t.Fatal(err)
	}
	return root, traces, ds, filepath.Join(root, "runs")
}

// folderCommands are the commands that write a folder, each given its output.
func folderCommands(traces, ds, runs string) map[string]func(out string, extra ...string) []string {
	return map[string]func(string, ...string) []string{
		"ingest": func(out string, x ...string) []string {
			return append(append([]string{"ingest", "--out", out}, x...), traces)
		},
		"report": func(out string, x ...string) []string {
			return append(append([]string{"report", "--out", out}, x...), runs)
		},
		"stats --card": func(out string, x ...string) []string {
			return append([]string{"stats", "-d", ds, "--card", "--out", out}, x...)
		},
		"audit": func(out string, x ...string) []string {
			return append(append([]string{"audit", "--out", out}, x...), runs)
		},
	}
}

// TestClaimOddPaths: an output spelled X/../X is X (an earlier output replaced
// with --overwrite, never lost), dir/ is dir, and . in an empty folder is that
// folder, for every folder-writing command.
func TestClaimOddPaths(t *testing.T) {
	root, traces, ds, runs := claimFixture(t)
	for name, argv := range folderCommands(traces, ds, runs) {
		t.Run(strings.ReplaceAll(name, " ", ""), func(t *testing.T) {
			x := filepath.Join(root, "out-"+strings.ReplaceAll(name, " ", ""))
			if out, err := runApp(t, argv(x)...); err != nil && exitCode(err) != 1 {
				t.Fatalf("first: %v\n%s", err, out)
			}
			marker := filepath.Join(x, ".agentrace")
			first, err := os.ReadFile(marker)
			if err != nil {
				t.Fatalf("first output not marked: %v", err)
			}
			dotdot := x + "/../" + filepath.Base(x)
			if out, err := runApp(t, argv(dotdot, "--overwrite")...); err != nil && exitCode(err) != 1 {
				t.Fatalf("--overwrite --out X/../X: %v\n%s", err, out)
			}
			second, err := os.ReadFile(marker)
			if err != nil {
				t.Fatalf("after --out X/../X: the output is gone: %v", err)
			}
			if string(first) == string(second) {
				t.Error("--out X/../X did not replace the earlier output")
			}
			leftovers(t, root)

			slash := filepath.Join(root, "slash-"+strings.ReplaceAll(name, " ", "")) + "/"
			if out, err := runApp(t, argv(slash)...); err != nil && exitCode(err) != 1 {
				t.Fatalf("--out dir/: %v\n%s", err, out)
			}
			if _, err := os.Stat(filepath.Join(slash, ".agentrace")); err != nil {
				t.Errorf("--out dir/: %v", err)
			}

			empty := filepath.Join(root, "empty-"+strings.ReplaceAll(name, " ", ""))
			if err := os.Mkdir(empty, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Chdir(empty)
			if out, err := runApp(t, argv(".")...); err != nil && exitCode(err) != 1 {
				t.Fatalf("--out . in an empty folder: %v\n%s", err, out)
			}
			if _, err := os.Stat(filepath.Join(empty, ".agentrace")); err != nil {
				t.Errorf("--out .: %v", err)
			}
			leftovers(t, root)
		})
	}
}

// TestClaimUsersFolder: a folder that merely holds the files of an agentrace
// output (report.html, points.json) is the user's: refused with and without
// --overwrite, naming it, every file kept.
func TestClaimUsersFolder(t *testing.T) {
	root, traces, ds, runs := claimFixture(t)
	site := filepath.Join(root, "mysite")
	files := map[string]string{"report.html": "<p>mine</p>", "points.json": "[]", "thesis.tex": "\\begin{document}"}
	for n, s := range files {
		if err := os.MkdirAll(site, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(site, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, argv := range folderCommands(traces, ds, runs) {
		for _, extra := range [][]string{nil, {"--overwrite"}} {
			out, err := runApp(t, argv(site, extra...)...)
			if err == nil || !strings.Contains(err.Error(), site) {
				t.Errorf("%s %v over the user's folder: %v\n%s", name, extra, err, out)
			}
		}
	}
	for n, s := range files {
		if b, err := os.ReadFile(filepath.Join(site, n)); err != nil || string(b) != s {
			t.Errorf("%s: changed or gone (%d bytes, %v)", n, len(b), err)
		}
	}
	if ents, _ := os.ReadDir(site); len(ents) != len(files) {
		t.Errorf("mysite holds %d entries, want %d", len(ents), len(files))
	}
	// An agentrace report with a file of the user's added is not replaced
	// either: the file is named.
	rep := filepath.Join(root, "rep")
	if out, err := runApp(t, "report", "--out", rep, runs); !doneWithVerdict(err) {
		t.Fatalf("report: %v\n%s", err, out)
	}
	notes := filepath.Join(rep, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runApp(t, "report", "--overwrite", "--out", rep, runs); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("report --overwrite over a report holding the user's notes.txt: %v", err)
	}
	if b, _ := os.ReadFile(notes); string(b) != "mine" {
		t.Error("the user's notes.txt is gone")
	}
}

// leftovers fails the test if a lock, temporary or moved-aside folder of a claim
// was left under root.
func leftovers(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".agentrace-") || strings.Contains(d.Name(), ".tmp-") || strings.Contains(d.Name(), ".replaced-") {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}
