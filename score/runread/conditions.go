package runread

import (
	"github.com/agentrace/agentrace/internal/official"
	"github.com/agentrace/agentrace/score/archive"
)

// Conditions are the official settings (internal/official) as a run's own files
// record them. An agentrace run's manifest records every one, with the sampling
// profile and the model its requests carried. A reference run or a submission
// point records what its config.yaml says; a setting it leaves out is the
// reference's default, which for salting, delays and stop-issuing is off (the
// Field defaults of the reference's config schema), so it is left nil and
// official.Reasons counts it as off. Such a run records no sampling profile.
// datasetSize is the conversations of the dataset the run was replayed from, when
// the caller knows it (0: unknown); an agentrace manifest records its own.
func Conditions(f archive.Facts, datasetSize int) official.Conditions {
	if m := f.Manifest; m != nil {
		c := m.Config
		return official.Conditions{
			Salt: official.Bool(c.Salt), Delays: official.Bool(c.Delays), DelayScale: c.DelayScale,
			StopIssuing: official.Bool(c.StopIssuingAtWindow), Stream: official.Bool(c.Stream),
			Trajectories: c.Trajectories, DatasetSize: m.DatasetSize,
			Profile: official.String(c.Profile), Model: c.Model, OfficialDataset: c.OfficialDataset,
		}
	}
	return official.Conditions{Salt: f.Salt, Delays: f.Delays, StopIssuing: f.StopIssuing, Stream: f.Stream,
		Trajectories: f.Trajectories, DatasetSize: datasetSize}
}
