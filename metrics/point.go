package metrics

import "github.com/agentrace/agentrace/schemas"

// Point is what folding one run's turns gives: the rules' metrics over its
// performance window, with the per-turn values the report's plots and tables
// read. Its JSON fields are part of points.json (the evaluated point embeds it).
type Point struct {
	SystemTPS                Num   `json:"system_tps"`
	E2EAvgInteractivity      Num   `json:"e2e_avg_interactivity"`
	OutputTokensPerTurnTotal int64 `json:"output_tokens_per_turn_total"`
	E2ETurnTimeSecondsTotal  Num   `json:"e2e_turn_time_seconds_total"`
	TokenTimes

	ITLP50Ms     Num `json:"itl_p50_ms"`
	ITLP90Ms     Num `json:"itl_p90_ms"`
	ITLP99Ms     Num `json:"itl_p99_ms"`
	LatencyP50Ms Num `json:"latency_p50_ms"`
	LatencyP90Ms Num `json:"latency_p90_ms"`
	LatencyP99Ms Num `json:"latency_p99_ms"`

	// ISL and OSL are the performance window's input and output token statistics;
	// OSLFullRun covers every completed turn of the run (the OSL gate's input).
	ISL        *Stats `json:"isl"`
	OSL        *Stats `json:"osl"`
	OSLFullRun *Stats `json:"osl_full_run"`

	// ProgressRate is the distribution over trajectories of output tokens / (e2e
	// time - total delay), in tokens per second.
	ProgressRate *Stats `json:"progress_rate_tokens_per_s"`
	// PrefixCacheHitRatio is sum(cached_tokens) / sum(prompt_tokens) over window
	// turns whose server reported both; null when none did.
	PrefixCacheHitRatio Num `json:"prefix_cache_hit_ratio"`
	PrefixCacheTurns    int `json:"prefix_cache_turns"`
	// ClientLagP99Ms is the P99 of issued - scheduled over the window's turns.
	ClientLagP99Ms Num `json:"client_lag_p99_ms"`

	// TurnsPerS is the request throughput: completed (ok) window turns per second
	// of the window.
	TurnsPerS Num `json:"turns_per_s"`
	// Domains splits the window's latency and throughput by domain (coding,
	// workflow): the same metrics over each domain's turns.
	Domains map[string]*DomainMetrics `json:"domains"`
	// ErrorKinds counts every turn of the run that did not succeed by kind
	// (runlog.ErrorKind: http_429, http_5xx, stream_cut, timeout, aborted, ...).
	ErrorKinds map[string]int `json:"error_kinds"`
	// SLO is the share of completed window turns within the thresholds given to
	// the report (--slo-ttft-ms, --slo-tps-per-user); nil when none was given.
	SLO *SLOView `json:"slo,omitempty"`

	// Counts are all turns of the run by status; WindowCounts the performance
	// window's issued turns by status.
	Counts       map[string]int `json:"counts"`
	WindowCounts map[string]int `json:"window_counts"`
	Issued       int            `json:"n_samples_issued"`
	Completed    int            `json:"n_samples_completed"`
	Failed       int            `json:"n_samples_failed"`

	WindowStartNs   int64 `json:"window_start_ns"`
	WindowEndNs     int64 `json:"window_end_ns"`
	WindowDurationS Num   `json:"window_duration_s"`
	// TurnsExcludedByWindow counts turns issued after the window closed;
	// TurnsNotIssued counts turns never sent (aborted after a failure).
	TurnsExcludedByWindow int `json:"turns_excluded_by_window"`
	TurnsNotIssued        int `json:"turns_not_issued"`

	// TokenSource names where OSL counts came from ("tokenizer:<name>" or
	// "server_usage"); ISLSource likewise. Unofficial is true unless both are the
	// reference tokenizer.
	TokenSource string `json:"token_source"`
	ISLSource   string `json:"isl_source"`
	// ISLNote and TokenNote say why official counts were not available for some
	// turns, "" when they were.
	ISLNote   string `json:"isl_note,omitempty"`
	TokenNote string `json:"token_note,omitempty"`
	// LogNote says the turn log was cut short or is not a finished run's (a killed
	// run, one still being written), "" otherwise.
	LogNote string `json:"log_note,omitempty"`
	// ITLNote says why ITL is null although chunks were timed: the server wrote
	// most chunks in bursts (CoalescedITL), so their gaps measure the client's
	// read loop, not the server.
	ITLNote string `json:"itl_note,omitempty"`
	// WindowNote says the performance window is too short for its metrics to be
	// more than noise (ShortWindow), "" otherwise.
	WindowNote string `json:"window_note,omitempty"`
	Unofficial bool   `json:"unofficial"`
	// Tokenizer is the tokenizer the counts were made with and whether it is a
	// stand-in for the model's own (which makes the point Unofficial); nil
	// without one.
	Tokenizer *schemas.TokenizerUse `json:"tokenizer,omitempty"`
	// MissingOSL counts completed window turns without any token count.
	MissingOSL int `json:"missing_osl"`

	// Flight holds the (issued, completed) run-clock times of every sent turn, for
	// the in-flight timeline (completed 0 when the turn never completed).
	Flight [][2]int64 `json:"-"`
	// Samples are per-turn values for the plots.
	Samples []TurnSample `json:"-"`
	// Summary is the reference-shaped result_summary.json of the point.
	Summary *ResultSummary `json:"-"`
}
