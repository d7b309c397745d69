package checker

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestPartAgreesWithTree: a system or model folder judged bare gives the
// findings of the whole tree on it, less the structure rules it names as not
// evaluated; the cache gives a point its own findings and its curve's.
func TestPartAgreesWithTree(t *testing.T) {
	cases := corpusCases(t)
	d, err := LoadData(DataOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rules:legacy", "rules:steady-state-status-unknown", "tree:point-concurrency-text"} {
		t.Run(name, func(t *testing.T) {
			root := cases[name].build(t.TempDir())
			whole := Check(root, d)
			sys := filepath.Join(root, "results", "h200-sim")
			part, ok := CheckPart(sys, d)
			if !ok {
				t.Fatal("the system folder is not a part")
			}
			var want []string
			for _, k := range findingKeys(whole) {
				if !slices.Contains(part.NotEvaluated, k[:indexSpace(k)]) {
					want = append(want, k)
				}
			}
			if got := findingKeys(part.Report); !slices.Equal(got, want) {
				t.Errorf("part findings\n%v\nwant\n%v", got, want)
			}
			c := NewCache(d)
			got, _, ok := c.For(filepath.Join(sys, "qwen3_6-35b-a3b", "r64"))
			if !ok {
				t.Fatal("the point is in no tree")
			}
			for _, f := range got {
				if !Applies(f.Scope, "results/h200-sim/qwen3_6-35b-a3b/r64") {
					t.Errorf("finding %+v does not concern r64", f)
				}
			}
		})
	}
}

func indexSpace(s string) int {
	for i, r := range s {
		if r == ' ' {
			return i
		}
	}
	return len(s)
}
