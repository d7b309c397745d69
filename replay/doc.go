// Package replay drives an OpenAI-compatible endpoint with a dataset's trajectories,
// closed-loop at a target number of active trajectories, and writes a per-turn Arrow
// log. It behaves like the MLPerf reference client's agentic strategy.
//
// # Slots
//
// Run keeps Concurrency trajectories active, each in its own slot with exactly one
// turn in flight. A slot issues a trajectory's next client turn when the previous
// one completed, after that turn's delay (delay_seconds × DelayScale, slept from
// the previous completion or the trajectory's start, and not part of any latency).
// A finished trajectory frees its slot for the next one. Trajectory k (0-based
// start order) replays the k-th conversation datasets.StartOrder draws (a
// shuffle of the conversations per pass over the dataset, seeded by the
// dataloader seed, as the reference draws it) as instance k div n + 1; its session id
// (datasets.SessionID) goes into every routing header, and salting (spec §4) makes
// its prompts unique to it. Request bodies are datasets.(*Dataset).AppendBody's
// bytes, built into a buffer the slot reuses; nothing is re-encoded.
//
// A turn fails on its timeout, an HTTP error status (a 429 too: there are no
// retries), a transport error or a broken or malformed stream; the rest of its
// trajectory is then logged as aborted without being sent, and the slot moves on.
//
// # Time
//
// A run has two contexts, as k6 has for graceful stops. The issuing context ends
// when no new turn may start: at an interrupt (the caller's ctx is cancelled), or
// at the end of the performance window with StopIssuingAtWindowEnd. The work
// context ends when in-flight turns must stop: Grace after an interrupt. So an
// interrupt stops issuing at once, lets in-flight turns finish for up to Grace, then
// cancels them; every client turn of a started trajectory still gets its row, the
// log is closed properly and the manifest says "interrupted". A second interrupt
// kills the process (cmd/agentrace restores default signal handling after the
// first); the log still reads up to its last flush, at most a second old, and the
// manifest keeps the state "running".
//
// The performance window ends (once) when a slot finishes a trajectory and none is
// left to start; turns issued before that moment are in the window.
//
// All times are read from Go's monotonic clock as nanoseconds since the run's
// start: scheduled (when the turn became due), issued, response headers, first
// token (the first non-empty fragment of content, reasoning or a tool call), every
// output-bearing chunk, and completed. Issued minus scheduled is the client's own
// lag.
//
// # Outputs
//
// RUNDIR/turns.arrows is the turn log (package runlog), written by one goroutine
// that flushes at least once a second; RUNDIR/manifest.json (schemas.RunManifest)
// is written atomically at the start (state "running") and at the end. With
// Telemetry.Metrics, RUNDIR/server_metrics.parquet holds what the endpoints'
// Prometheus pages said during the run (replay/promscrape), recorded in the
// manifest's server_metrics; with several endpoints the manifest's routing says
// where the turns went.
package replay
