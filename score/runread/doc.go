// Package runread reads runs of every format as turn records: agentrace's turn log
// (turns.arrows, checked against its manifest.json), the reference client's event
// log (events.jsonl) and a submission point's detail log
// (mlperf_endpoints_log_detail.json, a JSON array). Package score/archive finds
// the runs and opens their files; this package knows what the files say.
//
//	info, err := runread.ReadInfo(run)                  // model, concurrency, dataset, facts
//	scan, err := runread.ScanTurns(ctx, run, func(rec *schemas.TurnRecord) error { ... })
//	scan, err := runread.Scan(ctx, run, runread.ScanOptions{Records: fold, Batches: rows.Add})
//
// ScanTurns yields one schemas.TurnRecord per client turn whatever the format,
// which is what report's Accumulator folds and audit re-derives; TurnScan says
// what the records cannot: the file read, a turn log cut short, the turn log's
// identity (what a scores.json must have scored), event lines skipped, and the
// performance window of an event log. The checks every reader makes are made
// here once: a turn log that disagrees with its finished run's manifest is
// refused (runlog.ScanRun), and the identity of the log read is what
// runlog.CheckScored compares a scores.json with.
//
// A run's log is read once whoever reads it: Scan makes one pass and feeds
// every consumer its ScanOptions name, the turn records (what ScanTurns gives)
// beside what scoring reads at speed: a turn log's batches (TurnLogRows, the
// columns scoring reads, zero-copy, Arrow buffers recycled by a BufferPool
// across runs) or an event log's events, each line decoded once (DecodeEvent)
// and each complete event's output once (Event.Output: TextModelOutput, tool
// calls merged as the reference merges them).
package runread
