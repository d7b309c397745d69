package runread

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/score/archive"
)

func pathExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func TestReadReferenceConfig(t *testing.T) {
	info, err := ReadInfoAt(fixtureDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != archive.KindReference || info.Model != "Qwen/Qwen3.6-35B-A3B" || info.Concurrency != 4 ||
		info.Facts.Trajectories != 6 || info.Facts.Salt == nil || !*info.Facts.Salt || info.Facts.LoadPattern != "agentic_inference" {
		t.Errorf("%+v", info)
	}
	if !strings.HasSuffix(info.Dataset, "dataset.jsonl") || !pathExists(info.Dataset) {
		t.Errorf("dataset %q not resolved beside the run", info.Dataset)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "events.jsonl"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("model_params:\n  name: 'moonshotai/Kimi-K3'\ndatasets:\n  - name: acc\n    type: accuracy\n    path: acc.jsonl\n  - path: \"perf.jsonl\"\n    type: performance\nsettings:\n  load_pattern:\n    target_concurrency: 64\n"), 0o644)
	info, err = ReadInfoAt(dir)
	if err != nil || info.Model != "moonshotai/Kimi-K3" || info.Dataset != "perf.jsonl" || info.Concurrency != 64 {
		t.Errorf("%+v %v", info, err)
	}
}
