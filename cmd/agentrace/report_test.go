package main

import (
	"bytes"
	"context"
	"encoding/json"
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

func TestRegionsCommand(t *testing.T) {
	out, err := runApp(t, "regions", "--cmax", "64", "--cmin", "2", "--json")
	if err != nil {
		t.Fatalf("regions --json: %v", err)
	}
	var got map[string]struct{ Start, End int }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("regions --json output %q: %v", out, err)
	}
	want := map[string][2]int{
		"low_latency": {1, 2}, "low_concurrency": {3, 6}, "med_concurrency": {7, 18},
		"high_concurrency": {19, 64}, "margin": {65, 71},
	}
	if len(got) != len(want) {
		t.Errorf("keys = %v, want %v", got, want)
	}
	for k, w := range want {
		if g := got[k]; g.Start != w[0] || g.End != w[1] {
			t.Errorf("%s = %d-%d, want %d-%d", k, g.Start, g.End, w[0], w[1])
		}
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
		{[]string{"--cmax", "64", "--cmin", "0"}, "C_min 0 must be in 1..32"},
		{[]string{"--cmax", "64", "--cmin", "33"}, "C_min 33 must be in 1..32"},
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
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"report", dir}, `"out" not set`},
		{[]string{"report", "--out", dir}, "no run or sweep directory given"},
		{[]string{"report", "--out", dir, dir + "/missing"}, "read run or sweep directory"},
		{[]string{"report", "--out", dir, dir}, "holds neither turns.arrows nor c<N>/ run folders"},
		{[]string{"report", "--out", dir, "--compare", dir}, "--compare needs at least two systems"},
		{[]string{"report", "--out", dir, "--cmax", "x", dir}, `invalid value "x" for flag -cmax`},
	}
	for _, tt := range tests {
		_, err := runApp(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want one containing %q", tt.args, err, tt.want)
		}
	}
}
