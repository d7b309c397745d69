package swebench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/replay/swebench/swebenchtest"
	"github.com/agentrace/agentrace/schemas"
	"github.com/parquet-go/parquet-go"
)

func options(t *testing.T, s *swebenchtest.Service) Options {
	t.Setenv("SWEBENCH_TEST_TOKEN", s.Token)
	return Options{
		Service: s.URL(), AuthTokenEnv: "SWEBENCH_TEST_TOKEN", Endpoint: "http://model:30000", Model: "Qwen/Qwen3.6-35B-A3B",
		Generation: `{"temperature":1.0,"top_p":0.95,"max_new_tokens":8192}`, IDs: []string{"a", "b", "c"},
		Template: "qwen_tools", Out: filepath.Join(t.TempDir(), "sb"), PollInterval: time.Millisecond,
	}
}

func TestRunSucceeded(t *testing.T) {
	s := swebenchtest.New(t, "queued", "agent:1", "agent:3", "eval:2", "succeeded")
	o := options(t, s)
	var progress strings.Builder
	o.Events = lines(&progress)
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("%v (service saw: %v)", err, s.Problems())
	}
	if res.State != "succeeded" || res.Evaluated != 3 || len(s.Problems()) > 0 {
		t.Fatalf("result %+v, service problems %v", res, s.Problems())
	}
	var fields []string
	for k := range s.Request() {
		fields = append(fields, k)
	}
	if len(fields) != 12 || string(s.Request()["endpoint_api_key"]) != "null" || string(s.Request()["routing_headers"]) != `["X-Session-ID"]` {
		t.Errorf("RunRequest fields %v, endpoint_api_key %s, routing_headers %s: want runRequest's twelve, a null key, X-Session-ID routing", fields, s.Request()["endpoint_api_key"], s.Request()["routing_headers"])
	}
	if string(s.Request()["generation_params"]) != o.Generation || string(s.Request()["template"]) != `"qwen_tools"` {
		t.Errorf("request %s", s.Request())
	}
	for _, f := range []string{ResultsFile, schemas.SWEBenchRunFile, "swe_bench_runs/run_1/" + StatusFile, "swe_bench_runs/run_1/preds.json", "swe_bench_runs/run_1/swe_bench_results.json"} {
		if _, err := os.Stat(filepath.Join(o.Out, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	for _, f := range []string{"evil.sh", "status.json"} {
		if _, err := os.Stat(filepath.Join(o.Out, "swe_bench_runs/run_1", f)); err == nil {
			t.Errorf("unsafe artifact %s downloaded", f)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(o.Out, ResultsFile)); string(got) != s.Result {
		t.Errorf("results %s", got)
	}
	for _, want := range []string{"phase agent): agent 1/3", "phase eval): agent 3/3, eval 2/3", "succeeded (phase succeeded)", "ignoring unsafe artifact URL for status.json"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	assertNoSecret(t, o.Out, s.Token)
}

func assertNoSecret(t *testing.T, dir, secret string) {
	t.Helper()
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
				t.Errorf("%s holds the token", p)
			}
		}
		return nil
	})
}

