package promscrape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/redact"
	"github.com/agentrace/agentrace/schemas"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// Defaults of Options' zero values.
const (
	DefaultInterval = time.Second
	DefaultMaxBytes = 8 << 20
	// rowGroup is how many rows the table buffers before it writes them out.
	rowGroup = 1 << 16
)

// Target is one URL to scrape.
type Target struct {
	URL string
	// Replica is the index of the endpoint the URL belongs to, nil when the URL
	// was given apart from the endpoints.
	Replica *int
	// Authorization is sent with each scrape when not "" (the endpoint's own
	// credentials, for a server that asks them of every path); never recorded.
	Authorization string
}

// Options configure a Scraper.
type Options struct {
	Targets []Target
	// Interval is the fixed time between two scrapes of a target (0:
	// DefaultInterval); Timeout bounds each scrape (0: the interval); MaxBytes
	// bounds each page (0: DefaultMaxBytes).
	Interval, Timeout time.Duration
	MaxBytes          int64
	// Path is the table to write (a file in a claimed run folder).
	Path string
	// Now is the run's clock, nanoseconds since its start.
	Now func() int64
	// Scrub masks the run's secrets in what a server sends (names, labels,
	// errors); nil keeps them as they are.
	Scrub func(string) string
	// Transport replaces the scraper's own HTTP transport (tests).
	Transport http.RoundTripper
}

// Scraper scrapes each target at a fixed interval into a Parquet table until
// Stop. It has its own connections: it never waits on the client's.
type Scraper struct {
	o      Options
	hc     *http.Client
	base   context.Context // the caller's values, never cancelled: the final scrape's
	cancel context.CancelFunc
	loops  sync.WaitGroup

	mu      sync.Mutex // guards what follows
	f       *os.File
	w       *parquet.GenericWriter[schemas.ServerMetricRow]
	pending int
	werr    error
	eps     []schemas.ScrapedEndpoint
	rows    []schemas.ServerMetricRow
}

// CheckURL checks a metrics URL before anything runs.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("metrics URL %q: want an http:// or https:// URL", redact.URL(raw))
	}
	return nil
}

