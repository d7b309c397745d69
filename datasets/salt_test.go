package datasets

import "testing"

func TestSaltHex(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1", "4461"}, {"2", "ba75"}, {"conv1", "e643"}, {"sim_000001", "1bd4"},
	} {
		if got := SaltHex(tc.in); got != tc.want {
			t.Errorf("SaltHex(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSessionID(t *testing.T) {
	for _, tc := range []struct {
		id     string
		repeat int
		want   string
	}{
		{"conv1", 1, "conv1"}, {"conv1", 2, "conv1__repeat_2"}, {"sim_000001", 13, "sim_000001__repeat_13"},
	} {
		got := SessionID(tc.id, tc.repeat)
		if got != tc.want {
			t.Errorf("SessionID(%q, %d) = %q, want %q", tc.id, tc.repeat, got, tc.want)
		}
		id, r := ParseSessionID(got)
		if id != tc.id || r != tc.repeat {
			t.Errorf("ParseSessionID(%q) = %q, %d", got, id, r)
		}
	}
	for _, s := range []string{"a__repeat_1", "a__repeat_x", "a__repeat_02", "a__repeat_"} {
		if id, r := ParseSessionID(s); id != s || r != 1 {
			t.Errorf("ParseSessionID(%q) = %q, %d; want it unchanged, 1", s, id, r)
		}
	}
}

func TestDomain(t *testing.T) {
	for id, want := range map[string]string{
		"sim_000001": "workflow", "sim_1": "workflow", "sim_": "coding", "sim_1a": "coding",
		"django__django-16899": "coding", "xsim_1": "coding",
	} {
		if got := Domain(id); got != want {
			t.Errorf("Domain(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestLookupProfile(t *testing.T) {
	q, err := LookupProfile("qwen3.6-35b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	if *q.Temperature != 1.0 || *q.TopK != 20 || *q.TopP != 0.95 || *q.RepetitionPenalty != 1.0 ||
		*q.PresencePenalty != 1.5 || q.MaxTokens != 8192 || q.ChatTemplateKwargs["preserve_thinking"] != true {
		t.Errorf("qwen profile %+v", q)
	}
	k, err := LookupProfile("kimi-k3")
	if err != nil {
		t.Fatal(err)
	}
	if *k.Temperature != 1.0 || *k.TopP != 1.0 || k.MaxTokens != 8192 || k.TopK != nil {
		t.Errorf("kimi profile %+v", k)
	}
	if _, err := LookupProfile("nope"); err == nil {
		t.Error("unknown profile accepted")
	}
}

// TestRunProfile: a run sends the named profile with its explicit settings over
// it, the explicit settings alone without a name, and no profile with neither.
func TestRunProfile(t *testing.T) {
	hot := 0.5
	if p, err := RunProfile("", Profile{}); p != nil || err != nil {
		t.Errorf("neither: %+v, %v; want nil", p, err)
	}
	p, err := RunProfile("qwen3.6-35b-a3b", Profile{Temperature: &hot})
	if err != nil {
		t.Fatal(err)
	}
	if *p.Temperature != 0.5 || *p.TopK != 20 || p.MaxTokens != 8192 || p.Name != "qwen3.6-35b-a3b" {
		t.Errorf("named and overlaid: %+v", p)
	}
	if p, err := RunProfile("", Profile{Temperature: &hot}); err != nil || *p.Temperature != 0.5 || p.TopK != nil {
		t.Errorf("settings alone: %+v, %v", p, err)
	}
	if _, err := RunProfile("nope", Profile{Temperature: &hot}); err == nil {
		t.Error("unknown profile accepted")
	}
}

// TestParseReferenceSessionID: session ids read back as the reference scorer reads
// them (a trailing __repeat_ and Python digits, any value).
func TestParseReferenceSessionID(t *testing.T) {
	tests := []struct {
		in     string
		conv   string
		repeat int
	}{
		{"conv1", "conv1", 1},
		{"conv1__repeat_3", "conv1", 3},
		{"conv1__repeat_1", "conv1", 1},
		{"conv1__repeat_007", "conv1", 7},
		{"conv1__repeat_", "conv1__repeat_", 1},
		{"a__repeat_1__repeat_2", "a__repeat_1", 2},
		{"c__repeat_2\n", "c", 2},
		{"c__repeat_٣", "c", 3},
		{"c__repeat_2x", "c__repeat_2x", 1},
	}
	for _, tt := range tests {
		conv, rep, ok := ParseReferenceSessionID(tt.in)
		if !ok || conv != tt.conv || rep != tt.repeat {
			t.Errorf("ParseReferenceSessionID(%q) = %q, %d, %v; want %q, %d", tt.in, conv, rep, ok, tt.conv, tt.repeat)
		}
	}
}
