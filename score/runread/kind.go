package runread

import "github.com/agentrace/agentrace/score/archive"

// The kind of a run (archive.Run.Kind) is decided by package archive from its
// files and read here only: the packages that read runs ask what a run holds.

// HasTurnLog tells that a run's turns come from agentrace's turn log
// (turns.arrows, with manifest.json): its records carry the server's token
// counts and the replay's own settings, and its manifest says its state. Every
// other run's turns come from an event log, or it has none.
func HasTurnLog(run *archive.Run) bool { return run.Kind == archive.KindAgentrace }

// IsPoint tells that a run is a point of a submission tree (r<N>/): what it
// publishes (point.yaml, its result summary, the accuracy results) is what the
// submission checker reads, and its event log may be absent.
func IsPoint(run *archive.Run) bool { return run.Kind == archive.KindSubmission }
