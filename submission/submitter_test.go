package submission

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubmitter: the filled example leaves nothing open; each field taken out is
// named as missing (power only where the division needs it); a misspelt key or a
// value the checker cannot take is refused.
func TestSubmitter(t *testing.T) {
	example := filepath.Join("..", "testdata", "submit", "submitter.yaml")
	s, err := ReadSubmitter(context.Background(), example)
	if err != nil {
		t.Fatal(err)
	}
	if m := s.missing(); len(m) != 0 {
		t.Fatalf("the filled example leaves open: %v", m)
	}
	if d := s.disclosure(); d.Division != "RDI" || !d.NoSpeculativeDecoding || d.SharedSrc != "src/agentrace" || d.SharedDocs != "docs" {
		t.Errorf("disclosure %+v", d)
	}
	base, _ := os.ReadFile(example)
	for _, tc := range []struct {
		name, from, to, want string
	}{
		// Without a division, the power descriptor is needed, as the Standardized
		// division needs it.
		{"no division", "division: RDI\n", "", "division:"},
		{"Standardized without power", "division: RDI\n", "division: standardized\n", "power:"},
		{"no revision", "  revision: \"0000000000000000000000000000000000000000\"\n", "", "checkpoint.revision:"},
		{"no cohort", "target_cohort: 2026-10-C1\n", "", "target_cohort:"},
		{"no driver", "      driver: none\n", "", "system.node_types[0].driver:"},
		{"no availability", "  publication_status: Preview\n", "", "system.publication_status:"},
		{"no speculative decoding declared", "speculative_decoding: none\n", "", "speculative_decoding:"},
	} {
		p := filepath.Join(t.TempDir(), "s.yaml")
		os.WriteFile(p, []byte(strings.Replace(string(base), tc.from, tc.to, 1)), 0o644)
		s, err := ReadSubmitter(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		m := strings.Join(s.missing(), "\n")
		lines := 1
		if tc.name == "no division" {
			lines = 2
		}
		if !strings.Contains(m, tc.want) || strings.Count(m, "\n") != lines-1 {
			t.Errorf("%s: missing %q, want only %q", tc.name, m, tc.want)
		}
	}
	for _, tc := range []struct{ name, text, want string }{
		{"misspelt key", "divison: RDI\n", "divison"},
		{"division", "division: Premium\n", "division"},
		{"cohort", "target_cohort: October\n", "target_cohort"},
		{"speculative decoding", "speculative_decoding: eagle\n", "speculative_decoding"},
		{"system name", "system:\n  system_name: ../up\n", "system_name"},
		{"divisions differ", "division: RDI\nsystem:\n  division: Standardized\n", "differ"},
	} {
		p := filepath.Join(t.TempDir(), "s.yaml")
		os.WriteFile(p, []byte(tc.text), 0o644)
		if _, err := ReadSubmitter(context.Background(), p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	// Nothing given: every field is missing.
	if m := (&Submitter{}).missing(); len(m) != 10 {
		t.Errorf("an empty submitter file leaves open %d fields: %v", len(m), m)
	}
}
