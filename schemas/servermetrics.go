package schemas

// ServerMetricsFile is a run folder's table of what the serving engine's
// Prometheus endpoints reported during the run (ServerMetricRow), written only
// when scraping was on.
const ServerMetricsFile = "server_metrics.parquet"

// ServerMetricsNote is what every view of the scraped numbers says of them.
const ServerMetricsNote = "server-reported, not a rules metric"

// Quantities: what a known engine's metric measures, the same across engines
// (ServerMetricRow.Quantity). A counter's quantity is read as its increase over
// a span; a gauge's as its values.
const (
	QuantityRunning       = "running"         // gauge: requests in the running batch
	QuantityWaiting       = "waiting"         // gauge: requests queued
	QuantityKVUsage       = "kv_usage"        // gauge: KV-cache usage, a fraction (1 = full)
	QuantityPrefixQueries = "prefix_queries"  // counter: prompt tokens (or blocks) looked up in the prefix cache
	QuantityPrefixHits    = "prefix_hits"     // counter: of which found
	QuantityPrefixMisses  = "prefix_misses"   // counter: of which not found (where an engine counts misses, not queries)
	QuantityHitRate       = "prefix_hit_rate" // gauge: the engine's own hit rate (used only where it has no counters)
	QuantityPreemptions   = "preemptions"     // counter: requests preempted (vLLM) or retracted (SGLang)
	QuantityRequests      = "requests"        // counter: requests finished
)

// Engines as ScrapedEndpoint.Engine names them.
const (
	EngineVLLM     = "vllm"
	EngineSGLang   = "sglang"
	EngineTRTLLM   = "tensorrt-llm"
	EngineLlamaCpp = "llama.cpp"
	// EngineUnknown: the page parsed but no name of a known engine was on it;
	// its series are recorded raw, no quantity given.
	EngineUnknown = "unknown"
)

// ServerMetricRow is one row of server_metrics.parquet: one sample of one
// series in one scrape. Histograms and summaries are flattened as the text
// format writes them (NAME_bucket with le, NAME_sum, NAME_count; quantile).
type ServerMetricRow struct {
	// TNs is when the page had been read, on the run's clock (nanoseconds since
	// the run's start, as the turn log's times).
	TNs int64 `parquet:"t_ns,delta"`
	// Endpoint is the index of the scraped URL in the manifest's
	// server_metrics.endpoints.
	Endpoint int32  `parquet:"endpoint"`
	Metric   string `parquet:"metric,dict"`
	// Labels are the series' labels as Prometheus writes them, {a="x", b="y"};
	// null for a series without labels.
	Labels *string `parquet:"labels,dict,optional"`
	// Kind is the family's type: counter, gauge, histogram, summary, untyped.
	Kind  string  `parquet:"kind,dict"`
	Value float64 `parquet:"value"`
	// Quantity names what the metric measures (Quantity*) when the engine's name
	// is known; null otherwise.
	Quantity *string `parquet:"quantity,dict,optional"`
}

// ServerMetricColumns documents server_metrics.parquet's columns, in order.
func ServerMetricColumns() []Column {
	return []Column{
		{"t_ns", "when the page had been read, nanoseconds on the run's clock (as the turn log's times)"},
		{"endpoint", "index of the scraped URL in manifest.json's server_metrics.endpoints"},
		{"metric", "the sample's name as the page wrote it (a histogram's NAME_bucket, NAME_sum, NAME_count)"},
		{"labels", "the series' labels, {a=\"x\", b=\"y\"}; null when it has none"},
		{"kind", "the family's type: counter, gauge, histogram, summary, untyped"},
		{"value", "the sample's value"},
		{"quantity", "what the metric measures, the same name across engines (running, waiting, kv_usage, prefix_queries, prefix_hits, prefix_misses, prefix_hit_rate, preemptions, requests); null for a name of no known engine"},
	}
}

// ServerMetrics is the manifest's record of the run's scraping: what was
// scraped, how often, and which engine's names were found. Nil when scraping
// was off (--no-metrics).
type ServerMetrics struct {
	// Table is the run folder's table of the samples (ServerMetricsFile).
	Table string `json:"table"`
	// IntervalSeconds is the fixed interval between scrapes of each endpoint;
	// TimeoutSeconds and MaxBytes bound each scrape.
	IntervalSeconds float64 `json:"interval_s"`
	TimeoutSeconds  float64 `json:"timeout_s"`
	MaxBytes        int64   `json:"max_bytes"`
	// Note says what the numbers are not (ServerMetricsNote).
	Note      string            `json:"note"`
	Endpoints []ScrapedEndpoint `json:"endpoints"`
	// Error says why the table could not be written whole, "" when it was.
	Error string `json:"error,omitempty"`
}

// ScrapedEndpoint is one scraped URL's record.
type ScrapedEndpoint struct {
	// URL is the metrics URL, its secrets redacted.
	URL string `json:"url"`
	// Replica is the index of the --endpoint this URL belongs to (its default
	// metrics URL), null when the URLs were given apart (--metrics-url).
	Replica *int `json:"replica,omitempty"`
	// Engine names the engine whose metric names were found (Engine*):
	// "unknown" when the page had none (recorded raw), "" when no page parsed.
	Engine string `json:"engine"`
	// Quantities maps each quantity found to the metric that gave it.
	Quantities map[string]string `json:"quantities,omitempty"`
	// Scrapes counts the pages read and parsed, Failed those that failed
	// (status, timeout, size, parse; LastError says the last), Skipped the
	// ticks that came while the previous scrape was still going (a late scrape
	// is skipped, never queued).
	Scrapes int `json:"scrapes"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// Rows counts the table's rows from this endpoint.
	Rows      int64  `json:"rows"`
	LastError string `json:"last_error,omitempty"`
}

// EndpointRouting records how a run with several endpoints spread its turns:
// the mode and, per endpoint, what went there. Nil with one endpoint.
type EndpointRouting struct {
	// Mode is "round-robin" (the reference client's: one issued request after
	// another) or "session" (a trajectory's turns all go to one endpoint, picked
	// by its session id).
	Mode      string          `json:"mode"`
	Endpoints []EndpointTurns `json:"endpoints"`
	// Trajectories counts the trajectories that sent a turn; Split those whose
	// turns went to more than one endpoint.
	Trajectories int `json:"trajectories"`
	Split        int `json:"split"`
}

// EndpointTurns is what one endpoint of a run was sent.
type EndpointTurns struct {
	URL string `json:"url"` // redacted
	// Turns counts the turns sent there, WindowTurns those of them in the
	// performance window, Trajectories the trajectories that sent a turn there.
	Turns        int `json:"turns"`
	WindowTurns  int `json:"window_turns"`
	Trajectories int `json:"trajectories"`
}
