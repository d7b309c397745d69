package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/report"
	"go.yaml.in/yaml/v3"
)

// scoredSimSweep replays a small dataset against the embedded simulated server at
// seven concurrencies covering the regions of C_max 64, scores every point and
// returns the sweep folder.
func scoredSimSweep(t *testing.T, root, tok string) string {
	t.Helper()
	ds := smallDataset(t, root)
	sweep := filepath.Join(root, "sweep")
	if out, err := runApp(t, "sweep", "--dataset", ds, "--endpoint", simServer(t), "--concurrency", "1,2,4,8,16,32,64",
		"--profile", "qwen3.6-35b-a3b", "--no-delays", "--out", sweep); err != nil {
		t.Fatalf("sweep: %v\n%s", err, out)
	}
	points, _ := filepath.Glob(filepath.Join(sweep, "c*"))
	// score exits 1 when a gate fails (a simulated model's answers), and writes
	// scores.json all the same.
	if out, err := runApp(t, append([]string{"score", "--tokenizer", tok}, points...)...); err != nil && exitCode(err) != exitNo {
		t.Fatalf("score: %v\n%s", err, out)
	}
	return sweep
}

// TestSubmitTree: `agentrace submit` lays a scored sweep against the embedded sim
// out as the submission checker reads a submission, and agentrace's own checks of
// the tree find nothing wrong in its form. With a filled submitter file nothing is
// left open (exit 0); without one the same tree is written without the
// submitter's fields, which are listed (exit 1); a submitter file with a key it
// does not know is refused (exit 2), and the tree is never written over a sweep.
func TestSubmitTree(t *testing.T) {
	root, tok := t.TempDir(), testenv.Tokenizer(t)
	sweep := scoredSimSweep(t, root, tok)
	submitter := filepath.Join("..", "..", "testdata", "submit", "submitter.yaml")
	tree := filepath.Join(root, "acme", "sub-1")
	out, err := runApp(t, "submit", "--submitter", submitter, "--tokenizer", tok, "--out", tree, sweep)
	if err != nil {
		t.Fatalf("submit with a filled submitter file: %v\n%s", err, out)
	}
	if !strings.Contains(out, "submission tree: ") || !strings.Contains(out, "(7 points in 1 curve)") || strings.Contains(out, "left open") {
		t.Errorf("submit's output:\n%s", out)
	}
	curve := filepath.Join(tree, "results", "h200-sim", "qwen3_6-35b-a3b")
	for _, f := range []string{"docs/README.md", "src/agentrace/README.md"} {
		if _, err := os.Stat(filepath.Join(tree, f)); err != nil {
			t.Errorf("the tree lacks %s: %v", f, err)
		}
	}
	for _, c := range []string{"1", "2", "4", "8", "16", "32", "64"} {
		for _, f := range []string{"point.yaml", "result_summary.json", "accuracy_results.json", "system_desc.json"} {
			if _, err := os.Stat(filepath.Join(curve, "r"+c, f)); err != nil {
				t.Errorf("r%s lacks %s: %v", c, f, err)
			}
		}
	}
	// point.yaml: every disclosure field present, none TODO, no local path.
	y, _ := os.ReadFile(filepath.Join(curve, "r16", "point.yaml"))
	var pt map[string]any
	if err := yaml.Unmarshal(y, &pt); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"division", "max_supported_concurrency", "model_name", "model_precision", "link_to_model", "dataset_name",
		"dataset_type", "dataset_link", "shared_src", "shared_docs", "seed_set", "target_cohort", "checkpoint", "speculative_decoding", "warmup", "accuracy"} {
		if _, ok := pt[k]; !ok {
			t.Errorf("point.yaml lacks %s:\n%s", k, y)
		}
	}
	if pt["model_name"] != "qwen3_6-35b-a3b" || pt["division"] != "RDI" || pt["max_supported_concurrency"] != 64 || pt["dataset_name"] != "traces.jsonl" ||
		strings.Contains(string(y), "TODO") || strings.Contains(string(y), root) {
		t.Errorf("point.yaml:\n%s", y)
	}
	for _, shared := range []string{pt["shared_src"].(string), pt["shared_docs"].(string)} {
		if fi, err := os.Stat(filepath.Join(tree, shared)); err != nil || !fi.IsDir() {
			t.Errorf("shared path %q does not resolve under the root: %v", shared, err)
		}
	}
	// system_desc.json: the submitter's description, the division, the point's
	// tps_utilization (1 at the curve's peak).
	var desc map[string]any
	b, _ := os.ReadFile(filepath.Join(curve, "r16", "system_desc.json"))
	if err := json.Unmarshal(b, &desc); err != nil || desc["system_name"] != "h200-sim" || desc["division"] != "RDI" || desc["tps_utilization"] == nil {
		t.Errorf("system_desc.json %v: %s", err, b)
	}

	// agentrace's own checks of the tree: every published number agrees, and the
	// curve's checks of form pass; what fails is content (a synthetic dataset
	// and unofficial settings) or the accuracy gates of a simulated model.
	if out, err := runApp(t, "audit", "--tokenizer", tok, tree); err != nil {
		t.Errorf("audit of the tree: %v\n%s", err, out)
	}
	r, err := report.Build(context.Background(), report.Options{Runs: []string{tree}, Out: filepath.Join(root, "report"), TokenizerDir: tok})
	if err != nil {
		t.Fatal(err)
	}
	content := []string{"official dataset size (613)", "official settings", "official token counts", "trajectory budget",
		"accuracy gates per point", "agentic-accuracy-swebench", "accuracy-coverage"}
	for _, s := range r.Systems {
		if len(s.Points) != 7 || s.CMax != 64 {
			t.Errorf("curve %s: %d points, C_max %d", s.Name, len(s.Points), s.CMax)
		}
		for _, c := range s.Checks {
			if !c.Pass() && !slices.ContainsFunc(content, func(n string) bool { return strings.HasPrefix(c.Name, n) }) {
				t.Errorf("check of form %q fails: %s", c.Name, c.Reason)
			}
		}
	}

	// Without a submitter file: the same layout, the submitter's fields listed.
	bare := filepath.Join(root, "bare")
	out, err = runApp(t, "submit", "--out", bare, sweep)
	if exitCode(err) != exitNo {
		t.Fatalf("submit without a submitter file: %v, want exit 1\n%s", err, out)
	}
	for _, want := range []string{"left open", "- division:", "- target_cohort:", "- checkpoint:", "- system:", "- speculative_decoding:"} {
		if !strings.Contains(out, want) {
			t.Errorf("the list of what is missing lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(bare, "results", "sweep", "qwen3_6-35b-a3b", "r64", "point.yaml")); err != nil {
		t.Errorf("the tree is not written without a submitter file: %v", err)
	}
	y, _ = os.ReadFile(filepath.Join(bare, "results", "sweep", "qwen3_6-35b-a3b", "r64", "point.yaml"))
	if strings.Contains(string(y), "division") || strings.Contains(string(y), "TODO") {
		t.Errorf("point.yaml without a submitter file declares the submitter's fields:\n%s", y)
	}

	// A misspelt field is refused; a tree inside the sweep is refused; neither writes.
	bad := filepath.Join(root, "bad.yaml")
	os.WriteFile(bad, []byte("divison: RDI\n"), 0o644)
	if _, err := runApp(t, "submit", "--submitter", bad, "--out", filepath.Join(root, "never"), sweep); exitCode(err) != exitUsage || !strings.Contains(err.Error(), "divison") {
		t.Errorf("a misspelt field: %v, want exit 2 naming it", err)
	}
	if _, err := runApp(t, "submit", "--out", filepath.Join(sweep, "tree"), sweep); exitCode(err) != exitUsage {
		t.Errorf("a tree inside the sweep: %v, want exit 2", err)
	}
	for _, p := range []string{filepath.Join(root, "never"), filepath.Join(sweep, "tree")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	// The tree is claimed: written again only with --overwrite.
	if _, err := runApp(t, "submit", "--submitter", submitter, "--out", tree, sweep); exitCode(err) != exitUsage {
		t.Errorf("submit over an earlier tree without --overwrite: %v, want exit 2", err)
	}
	if out, err := runApp(t, "submit", "--submitter", submitter, "--tokenizer", tok, "--overwrite", "--out", tree, sweep); err != nil {
		t.Errorf("submit --overwrite: %v\n%s", err, out)
	}
}
