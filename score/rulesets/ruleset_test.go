package rulesets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/tokens"
)

func TestRulesetsCoverTheRulesTable(t *testing.T) {
	// rules.md, Accuracy: every row of the table, by version.
	want := map[string]struct {
		acc       float64
		osl       [2]float64
		swe       float64
		model     string
		tentative bool
	}{
		"blog-2026-07-kimi-k2.6":  {0.6308, [2]float64{404, 494}, 0.765, "Kimi-K2.6", true},
		"blog-2026-07-qwen3.6":    {0.5586, [2]float64{355, 434}, 0.67, "Qwen3.6-35B-A3B", true},
		"readme-2026-08-kimi-k3":  {0.5832, [2]float64{390, 475}, 0.935, "Kimi-K3", false},
		"readme-2026-08-qwen3.6":  {0.5586, [2]float64{355, 434}, 0.69, "Qwen3.6-35B-A3B", false},
		"checker-2026-10-kimi-k3": {0.5832, [2]float64{425, 520}, 0.935, "Kimi-K3", false},
		"checker-2026-10-qwen3.6": {0.5586, [2]float64{344, 422}, 0.69, "Qwen3.6-35B-A3B", false},
		// agentic_targets.py at b889565: 52.36, SWE-bench 96.4, OSL (793, 970).
		"checker-2026-11-deepseek-v4.1-flash": {0.5236, [2]float64{793, 970}, 0.964, "deepseek-ai/DeepSeek-V4.1-Flash", false},
	}
	all := All()
	if len(all) != len(want) {
		t.Errorf("%d rulesets, want %d", len(all), len(want))
	}
	for _, r := range all {
		w, ok := want[r.Name]
		if !ok {
			t.Errorf("unexpected ruleset %s", r.Name)
			continue
		}
		if r.InlineAccuracyMin != w.acc || r.OSLWindow != w.osl || r.SWEBenchMin != w.swe || r.Tentative != w.tentative {
			t.Errorf("%s: %+v", r.Name, r)
		}
		if r.Source == "" || r.Date == "" || !strings.Contains(r.Name, r.Date) {
			t.Errorf("%s: source %q date %q", r.Name, r.Source, r.Date)
		}
		if !r.MatchesModel(w.model) || r.SWEBenchEvaluated != 200 {
			t.Errorf("%s does not name %s (or evaluated %d)", r.Name, w.model, r.SWEBenchEvaluated)
		}
	}
	if _, err := Load(Default); err != nil {
		t.Fatal(err)
	}
}

func TestOSLWindowVectors(t *testing.T) {
	// rules.md checker vectors: windows are inclusive.
	kimi, _ := Load("checker-2026-10-kimi-k3")
	qwen, _ := Load("checker-2026-10-qwen3.6")
	tests := []struct {
		rs   Ruleset
		mean float64
		pass bool
	}{
		{kimi, 472, true}, {kimi, 424, false}, {kimi, 521, false}, {kimi, 425, true}, {kimi, 520, true},
		{qwen, 343.9, false}, {qwen, 344, true}, {qwen, 422, true}, {qwen, 422.0001, false},
	}
	for _, tt := range tests {
		if got := tt.rs.OSLPass(tt.mean); got != tt.pass {
			t.Errorf("%s: OSL mean %v pass = %v, want %v", tt.rs.Name, tt.mean, got, tt.pass)
		}
	}
	// Accuracy: the rounded score against the threshold, equality passes.
	if !qwen.AccuracyPass(0.5586) || qwen.AccuracyPass(0.5585) || !kimi.AccuracyPass(0.5832) || kimi.AccuracyPass(0.5831) {
		t.Error("accuracy thresholds are not >= on the rounded score")
	}
}

