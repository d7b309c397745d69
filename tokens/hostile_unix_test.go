//go:build unix

package tokens

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileHubFolder: a hub cache whose refs/main or whose files are no
// regular file (a link to /proc/self/environ, /dev/zero, a FIFO), are too
// large, or hold something else than they should, is refused at once, by
// name, quoting at most a short excerpt of what the file holds.
func TestHostileHubFolder(t *testing.T) {
	const commit = "3333333333333333333333333333333333333333"
	const secret = "sk-HUBSECRET-0123456789abcdef"
	t.Setenv("AGENTRACE_TEST_SECRET", secret)
	tests := []struct {
		name  string
		setup func(t *testing.T, ref, snap string)
		want  string
	}{
		{"ref links to /proc/self/environ", func(t *testing.T, ref, _ string) { relink(t, "/proc/self/environ", ref) }, "/proc entry"},
		{"ref is /dev/zero", func(t *testing.T, ref, _ string) { relink(t, "/dev/zero", ref) }, "character device"},
		{"ref is a FIFO", func(t *testing.T, ref, _ string) { fifo(t, ref) }, "FIFO"},
		{"ref too large", func(t *testing.T, ref, _ string) {
			write(t, ref, strings.Repeat("AGENTRACE_TEST_SECRET="+secret+"\n", 1000))
		}, "file too large"},
		{"ref holds a secret", func(t *testing.T, ref, _ string) {
			write(t, ref, "PATH=/usr/bin\nAGENTRACE_TEST_SECRET="+secret+"\n")
		}, `holds "PATH=/usr/bin"... (`},
		{"tokenizer.json is a FIFO", func(t *testing.T, _, snap string) { fifo(t, filepath.Join(snap, HFTokenizerFile)) }, "FIFO"},
		{"config is /dev/zero", func(t *testing.T, _, snap string) { relink(t, "/dev/zero", filepath.Join(snap, ConfigFile)) }, "character device"},
		{"template is a FIFO", func(t *testing.T, _, snap string) { fifo(t, filepath.Join(snap, TemplateFile)) }, "FIFO"},
		{"template too large", func(t *testing.T, _, snap string) {
			write(t, filepath.Join(snap, TemplateFile), strings.Repeat("x", int(templateLimit)+1))
		}, "file too large"},
		{"config template too large", func(t *testing.T, _, snap string) {
			write(t, filepath.Join(snap, ConfigFile), `{"chat_template": "`+strings.Repeat("x", int(templateLimit)+1)+`"}`)
		}, "the limit is"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hub := filepath.Join(t.TempDir(), "hub")
			snap := hubSnapshot(t, hub, "Org/Hostile", "main", commit)
			ref := filepath.Join(hub, "models--Org--Hostile", "refs", "main")
			tc.setup(t, ref, snap)
			t.Setenv("HF_HUB_CACHE", hub)
			done := make(chan error, 1)
			go func() { _, err := Load(context.Background(), "Org/Hostile"); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Load blocked")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "AGENTRACE_TEST_SECRET") {
				t.Errorf("the error quotes the file's secret: %v", err)
			}
			if len(err.Error()) > 2000 {
				t.Errorf("the error is %d bytes long", len(err.Error()))
			}
		})
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func relink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

func fifo(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// TestLoadCanceled: Load reads nothing once its context is done.
func TestLoadCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Load(ctx, writeDir(t, map[string]string{HFTokenizerFile: tinyTokenizer(`[]`)}))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Load with a canceled context: %v, want context.Canceled", err)
	}
}
