package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/urfave/cli/v3"
)

// Every command's --help ends with the one table of exit statuses.
func TestExitStatusTableInEveryHelp(t *testing.T) {
	check := func(path string) {
		out, err := runApp(t, append(strings.Fields(path), "--help")...)
		if err != nil {
			t.Errorf("%s --help: %v", path, err)
			return
		}
		if !strings.Contains(out, "Exit status (the same for every command):") {
			t.Errorf("agentrace %s --help shows no exit status table:\n%s", path, out)
			return
		}
		for _, r := range exitStatusTable {
			if !strings.Contains(out, r.code) || !strings.Contains(strings.Join(strings.Fields(out), " "), r.meaning[:min(30, len(r.meaning))]) {
				t.Errorf("agentrace %s --help lacks the row %s %q", path, r.code, r.meaning)
			}
		}
	}
	check("")
	visit(app().Commands, "", func(path string, _ *cli.Command) { check(path) })

	// The README shows the same table.
	readme, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(strings.ReplaceAll(string(readme), "`", ""), "### Exit status\n")
	if !ok {
		t.Fatal("README.md has no Exit status section")
	}
	for _, r := range exitStatusTable {
		row := "| " + r.code + " | " + r.meaning[:min(40, len(r.meaning))]
		if !strings.Contains(section, row) {
			t.Errorf("README.md's exit status table lacks the row %q", row)
		}
	}
}

// Bad usage is exit status 2 in every command, and so is no command at all.
func TestExitStatusUsage(t *testing.T) {
	visit(app().Commands, "", func(path string, _ *cli.Command) {
		_, err := runApp(t, append(strings.Fields(path), "--no-such-flag")...)
		if exitCode(err) != exitUsage {
			t.Errorf("%s --no-such-flag: status %d (%v), want 2", path, exitCode(err), err)
		}
	})
	for _, args := range [][]string{nil, {"log"}, {"no-such-command"}} {
		out, err := runApp(t, args...)
		if exitCode(err) != exitUsage {
			t.Errorf("agentrace %v: status %d (%v), want 2", args, exitCode(err), err)
		}
		if args == nil && !strings.Contains(out, "COMMANDS:") {
			t.Errorf("agentrace with no arguments does not print its usage:\n%s", out)
		}
	}
}

// A workflow dataset of 5 trajectories (43 client turns).
func smallDataset(t *testing.T, root string) string {
	t.Helper()
	traces, ds := filepath.Join(root, "traces.jsonl"), filepath.Join(root, "ds")
	if _, err := runApp(t, "synth", "--scale", "0.01", "--domain", "workflow", "--seed", "5", "--out", traces); err != nil {
		t.Fatal(err)
	}
	if _, err := runApp(t, "ingest", "--out", ds, traces); err != nil {
		t.Fatal(err)
	}
	return ds
}

