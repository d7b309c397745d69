package testenv

import (
	"math"
	"strings"
	"testing"
)

// CompareJSON reports where two decoded JSON values differ, path naming the
// value; numbers under a "buckets" key may differ by two units in the last place
// (a histogram's edges, computed as the reference computes them).
func CompareJSON(t testing.TB, path string, got, want any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			t.Errorf("%s: got %T, want an object", path, got)
			return
		}
		for k := range w {
			if _, ok := g[k]; !ok {
				t.Errorf("%s.%s: missing", path, k)
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				t.Errorf("%s.%s: not in the reference's block", path, k)
			}
		}
		for k, wv := range w {
			if gv, ok := g[k]; ok {
				CompareJSON(t, path+"."+k, gv, wv)
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			t.Errorf("%s: got %v, want %v", path, got, want)
			return
		}
		for i := range w {
			CompareJSON(t, path+"[]", g[i], w[i])
		}
	case float64:
		g, ok := got.(float64)
		if !ok {
			t.Errorf("%s: got %v, want %v", path, got, want)
			return
		}
		if g == w {
			return
		}
		if strings.Contains(path, "buckets") {
			if math.Abs(g-w) <= 2*ulp(w) {
				return
			}
		}
		t.Errorf("%s = %v, want %v", path, g, w)
	default:
		if got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
}

func ulp(x float64) float64 { return math.Nextafter(math.Abs(x), math.Inf(1)) - math.Abs(x) }
