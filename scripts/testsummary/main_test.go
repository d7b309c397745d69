package main

import (
	"strings"
	"testing"
)

// A stream with a pass, a skip (with testenv's message) and a failure: the
// package lines and the failure's output are printed, the skip goes in one line.
func TestRun(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"github.com/agentrace/agentrace/interop","Test":"TestPandas"}`,
		`{"Action":"output","Package":"github.com/agentrace/agentrace/interop","Test":"TestPandas","Output":"=== RUN   TestPandas\n"}`,
		`{"Action":"output","Package":"github.com/agentrace/agentrace/interop","Test":"TestPandas","Output":"    pandas_test.go:20: skipping: python3 with pandas is missing (apt install python3-pandas)\n"}`,
		`{"Action":"output","Package":"github.com/agentrace/agentrace/interop","Test":"TestPandas","Output":"--- SKIP: TestPandas (0.00s)\n"}`,
		`{"Action":"skip","Package":"github.com/agentrace/agentrace/interop","Test":"TestPandas"}`,
		`{"Action":"output","Package":"github.com/agentrace/agentrace/score","Test":"TestOK","Output":"noise\n"}`,
		`{"Action":"pass","Package":"github.com/agentrace/agentrace/score","Test":"TestOK"}`,
		`{"Action":"output","Package":"github.com/agentrace/agentrace/score","Test":"TestBad","Output":"    x_test.go:9: boom\n"}`,
		`{"Action":"fail","Package":"github.com/agentrace/agentrace/score","Test":"TestBad"}`,
		`{"Action":"output","Package":"github.com/agentrace/agentrace/score","Output":"FAIL\tgithub.com/agentrace/agentrace/score\t0.1s\n"}`,
		`{"Action":"fail","Package":"github.com/agentrace/agentrace/score"}`,
		`{"Action":"output","Package":"github.com/agentrace/agentrace/interop","Output":"PASS\n"}`,
		`{"Action":"output","Package":"github.com/agentrace/agentrace/interop","Output":"ok  \tgithub.com/agentrace/agentrace/interop\t0.2s\n"}`,
		`{"Action":"skip","Package":"github.com/agentrace/agentrace/internal/testenv"}`,
	}, "\n")
	var out strings.Builder
	failed, err := run(strings.NewReader(in), &out)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v", failed, err)
	}
	want := "    x_test.go:9: boom\n" +
		"FAIL\tgithub.com/agentrace/agentrace/score\t0.1s\n" +
		"ok  \tgithub.com/agentrace/agentrace/interop\t0.2s\n" +
		"make test: 1 test skipped: interop.TestPandas (skipping: python3 with pandas is missing (apt install python3-pandas))\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if failed, _ := run(strings.NewReader(`{"Action":"pass","Package":"p","Test":"T"}`), &out); failed || out.String() != "make test: no test skipped\n" {
		t.Errorf("all passing: failed %v, printed %q", failed, out.String())
	}
}
