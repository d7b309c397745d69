// Package archive finds and opens the runs reviewers hold, in a directory or in an
// archive read in place (.tar.gz, .tgz, .tar, .zip; nothing is ever extracted to
// disk):
//
//   - agentrace run folders (turns.arrows, manifest.json);
//   - reference client run folders, the report_dir of mlcommons/endpoints
//     (config.yaml, report.txt, events.jsonl, sample_idx_map.json,
//     performance/result_summary.json, accuracy/accuracy_results.json,
//     metrics/final_snapshot.json);
//   - points of a submission tree as the submission checker reads it
//     (<system>/<model>/r<N>/ with point.yaml and a result summary, in any of the
//     checker's layouts: result_summary.json + accuracy_results.json +
//     system_desc.json, or mlperf_endpoints_log_summary.json +
//     mlperf_endpoints_log_detail.json + accuracy/ + run_metadata.json +
//     report.txt + src/; older trees with results/point_<N>/), grouped into
//     curves by their <system>/<model> folder, with the curve's
//     sweep_summary.csv and sweep_distributions.csv.
//
// The seam, for every command that reads archived runs (score, rescore, report,
// audit):
//
//	src, err := archive.Open(path, archive.Limits{})   // or OpenPath / OpenRun
//	defer src.Close()
//	for _, run := range archive.Find(src) {            // Curves(runs) groups points
//		run.Kind, run.Label, run.Err                   // identity; Err: not readable safely
//		facts, err := run.Facts()                      // model, concurrency, dataset, settings
//		name, format := run.EventsName()               // the event log, streamed with run.Open
//		b, err := run.ReadFile(run.SummaryName())      // published files, size-limited
//	}
//
// The turns of a run, as schemas.TurnRecord, come from package score/runread
// (ScanTurns: turns.arrows or the event log, streamed), which is what report's
// Accumulator folds and what score's inline accuracy reads. This package knows
// where files are and how to read them safely; runread knows what they say.
//
// Safety. A directory source is read through an os.Root: nothing outside it is
// opened, a symbolic link leading out of it is refused (Source.Problems) and a
// special file is never opened. An archive entry whose name is absolute or has a
// .. component, and every link entry, is refused likewise. A refused entry inside
// a run's folder sets that run's Err; one elsewhere becomes a run of Kind "" with
// Err, so that a table of runs names it. An archive whose entries expand past
// Limits.MaxExpansion (default 10) times its size is refused whole (infile.ErrExpansion),
// and ReadFile reads at most Limits.MaxFileBytes (64 MiB) of a file. A tar.gz has
// no index: small entries (up to 1 MiB each, 64 MiB in all) are kept in memory by
// the first pass, and opening a big one goes on decompressing from where an
// earlier read of the archive ended, when that is not past it, else from the
// start. Runs read in the order of Run.Position (rescore reads them so) thus read
// a .tar.gz in one more pass, whatever its number of runs.
package archive