func TestRunFailedAndCancelled(t *testing.T) {
	t.Run("failed", func(t *testing.T) {
		s := swebenchtest.New(t, "agent:1", "failed")
		o := options(t, s)
		res, err := Run(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), "ended with status failed: agent crashed") || res.State != "failed" {
			t.Fatalf("err %v, result %+v", err, res)
		}
		if _, err := os.Stat(filepath.Join(o.Out, ResultsFile)); err == nil {
			t.Error("a failed run wrote results")
		}
		var rec schemas.SWEBenchRun
		b, _ := os.ReadFile(filepath.Join(o.Out, schemas.SWEBenchRunFile))
		if json.Unmarshal(b, &rec) != nil || rec.State != "failed" || rec.Evaluated != 3 {
			t.Errorf("record %s", b)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		s := swebenchtest.New(t, "agent:1")
		o := options(t, s)
		ctx, cancel := context.WithCancel(context.Background())
		o.Events = progressFunc(func(line string) {
			if strings.Contains(line, "agent 1/3") {
				cancel()
			}
		})
		res, err := Run(ctx, o)
		if err == nil || !strings.Contains(err.Error(), "interrupted") || !s.Cancelled() || res.State != "cancelled" {
			t.Fatalf("err %v, cancelled %v, result %+v", err, s.Cancelled(), res)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		s := swebenchtest.New(t, "agent:1")
		o := options(t, s)
		o.Timeout, o.PollInterval = 50*time.Millisecond, 5*time.Millisecond
		res, err := Run(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), "timed out") || !s.Cancelled() || res.State != "cancelled" {
			t.Fatalf("err %v, cancelled %v, result %+v", err, s.Cancelled(), res)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		s := swebenchtest.New(t, "succeeded")
		o := options(t, s)
		t.Setenv("SWEBENCH_TEST_TOKEN", "tok-wrong")
		_, err := Run(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "tok-wrong") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("refused request", func(t *testing.T) {
		s := swebenchtest.New(t, "succeeded")
		o := options(t, s)
		o.Endpoint = "ftp://model"
		if _, err := Run(context.Background(), o); err == nil || len(s.Problems()) > 0 {
			t.Fatalf("err %v; a bad endpoint must be refused before any request (service saw %v)", err, s.Problems())
		}
	})
}

// progressFunc is a sink that hands f the text of each event.
func progressFunc(f func(string)) notice.Sink { return func(e notice.Event) { f(e.Text) } }

// lines is a sink that writes the text of each event to b, a line each.
func lines(b *strings.Builder) notice.Sink {
	return func(e notice.Event) { b.WriteString(e.Text + "\n") }
}

func TestReadInstances(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "v.jsonl")
	os.WriteFile(p, []byte(`{"instance_id":"astropy__astropy-12907","repo":"astropy/astropy"}`+"\n"+`{"instance_id":"django__django-11099"}`+"\n"+`{"instance_id":"x"}`+"\n"), 0o644)
	ids, err := ReadInstances(context.Background(), p, "verified", "test", 2)
	if err != nil || strings.Join(ids, ",") != "astropy__astropy-12907,django__django-11099" {
		t.Fatalf("%v %v", ids, err)
	}
	os.WriteFile(p, []byte(`{"repo":"r"}`+"\n"), 0o644)
	if _, err := ReadInstances(context.Background(), p, "verified", "test", 2); err == nil || !strings.Contains(err.Error(), "line 1: no instance_id") {
		t.Fatalf("err %v", err)
	}
	if got := CachePath("ds", "verified", "test"); got != filepath.Join("ds", "swe_bench", "verified", "test", "swe_bench_verified_test.parquet") {
		t.Errorf("cache path %s", got)
	}
	type row struct {
		Repo       string `parquet:"repo"`
		InstanceID string `parquet:"instance_id"`
	}
	pq := filepath.Join(dir, "swe_bench", "verified", "test", "swe_bench_verified_test.parquet")
	os.MkdirAll(filepath.Dir(pq), 0o755)
	if err := parquet.WriteFile(pq, []row{{"r", "p1"}, {"r", "p2"}, {"r", "p3"}}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{pq, dir} {
		ids, err := ReadInstances(context.Background(), path, "verified", "test", 2)
		if err != nil || strings.Join(ids, ",") != "p1,p2" {
			t.Errorf("%s: %v %v", path, ids, err)
		}
	}
	if ids, _ := ReadInstances(context.Background(), pq, "verified", "test", 0); len(ids) != 3 {
		t.Errorf("all: %v", ids)
	}
}

func TestGenerationParams(t *testing.T) {
	q, _ := datasets.LookupProfile("qwen3.6-35b-a3b")
	if got := GenerationParams(q, 0); got != `{"temperature":1.0,"top_p":0.95,"top_k":20,"repetition_penalty":1.0,"presence_penalty":1.5,"max_new_tokens":8192,"chat_template_kwargs":{"preserve_thinking":true}}` {
		t.Errorf("qwen: %s", got)
	}
	zero := 0.0
	if got := GenerationParams(datasets.Profile{Temperature: &zero, Seed: "42"}, 1024); got != `{"temperature":0.0,"seed":42,"max_new_tokens":1024}` {
		t.Errorf("edge: %s", got)
	}
	if got := GenerationParams(datasets.Profile{}, 0); got != `{"max_new_tokens":1024}` {
		t.Errorf("none: %s", got)
	}
}

// The request agentrace sends is the one the reference's service accepted in a
// check by hand (testdata/swebench-service), field for field, plus the
// routing_headers its scorer has sent since (default X-Session-ID).
func TestRequestAsTheServiceAcceptedIt(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "..", "testdata", "swebench-service", "accepted-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := swebenchtest.New(t, "succeeded")
	o := options(t, s)
	q, _ := datasets.LookupProfile("qwen3.6-35b-a3b")
	o.Endpoint, o.Model, o.Generation = "http://127.0.0.1:18731", q.Model, GenerationParams(q, 0)
	o.IDs = []string{"astropy__astropy-12907", "django__django-11099", "sympy__sympy-20590"}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var w, g map[string]any
	json.Unmarshal(want, &w)
	got, _ := json.Marshal(s.Request())
	json.Unmarshal(got, &g)
	w["routing_headers"] = []any{"X-Session-ID"}
	wj, _ := json.Marshal(w)
	gj, _ := json.Marshal(g)
	if string(wj) != string(gj) {
		t.Errorf("request\n%s\nthe service accepted\n%s", gj, wj)
	}
}

// A service that echoes its token (in the phase, the message, the result and
// every artifact) leaves it nowhere: not in progress lines, not in any file.
func TestEchoedTokenScrubbed(t *testing.T) {
	s := swebenchtest.New(t, "agent:1", "eval:2", "succeeded")
	s.Echo = true
	o := options(t, s)
	var progress strings.Builder
	o.Events = lines(&progress)
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(progress.String(), s.Token) || !strings.Contains(progress.String(), "(phase agent Bearer <redacted>)") {
		t.Errorf("progress shows the token:\n%s", progress.String())
	}
	if len(res.Artifacts) != 3 {
		t.Errorf("artifacts %v", res.Artifacts)
	}
	assertNoSecret(t, o.Out, s.Token)
	b, _ := os.ReadFile(filepath.Join(o.Out, ResultsFile))
	if !json.Valid(b) || !strings.Contains(string(b), `"echo":"<redacted>"`) {
		t.Errorf("results %s", b)
	}
}

// endless serves an artifact of n bytes (n < 0: without end) and counts what it
// wrote.
func endless(name string, n int64, wrote *atomic.Int64) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/artifacts/"+name) {
			return false
		}
		chunk := []byte(strings.Repeat("x", 1<<20))
		for n < 0 || wrote.Load() < n {
			k, err := w.Write(chunk[:min(int64(len(chunk)), max(n-wrote.Load(), 0))+int64(boolInt(n < 0))*int64(len(chunk))])
			wrote.Add(int64(k))
			if err != nil {
				return true
			}
		}
		return true
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Artifacts are copied under a cap each and a cap on all: one past it is not
// kept, said so and listed; the result stands; the download stops promptly.
func TestArtifactCaps(t *testing.T) {
	t.Run("one artifact", func(t *testing.T) {
		s := swebenchtest.New(t, "succeeded")
		var wrote atomic.Int64
		s.Hook = endless("swe_bench_agent.log", -1, &wrote)
		o := options(t, s)
		o.MaxArtifactBytes = 4 << 20
		var progress strings.Builder
		o.Events = lines(&progress)
		start := time.Now()
		res, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("an endless artifact under a 4 MiB cap: stopped after %v, the service wrote %.1f MiB", time.Since(start).Round(time.Millisecond), float64(wrote.Load())/(1<<20))
		if time.Since(start) > 10*time.Second || wrote.Load() > 64<<20 {
			t.Errorf("took %v, the service wrote %d bytes", time.Since(start), wrote.Load())
		}
		if len(res.Unfetched) != 1 || !strings.Contains(res.Unfetched[0], "swe_bench_agent.log: larger than the cap on one artifact, 4 MiB") ||
			!strings.Contains(progress.String(), "could not download artifact swe_bench_agent.log: larger than") {
			t.Errorf("unfetched %v; progress:\n%s", res.Unfetched, progress.String())
		}
		if _, err := os.Stat(filepath.Join(o.Out, "swe_bench_runs/run_1/swe_bench_agent.log")); err == nil {
			t.Error("the artifact over the cap was kept")
		}
		if _, err := os.Stat(filepath.Join(o.Out, ResultsFile)); err != nil {
			t.Errorf("the result: %v", err)
		}
		var rec schemas.SWEBenchRun
		b, _ := os.ReadFile(filepath.Join(o.Out, schemas.SWEBenchRunFile))
		if json.Unmarshal(b, &rec) != nil || len(rec.Unfetched) != 1 {
			t.Errorf("record %s", b)
		}
	})
	t.Run("all artifacts", func(t *testing.T) {
		s := swebenchtest.New(t, "succeeded")
		var wrote atomic.Int64
		s.Hook = endless("preds.json", 3<<20, &wrote)
		o := options(t, s)
		o.MaxArtifactsBytes = 3<<20 + 10
		res, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		// preds.json takes all but 10 bytes; the next two do not fit
		if strings.Join(res.Artifacts, ",") != "preds.json" || len(res.Unfetched) != 2 ||
			!strings.Contains(res.Unfetched[0], "swe_bench_results.json: larger than what is left of the cap on all artifacts, 3145738 bytes") {
			t.Errorf("artifacts %v, unfetched %v", res.Artifacts, res.Unfetched)
		}
	})
}

// An interrupt during the artifacts' download ends the run with an error that
// says so, once, and writes no result.
func TestInterruptDuringDownload(t *testing.T) {
	s := swebenchtest.New(t, "succeeded")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/artifacts/swe_bench_results.json") {
			return false
		}
		w.Write([]byte("{"))
		w.(http.Flusher).Flush()
		cancel()
		<-r.Context().Done()
		return true
	}
	o := options(t, s)
	res, err := Run(ctx, o)
	if err == nil || !strings.Contains(err.Error(), "interrupted while downloading the artifacts of service run run_1 (1 of 4 downloaded); no result written") ||
		strings.Count(err.Error(), "interrupted") != 1 || strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("err %v", err)
	}
	if res.Results != "" {
		t.Errorf("results %q", res.Results)
	}
	if _, err := os.Stat(filepath.Join(o.Out, ResultsFile)); err == nil {
		t.Error("an interrupted run wrote its result")
	}
	var rec schemas.SWEBenchRun
	b, _ := os.ReadFile(filepath.Join(o.Out, schemas.SWEBenchRunFile))
	if json.Unmarshal(b, &rec) != nil || !strings.Contains(rec.Problem, "interrupted while downloading") {
		t.Errorf("record %s", b)
	}
}

