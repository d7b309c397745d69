package runread

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
)

func fixtureDir(t *testing.T) string {
	return filepath.Join(testenv.RepoRoot(t), "testdata", "reference-run")
}

func scanAll(t *testing.T, run *archive.Run) ([]schemas.TurnRecord, TurnScan) {
	t.Helper()
	var recs []schemas.TurnRecord
	scan, err := ScanTurns(context.Background(), run, func(r *schemas.TurnRecord) error {
		c := *r
		c.ChunkTimesNs = append([]int64(nil), r.ChunkTimesNs...)
		recs = append(recs, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs, scan
}

func TestScanTurnsFromEvents(t *testing.T) {
	run, err := archive.OpenRun(fixtureDir(t), archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Source.Close()
	recs, scan := scanAll(t, run)
	// 16 issued samples; one line of an unknown type and one with a string turn
	// are skipped as the reference skips them.
	if len(recs) != 16 || scan.Skipped != 2 || !scan.HasStream || scan.File != archive.EventsFile {
		t.Fatalf("%d records, scan %+v", len(recs), scan)
	}
	byUUID := map[string]schemas.TurnRecord{}
	statuses := map[string]int{}
	for _, r := range recs {
		statuses[r.Status]++
		if r.SessionID == "astropy__astropy-12907" && r.Turn == 1 {
			byUUID["u01"] = r
		}
	}
	u01 := byUUID["u01"]
	// Issued at 1003 ms, first chunk at 1004, another at 1005, complete at 1006, on
	// a clock starting just before performance tracking (1002 ms).
	if u01.Status != schemas.StatusOK || u01.IssuedNs != 1_000_001 || u01.FirstTokenNs != 2_000_001 || u01.CompletedNs != 4_000_001 ||
		len(u01.ChunkTimesNs) != 2 || u01.ChunkTimesNs[1] != 1_000_000 || u01.OutputContent != "Let me look." ||
		u01.OutputReasoning != "Look around first" || u01.FirstReasoningBytes != 4 || u01.FinishReason != "tool_calls" || !u01.InWindow {
		t.Errorf("u01 %+v", u01)
	}
	var calls []schemas.ToolCall
	if err := json.Unmarshal([]byte(u01.OutputToolCalls), &calls); err != nil || len(calls) != 1 ||
		calls[0].Function.Arguments != `{"command": "ls -la && find . | head"}` || calls[0].Function.Name != "bash" {
		t.Errorf("u01 tool calls %q %v", u01.OutputToolCalls, err)
	}
	if statuses[schemas.StatusOK] == 0 || statuses[schemas.StatusError] == 0 {
		t.Errorf("statuses %v", statuses)
	}

	// The same events as a submission's detail log (a pretty-printed JSON array),
	// inside a .tar.gz: the same records.
	data, _ := os.ReadFile(filepath.Join(fixtureDir(t), archive.EventsFile))
	var arr []json.RawMessage
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var v any
		if json.Unmarshal([]byte(l), &v) != nil {
			continue // the array form cannot carry a malformed line
		}
		b, _ := json.MarshalIndent(v, "  ", "  ")
		arr = append(arr, b)
	}
	detail, _ := json.MarshalIndent(arr, "", "  ")
	tgz := filepath.Join(t.TempDir(), "sub.tgz")
	testenv.TarDir(t, t.TempDir(), "x", tgz, map[string]string{
		"sys/model/r4/point.yaml":                        "concurrency: 4\n",
		"sys/model/r4/mlperf_endpoints_log_summary.json": "{}",
		"sys/model/r4/mlperf_endpoints_log_detail.json":  string(detail),
	})
	pt, err := archive.OpenRun(tgz, archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer pt.Source.Close()
	recs2, scan2 := scanAll(t, pt)
	if len(recs2) != 16 || scan2.File != archive.LogDetailFile || scan2.Skipped != 2 {
		t.Fatalf("%d records from the array, scan %+v", len(recs2), scan2)
	}
	for i := range recs {
		a, b := recs[i], recs2[i]
		if a.SessionID != b.SessionID || a.Status != b.Status || a.OutputContent != b.OutputContent || a.IssuedNs != b.IssuedNs {
			t.Errorf("record %d: %+v vs %+v", i, a, b)
		}
	}
}

// FuzzArrayLines: for a JSON array of objects (any whitespace, as the submission
// tools indent it), arrayLines gives one line per element, each the element's JSON;
// for any input it ends without panicking and writes at most one byte per input
// byte plus the final newline.
func FuzzArrayLines(f *testing.F) {
	f.Add([]byte("[\n  {\n    \"a\": \"x,y]\\\"\\n\"\n  },\n  {\"b\": [1, {\"c\": null}]}\n]"))
	f.Add([]byte("{}"))
	f.Add([]byte("[]"))
	f.Add([]byte("[{\"a\":1}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := io.ReadAll(newArrayLines(bytes.NewReader(data)))
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > len(data)+1 {
			t.Fatalf("%d bytes out of %d", len(out), len(data))
		}
		var elems []map[string]any
		if json.Unmarshal(data, &elems) != nil {
			return
		}
		var got []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.TrimSpace(l) == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %q: %v (input %q)", l, err, data)
			}
			got = append(got, m)
		}
		a, _ := json.Marshal(elems)
		b, _ := json.Marshal(got)
		if len(elems) == 0 {
			b = []byte("null")
			if len(got) > 0 {
				b, _ = json.Marshal(got)
			}
			a = []byte("null")
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("elements %s, lines %s", a, b)
		}
	})
}
