package swebench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/datasets"
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
	o.Progress = &progress
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
	if len(fields) != 10 || s.Request()["endpoint_api_key"] != nil {
		t.Errorf("RunRequest fields %v: want runRequest's ten, no endpoint_api_key", fields)
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
		o.Progress = progressFunc(func(line string) {
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

type progressFunc func(string)

func (f progressFunc) Write(p []byte) (int, error) { f(string(p)); return len(p), nil }

func TestReadInstances(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "v.jsonl")
	os.WriteFile(p, []byte(`{"instance_id":"astropy__astropy-12907","repo":"astropy/astropy"}`+"\n"+`{"instance_id":"django__django-11099"}`+"\n"+`{"instance_id":"x"}`+"\n"), 0o644)
	ids, err := ReadInstances(p, "verified", "test", 2)
	if err != nil || strings.Join(ids, ",") != "astropy__astropy-12907,django__django-11099" {
		t.Fatalf("%v %v", ids, err)
	}
	os.WriteFile(p, []byte(`{"repo":"r"}`+"\n"), 0o644)
	if _, err := ReadInstances(p, "verified", "test", 2); err == nil || !strings.Contains(err.Error(), "line 1: no instance_id") {
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
		ids, err := ReadInstances(path, "verified", "test", 2)
		if err != nil || strings.Join(ids, ",") != "p1,p2" {
			t.Errorf("%s: %v %v", path, ids, err)
		}
	}
	if ids, _ := ReadInstances(pq, "verified", "test", 0); len(ids) != 3 {
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
// check by hand (testdata/swebench-service), field for field.
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
	delete(w, "endpoint_api_key") // the service model's default, not sent
	wj, _ := json.Marshal(w)
	gj, _ := json.Marshal(g)
	if string(wj) != string(gj) {
		t.Errorf("request\n%s\nthe service accepted\n%s", gj, wj)
	}
}
