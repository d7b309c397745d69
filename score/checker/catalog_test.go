package checker

import (
	"path/filepath"
	"testing"
)

// TestCatalogHandled fails when the embedded catalog names a rule id this package
// does not handle, or the package names one the catalog lacks.
func TestCatalogHandled(t *testing.T) {
	d, err := LoadData(DataOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Catalog) != 80 {
		t.Errorf("the embedded catalog has %d rule ids, want 80", len(d.Catalog))
	}
	handled := map[string]bool{}
	for _, r := range Rules {
		if handled[r.ID] {
			t.Errorf("%s: listed twice", r.ID)
		}
		handled[r.ID] = true
	}
	inCatalog := map[string]bool{}
	for _, r := range d.Catalog {
		inCatalog[r.ID] = true
		if !handled[r.ID] {
			t.Errorf("the catalog names %q, which package checker does not handle", r.ID)
		}
	}
	for id := range handled {
		if !inCatalog[id] {
			t.Errorf("package checker handles %q, which the catalog does not name", id)
		}
	}
}

// TestEveryRuleFiresAndPasses: in the recorded corpus, every rule id that can
// make a finding makes one in some case and none in another.
func TestEveryRuleFiresAndPasses(t *testing.T) {
	var rec struct {
		Cases map[string]recorded `json:"cases"`
	}
	decodeFile(t, filepath.Join(corpusDir, "findings.json"), &rec)
	for _, r := range Rules {
		fires, quiet := false, false
		for _, c := range rec.Cases {
			hit := false
			for _, f := range c.Findings {
				if f.Rule == r.ID {
					hit = true
				}
			}
			fires = fires || hit
			quiet = quiet || !hit
		}
		switch {
		case r.Informational != "" && fires:
			t.Errorf("%s: listed as informational but fires in the corpus", r.ID)
		case r.Informational == "" && !fires:
			t.Errorf("%s: no corpus case fires it", r.ID)
		case !quiet:
			t.Errorf("%s: fires in every corpus case", r.ID)
		}
	}
}
