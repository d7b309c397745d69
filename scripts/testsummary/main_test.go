package main

import (
	"strings"
	"testing"
)

// A stream with a pass, a skip (with testenv's message) and a failure: the
// package lines and the failure's output are printed, the skips grouped by reason,
// and the closing count line last.
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
		`{"Action":"output","Package":"github.com/agentrace/agentrace/tokens","Test":"TestB/sub","Output":"    b_test.go:3: skipping: no tokenizer\n"}`,
		`{"Action":"skip","Package":"github.com/agentrace/agentrace/tokens","Test":"TestB/sub"}`,
		`{"Action":"output","Package":"github.com/agentrace/agentrace/tokens","Test":"TestA","Output":"    a_test.go:3: skipping: no tokenizer\n"}`,
		`{"Action":"skip","Package":"github.com/agentrace/agentrace/tokens","Test":"TestA"}`,
	}, "\n")
	var out strings.Builder
	failed, err := run(strings.NewReader(in), &out)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v", failed, err)
	}
	want := "    x_test.go:9: boom\n" +
		"FAIL\tgithub.com/agentrace/agentrace/score\t0.1s\n" +
		"ok  \tgithub.com/agentrace/agentrace/interop\t0.2s\n" +
		"make test: skipped, by reason (2 reasons):\n" +
		"  skipping: no tokenizer: tokens.TestA, tokens.TestB/sub\n" +
		"  skipping: python3 with pandas is missing (apt install python3-pandas): interop.TestPandas\n" +
		"1 passed, 1 failed, 3 skipped\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"all passing", `{"Action":"pass","Package":"p","Test":"T"}`, "1 passed, 0 failed, 0 skipped\n"},
		{"nothing", ``, "0 passed, 0 failed, 0 skipped\n"},
		// a package that does not build has no test events: one failure
		{"build failure", `{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}` + "\n" + `{"Action":"fail","Package":"p"}`, "FAIL\tp [build failed]\n0 passed, 1 failed, 0 skipped\n"},
	} {
		out.Reset()
		failed, _ := run(strings.NewReader(tc.in), &out)
		if out.String() != tc.want || failed != strings.Contains(tc.want, " 1 failed") {
			t.Errorf("%s: failed %v, printed %q, want %q", tc.name, failed, out.String(), tc.want)
		}
	}
}
