package archive

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestPointFactsAsTheCheckerTypesThem reads point.yaml and system_desc.json
// variants of one submission point and checks the findings (rule and severity,
// as the submission checker's schema and rules give them) and the facts read.
func TestPointFactsAsTheCheckerTypesThem(t *testing.T) {
	const goodYAML = "concurrency: 64\nregion: med_concurrency\nmax_supported_concurrency: 512\nruntime_settings:\n  runtime:\n    scheduler_rng_seed: 42\n"
	const goodSD = `{"max_supported_concurrency": 1024}`
	for _, tc := range []struct {
		name, yaml, sd string
		noSD           bool
		want           []string // rule:severity
		concurrency    int
		cmax           int
		// copy is the point's own system description as the curve reads it
		// ("valid 1024", "invalid 0"; "" for none).
		copy string
	}{
		{name: "valid", yaml: goodYAML, sd: goodSD, concurrency: 64, cmax: 1024},
		{name: "numeric string concurrency", yaml: strings.Replace(goodYAML, "64", `"64"`, 1), sd: goodSD, concurrency: 64, cmax: 1024},
		{name: "whole float concurrency", yaml: strings.Replace(goodYAML, "64", "64.0", 1), sd: goodSD, concurrency: 64, cmax: 1024},
		{name: "fractional concurrency", yaml: strings.Replace(goodYAML, "64", "64.5", 1), sd: goodSD, want: []string{"point-config-valid:error"}, concurrency: 64, cmax: 1024},
		{name: "text concurrency", yaml: strings.Replace(goodYAML, "64", "lots", 1), sd: goodSD, want: []string{"point-config-valid:error"}, concurrency: 64, cmax: 1024},
		{name: "no concurrency", yaml: strings.Replace(goodYAML, "concurrency: 64\n", "", 1), sd: goodSD, want: []string{"point-config-valid:error"}, concurrency: 64, cmax: 1024},
		{name: "zero concurrency", yaml: strings.Replace(goodYAML, "64", "0", 1), sd: goodSD, want: []string{"load-pattern:error", "point-dirname-concurrency:warning"}, concurrency: 64, cmax: 1024},
		{name: "other concurrency", yaml: strings.Replace(goodYAML, "64", "72", 1), sd: goodSD, want: []string{"point-dirname-concurrency:warning"}, concurrency: 72, cmax: 1024},
		{name: "unknown region", yaml: strings.Replace(goodYAML, "med_concurrency", "medium", 1), sd: goodSD, want: []string{"region-declared:error"}, concurrency: 64, cmax: 1024},
		{name: "numeric region", yaml: strings.Replace(goodYAML, "med_concurrency", "3", 1), sd: goodSD, want: []string{"point-config-valid:error"}, concurrency: 64, cmax: 1024},
		{name: "no region", yaml: strings.Replace(goodYAML, "region: med_concurrency\n", "", 1), sd: goodSD, concurrency: 64, cmax: 1024},
		{name: "no runtime", yaml: "concurrency: 64\nruntime_settings:\n  min_duration_ms: 0\n", sd: goodSD, want: []string{"point-config-valid:error"}, concurrency: 64, cmax: 1024},
		{name: "not a mapping", yaml: "- 64\n", sd: goodSD, want: []string{"point-config-valid:error"}, concurrency: 64, cmax: 1024},
		{name: "system description not JSON", yaml: goodYAML, sd: "max_supported_concurrency = 1024", want: []string{"system-description-valid:error"}, concurrency: 64, cmax: 512},
		{name: "system description without C_max", yaml: goodYAML, sd: `{"system_name": "x"}`, want: []string{"system-description-valid:error"}, concurrency: 64, cmax: 512},
		{name: "system description C_max text", yaml: goodYAML, sd: `{"max_supported_concurrency": "lots"}`, want: []string{"system-description-valid:error"}, concurrency: 64, cmax: 512},
		{name: "no system description", yaml: goodYAML, noSD: true, want: []string{"system-description-present:error"}, concurrency: 64, cmax: 512},
		// A point.yaml that does not validate: the raw concurrency when a positive
		// YAML integer, else the folder's r<N>; no point-dirname-concurrency.
		{name: "numeric region, other concurrency", yaml: strings.Replace(strings.Replace(goodYAML, "64", "72", 1), "med_concurrency", "3", 1), sd: goodSD, want: []string{"point-config-valid:error"}, concurrency: 72, cmax: 1024},
		{name: "numeric region, other concurrency as text", yaml: strings.Replace(strings.Replace(goodYAML, "64", `"72"`, 1), "med_concurrency", "3", 1), sd: goodSD, want: []string{"point-config-valid:error"}, concurrency: 64, cmax: 1024},
		{name: "numeric region, other concurrency as a float", yaml: strings.Replace(strings.Replace(goodYAML, "64", "72.0", 1), "med_concurrency", "3", 1), sd: goodSD, want: []string{"point-config-valid:error"}, concurrency: 64, cmax: 1024},
		{name: "numeric region, negative concurrency", yaml: strings.Replace(strings.Replace(goodYAML, "64", "-8", 1), "med_concurrency", "3", 1), sd: goodSD, want: []string{"point-config-valid:error"}, concurrency: 64, cmax: 1024},
		// The point's own copy as the curve's C_max reads it.
		{name: "copy valid", yaml: goodYAML, sd: goodSD, concurrency: 64, cmax: 1024, copy: "valid 1024"},
		{name: "copy C_max a whole float", yaml: goodYAML, sd: `{"max_supported_concurrency": 1024.0}`, concurrency: 64, cmax: 1024, copy: "valid 1024"},
		{name: "copy system_name a number", yaml: goodYAML, sd: `{"system_name": 7, "max_supported_concurrency": 1024}`, want: []string{"system-description-valid:error"}, concurrency: 64, cmax: 512, copy: "invalid 1024"},
		{name: "copy invalid, C_max a whole float", yaml: goodYAML, sd: `{"system_name": 7, "max_supported_concurrency": 1024.0}`, want: []string{"system-description-valid:error"}, concurrency: 64, cmax: 512, copy: "invalid 0"},
		{name: "copy C_max text", yaml: goodYAML, sd: `{"max_supported_concurrency": "lots"}`, want: []string{"system-description-valid:error"}, concurrency: 64, cmax: 512, copy: "invalid 0"},
		{name: "copy without C_max", yaml: goodYAML, sd: `{"system_name": "x"}`, want: []string{"system-description-valid:error"}, concurrency: 64, cmax: 512, copy: "invalid 0"},
		{name: "copy not JSON", yaml: goodYAML, sd: "[1024]", want: []string{"system-description-valid:error"}, concurrency: 64, cmax: 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			pd := filepath.Join(root, "sys", "model", "r64")
			if err := os.MkdirAll(pd, 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(pd, PointFile), []byte(tc.yaml), 0o644)
			if !tc.noSD {
				os.WriteFile(filepath.Join(pd, SystemDescFile), []byte(tc.sd), 0o644)
			}
			src, err := Open(root, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			runs := Find(src)
			if len(runs) != 1 || runs[0].Kind != KindSubmission {
				t.Fatalf("runs: %v", runs)
			}
			f, err := runs[0].Facts()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range f.FileChecks {
				got = append(got, c.Rule+":"+c.Severity)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("findings %v, the checker's %v (%v)", got, tc.want, f.FileChecks)
			}
			if tc.copy != "" || f.SystemDesc == nil {
				got := ""
				if c := f.SystemDesc; c != nil {
					got = fmt.Sprintf("%s %d", map[bool]string{true: "valid", false: "invalid"}[c.Valid], c.CMax)
				}
				if got != tc.copy {
					t.Errorf("own system description %q, want %q", got, tc.copy)
				}
			}
			if f.Concurrency != tc.concurrency || f.MaxSupportedConcurrency != tc.cmax {
				t.Errorf("concurrency %d, C_max %d; want %d, %d", f.Concurrency, f.MaxSupportedConcurrency, tc.concurrency, tc.cmax)
			}
		})
	}
}

// TestFactsReadOnce: a run's facts are read from its files the first time they
// are asked for; later calls, from any goroutine, give the same facts without
// opening a file again.
func TestFactsReadOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c8")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{TurnLogFile: "", ManifestFile: `{"config": {"concurrency": 8, "model": "m"}}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var opened atomic.Int32
	run, err := OpenRun(dir, Limits{Opened: func(name string, rc io.ReadCloser) io.ReadCloser {
		opened.Add(1)
		return rc
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Source.Close()
	var wg sync.WaitGroup
	got := make([]Facts, 4)
	for i := range got {
		wg.Go(func() {
			f, err := run.Facts()
			if err != nil {
				t.Error(err)
			}
			got[i] = f
		})
	}
	wg.Wait()
	if n := opened.Load(); n != 1 {
		t.Errorf("four calls of Facts opened %d files; want the manifest once", n)
	}
	for i, f := range got {
		if f.Concurrency != 8 || f.Manifest != got[0].Manifest {
			t.Errorf("call %d: concurrency %d, manifest %p; want 8 and the first call's %p", i, f.Concurrency, f.Manifest, got[0].Manifest)
		}
	}
}