// fakeServer answers GET /v1/models with models (nil: 404) and every chat
// request with status and body, counting the chat requests.
func fakeServer(t *testing.T, models []string, status int, body string) (string, *atomic.Int64) {
	var chats atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/models" && models != nil:
			var data []map[string]string
			for _, m := range models {
				data = append(data, map[string]string{"id": m})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
		case r.URL.Path == "/v1/chat/completions":
			chats.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &chats
}

// Each command's outcome has its exit status: 0 done and passed, 1 a verdict that
// does not pass, 2 bad usage or input with nothing written, 3 a run that is not
// whole; every list and range is checked before anything is written or sent.
func TestExitStatusPerCommand(t *testing.T) {
	root := t.TempDir()
	p := func(s string) string { return filepath.Join(root, s) }
	ds := smallDataset(t, root)
	simURL := simServer(t)
	base := []string{"--dataset", ds, "--no-delays"}
	absent := func(name, what string) {
		t.Helper()
		if _, err := os.Lstat(p(name)); err == nil {
			t.Errorf("%s: %s was written", what, name)
		}
	}

	// replay: done (0); the model checked before any turn (2, nothing written).
	out, err := runApp(t, append([]string{"replay", "--endpoint", simURL, "--concurrency", "2", "--out", p("ok"), "--profile", "qwen3.6-35b-a3b"}, base...)...)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	// Official means official: the profile is a condition, named in the manifest
	// and in the summary; a run without one is not official. A synthetic dataset
	// is not the official one, and the manifest says so.
	if m, err := runlog.ReadManifest(p("ok")); err != nil || m.Config.Official || len(m.Config.NonOfficial) != 2 ||
		!strings.Contains(m.Config.NonOfficial[0], "inter-turn delays off") || !strings.Contains(m.Config.NonOfficial[1], "not the official dataset") ||
		m.Config.OfficialDataset == nil || *m.Config.OfficialDataset {
		t.Errorf("replay --profile --no-delays: manifest official %v, non_official %q (%v); want the delays and the dataset", m.Config.Official, m.Config.NonOfficial, err)
	}
	out, err = runApp(t, append([]string{"replay", "--endpoint", simURL, "--concurrency", "2", "--out", p("noprofile")}, base...)...)
	if err != nil {
		t.Fatalf("replay without --profile: %v\n%s", err, out)
	}
	if m, _ := runlog.ReadManifest(p("noprofile")); m.Config.Official || !slices.ContainsFunc(m.Config.NonOfficial, func(s string) bool {
		return strings.Contains(s, `no sampling profile: the requests carry the model name "no-model-name"`)
	}) {
		t.Errorf("replay without --profile: manifest official %v, non_official %q; want the profile named", m.Config.Official, m.Config.NonOfficial)
	}
	if !strings.Contains(out, "not official: 3 settings are unofficial (the manifest's non_official): ") || !strings.Contains(out, "no sampling profile") {
		t.Errorf("replay without --profile: the summary does not name the unofficial settings:\n%s", out)
	}
	_, err = runApp(t, append([]string{"replay", "--endpoint", simURL, "--concurrency", "2", "--out", p("gpt4"), "--model", "gpt-4"}, base...)...)
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), `does not serve the model "gpt-4"`) {
		t.Errorf("replay --model gpt-4 against a server listing other models: status %d, %v; want 2 naming the model", exitCode(err), err)
	}
	absent("gpt4", "replay of a model not served")

	// A first failing turn that every turn would get (404 model, 401) stops the run
	// at once with the server's message: 3, the manifest failed.
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"404", 404, `{"error":{"message":"The model ` + "`x`" + ` does not exist."}}`},
		{"401", 401, `{"error":{"message":"Incorrect API key provided"}}`},
	} {
		url, chats := fakeServer(t, nil, tc.status, tc.body)
		run := p("refused-" + tc.name)
		_, err := runApp(t, append([]string{"replay", "--endpoint", url, "--concurrency", "2", "--out", run}, base...)...)
		if exitCode(err) != exitIncomplete || !strings.Contains(err.Error(), "HTTP "+tc.name) || !strings.Contains(err.Error(), "does not exist") && tc.status == 404 {
			t.Errorf("replay answered %d: status %d, %v; want 3 with the server's message", tc.status, exitCode(err), err)
		}
		m, merr := runlog.ReadManifest(run)
		if merr != nil || m.State != schemas.RunFailed || m.StopCause != schemas.StopRefused {
			t.Errorf("replay answered %d: manifest state %q stop cause %q (%v), want failed, refused", tc.status, m.State, m.StopCause, merr)
		}
		if n := chats.Load(); n > 2 {
			t.Errorf("replay answered %d: %d turns sent, want at most the 2 in flight when the first failed", tc.status, n)
		}
	}
	// Every turn failing otherwise (500) is not "complete" either.
	url, _ := fakeServer(t, []string{"no-model-name"}, 500, `{"error":{"message":"boom"}}`)
	_, err = runApp(t, append([]string{"replay", "--endpoint", url, "--concurrency", "2", "--out", p("all500")}, base...)...)
	if exitCode(err) != exitIncomplete || !strings.Contains(err.Error(), "turns issued failed") {
		t.Errorf("replay whose every turn failed: status %d, %v; want 3", exitCode(err), err)
	}
	if m, _ := runlog.ReadManifest(p("all500")); m.State != schemas.RunFailed {
		t.Errorf("replay whose every turn failed: manifest state %q, want failed", m.State)
	}
	// A concurrency far above the trajectories costs no more than the trajectories.
	t0 := time.Now()
	if out, err := runApp(t, append([]string{"replay", "--endpoint", simURL, "--concurrency", "1000000", "--out", p("huge"), "--profile", "qwen3.6-35b-a3b"}, base...)...); err != nil {
		t.Errorf("replay --concurrency 1000000: %v\n%s", err, out)
	} else if !strings.Contains(out, "at most 5 are active at once") {
		t.Errorf("replay --concurrency 1000000 does not say it runs at most 5 at once:\n%s", out)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("replay --concurrency 1000000 on 5 trajectories took %v", d)
	}

	// score: a verdict that does not pass is 1; earlier scores are kept without
	// --overwrite (2), replaced with it.
	_, err = runApp(t, "score", p("ok"))
	if exitCode(err) != exitNo {
		t.Errorf("score of a tiny unofficial run: status %d, %v; want 1 (its verdict fails)", exitCode(err), err)
	}
	before, _ := os.ReadFile(filepath.Join(p("ok"), schemas.ScoresFile))
	if _, err = runApp(t, "score", p("ok")); exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--overwrite") {
		t.Errorf("score again without --overwrite: status %d, %v; want 2 naming --overwrite", exitCode(err), err)
	}
	if after, _ := os.ReadFile(filepath.Join(p("ok"), schemas.ScoresFile)); string(after) != string(before) {
		t.Error("score without --overwrite replaced scores.json")
	}
	if _, err = runApp(t, "score", "--overwrite", p("ok")); exitCode(err) != exitNo {
		t.Errorf("score --overwrite: status %d, %v; want 1 (scored again, same verdict)", exitCode(err), err)
	}

	// Lists, ranges and combinations: refused (2) before anything is written or sent.
	for _, tc := range []struct {
		args []string
		out  string
		want string
	}{
		{append([]string{"sweep", "--endpoint", simURL, "--concurrency", "2,2", "--out", p("sw1")}, base...), "sw1", "given twice"},
		{append([]string{"sweep", "--endpoint", simURL, "--concurrency", "1,,2", "--out", p("sw2")}, base...), "sw2", "item 2 is empty"},
		{append([]string{"sweep", "--endpoint", simURL, "--concurrency", "1,x", "--out", p("sw3")}, base...), "sw3", "not a positive integer"},
		{[]string{"demo", "--out", p("demo0"), "--concurrency", "0"}, "demo0", "must be at least 1"},
		{[]string{"demo", "--out", p("demo1"), "--concurrency", "1,1"}, "demo1", "given twice"},
		{[]string{"demo", "--out", p("demo2"), "--speedup", "0"}, "demo2", "--speedup 0"},
		{[]string{"demo", "--out", p("demo3"), "--fidelity", "2"}, "demo3", "--fidelity 2"},
		{[]string{"regions", "--cmax", "64", "--cmin", "100"}, "", "--cmin 100 is above --cmax 64"},
		{[]string{"sim", "--speedup", "0"}, "", "--speedup 0"},
		{[]string{"sim", "--speedup", "-1"}, "", "--speedup -1"},
	} {
		_, err := runApp(t, tc.args...)
		if exitCode(err) != exitUsage || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: status %d, %v; want 2 saying %q", tc.args, exitCode(err), err, tc.want)
		}
		if tc.out != "" {
			absent(tc.out, strings.Join(tc.args[:1], " "))
		}
	}

	// report: a curve that does not pass is 1, after writing the report.
	out, err = runApp(t, "report", "--out", p("rep"), p("ok"))
	if exitCode(err) != exitNo || !regexp.MustCompile(`\(curve checks FAIL: \d+ checks? failed\)\n(  - .*\n)*  - official dataset size \(613\): `).MatchString(out) {
		t.Errorf("report of one tiny run: status %d, %v; want 1 with the report written and the failed checks named\n%s", exitCode(err), err, out)
	}
	if _, err := os.Stat(filepath.Join(p("rep"), "report.html")); err != nil {
		t.Errorf("report exiting 1 wrote no report.html: %v", err)
	}
	// Bad input, whatever the command: 2.
	if err := os.WriteFile(p("bad.jsonl"), []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"ingest", "--out", p("bad-ds"), p("bad.jsonl")},
		{"log", "dump", p("no-such-run")},
		{"score", p("no-such-run")},
		{"stats", "--dataset", p("no-such-ds")},
	} {
		if _, err := runApp(t, args...); exitCode(err) != exitUsage {
			t.Errorf("%v: status %d, %v; want 2", args, exitCode(err), err)
		}
	}

	// export says what it wrote.
	out, err = runApp(t, "export", "--dataset", ds, "--out", p("back.jsonl"))
	if err != nil || !strings.Contains(out, "wrote "+p("back.jsonl")+": dataset") {
		t.Errorf("export: %v, printed %q; want a line saying what it wrote", err, out)
	}
}

