package simulate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/relpath"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
)

// WriteSweep simulates each concurrency of a dataset workload and writes it as a
// run folder OUT/c<N>/ (manifest.json and turns.arrows, on the modelled clock),
// so that score, report and audit read it like a replay's sweep. datasetDir is
// the dataset's folder, recorded in each manifest. out is claimed as a sweep
// (internal/outguard): it may replace only an earlier sweep, with overwrite.
// jobs points run at once, as in Sweep.
func WriteSweep(ctx context.Context, o Options, concurrencies []int, jobs int, out, datasetDir string, overwrite bool) ([]*Point, error) {
	if o.Data == nil {
		return nil, notice.Errorf("dataset", "simulate: only a dataset workload has turn logs to write; give a dataset")
	}
	// The sweep is built beside an earlier one and replaces it only when every
	// point is written; on an error the earlier sweep stays as it was.
	claim, err := outguard.Take(outguard.Output{Path: out, Kind: outguard.Sweep, Overwrite: overwrite}, datasetDir)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	defer claim.Release()
	pts, err := sweep(concurrencies, jobs, func(c int) (*Point, error) {
		o := o
		o.Concurrency = c
		return writeRun(ctx, o, filepath.Join(claim.Dir(), fmt.Sprintf("c%d", c)), datasetDir)
	})
	if err != nil {
		return nil, err
	}
	if err := claim.Commit(); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	for _, p := range pts {
		p.RunDir = filepath.Join(claim.Path, filepath.Base(p.RunDir))
	}
	return pts, nil
}

// writeRun simulates one point into a run folder.
func writeRun(ctx context.Context, o Options, dir, datasetDir string) (*Point, error) {
	claim, err := outguard.Take(outguard.Output{Path: dir, Kind: outguard.Run, Live: true}, datasetDir)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	defer claim.Release()
	lf, err := runlog.Create(filepath.Join(dir, schemas.TurnLogFile), nil)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	o.Records = func(r *schemas.TurnRecord) error { return lf.Write(r) }
	var m schemas.RunManifest
	o.manifest = func(mm schemas.RunManifest) { m = mm }
	started := time.Now()
	p, err := Run(ctx, o)
	if err == nil {
		err = lf.Close()
	} else {
		_ = lf.Abort()
	}
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	m.StartedAt, m.StartedUnixNs = started.UTC().Format(time.RFC3339Nano), started.UnixNano()
	m.Config.Dataset, m.Config.DatasetAbs = relpath.Record(dir, datasetDir)
	m.Config.Endpoint = "simulate:" + o.Hardware.Name
	m.Config.RoutingHeaders = []string{"X-Session-ID"}
	m.Config.NonOfficial = []string{"modelled by agentrace simulate, not measured"}
	if err := runlog.WriteManifest(dir, m); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	if err := os.Chtimes(dir, started, started); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	if err := claim.Commit(); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	p.RunDir = dir
	return p, nil
}
