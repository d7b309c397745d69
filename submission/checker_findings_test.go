package submission

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheckerFindingsOnSubmitTrees reads what the MLCommons submission checker
// found on two trees `agentrace submit` wrote from a sweep against the embedded
// sim, with and without a submitter file (testdata/submit/checker-findings.json,
// recorded by running the checker's own code outside this repository), and
// checks that no rule of form fired: every finding is content (a simulated
// model's accuracy, a run shorter than the rules' minimum, no SWE-bench result),
// one the submitter file answers (and only without it), or the steady-state basis,
// which agentrace does not analyse (§4.4: the whole run is the fallback basis, a
// warning).
func TestCheckerFindingsOnSubmitTrees(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "submit", "checker-findings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Trees map[string]struct {
			Findings []struct {
				Rule, Severity, First string
				Count                 int
			}
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	content := []string{"agentic-accuracy-inline", "agentic-accuracy-swebench", "point-duration"}
	notModelled := []string{"steady-state-basis"}
	submitters := []string{"power-descriptor", "point-disclosure-complete", "system-description-present", "region-basis"}
	for _, name := range []string{"with-submitter", "without-submitter"} {
		tree, ok := doc.Trees[name]
		if !ok || len(tree.Findings) == 0 {
			t.Fatalf("no findings recorded for %s", name)
		}
		for _, f := range tree.Findings {
			switch {
			case slices.Contains(content, f.Rule), slices.Contains(notModelled, f.Rule) && f.Severity == "warning":
			case slices.Contains(submitters, f.Rule) && name == "without-submitter":
				if f.Rule == "point-disclosure-complete" {
					// Only what the submitter file gives is missing from point.yaml.
					_, fields, _ := strings.Cut(f.First, "field(s): ")
					for _, field := range strings.Split(fields, ", ") {
						if !slices.Contains([]string{"division", "max_supported_concurrency", "model_precision", "link_to_model", "dataset_link", "target_cohort"}, field) {
							t.Errorf("%s: point.yaml lacks %s, which agentrace knows", name, field)
						}
					}
				}
			default:
				t.Errorf("%s: the checker's %s %s fired: %s", name, f.Severity, f.Rule, f.First)
			}
		}
	}
}