// After a signal, an error caused by the cancellation says "interrupted".
func TestInterruptedMessage(t *testing.T) {
	err := interrupted{fmt.Errorf("ingest %q: read line 7: %w", "t.jsonl", context.Canceled)}
	if got, want := err.Error(), `ingest "t.jsonl": read line 7: interrupted`; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if !errors.Is(err, context.Canceled) {
		t.Error("the cause is lost")
	}
}

// One format for what is not an error ("agentrace CMD: warning: MSG") and counts
// worded by number.
func TestOneProblemFormatAndPlurals(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "one.jsonl")
	rows := `{"conversation_id":"a","turn":1,"role":"user","content":"hi"}` + "\n" + `{"conversation_id":"a","turn":2,"role":"assistant","content":"x"}` + "\n"
	if err := os.WriteFile(in, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runApp(t, "ingest", "--out", filepath.Join(dir, "ds"), in)
	if err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	for _, want := range []string{"agentrace ingest: warning: 1 problem the reference client accepts (--strict refuses them):\n",
		": 1 conversation (1 coding, 0 workflow), 2 rows, 1 client turn, 2 messages; "} {
		if !strings.Contains(out, want) {
			t.Errorf("ingest printed no %q:\n%s", want, out)
		}
	}
}

// A server that refuses the first turn and echoes the key in its message: the run
// stops at once with the message, the key masked everywhere.
func TestRefusedTurnMessageScrubbed(t *testing.T) {
	const key = "sk-echoed-secret-key-123"
	t.Setenv("AGENTRACE_TEST_REFUSED_KEY", key)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	defer srv.Close()
	root := t.TempDir()
	ds := smallDataset(t, root)
	run := filepath.Join(root, "run")
	_, err := runApp(t, "replay", "--dataset", ds, "--no-delays", "--endpoint", srv.URL, "--concurrency", "1", "--out", run,
		"--api-key-env", "AGENTRACE_TEST_REFUSED_KEY")
	if exitCode(err) != exitIncomplete || !strings.Contains(err.Error(), "Incorrect API key provided: <redacted>") {
		t.Fatalf("status %d, %v; want 3 with the server's message, the key masked", exitCode(err), err)
	}
	m, _ := runlog.ReadManifest(run)
	b, _ := json.Marshal(m)
	if strings.Contains(string(b), key) || strings.Contains(err.Error(), key) {
		t.Errorf("the key reached the manifest or the message: %s", b)
	}
}