func TestRulesetByModelAndFile(t *testing.T) {
	for model, want := range map[string]string{
		"Qwen/Qwen3.6-35B-A3B": "checker-2026-10-qwen3.6",
		"moonshotai/Kimi-K3":   "checker-2026-10-kimi-k3",
		"kimi-k2.6":            "blog-2026-07-kimi-k2.6",
		"qwen3_6-35b-a3b-fp8":  "checker-2026-10-qwen3.6",
	} {
		r, ok := ForModel(model)
		if !ok || r.Name != want {
			t.Errorf("ForModel(%q) = %s, %v; want %s", model, r.Name, ok, want)
		}
	}
	if r, ok := ForModel("llama"); ok || r.Name != Default {
		t.Errorf("unknown model: %s %v", r.Name, ok)
	}

	dir := t.TempDir()
	good := filepath.Join(dir, "mine.json")
	os.WriteFile(good, []byte(`{"name":"mine","source":"our lab","date":"2026-11","inline_accuracy_min":0.5,"osl_window":[100,200],"swebench_min":0.6,"curve":{"min_points":7,"max_points":32,"dataset_size":613,"consistency_tolerance":0.01}}`), 0o644)
	r, err := Load(good)
	if err != nil || r.Name != "mine" || r.File != good || r.SWEBenchEvaluated != 200 || !r.OSLPass(100) {
		t.Errorf("user ruleset: %+v %v", r, err)
	}
	curve := `"curve":{"min_points":7,"max_points":32,"dataset_size":613,"consistency_tolerance":0.01}`
	for name, tc := range map[string]struct{ body, want string }{
		"unknown field": {`{"name":"x","source":"s","date":"d","osl_window":[1,2],"extra":1,` + curve + `}`, "unknown field"},
		"no source":     {`{"name":"x","date":"d","osl_window":[1,2],` + curve + `}`, "source and date"},
		"percent":       {`{"name":"x","source":"s","date":"d","inline_accuracy_min":55.86,"osl_window":[1,2],` + curve + `}`, "not a fraction"},
		"window":        {`{"name":"x","source":"s","date":"d","osl_window":[3,2],` + curve + `}`, "not a window"},
		"pattern":       {`{"name":"x","source":"s","date":"d","osl_window":[1,2],"model_patterns":["("],` + curve + `}`, "("},
		"no curve":      {`{"name":"x","source":"s","date":"d","osl_window":[1,2]}`, "curve needs"},
		"cap below min": {`{"name":"x","source":"s","date":"d","osl_window":[1,2],"curve":{"min_points":7,"max_points":6,"dataset_size":613,"consistency_tolerance":0.01}}`, "curve needs"},
	} {
		p := filepath.Join(dir, "bad.json")
		os.WriteFile(p, []byte(tc.body), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, tc.want)
		}
	}
	// --show output reads back as the same ruleset.
	for _, r := range All() {
		b, err := JSON(r)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, r.Name+".json")
		os.WriteFile(p, b, 0o644)
		back, err := Load(p)
		if err != nil || back.Name != r.Name || back.OSLWindow != r.OSLWindow || back.InlineAccuracyMin != r.InlineAccuracyMin ||
			back.SWEBenchMin != r.SWEBenchMin || back.Source != r.Source || !back.MatchesModel(r.Model) {
			t.Errorf("%s: round trip %+v %v", r.Name, back, err)
		}
	}
	if _, err := Load("no-such-ruleset"); err == nil || !strings.Contains(err.Error(), "agentrace rulesets") {
		t.Errorf("unknown name: %v", err)
	}
}

