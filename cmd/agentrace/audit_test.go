package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// TestAuditCommand runs `agentrace audit` on a genuine reference run folder: exit 0
// and the table's verdict; then on a copy whose published completed count was
// raised: exit 1, the field named, audit.json and audit.parquet written.
func TestAuditCommand(t *testing.T) {
	src := filepath.Join(testenv.RepoRoot(t), "testdata", "refruns", "c008")
	out, err := runApp(t, "audit", src)
	if err != nil {
		t.Fatalf("audit of a genuine run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "audit passed") || !strings.Contains(out, "n_samples_completed") {
		t.Errorf("audit output:\n%s", out)
	}
	if !strings.Contains(out, "\n1 point in 1 curve, ") || !strings.Contains(out, ", 0 errors\n") {
		t.Errorf("audit's counts are not worded by number (1 point in 1 curve):\n%s", out)
	}

	dir := filepath.Join(t.TempDir(), "c008")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	sum := filepath.Join(dir, "performance", "result_summary.json")
	b, _ := os.ReadFile(sum)
	b = []byte(strings.Replace(string(b), `"n_samples_completed": 72`, `"n_samples_completed": 73`, 1))
	os.WriteFile(sum, b, 0o644)
	res := filepath.Join(t.TempDir(), "audit-out")
	out, err = runApp(t, "audit", "--out", res, dir)
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("audit of a tampered run: err %v, want exit 1\n%s", err, out)
	}
	if !strings.Contains(out, "AUDIT FAILED") || !strings.Contains(out, "n_samples_completed (performance/result_summary.json) published 73, re-derived 72") {
		t.Errorf("the failing field is not named:\n%s", out)
	}
	var doc struct {
		Passed        bool
		Disagreements []struct{ Field string }
	}
	jb, err := os.ReadFile(filepath.Join(res, "audit.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(jb, &doc)
	if doc.Passed || len(doc.Disagreements) != 1 || doc.Disagreements[0].Field != "n_samples_completed" {
		t.Errorf("audit.json: %+v", doc)
	}
	if _, err := os.Stat(filepath.Join(res, "audit.parquet")); err != nil {
		t.Error(err)
	}
	// The output may not sit inside what it audits.
	if _, err := runApp(t, "audit", "--out", filepath.Join(dir, "a"), dir); err == nil || !strings.Contains(err.Error(), "overlaps") && !strings.Contains(err.Error(), "inside") {
		t.Errorf("an output inside the input: %v", err)
	}
}
