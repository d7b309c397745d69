package chaos

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inProcess are the faults reproduced by other packages' own tests (a fake
// endpoint streaming 2 GB, a log writer failing like a full disk, ...): each test
// binary runs those tests under the memory budget, so that growth fails them here
// even where their own in-process measurements would not. Add a fault's tests
// here when its package has them.
var inProcess = []struct {
	fault  string // the faults the tests reproduce
	pkg    string
	run    []string // test names
	budget int64
	env    []string
}{
	// One streamed answer of 2 GiB, an endless stream: output capped, log whole.
	{"huge and endless answers", "./replay", []string{"TestHugeAnswer", "TestEndlessStreamTimeout", "TestOversizedFrame", "TestOutputCapUTF8"},
		512 << 20, []string{"AGENTRACE_HUGE_ANSWER_BYTES=2147483648"}},
	// A log write failing with ENOSPC stops issuing, keeps the flushed rows, a
	// true manifest; --max-duration ends any run.
	{"full disk, absurd delays", "./replay", []string{"TestLogWriteFailure", "TestMaxDuration", "TestSecondInterrupt"}, 256 << 20, nil},
	// A run never replaces its dataset.
	{"run over its dataset", "./replay", []string{"TestRunNeverOverwritesItsDataset", "TestSweepFolder"}, 256 << 20, nil},
	// Ingest never replaces its input; gzip bomb; absurd delays.
	{"output over input, gzip bomb, absurd delays", "./ingest", []string{"TestOutputNeverOverlapsInput", "TestOverwriteOnlyADataset", "TestExportOutput", "TestGzipBomb", "TestAbsurdDelayIsCapped"},
		768 << 20, nil},
	// The sim's bodies, slow clients, connection limit.
	{"sim bodies and slow clients", "./simserver", []string{"TestBodyLimits", "TestSlowClients"}, 512 << 20, nil},
	// FIFOs and devices as inputs; unreadable turn logs.
	{"hostile inputs, unreadable logs", "./score", []string{"TestRescoreHostileFiles", "TestUnreadableTurnLogIsAnError", "TestScoresNeverReplaceOthersFiles", "TestRescoreOutput"}, 512 << 20, nil},
	{"hostile inputs", "./internal/infile", []string{"TestOpenRefusesWhatIsNotARegularFile", "TestReadFileLimit"}, 64 << 20, nil},
	{"output over input", "./internal/outguard", []string{"TestCheckPaths", "TestCheckReplace", "TestClaimKeepsTheEarlierOutput"}, 64 << 20, nil},
	// A full disk under the log (manifest and flushed rows kept); unreadable,
	// garbage-length and cut logs.
	{"full disk, unreadable and cut logs", "./runlog", []string{"TestManifestOnFullDisk", "TestAbortKeepsFlushedRows", "TestUnreadableLogs",
		"TestGarbageLengthsAllocateNothing", "TestTruncated", "TestUnclosed"}, 256 << 20, nil},
	// The JSON core refuses trailing garbage; the fuzz crashers stay fixed.
	{"trailing garbage, fuzz crashers", "./internal/jsontext", []string{"TestValid", "TestUnquote", "FuzzScanner", "FuzzUnquote", "FuzzAppendCompact"}, 256 << 20, nil},
	{"trailing garbage", "./replay", []string{"FuzzChunk", "FuzzSSE", "TestChunkScannerMatchesEncodingJSON", "TestStreamTolerance"}, 256 << 20, nil},
	{"fuzz crashers", "./ingest", []string{"FuzzParseLine"}, 256 << 20, nil},
	// Secrets a server echoes (whole or cut), header values, unparsable endpoint
	// passwords; client faults (EMFILE, ENOBUFS, EADDRNOTAVAIL) fail the run.
	{"secrets, client faults", "./replay", []string{"TestHeaderValuesNeverRecorded", "TestEchoedSecretsMasked", "TestCutSecretsMasked",
		"TestUnparsableEndpointPasswordNeverShown", "TestClientFaultFailsTheRun"}, 256 << 20, nil},
	// A hostile tokenizer folder (refs/main or a file a FIFO, /dev/zero,
	// /proc/self/environ), a split pattern that backtracks without end (and
	// Ctrl-C during it), chat templates that recurse, range over 10^9 items,
	// repeat a string 10^9 times; their fuzz targets.
	{"hostile tokenizer folders, patterns and templates", "./tokens", []string{"TestHostileHubFolder", "TestBacktrackingPattern",
		"TestBacktrackingInterrupted", "TestRenderBudget", "TestTemplateRefused", "FuzzRenderBudget", "FuzzSplitPattern"}, 512 << 20, nil},
	// Secrets never written; log dump of a cut log; Ctrl-C and a second Ctrl-C.
	{"secrets, cut logs, Ctrl-C", "./cmd/agentrace", []string{"TestSecretsNeverWritten", "TestLogDumpOfACutLog", "TestReplayCtrlC"}, 512 << 20, nil},
}

// TestChaosInProcess runs the inProcess tests, each package's test binary under
// its budget.
func TestChaosInProcess(t *testing.T) {
	h := chaos(t)
	for _, c := range inProcess {
		name := strings.TrimPrefix(c.pkg, "./") + ":" + strings.Join(c.run, ",")
		t.Run(name, func(t *testing.T) {
			h := &harness{t: t}
			bin := testBinary(t, c.pkg)
			p := h.run(spec{budget: c.budget, dir: filepath.Join(repoRoot, c.pkg), env: c.env}, 10*time.Minute,
				bin, "-test.run", "^("+strings.Join(c.run, "|")+")$", "-test.v", "-test.count=1")
			p.expectExit(0)
			out := p.stdout.String()
			for _, name := range c.run {
				if !strings.Contains(out, "--- PASS: "+name) && !strings.Contains(out, "--- SKIP: "+name) {
					t.Errorf("%s: %s did not run:\n%s", c.fault, name, tail(out))
				}
				if strings.Contains(out, "--- SKIP: "+name) {
					t.Errorf("%s: %s skipped:\n%s", c.fault, name, tail(out))
				}
			}
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "MiB") || strings.Contains(l, "heap grew") {
					t.Log(strings.TrimSpace(l))
				}
			}
		})
	}
	_ = h
}
