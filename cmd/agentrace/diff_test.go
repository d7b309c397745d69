package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const diffTrace = `{"conversation_id": "sim_000001", "turn": 1, "role": "user", "content": "Where is my parcel?", "system": "You route customer requests."}
{"conversation_id": "sim_000001", "turn": 2, "role": "assistant", "content": "Let me check.", "intent_codes": ["I010"]}
`

// diff exits as diff(1) does: 0 same, 1 different (silently), 2 trouble.
func TestDiffCommandExitStatus(t *testing.T) {
	tmp := t.TempDir()
	ingestTrace := func(name, body string) string {
		dir := filepath.Join(tmp, name)
		ingestText(t, dir+".jsonl", dir, body)
		return dir
	}
	a := ingestTrace("a", diffTrace)
	b := ingestTrace("b", strings.Replace(diffTrace, "I010", "I011", 1))

	out, err := runApp(t, "diff", a, a)
	if err != nil || !strings.Contains(out, "same: 1 conversation,") {
		t.Errorf("same: err %v, output %q", err, out)
	}
	out, err = runApp(t, "diff", a, b)
	if err == nil || exitCode(err) != 1 || err.Error() != "" || !strings.Contains(out, "~ changed  sim_000001") {
		t.Errorf("different: err %v (status %d), output %q", err, exitCode(err), out)
	}
	out, err = runApp(t, "diff", "--json", a, b)
	var r struct {
		Changed int `json:"changed"`
	}
	if exitCode(err) != 1 || json.Unmarshal([]byte(out), &r) != nil || r.Changed != 1 {
		t.Errorf("--json: err %v, output %q", err, out)
	}
	if out, err = runApp(t, "diff", "-q", a, b); exitCode(err) != 1 || out != "" {
		t.Errorf("-q: err %v, output %q", err, out)
	}
	for _, args := range [][]string{
		{"diff", a},
		{"diff", a, b, a},
		{"diff", "--no-such-flag", a, b},
		{"diff", a, filepath.Join(tmp, "missing")},
		{"diff", a, filepath.Join(tmp, "a.jsonl")},
	} {
		if _, err := runApp(t, args...); err == nil || exitCode(err) != 2 || err.Error() == "" {
			t.Errorf("%v: err %v (status %d), want trouble (2) with a message", args, err, exitCode(err))
		}
	}
}

// stats --card writes a card folder; its flags go together.
func TestStatsCardCommand(t *testing.T) {
	tmp := t.TempDir()
	ds := filepath.Join(tmp, "ds")
	ingestText(t, filepath.Join(tmp, "t.jsonl"), ds, diffTrace)
	card := filepath.Join(tmp, "card")
	out, err := runApp(t, "stats", "-d", ds, "--card", "-o", card)
	if err != nil || !strings.Contains(out, "wrote "+card+": CARD.md and card.json, 2 plots; 1 trajectory, 1 client turn, 1 assistant turn") {
		t.Fatalf("stats --card: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(card, "plots", "osl_histogram.svg")); err != nil {
		t.Error(err)
	}
	if _, err := runApp(t, "stats", "-d", ds, "--card", "-o", card); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Errorf("second card without --overwrite: %v", err)
	}
	if _, err := runApp(t, "stats", "-d", ds, "--card", "-o", card, "--overwrite"); err != nil {
		t.Errorf("--overwrite: %v", err)
	}
	for args, want := range map[string]string{
		"stats -d " + ds + " --card":                    "--card needs --out",
		"stats -d " + ds + " -o x":                      "--out goes with --card",
		"stats -d " + ds + " --card -o x --json":        "leave out --json",
		"stats -d " + ds + " --card -o " + ds + "/card": "inside the input folder",
	} {
		if _, err := runApp(t, strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}
