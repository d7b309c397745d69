package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// CheckerLayout lays a tree of agentrace system folders (testdata/submission-tree's
// layout, a copy the caller owns: its folders are moved) out in sub as the
// submission checker reads a submission: results/<system>/..., each point's
// summary and accuracy results under the checker's names (result_summary.json,
// accuracy_results.json), docs/ and src/agentrace-sim/README.md.
func CheckerLayout(t testing.TB, tree, sub string) {
	t.Helper()
	for _, d := range []string{"results", "docs", "src/agentrace-sim"} {
		if err := os.MkdirAll(filepath.Join(sub, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(sub, "src/agentrace-sim/README.md"), []byte("agentrace simulated server\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir(tree)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.IsDir() {
			if err := os.Rename(filepath.Join(tree, e.Name()), filepath.Join(sub, "results", e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	pts, _ := filepath.Glob(filepath.Join(sub, "results", "*", "*", "r*"))
	for _, d := range pts {
		for _, mv := range [][2]string{{"mlperf_endpoints_log_summary.json", "result_summary.json"}, {"accuracy/accuracy_results.json", "accuracy_results.json"}} {
			a, b := filepath.Join(d, mv[0]), filepath.Join(d, mv[1])
			st, err := os.Stat(a)
			if _, taken := os.Stat(b); err != nil || !st.Mode().IsRegular() || taken == nil {
				continue
			}
			if err := os.Rename(a, b); err != nil {
				t.Fatal(err)
			}
		}
	}
}
