package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/score/rulesets"

	"github.com/urfave/cli/v3"
)

// The rule flags' defaults are the default ruleset's rule, read from its file.
func TestRulesetsDeriveDefaults(t *testing.T) {
	d := defaultRule()
	want := map[string]string{
		"inline-factor": fstr(d.InlineAccuracy.Factor), "inline-round": d.InlineAccuracy.Round, "inline-step": fstr(d.InlineAccuracy.Step),
		"osl-low-factor": fstr(d.OSLLow.Factor), "osl-low-round": d.OSLLow.Round, "osl-high-factor": fstr(d.OSLHigh.Factor),
		"osl-high-round": d.OSLHigh.Round, "swebench-method": d.SWEBench.Method, "swebench-z": fstr(d.SWEBench.Z),
		"swebench-round": d.SWEBench.Round, "swebench-step": fstr(d.SWEBench.Step),
	}
	if want["inline-factor"] != "0.99" || want["osl-low-factor"] != "0.9" || want["osl-high-factor"] != "1.1" || want["swebench-method"] != "lower_bound" {
		t.Errorf("the default ruleset's rule is %+v", d)
	}
	for _, f := range rulesetsDeriveCommand().Flags {
		name := f.Names()[0]
		w, ok := want[name]
		if !ok {
			continue
		}
		var got string
		switch x := f.(type) {
		case *cli.FloatFlag:
			got = fstr(x.Value)
		case *cli.StringFlag:
			got = x.Value
		}
		if got != w {
			t.Errorf("--%s default %q, want %q", name, got, w)
		}
		delete(want, name)
	}
	if len(want) > 0 {
		t.Errorf("flags missing: %v", want)
	}
}

// Both published rulesets from the means the checker quotes, through the command.
func TestRulesetsDeriveCommand(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ like, inline, osl, swe, want string }{
		{"checker-2026-10-kimi-k3", "0.589", "472", "0.9483", "inline accuracy  0.589   -    -    -        0.99 x mean, up to 0.0001"},
		{"checker-2026-10-qwen3.6", "0.5643", "383", "0.717", "OSL window       383     -    -    -        [0.9 x mean, down to 1; 1.1 x mean, up to 1]"},
	} {
		out := filepath.Join(dir, tc.like+".json")
		got, err := runApp(t, "rulesets", "derive", "-o", out, "--like", tc.like, "--inline-mean", tc.inline, "--osl-mean", tc.osl, "--swebench-mean", tc.swe)
		if err != nil || !strings.Contains(got, tc.want) || !strings.Contains(got, "wrote "+out) {
			t.Fatalf("%s: %v\n%s", tc.like, err, got)
		}
		r, err := rulesets.Load(out)
		want, _ := rulesets.Load(tc.like)
		if err != nil || r.InlineAccuracyMin != want.InlineAccuracyMin || r.OSLWindow != want.OSLWindow || r.SWEBenchMin != want.SWEBenchMin {
			t.Errorf("%s: %v %+v", tc.like, err, r)
		}
	}
	// DeepSeek-V4.1-Flash's published thresholds do not follow the rule: derive
	// from its published means gives the rule's thresholds, shows the published
	// ones beside them and says in a note (and in the file) that they differ.
	ds := filepath.Join(dir, "deepseek.json")
	got, err := runApp(t, "rulesets", "derive", "-o", ds, "--like", "checker-2026-11-deepseek-v4.1-flash",
		"--inline-mean", "0.5316", "--osl-mean", "882", "--swebench-mean", "0.975")
	const note = "note: The base ruleset checker-2026-11-deepseek-v4.1-flash's published thresholds do not follow this rule " +
		"(from its own published means the rule gives inline accuracy >= 0.5262 (published 0.5236), OSL window [793, 971] " +
		"(published [793, 970]), SWE-bench >= 0.965 (published 0.964))"
	if err != nil || !strings.Contains(got, note) || !strings.Contains(got, "[793, 971]  [793, 970]") {
		t.Errorf("derive --like the DeepSeek ruleset: %v\n%s", err, got)
	}
	if r, err := rulesets.Load(ds); err != nil || r.InlineAccuracyMin != 0.5262 || r.OSLWindow != [2]float64{793, 971} || r.SWEBenchMin != 0.965 ||
		!strings.Contains(r.Derivation.Note, "do not follow this rule") {
		t.Errorf("derived from the DeepSeek means: %v %+v", err, r)
	}
	// A rule flag changes the rule; the file records it.
	out := filepath.Join(dir, "wide.json")
	if _, err := runApp(t, "rulesets", "derive", "-o", out, "--inline-mean", "0.5643", "--osl-mean", "383", "--swebench-mean", "0.717",
		"--osl-low-factor", "0.8", "--osl-high-factor", "1.2", "--name", "wide"); err != nil {
		t.Fatal(err)
	}
	if r, err := rulesets.Load(out); err != nil || r.OSLWindow != [2]float64{306, 460} || r.Derivation.Rule.OSLLow.Factor != 0.8 || r.Name != "wide" {
		t.Errorf("wide: %v %+v", err, r)
	}
	for args, want := range map[string]string{
		"rulesets derive -o x.json":                                                                              "no run given",
		"rulesets derive -o x.json --inline-mean 0.5":                                                            "--inline-mean and --osl-mean go together",
		"rulesets derive -o x.json --inline-mean 0.5 --osl-mean 400 run":                                         "not both",
		"rulesets derive -o x.json --inline-mean 0.5 --osl-mean 400":                                             "the threshold to keep (--swebench-report, --swebench-mean, --swebench-min)",
		"rulesets derive -o x.json --inline-mean 0.5 --osl-mean 400 --swebench-mean 0.7 --inline-round sideways": `round "sideways"`,
		"rulesets derive -o " + out + " --inline-mean 0.5 --osl-mean 400 --swebench-mean 0.7":                    "--overwrite",
	} {
		if _, err := runApp(t, strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}