// A service's error body is quoted 2 KiB at most, scrubbed, however long.
func TestErrorBodyQuotedShort(t *testing.T) {
	s := swebenchtest.New(t, "succeeded")
	s.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/v1/runs" {
			return false
		}
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, "bad token "+r.Header.Get("Authorization")+" ")
		io.Copy(w, io.LimitReader(zeros{}, 60<<20))
		return true
	}
	o := options(t, s)
	_, err := Run(context.Background(), o)
	if err == nil || len(err.Error()) > 2500 || strings.Contains(err.Error(), s.Token) || !strings.Contains(err.Error(), "HTTP 422: bad token Bearer <redacted>") {
		t.Fatalf("error of %d bytes: %.300v", len(err.Error()), err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

// routing_headers: X-Session-ID unless given; names given are sent as given,
// an empty list as one; a name that is no header name is refused before any
// request.
func TestRoutingHeaders(t *testing.T) {
	for _, tc := range []struct {
		give []string
		want string
	}{
		{nil, `["X-Session-ID"]`},
		{[]string{"X-Session-ID", "X-Route-Key"}, `["X-Session-ID","X-Route-Key"]`},
		{[]string{}, `[]`},
	} {
		s := swebenchtest.New(t, "succeeded")
		o := options(t, s)
		o.RoutingHeaders = tc.give
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if got := string(s.Request()["routing_headers"]); got != tc.want {
			t.Errorf("%v: sent %s, want %s", tc.give, got, tc.want)
		}
	}
	s := swebenchtest.New(t, "succeeded")
	o := options(t, s)
	o.RoutingHeaders = []string{"X Bad"}
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), `routing header "X Bad"`) || len(s.Problems()) > 0 || s.Request() != nil {
		t.Errorf("err %v", err)
	}
}

