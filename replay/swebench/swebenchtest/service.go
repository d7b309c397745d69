// Package swebenchtest is an httptest stand-in of the reference's SWE-bench
// service for tests: it checks each request as the service's schemas.py does
// (RunRequest: extra fields forbidden, num_instances equal to the ids given,
// one HTTP(S) endpoint, workers at least 1, a known subset and template),
// requires the bearer token on everything but /health, and walks its one run
// through a scripted sequence of states (queued, running in the agent and eval
// phases, then succeeded, failed or cancelled).
package swebenchtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Service is the stand-in. Script is the statuses successive polls return:
// "queued", "agent:N" (running, N agents done), "eval:N", "succeeded" or
// "failed"; after a cancel every poll says cancelled.
type Service struct {
	srv    *httptest.Server
	Token  string
	script []string
	// Result is the succeeded run's result object.
	Result string
	// Echo makes the service echo the bearer token it was sent, as a hostile
	// or careless one does: in the phase, the result and every artifact.
	Echo bool
	// Hook, when set, sees every request first and answers it when it returns
	// true (a fault, a huge or endless body); it runs on the server's
	// goroutines.
	Hook func(w http.ResponseWriter, r *http.Request) bool

	mu        sync.Mutex
	req       map[string]json.RawMessage
	polls     int
	cancelled bool
	problems  []string
}

// allowedFields are RunRequest's fields.
var allowedFields = map[string]bool{"model_name": true, "endpoint_urls": true, "endpoint_api_key": true, "routing_headers": true, "generation_params": true,
	"subset": true, "split": true, "num_instances": true, "workers": true, "max_eval_workers": true, "evaluated_instance_ids": true, "template": true}

// New starts a stand-in with the token "tok-secret", closed at the end of t.
func New(t testing.TB, script ...string) *Service {
	s := &Service{Token: "tok-secret", script: script, Result: `{"submitted_instances":3,"resolved_instances":2,"resolved_ids":["a","b"]}`}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *Service) bad(w http.ResponseWriter, code int, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	s.mu.Lock()
	s.problems = append(s.problems, msg)
	s.mu.Unlock()
	http.Error(w, msg, code)
}

func (s *Service) status(w http.ResponseWriter, state, phase string, agent, eval int) {
	result := s.Result
	if s.Echo {
		phase += " Bearer " + s.Token
		result = strings.Replace(result, "{", `{"echo":"`+s.Token+`",`, 1)
	}
	st := map[string]any{"run_id": "run_1", "status": state, "created_at": 1.0, "updated_at": 2.0, "phase": phase,
		"agent_total": 3, "agent_completed": agent, "eval_total": 3, "eval_completed": eval, "artifacts": []any{}}
	if state == "succeeded" {
		st["result"] = json.RawMessage(result)
		st["artifacts"] = []map[string]string{
			{"name": "preds.json", "url": "/v1/runs/run_1/artifacts/preds.json"},
			{"name": "swe_bench_results.json", "url": "/v1/runs/run_1/artifacts/swe_bench_results.json"},
			{"name": "swe_bench_agent.log", "url": "/v1/runs/run_1/artifacts/swe_bench_agent.log"},
			{"name": "evil.sh", "url": "/v1/runs/run_1/artifacts/evil.sh"},
			{"name": "status.json", "url": "http://elsewhere/v1/runs/run_1/artifacts/status.json"},
		}
	}
	if state == "failed" {
		st["error"] = "agent crashed"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(st)
}

func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	if s.Hook != nil && s.Hook(w, r) {
		return
	}
	if r.URL.Path == "/health" {
		fmt.Fprint(w, `{"api_version":"v1","capabilities":["swebench.run","swebench.cancel","artifacts.download","swebench.progress","swebench.routing_headers"],"status":"ok"}`)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		s.bad(w, 401, "unauthorized")
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/runs":
		var m map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			s.bad(w, 422, "not JSON: %v", err)
			return
		}
		for k := range m {
			if !allowedFields[k] {
				s.bad(w, 422, "%s: extra inputs are not permitted", k)
				return
			}
		}
		var req struct {
			ModelName    string   `json:"model_name"`
			EndpointURLs []string `json:"endpoint_urls"`
			Subset       string   `json:"subset"`
			NumInstances int      `json:"num_instances"`
			Workers      int      `json:"workers"`
			MaxEval      int      `json:"max_eval_workers"`
			IDs          []string `json:"evaluated_instance_ids"`
			Template     string   `json:"template"`
		}
		raw, _ := json.Marshal(m)
		if err := json.Unmarshal(raw, &req); err != nil {
			s.bad(w, 422, "%v", err)
			return
		}
		switch {
		case req.ModelName == "":
			s.bad(w, 422, "model_name: too short")
		case len(req.EndpointURLs) != 1:
			s.bad(w, 422, "endpoint_urls: want exactly one")
		case req.NumInstances < 1 || req.NumInstances != len(req.IDs):
			s.bad(w, 422, "num_instances must equal the number of evaluated_instance_ids")
		case req.Workers < 1 || req.MaxEval < 1:
			s.bad(w, 422, "workers: must be >= 1")
		case req.Subset != "verified" && req.Subset != "lite":
			s.bad(w, 422, "subset")
		case req.Template != "default" && req.Template != "qwen_tools":
			s.bad(w, 422, "template")
		default:
			s.mu.Lock()
			s.req = m
			s.mu.Unlock()
			s.status(w, "queued", "queued", 0, 0)
		}
	case r.Method == http.MethodGet && r.URL.Path == "/v1/runs/run_1":
		s.mu.Lock()
		i := min(s.polls, len(s.script)-1)
		s.polls++
		cancelled := s.cancelled
		s.mu.Unlock()
		if cancelled {
			s.status(w, "cancelled", "cancelled", 1, 0)
			return
		}
		var n int
		switch step := s.script[i]; {
		case strings.HasPrefix(step, "agent:"):
			fmt.Sscanf(step, "agent:%d", &n)
			s.status(w, "running", "agent", n, 0)
		case strings.HasPrefix(step, "eval:"):
			fmt.Sscanf(step, "eval:%d", &n)
			s.status(w, "running", "eval", 3, n)
		default:
			s.status(w, step, step, 3, 3)
		}
	case r.Method == http.MethodPost && r.URL.Path == "/v1/runs/run_1/cancel":
		s.mu.Lock()
		s.cancelled = true
		s.mu.Unlock()
		s.status(w, "cancelled", "cancelled", 1, 0)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/runs/run_1/artifacts/"):
		name := strings.TrimPrefix(r.URL.Path, "/v1/runs/run_1/artifacts/")
		echo := ""
		if s.Echo {
			echo = " " + s.Token
		}
		if name == "swe_bench_results.json" {
			fmt.Fprint(w, strings.Replace(s.Result, "{", `{"echo":"`+echo+`",`, 1))
			return
		}
		fmt.Fprintf(w, `{"artifact":%q}`, name+echo)
	default:
		s.bad(w, 404, "%s %s", r.Method, r.URL.Path)
	}
}

// URL is the service's root URL.
func (s *Service) URL() string { return s.srv.URL }

// Request is the RunRequest the service accepted, by field.
func (s *Service) Request() map[string]json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.req
}

// Problems are the requests the service refused, and why.
func (s *Service) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// Cancelled tells whether the run was cancelled.
func (s *Service) Cancelled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelled
}
