package archive

import (
	"strings"
	"testing"
)

// TestCurveCMax: C_max as the checker takes it from the first point folder, by
// concurrency, that has its own system_desc.json.
func TestCurveCMax(t *testing.T) {
	valid := &SystemDescCopy{File: "r32/system_desc.json", Valid: true, CMax: 1024}
	raw := &SystemDescCopy{File: "r32/system_desc.json", CMax: 512}
	none := &SystemDescCopy{File: "r32/system_desc.json"}
	later := &SystemDescCopy{File: "r64/system_desc.json", Valid: true, CMax: 2048}
	tests := []struct {
		name   string
		copies []*SystemDescCopy
		cmax   int
		reason string // a part of the reason
		found  bool
	}{
		{"the first copy validates", []*SystemDescCopy{nil, valid, later}, 1024, "declared in r32", true},
		{"the first copy does not validate: its raw field", []*SystemDescCopy{raw, later}, 512, "raw max_supported_concurrency", true},
		{"the first copy gives none", []*SystemDescCopy{none, later}, 0, "no C_max", true},
		{"no point has a copy", []*SystemDescCopy{nil, nil}, 0, "no point folder holds a system_desc.json", true},
		{"no points", nil, 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmax, reason, found := CurveCMax(tt.copies)
			if cmax != tt.cmax || found != tt.found || !strings.Contains(reason, tt.reason) {
				t.Errorf("CurveCMax = %d, %q, %v; want %d, %q, %v", cmax, reason, found, tt.cmax, tt.reason, tt.found)
			}
		})
	}
}
