package replay

import (
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentrace/agentrace/internal/redact"
	"github.com/agentrace/agentrace/replay/promscrape"
	"github.com/agentrace/agentrace/schemas"
)

// Endpoint routing modes (Options.EndpointRouting).
const (
	// RouteRoundRobin sends each issued request to the next endpoint, as the
	// reference client's workers take requests round-robin.
	RouteRoundRobin = "round-robin"
	// RouteSession sends every turn of a trajectory to one endpoint, picked by a
	// hash of its session id, as a session-affine router (X-Session-ID) would.
	RouteSession = "session"
)

// Telemetry are the options of the server-side telemetry: the Prometheus
// scraping of the endpoints and the routing of turns over several of them.
type Telemetry struct {
	// Metrics turns the scraping on (the command's default; --no-metrics turns
	// it off): MetricsURLs are the Prometheus pages to scrape, nil meaning each
	// endpoint's /metrics (its base URL without /v1).
	Metrics     bool
	MetricsURLs []string
	// MetricsInterval is the time between two scrapes of a page (0: 1 s).
	MetricsInterval time.Duration
	// EndpointRouting is RouteRoundRobin ("" too) or RouteSession.
	EndpointRouting string
}

// checkTelemetry checks the telemetry options before anything runs.
func (s *settings) checkTelemetry() error {
	switch s.EndpointRouting {
	case "":
		s.EndpointRouting = RouteRoundRobin
	case RouteRoundRobin, RouteSession:
	default:
		return fmt.Errorf("endpoint routing %q: want %s or %s", s.EndpointRouting, RouteRoundRobin, RouteSession)
	}
	if s.MetricsInterval < 0 {
		return fmt.Errorf("metrics interval %v: must be positive", s.MetricsInterval)
	}
	if s.MetricsInterval > 0 && s.MetricsInterval < 10*time.Millisecond {
		return fmt.Errorf("metrics interval %v: at least 10ms", s.MetricsInterval)
	}
	for _, u := range s.MetricsURLs {
		if err := promscrape.CheckURL(u); err != nil {
			return err
		}
	}
	return nil
}

// metricsTargets are the pages to scrape: the MetricsURLs, else each
// endpoint's /metrics, asked with the endpoint's Authorization header.
func (s *settings) metricsTargets() []promscrape.Target {
	if !s.Metrics {
		return nil
	}
	var ts []promscrape.Target
	if len(s.MetricsURLs) > 0 {
		for _, u := range s.MetricsURLs {
			ts = append(ts, promscrape.Target{URL: u})
		}
		return ts
	}
	for i, chat := range s.chatURLs {
		base := strings.TrimSuffix(strings.TrimSuffix(chat, "/chat/completions"), "/v1")
		ts = append(ts, promscrape.Target{URL: base + "/metrics", Replica: &i, Authorization: s.header.Get("Authorization")})
	}
	return ts
}

// startScraper starts scraping into the run folder dir on the engine's clock;
// nil when scraping is off.
func (e *engine) startScraper(ctx context.Context, dir string) (*promscrape.Scraper, error) {
	ts := e.s.metricsTargets()
	if len(ts) == 0 {
		return nil, nil
	}
	sc, err := promscrape.Start(ctx, promscrape.Options{
		Targets: ts, Interval: e.s.MetricsInterval,
		Path:      filepath.Join(dir, schemas.ServerMetricsFile),
		Now:       e.now,
		Scrub:     e.s.scrub.Text,
		Transport: e.s.transport,
	})
	if err != nil {
		return nil, fmt.Errorf("scrape server metrics: %w", err)
	}
	return sc, nil
}

// router picks each turn's endpoint and counts where turns went.
type router struct {
	mode string
	urls []string // redacted, for the manifest
	mu   sync.Mutex
	// turns and window count the turns sent to each endpoint (in the window);
	// seen lists, per session, the endpoints it sent to.
	turns, window []int
	seen          map[string][]int
}

func newRouter(s *settings) *router {
	r := &router{mode: s.EndpointRouting, turns: make([]int, len(s.endpoints)), window: make([]int, len(s.endpoints))}
	for _, ep := range s.endpoints {
		r.urls = append(r.urls, redact.URL(ep))
	}
	if len(s.endpoints) > 1 {
		r.seen = map[string][]int{}
	}
	return r
}

// pick returns the endpoint of a turn of session: the next one round-robin
// (next counts the requests issued), or the session's own.
func (r *router) pick(session string, next func() uint64) int {
	n := uint64(len(r.turns))
	switch {
	case n == 1:
		return 0
	case r.mode == RouteSession:
		h := fnv.New64a()
		h.Write([]byte(session))
		return int(h.Sum64() % n)
	}
	return int(next() % n)
}

// sent counts a turn of session sent to endpoint i.
func (r *router) sent(i int, session string, inWindow bool) {
	if r.seen == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.turns[i]++
	if inWindow {
		r.window[i]++
	}
	eps := r.seen[session]
	for _, j := range eps {
		if j == i {
			return
		}
	}
	r.seen[session] = append(eps, i)
}

// record is the manifest's routing record; nil with one endpoint.
func (r *router) record() *schemas.EndpointRouting {
	if r.seen == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := &schemas.EndpointRouting{Mode: r.mode, Trajectories: len(r.seen)}
	for i, u := range r.urls {
		out.Endpoints = append(out.Endpoints, schemas.EndpointTurns{URL: u, Turns: r.turns[i], WindowTurns: r.window[i]})
	}
	for _, eps := range r.seen {
		if len(eps) > 1 {
			out.Split++
		}
		for _, j := range eps {
			out.Endpoints[j].Trajectories++
		}
	}
	return out
}
