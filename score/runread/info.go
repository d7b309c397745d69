package runread

import (
	"fmt"
	"path/filepath"

	"github.com/agentrace/agentrace/internal/relpath"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/score/archive"
)

// Info is what a run says about itself.
type Info struct {
	Kind        string
	Model       string
	Concurrency int
	// Dataset is the dataset the run names (its manifest's config.dataset, or the
	// reference config's performance dataset path), resolved against the run
	// directory when relative and found there; "" when it names none.
	Dataset string
	// DatasetHash is the content hash of the dataset the run was replayed from
	// (agentrace runs only).
	DatasetHash string
	// State is the manifest's run state (agentrace runs only).
	State string
	// Facts are all the run's facts.
	Facts archive.Facts
}

// ReadInfoAt reads what the run a path names says about itself (a run folder,
// an archive holding one run, or a run folder inside an archive).
func ReadInfoAt(p string) (Info, error) {
	run, err := archive.OpenRun(p, archive.Limits{})
	if err != nil {
		return Info{}, fmt.Errorf("read run %q: %w", p, err)
	}
	defer run.Source.Close()
	return ReadInfo(run)
}

// ReadInfo reads a run's facts: manifest (agentrace), config.yaml and summary
// (reference), point.yaml (submission).
func ReadInfo(run *archive.Run) (Info, error) {
	info := Info{Kind: run.Kind}
	f, err := run.Facts()
	info.Facts = f
	if err != nil {
		return info, err
	}
	info.Model, info.Concurrency, info.DatasetHash, info.State = f.Model, f.Concurrency, f.DatasetHash, f.State
	info.Dataset = datasetNear(run, f)
	return info, nil
}

// DatasetOf is the dataset a run names, resolved as scoring resolves it (see
// datasetNear); f is the run's facts.
func DatasetOf(run *archive.Run, f archive.Facts) string { return datasetNear(run, f) }

// datasetNear resolves the dataset a run names. An agentrace manifest records it
// relative to the run folder with the absolute path beside it
// (runlog.DatasetDir); a reference config names it relative to where the client
// ran, so it is tried as given, then relative to the run folder and each folder
// above (relpath.ResolveUnrooted). For a run inside an archive, the archive's own
// folder stands for the run folder.
func datasetNear(run *archive.Run, f archive.Facts) string {
	base := filepath.Dir(run.Source.Path)
	if run.Source.Kind == archive.SourceDir {
		base = filepath.Join(run.Source.Path, filepath.FromSlash(run.Dir))
	}
	if f.Manifest != nil {
		return runlog.DatasetDir(base, f.Manifest.Config)
	}
	return relpath.ResolveUnrooted(base, f.Dataset)
}