// The instance list's digest is the reference's: sha256 of the ids joined by
// newlines with a final newline; a list other than the pinned 200 is not
// official, and the record says so.
func TestInstancesDigest(t *testing.T) {
	if got := InstancesSHA256([]string{"a", "b"}); got != sha256Hex("a\nb\n") {
		t.Errorf("digest %s", got)
	}
	if OfficialInstances([]string{"a", "b"}) || OfficialInstances(make([]string, OfficialNumInstances)) {
		t.Error("an arbitrary list is official")
	}
	s := swebenchtest.New(t, "succeeded")
	o := options(t, s)
	res, err := Run(context.Background(), o)
	if err != nil || res.Official || res.InstancesSHA256 != sha256Hex("a\nb\nc\n") {
		t.Fatalf("%v %+v", err, res)
	}
	var rec schemas.SWEBenchRun
	b, _ := os.ReadFile(filepath.Join(o.Out, schemas.SWEBenchRunFile))
	if json.Unmarshal(b, &rec) != nil || rec.OfficialInstances || rec.InstancesSHA256 != res.InstancesSHA256 || !strings.Contains(string(b), `"official_instances": false`) {
		t.Errorf("record %s", b)
	}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// The endpoint's API key goes to the service as endpoint_api_key, as the
// reference's scorer sends its config's key, and a service that echoes it back
// (here in its result) leaves it in no file.
func TestEndpointAPIKeySentNotWritten(t *testing.T) {
	const key = "sk-ENDPOINT-7788"
	s := swebenchtest.New(t, "succeeded")
	s.Result = `{"submitted_instances":3,"resolved_instances":2,"resolved_ids":["a","b"],"request_key":"` + key + `"}`
	o := options(t, s)
	t.Setenv("SWEBENCH_TEST_ENDPOINT_KEY", key)
	o.EndpointAPIKeyEnv = "SWEBENCH_TEST_ENDPOINT_KEY"
	var progress strings.Builder
	o.Events = lines(&progress)
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if got := string(s.Request()["endpoint_api_key"]); got != `"`+key+`"` {
		t.Errorf("endpoint_api_key sent %s, want %q", got, key)
	}
	if strings.Contains(progress.String(), key) {
		t.Errorf("progress shows the endpoint key:\n%s", progress.String())
	}
	assertNoSecret(t, o.Out, key)

	o.EndpointAPIKeyEnv = "SWEBENCH_TEST_UNSET_KEY"
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "SWEBENCH_TEST_UNSET_KEY") {
		t.Errorf("an unset key variable: %v", err)
	}
}