// Start creates the table, reads every target's page once and returns; the
// targets are then scraped at each interval until Stop. The scrapes carry
// ctx's values but not its end: an interrupted run is still scraped through its
// grace, until Stop.
func Start(ctx context.Context, o Options) (*Scraper, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Timeout <= 0 || o.Timeout > o.Interval {
		o.Timeout = o.Interval
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Scrub == nil {
		o.Scrub = func(s string) string { return s }
	}
	for _, t := range o.Targets {
		if err := CheckURL(t.URL); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(o.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("server metrics table: %w", err)
	}
	rt := o.Transport
	if rt == nil {
		rt = &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 1, DisableCompression: false,
			ResponseHeaderTimeout: o.Timeout}
	}
	s := &Scraper{
		o: o, f: f,
		hc: &http.Client{Transport: rt, Timeout: o.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		w: parquet.NewGenericWriter[schemas.ServerMetricRow](f, parquet.Compression(&zstd.Codec{}),
			parquet.CreatedBy("agentrace", schemas.ToolVersion, ""), outguard.ParquetMetadata(outguard.Kind{Name: "server-metrics"})),
	}
	for _, t := range o.Targets {
		s.eps = append(s.eps, schemas.ScrapedEndpoint{URL: redact.URL(t.URL), Replica: t.Replica})
	}
	s.base = context.WithoutCancel(ctx)
	ctx, cancel := context.WithCancel(s.base)
	s.cancel = cancel
	// The first pages are read before Start returns, so that the table starts
	// before the run's first turn; the loops go on from the next interval.
	first := time.Now()
	var firsts sync.WaitGroup
	for i := range o.Targets {
		firsts.Go(func() { s.scrape(ctx, i) })
	}
	firsts.Wait()
	for i := range o.Targets {
		s.loops.Go(func() { s.loop(ctx, i, first) })
	}
	return s, nil
}

// loop scrapes target i at each interval until ctx ends. A scrape still going
// when the next is due makes that one late: it is skipped and counted, and the
// next on the schedule is waited for.
func (s *Scraper) loop(ctx context.Context, i int, first time.Time) {
	due := first
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		due = due.Add(s.o.Interval)
		now := time.Now()
		skipped := 0
		for !due.After(now) {
			due = due.Add(s.o.Interval)
			skipped++
		}
		if skipped > 0 {
			s.mu.Lock()
			s.eps[i].Skipped += skipped
			s.mu.Unlock()
		}
		t.Reset(due.Sub(now))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.scrape(ctx, i)
	}
}

// errTooLarge is a page over MaxBytes.
var errTooLarge = errors.New("page over the size limit")

// scrape reads target i's page once and appends its samples to the table.
func (s *Scraper) scrape(ctx context.Context, i int) {
	samples, err := s.fetch(ctx, s.o.Targets[i])
	at := s.o.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ep := &s.eps[i]
	if err != nil {
		if ctx.Err() != nil {
			return // stopped, not failed
		}
		ep.Failed++
		ep.LastError = s.o.Scrub(redact.Text(err.Error()))
		return
	}
	ep.Scrapes++
	fams := make([]string, 0, 64)
	for _, x := range samples {
		if len(fams) == 0 || fams[len(fams)-1] != x.Family {
			fams = append(fams, x.Family)
		}
	}
	m := Classify(fams)
	if ep.Engine == "" || ep.Engine == schemas.EngineUnknown {
		ep.Engine = m.Engine
	}
	quantity := make(map[string]*string, len(m.Families))
	for q, fam := range m.Families {
		if ep.Quantities == nil {
			ep.Quantities = map[string]string{}
		}
		ep.Quantities[q] = s.o.Scrub(fam)
		quantity[fam] = &q
	}
	s.rows = s.rows[:0]
	for _, x := range samples {
		r := schemas.ServerMetricRow{TNs: at, Endpoint: int32(i), Metric: s.o.Scrub(x.Metric), Kind: x.Kind, Value: x.Value}
		if x.Labels != "" {
			l := s.o.Scrub(x.Labels)
			r.Labels = &l
		}
		if x.Metric == x.Family {
			r.Quantity = quantity[x.Family]
		}
		s.rows = append(s.rows, r)
	}
	if s.werr != nil {
		return
	}
	if _, err := s.w.Write(s.rows); err != nil {
		s.werr = err
		return
	}
	ep.Rows += int64(len(s.rows))
	s.pending += len(s.rows)
	if s.pending >= rowGroup {
		s.pending = 0
		if err := s.w.Flush(); err != nil {
			s.werr = err
		}
	}
}

// fetch GETs a page, bounded in time and size, and parses it.
func (s *Scraper) fetch(ctx context.Context, t Target) ([]Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, err
	}
	user := u.User
	u.User = nil
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	switch {
	case user != nil:
		pw, _ := user.Password()
		req.SetBasicAuth(user.Username(), pw)
	case t.Authorization != "":
		req.Header.Set("Authorization", t.Authorization)
	}
	// The text format: every engine serves it, and it is what Parse reads.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	lr := &io.LimitedReader{R: resp.Body, N: s.o.MaxBytes + 1}
	samples, err := Parse(lr)
	if lr.N <= 0 {
		return nil, fmt.Errorf("%w of %d bytes", errTooLarge, s.o.MaxBytes)
	}
	return samples, err
}

// Stop ends the scraping: the loops stop, with final each target is scraped a
// last time (so that the table ends where the run did; an interrupted run
// skips it, to stop at once) and the table is closed. It returns the
// manifest's record of the scraping.
func (s *Scraper) Stop(final bool) *schemas.ServerMetrics {
	s.cancel()
	s.loops.Wait()
	if final {
		var last sync.WaitGroup
		for i := range s.o.Targets {
			last.Go(func() { s.scrape(s.base, i) })
		}
		last.Wait()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.w.Close(); err != nil && s.werr == nil {
		s.werr = err
	}
	if err := s.f.Sync(); err != nil && s.werr == nil {
		s.werr = err
	}
	if err := s.f.Close(); err != nil && s.werr == nil {
		s.werr = err
	}
	out := &schemas.ServerMetrics{
		Table:           schemas.ServerMetricsFile,
		IntervalSeconds: s.o.Interval.Seconds(),
		TimeoutSeconds:  s.o.Timeout.Seconds(),
		MaxBytes:        s.o.MaxBytes,
		Note:            schemas.ServerMetricsNote,
		Endpoints:       slices.Clone(s.eps),
	}
	for i := range out.Endpoints {
		out.Endpoints[i].Quantities = maps.Clone(out.Endpoints[i].Quantities)
	}
	if s.werr != nil {
		out.Error = s.o.Scrub(fmt.Sprintf("write %s: %v", schemas.ServerMetricsFile, s.werr))
	}
	return out
}