// TestTokenizerUse: counts are the model's own only with the tokenizer.json and
// chat template whose digests the ruleset records; any other tokenizer, and any
// tokenizer under a ruleset that records no digest (Kimi K3's are unknown), is a
// stand-in, and the note names the tokenizer used and its digests.
func TestTokenizerUse(t *testing.T) {
	const (
		qwenTok  = "5f9e4d4901a92b997e463c1f46055088b6cca5ca61a6522d1b9f64c4bb81cb42"
		qwenTmpl = "e84f32a23fdda27689f868aa4a1a5621f41133e51a48d7f3efcbea2839574259"
		other    = "1111111111111111111111111111111111111111111111111111111111111111"
	)
	qwen, err := Load("checker-2026-10-qwen3.6")
	if err != nil {
		t.Fatal(err)
	}
	kimi, err := Load("checker-2026-10-kimi-k3")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		rs       Ruleset
		tok, tpl string
		standIn  bool
		note     []string
	}{
		{"the model's own", qwen, qwenTok, qwenTmpl, false, []string{"the model's tokenizer", "5f9e4d4901a9", "e84f32a23fdd"}},
		{"another vocabulary", qwen, other, qwenTmpl, true, []string{schemas.StandInLabel, "111111111111", "5f9e4d4901a9"}},
		{"another template", qwen, qwenTok, other, true, []string{schemas.StandInLabel, "e84f32a23fdd"}},
		{"no template", qwen, qwenTok, "", true, []string{schemas.StandInLabel, "chat template sha256 none"}},
		{"digests unknown", kimi, qwenTok, qwenTmpl, true, []string{schemas.StandInLabel, "records no digest of moonshotai/Kimi-K3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.rs.TokenizerUse(tokens.Identity{Name: "m", File: "tokenizer.json", TokenizerSHA256: tt.tok, TemplateSHA256: tt.tpl})
			if u.StandIn != tt.standIn {
				t.Errorf("stand-in %v, want %v (%s)", u.StandIn, tt.standIn, u.Note)
			}
			for _, w := range tt.note {
				if !strings.Contains(u.Note, w) {
					t.Errorf("note %q lacks %q", u.Note, w)
				}
			}
		})
	}
	// Every embedded ruleset says what its model's tokenizer is, or that it is unknown.
	for _, r := range All() {
		if r.Tokenizer == nil || r.Tokenizer.Source == "" {
			t.Errorf("ruleset %s records nothing of its model's tokenizer", r.Name)
		}
	}
}

// The DeepSeek-V4.1-Flash ruleset holds the checker's targets (agentic_targets.py
// at b889565: inline 52.36, OSL (793, 970), SWE-bench 96.4) and says which of its
// values a source publishes and which not; Parse refuses a published entry that
// names no field or says neither.
func TestDeepSeekRulesetPublished(t *testing.T) {
	r, err := Load("checker-2026-11-deepseek-v4.1-flash")
	if err != nil {
		t.Fatal(err)
	}
	if r.InlineAccuracyMin != 0.5236 || r.OSLWindow != [2]float64{793, 970} || r.SWEBenchMin != 0.964 || r.SWEBenchEvaluated != 200 {
		t.Errorf("thresholds %v %v %v %d", r.InlineAccuracyMin, r.OSLWindow, r.SWEBenchMin, r.SWEBenchEvaluated)
	}
	for k, want := range map[string]string{
		"inline_accuracy_min": "published: ", "osl_window": "published: ", "swebench_min": "published: ",
		"tokenizer": "not published: ", "derivation": "not published: ", "model": "not published: ",
	} {
		if !strings.HasPrefix(r.Published[k], want) {
			t.Errorf("published.%s = %q, want it to start %q", k, r.Published[k], want)
		}
	}
	base := `{"name":"x","source":"s","date":"2026-11","osl_window":[1,2],"curve":{"min_points":1,"max_points":2,"dataset_size":1,"consistency_tolerance":0.01},`
	for _, c := range []struct{ published, want string }{
		{`{"nope":"published: here"}`, `"nope" is not a field of a ruleset`},
		{`{"osl_window":"from a blog"}`, `published.osl_window: want "published: WHERE" or "not published: WHY"`},
	} {
		if _, err := Parse([]byte(base+`"published":`+c.published+`}`), "test"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("published %s: %v, want %q", c.published, err, c.want)
		}
	}
	if _, err := Parse([]byte(base+`"published":{"osl_window":"published: somewhere"}}`), "test"); err != nil {
		t.Errorf("a good published entry: %v", err)
	}
}
