package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runApp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	a := app()
	a.Writer = &out
	a.ErrWriter = &out
	err := a.Run(context.Background(), append([]string{"agentrace"}, args...))
	return out.String(), err
}

// ingestText writes body (trace rows) to the file traces and ingests it into the
// dataset folder ds, failing the test on an error.
func ingestText(t *testing.T, traces, ds, body string) {
	t.Helper()
	if err := os.WriteFile(traces, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runApp(t, "ingest", "--out", ds, traces); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
}

// doneWithVerdict tells whether a command did its work: it succeeded, or its
// only complaint is a verdict (exit status 1: a gate or a curve check failed).
func doneWithVerdict(err error) bool { return err == nil || exitCode(err) == exitNo }

func TestRegionsCommand(t *testing.T) {
	out, err := runApp(t, "regions", "--cmax", "64", "--cmin", "2", "--json")
	if err != nil {
		t.Fatalf("regions --json: %v", err)
	}
	var forms map[string]map[string]struct{ Start, End int }
	if err := json.Unmarshal([]byte(out), &forms); err != nil {
		t.Fatalf("regions --json output %q: %v", out, err)
	}
	// Both forms: the checker's (C_min = 2) and v0.7's (low latency fixed at 1-32,
	// the margin folded into high).
	for form, want := range map[string]map[string][2]int{
		"cmin-v1.0": {"low_latency": {1, 2}, "low_concurrency": {3, 6}, "med_concurrency": {7, 18},
			"high_concurrency": {19, 64}, "margin": {65, 71}},
		"fixed32-v0.7": {"low_latency": {1, 32}, "low_concurrency": {33, 35}, "med_concurrency": {36, 42},
			"high_concurrency": {43, 71}, "margin": {72, 71}},
	} {
		got := forms[form]
		if len(got) != len(want) {
			t.Errorf("%s: keys = %v, want %v", form, got, want)
		}
		for k, w := range want {
			if g := got[k]; g.Start != w[0] || g.End != w[1] {
				t.Errorf("%s: %s = %d-%d, want %d-%d", form, k, g.Start, g.End, w[0], w[1])
			}
		}
	}
	// A curve starting above 32: C_min clamped to 32, as the checker does.
	out, err = runApp(t, "regions", "--cmax", "1024", "--cmin", "48", "--form", "cmin-v1.0")
	if err != nil || !strings.Contains(out, "C_min 32 (the lowest point, clamped to 32)") || !strings.Contains(out, "low_concurrency   33-42") {
		t.Errorf("clamped C_min: %v\n%s", err, out)
	}

	out, err = runApp(t, "regions", "--cmax", "33", "--cmin", "32")
	if err != nil {
		t.Fatalf("regions: %v", err)
	}
	if !strings.Contains(out, "med_concurrency   empty (34-33)") {
		t.Errorf("text output does not show the empty medium region:\n%s", out)
	}
}

func TestRegionsCommandErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--cmax", "32", "--cmin", "1"}, "C_max 32 must be greater than 32"},
		{[]string{"--cmax", "64", "--cmin", "0"}, "lowest concurrency 0 must be at least 1"},
		{[]string{"--cmax", "64", "--cmin", "2", "--form", "v2"}, `unknown region form "v2"`},
		{[]string{"--cmax", "abc", "--cmin", "2"}, `invalid value "abc" for flag -cmax`},
		{[]string{"--cmax", "64", "--cmin", "2.5"}, `invalid value "2.5" for flag -cmin`},
		{[]string{"--cmax", "64"}, `"cmin" not set`},
		{[]string{"--cmax", "64", "--cmin", "2", "x"}, `unexpected argument "x"`},
	}
	for _, tt := range tests {
		_, err := runApp(t, append([]string{"regions"}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("regions %v: error %v, want one containing %q", tt.args, err, tt.want)
		}
	}
}

func TestReportCommandErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "rep")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"report", dir}, `"out" not set`},
		{[]string{"report", "--out", dir}, "no run or sweep directory given"},
		{[]string{"report", "--out", dir, dir + "/missing"}, "missing\": file does not exist"},
		{[]string{"report", "--out", out, dir}, "holds no run: neither turns.arrows"},
		{[]string{"report", "--out", out, "--compare", dir}, "comparing needs at least two systems (--compare)"},
		{[]string{"report", "--out", dir, dir}, "is the input"},
		{[]string{"report", "--out", dir + "/rep", dir}, "is inside the input folder"},
		{[]string{"report", "--out", dir, "--cmax", "x", dir}, `invalid value "x" for flag -cmax`},
	}
	for _, tt := range tests {
		_, err := runApp(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want one containing %q", tt.args, err, tt.want)
		}
	}
}
