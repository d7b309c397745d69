package report

import (
	"os"
	"path/filepath"
	"testing"
)

func TestZZDump(t *testing.T) {
	dir := os.Getenv("DUMP")
	if dir == "" {
		t.Skip()
	}
	sweep := writeFakeSweep(t, filepath.Join(dir, "sweep"), defaultFake())
	buildFake(t, Options{Runs: []string{sweep}, Out: filepath.Join(dir, "out")})
}
