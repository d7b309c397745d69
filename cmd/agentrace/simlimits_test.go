package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestSimulateAndSimFlagLimits checks that simulate and sim refuse numbers past
// their limits, NaN and infinities as bad usage (exit 2), before any work: the
// dataset named does not exist, so a refusal that names it came too late, and a
// sim that starts serving is stopped by the deadline and fails.
func TestSimulateAndSimFlagLimits(t *testing.T) {
	missing := t.TempDir() + "/no-dataset"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--isl", "1000000000", "--osl", "10", "--concurrency", "1"}, "context length"},
		{[]string{"simulate", "--isl", "10", "--osl", "1000000000", "--concurrency", "1"}, "context length"},
		{[]string{"simulate", "--isl", "200000", "--osl", "100000", "--concurrency", "1"}, "context length"},
		{[]string{"simulate", "--isl", "10", "--osl", "10", "--concurrency", "1", "--replicas", "100000000"}, "replicas 100000000"},
		{[]string{"simulate", "--isl", "10", "--osl", "10", "--concurrency", "1", "--requests", "1000000000"}, "requests 1000000000"},
		{[]string{"simulate", "--dataset", missing, "--concurrency", "1", "--trajectories", "1000000000"}, "trajectories 1000000000"},
		{[]string{"simulate", "--dataset", missing, "--concurrency", "1", "--max-tokens", "1000000000"}, "max tokens 1000000000"},
		{[]string{"simulate", "--dataset", missing, "--concurrency", "1", "--fidelity", "NaN"}, "fidelity NaN"},
		{[]string{"simulate", "--dataset", missing, "--concurrency", "1", "--fidelity", "Inf"}, "fidelity +Inf"},
		{[]string{"simulate", "--dataset", missing, "--concurrency", "1", "--delay-scale", "NaN"}, "delay scale NaN"},
		{[]string{"simulate", "--dataset", missing, "--concurrency", "1", "--delay-scale", "Inf"}, "delay scale +Inf"},
		{[]string{"sim", "--listen", "127.0.0.1:0", "--dataset", missing, "--fidelity", "NaN"}, "fidelity NaN"},
		{[]string{"sim", "--listen", "127.0.0.1:0", "--output-mean", "NaN"}, "output length"},
		{[]string{"sim", "--listen", "127.0.0.1:0", "--output-sigma", "Inf"}, "output length"},
		{[]string{"sim", "--listen", "127.0.0.1:0", "--fault", "cut=NaN"}, "fault rate NaN"},
	} {
		name := strings.ReplaceAll(strings.Join(c.args, " "), missing, "DIR")
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var out bytes.Buffer
			a := app()
			a.Writer, a.ErrWriter = &out, &out
			start := time.Now()
			err := a.Run(ctx, append([]string{"agentrace"}, c.args...))
			if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), c.want) || ctx.Err() != nil {
				t.Fatalf("status %d, error %v after %v, want exit 2 naming %q", exitCode(err), err, time.Since(start), c.want)
			}
			if strings.Contains(err.Error(), "no-dataset") {
				t.Errorf("refused for the dataset, after the work began: %v", err)
			}
		})
	}
}
