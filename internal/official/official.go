// Package official is the one definition of an official agentic run (rules:
// "Official agentic settings"): cache salting on, inter-turn delays on at scale 1,
// issuing not stopped at the window end, every turn streamed as the dataset asks
// and nothing added to the requests, a trajectory budget that is a positive
// multiple of the dataset's size, a sampling profile (the model's name and its
// sampling parameters), and the official dataset itself, unchanged (its file's
// sha256 is DatasetSHA256). replay records the verdict in the run manifest
// (schemas.RunConfig.Official and NonOfficial); score and report judge runs that
// did not record it (the reference client's runs, submission points) and curves
// with the same conditions.
package official

import (
	"fmt"
	"sort"
)

// Conditions are what a run did, as far as it is known: a nil field was not
// recorded and is not judged (a reference run's config records no profile).
type Conditions struct {
	Salt   *bool
	Delays *bool
	// DelayScale multiplies the delays (0: 1).
	DelayScale  float64
	StopIssuing *bool
	// Stream is the run's streaming mode (nil: not recorded); StreamedTurns and
	// NonStreamedTurns count the client turns each way (both 0: not counted).
	Stream                          *bool
	StreamedTurns, NonStreamedTurns int
	// StreamUsage: the requests asked for server usage (stream_options).
	StreamUsage bool
	// Trajectories is the budget (0: not recorded); DatasetSize the dataset's
	// conversations (0: unknown, and then a recorded budget cannot be official).
	Trajectories, DatasetSize int
	// Profile is the sampling profile the requests carried, "" for none (nil: not
	// recorded); Model the model name they carried.
	Profile *string
	Model   string
	// OfficialDataset tells whether the dataset was ingested from the official
	// dataset's file, unchanged (DatasetSHA256); nil: not recorded.
	OfficialDataset *bool
}

// DatasetSHA256 is the sha256 of the official agentic dataset's file as the
// reference client verifies it: submitters must use this dataset unchanged.
const DatasetSHA256 = "1beb24c882122df96571cf11b390acbea388944038bc55c78b891475459014ae"

// IsDataset tells whether the files a dataset was ingested from, named by their
// sha256, are the official dataset: exactly one file, the official one.
func IsDataset(sha256s ...string) bool {
	return len(sha256s) == 1 && sha256s[0] == DatasetSHA256
}

// Reasons lists, sorted, why a run with these conditions is not official; none
// means it is.
func Reasons(c Conditions) []string {
	var why []string
	if c.Salt == nil || !*c.Salt {
		why = append(why, "cache salting off (agentic_inference.enable_salt)")
	}
	scale := c.DelayScale
	if scale == 0 {
		scale = 1
	}
	switch {
	case c.Delays == nil || !*c.Delays:
		why = append(why, "inter-turn delays off (agentic_inference.inject_tool_delay)")
	case scale != 1:
		why = append(why, fmt.Sprintf("delays scaled by %.4g", scale))
	}
	if c.StopIssuing != nil && *c.StopIssuing {
		why = append(why, "stops issuing at the window end: not every started trajectory finishes")
	}
	noStream := c.Stream != nil && !*c.Stream
	switch turns := c.StreamedTurns + c.NonStreamedTurns; {
	case noStream && c.StreamedTurns > 0:
		why = append(why, fmt.Sprintf("streaming off: no first-token or per-token times for %d of %d client turns (the other %d stream: their rows set stream)",
			c.NonStreamedTurns, turns, c.StreamedTurns))
	case noStream:
		why = append(why, "streaming off: no first-token or per-token times")
	case c.NonStreamedTurns > 0:
		why = append(why, fmt.Sprintf("the dataset turns streaming off on %d of %d client turns (their rows set stream false): no first-token or per-token times for them",
			c.NonStreamedTurns, turns))
	}
	if c.StreamUsage && !noStream {
		why = append(why, `server usage requested: requests carry "stream_options", which the reference client does not send`)
	}
	if c.OfficialDataset != nil && !*c.OfficialDataset {
		why = append(why, "not the official dataset: it was not ingested from the official file unchanged (sha256 "+DatasetSHA256[:12]+"...)")
	}
	if b := Budget(c.Trajectories, c.DatasetSize); b != "" {
		why = append(why, b)
	}
	if c.Profile != nil && *c.Profile == "" {
		model := "no model name"
		if c.Model != "" {
			model = fmt.Sprintf("the model name %q", c.Model)
		}
		why = append(why, fmt.Sprintf("no sampling profile: the requests carry %s and none of the model's sampling parameters", model))
	}
	sort.Strings(why)
	return why
}

// Budget says why a trajectory budget is not official ("" when it is, or was not
// recorded: 0): it must be a positive multiple of the dataset's size (0: unknown).
func Budget(trajectories, datasetSize int) string {
	switch n := trajectories; {
	case n == 0:
		return ""
	case datasetSize <= 0:
		return fmt.Sprintf("budget of %d trajectories, and the dataset's size is not known", n)
	case n < 0 || n%datasetSize != 0:
		return fmt.Sprintf("budget of %d trajectories is not a positive multiple of the dataset size %d", n, datasetSize)
	}
	return ""
}

// Bool is a pointer to v, for Conditions' recorded values.
func Bool(v bool) *bool { return &v }

// String is a pointer to v, for Conditions.Profile.
func String(v string) *string { return &v }
