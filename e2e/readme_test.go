package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/testenv"
)

// readmeBlocks returns the README's runnable blocks: every ```sh block whose first
// line is "# from FOLDER/", keyed by folder, in README order.
func readmeBlocks(t *testing.T) (folders []string, blocks []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)```sh\n# from ([^\n]+?)/?\n(.*?)```")
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		folders = append(folders, m[1])
		blocks = append(blocks, m[2])
	}
	return folders, blocks
}

// TestReadmeCommands runs the demo, then every command of the README's runnable
// blocks (```sh blocks starting "# from FOLDER/"), as written, in the folder they
// say, with the agentrace just built first on PATH; any command that fails (a
// pipeline included) fails the test. The demo runs with two points (1 and 8) to keep
// the test short; its output has the layout `make demo` leaves.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo and the README's commands")
	}
	folders, blocks := readmeBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("the README has no runnable block (```sh starting with \"# from FOLDER/\")")
	}
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "agentrace"), "./cmd/agentrace")
	build.Dir = testenv.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	run := func(dir, script string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(root, "agentrace demo --out demo-out --concurrency 1,8 --speedup 200"); err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for i, block := range blocks {
		dir := filepath.Join(root, filepath.FromSlash(folders[i]))
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Errorf("README block %d runs from %s/, which the demo did not make", i+1, folders[i])
			continue
		}
		n := 0
		for _, line := range strings.Split(block, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			n++
			out, err := run(dir, line)
			if err != nil {
				t.Errorf("README, from %s/: %s\n%v\n%s", folders[i], line, err, out)
				continue
			}
			t.Logf("from %s/: %s: ok (%d bytes of output)", folders[i], line, len(out))
			// what the commands must show, beyond exiting 0
			switch {
			case strings.HasPrefix(line, "agentrace rescore"):
				if !strings.Contains(out, " 0 could not be scored") {
					t.Errorf("%s: some run could not be scored:\n%s", line, out)
				}
			case strings.HasPrefix(line, "agentrace score"):
				if !strings.Contains(out, "inline accuracy") {
					t.Errorf("%s: no accuracy:\n%s", line, out)
				}
			}
		}
		if n == 0 {
			t.Errorf("README block %d (from %s/) has no command", i+1, folders[i])
		}
	}
}
