package official

import (
	"strings"
	"testing"
)

// Every condition, alone: official only when all hold; a condition not recorded
// (nil) is not judged, but salting and delays must be recorded on.
func TestReasons(t *testing.T) {
	on, off := Bool(true), Bool(false)
	good := func() Conditions {
		return Conditions{Salt: on, Delays: on, DelayScale: 1, StopIssuing: off, Stream: on, StreamedTurns: 9,
			Trajectories: 22, DatasetSize: 11, Profile: String("qwen3.6-35b-a3b"), Model: "Qwen/Qwen3.6-35B-A3B"}
	}
	for _, tc := range []struct {
		name string
		edit func(*Conditions)
		want string // "" official
	}{
		{"all official", func(*Conditions) {}, ""},
		{"nothing recorded but salt and delays", func(c *Conditions) { *c = Conditions{Salt: on, Delays: on} }, ""},
		{"salt off", func(c *Conditions) { c.Salt = off }, "cache salting off"},
		{"salt not recorded", func(c *Conditions) { c.Salt = nil }, "cache salting off"},
		{"delays off", func(c *Conditions) { c.Delays = off }, "inter-turn delays off"},
		{"delays scaled", func(c *Conditions) { c.DelayScale = 0.5 }, "delays scaled by 0.5"},
		{"stop issuing", func(c *Conditions) { c.StopIssuing = on }, "stops issuing at the window end"},
		{"no stream", func(c *Conditions) { c.Stream = off }, "streaming off"},
		{"rows not streamed", func(c *Conditions) { c.NonStreamedTurns = 2 }, "turns streaming off on 2 of 11"},
		{"stream usage", func(c *Conditions) { c.StreamUsage = true }, "server usage requested"},
		{"not the official dataset", func(c *Conditions) { c.OfficialDataset = Bool(false) }, "not the official dataset"},
		{"the official dataset", func(c *Conditions) { c.OfficialDataset = Bool(true) }, ""},
		{"budget", func(c *Conditions) { c.Trajectories = 23 }, "not a positive multiple of the dataset size 11"},
		{"budget, size unknown", func(c *Conditions) { c.DatasetSize = 0 }, "dataset's size is not known"},
		{"no profile", func(c *Conditions) { c.Profile, c.Model = String(""), "no-model-name" }, `no sampling profile: the requests carry the model name "no-model-name"`},
	} {
		c := good()
		tc.edit(&c)
		got := Reasons(c)
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: %v, want official", tc.name, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: %v, want one reason with %q", tc.name, got, tc.want)
		}
	}
}

// The budget alone, as report's curve check takes it: not recorded (0) is not
// judged; a size unknown cannot be official.
func TestBudget(t *testing.T) {
	for _, tc := range []struct {
		n, size int
		want    string
	}{{0, 613, ""}, {613, 613, ""}, {1226, 613, ""}, {47, 613, "budget of 47 trajectories is not a positive multiple of the dataset size 613"},
		{-613, 613, "not a positive multiple"}, {8, 0, "dataset's size is not known"}} {
		if got := Budget(tc.n, tc.size); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("Budget(%d, %d) = %q, want %q", tc.n, tc.size, got, tc.want)
		}
	}
}

// The official dataset is one file with the official sha256, and nothing else.
func TestIsDataset(t *testing.T) {
	other := strings.Repeat("0", 64)
	for _, tc := range []struct {
		in   []string
		want bool
	}{{nil, false}, {[]string{DatasetSHA256}, true}, {[]string{other}, false},
		{[]string{DatasetSHA256, other}, false}, {[]string{DatasetSHA256, DatasetSHA256}, false}} {
		if got := IsDataset(tc.in...); got != tc.want {
			t.Errorf("IsDataset(%v) = %t, want %t", tc.in, got, tc.want)
		}
	}
}
