// Package chaos runs agentrace's faults as bounded tests (`make chaos`, also run in
// CI by .ci/run): every failure agentrace has had (data loss, hangs, unbounded
// growth, wrong answers), each in a child process under a memory limit so that growth
// fails the test instead of the machine, each asserting that nothing was lost,
// that manifests tell the truth, and that the command exited promptly.
//
// The tests:
//   - TestChaosOutputOverInput: every command that writes, pointed at
//     its input, inside it, over a symlink to it, over a user's file or folder, over
//     an agentrace output of another kind, with --overwrite: exit 1, every file
//     under the test's folder byte for byte as it was, no temporary left.
//   - TestChaosSignals: each command, on an input that keeps it busy, gets
//     SIGTERM, then in a second run SIGINT, a third of the way through its
//     uninterrupted duration (runs: once their manifest exists): exit 143 or 130
//     within promptExit, no output left (a run: a whole log and an interrupted
//     manifest), no temporary file; and the sim stops on SIGTERM.
//   - TestChaosCrash: a replay killed by SIGKILL keeps its flushed
//     rows (log dump exits 0, the manifest says running, score reads it); a replay
//     on a full disk (RLIMIT_FSIZE) exits 1 with a failed manifest counting exactly
//     the rows its log holds.
//   - TestChaosKilledRunReaders: report reads a run still being written, as it
//     is then, saying so; once the replay is killed by SIGKILL, report, log export
//     and score read the rows log dump reads (its whole batches), each warning
//     that the run did not end.
//   - TestChaosHostileRuns: rescore of a FIFO manifest, a /dev/zero
//     dataset, an empty and a random-bytes turn log beside a good run: an error row
//     each, promptly.
//   - TestChaosSecrets: a server that echoes every header it gets (the API key,
//     --header values, the Basic form of the endpoint's password) in error
//     frames, 401 bodies and completions: no file under the test's folder (turn
//     logs, manifests, scores, the report, log export's table, Parquet decoded)
//     and no command's output holds a secret; an endpoint whose password makes it
//     unparsable exits 1 without showing it.
//   - TestChaosClientFault: a replay at concurrency 100 under RLIMIT_NOFILE 64
//     (`ulimit -n 64`) exits 1 naming the client fault (EMFILE), its manifest
//     failed with stop_cause client_fault, no row logged as an endpoint error.
//   - TestChaosClaimSecondWriterRefused: two `replay --overwrite` into one run a
//     second apart, two `report --out R` at once: the second is refused at once,
//     naming the first's pid and command; the output is whole.
//   - TestChaosClaimInterruptKeepsEarlier: Ctrl-C (once, twice) half a second
//     into `replay --overwrite` over a complete run, or a full disk while it
//     runs, and Ctrl-C (once, twice) during a second demo: the earlier run and
//     the first demo stay byte for byte, nothing is left beside them.
//   - TestChaosConfig: `replay --config` given a FIFO (as the config or its
//     dataset path), /dev/zero, a 70 MiB config, an alias bomb of a kilobyte or
//     target_concurrency 1e9: exit 2 at once, without a signal, in little
//     memory; a config of concurrency 100000 with warm-up on under RLIMIT_NOFILE
//     256 warms one connection per trajectory that can be active, and on SIGINT
//     exits 130 promptly with an interrupted manifest and a whole log.
//   - TestChaosInProcess: the other packages' fault tests (a
//     2 GiB answer, an endless stream, a log write failing like a full disk, a gzip
//     bomb, absurd delays, the sim's hostile bodies and connections, hostile
//     files, hostile tokenizer folders, split patterns and chat templates, the
//     fuzz crashers, secrets, Ctrl-C) run in their test binaries under a memory
//     budget.
//
// The package has tests only. They run when AGENTRACE_CHAOS=1 (the Makefile sets
// it) and skip otherwise, so `go test ./...` stays fast.
//
// How a case runs: the harness builds the agentrace binary (CGO_ENABLED=0) and,
// for faults reproduced by another package's tests, those packages' test binaries
// (one go build). Each is started as a child of this test binary re-executed with
// AGENTRACE_CHAOS_EXEC=1: TestMain then sets RLIMIT_AS (the Go runtime's own
// reservation, baseAS, plus the case's budget), RLIMIT_FSIZE and RLIMIT_NOFILE
// when asked, and execs the target, which keeps them. A child over its budget fails to allocate
// and dies; the harness also checks its peak resident set (VmHWM, sampled) against
// the budget, and kills its process group when it outlives its deadline.
//
// To add a case: a Test function that calls chaos(t) first, then h.run (a command
// to completion) or h.start (a process to signal, kill or serve), and asserts on
// the exit status, the elapsed time, the peak RSS, and the files. To run a test of
// another package under a limit, add it to inProcess (see inprocess_test.go).
package chaos
