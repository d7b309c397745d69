package notice

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestOptions(t *testing.T) {
	base := errors.New("plain")
	for _, tc := range []struct {
		name string
		err  error
		want []string
		text string
	}{
		{"none", base, nil, "plain"},
		{"one", Errorf("out", "no run directory"), []string{"out"}, "no run directory"},
		{"wrapped", fmt.Errorf("replay: %w", Errorf("grace", "grace %d is negative", -1)), []string{"grace"}, "replay: grace -1 is negative"},
		{"nested", Errorf("model", "give a name: %w", Errorf("profile", "no profile")), []string{"model", "profile"}, "give a name: no profile"},
		{"about", About(errors.New("no workload"), "dataset", "isl", "osl"), []string{"dataset", "isl", "osl"}, "no workload"},
		{"joined", errors.Join(Errorf("isl", "a"), fmt.Errorf("x: %w", Errorf("osl", "b")), Errorf("isl", "c")), []string{"isl", "osl"}, "a\nx: b\nc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Options(tc.err); !slices.Equal(got, tc.want) {
				t.Errorf("Options = %q, want %q", got, tc.want)
			}
			if got := tc.err.Error(); got != tc.text {
				t.Errorf("Error() = %q, want %q", got, tc.text)
			}
		})
	}
}

func TestSink(t *testing.T) {
	var got []Event
	s := Sink(func(e Event) { got = append(got, e) })
	s.Say(Warning, "max-duration", "reached %s", "1m")
	Sink(nil).Say(Note, "", "dropped")
	if want := []Event{{Warning, "reached 1m", "max-duration"}}; !slices.Equal(got, want) {
		t.Errorf("events = %+v, want %+v", got, want)
	}
}

func TestSerial(t *testing.T) {
	if Sink(nil).Serial() != nil {
		t.Error("Serial of a nil sink is not nil")
	}
	n := 0
	s := Sink(func(Event) { n++ }).Serial()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				s.Say(Progress, "", "point")
			}
		})
	}
	wg.Wait()
	if n != 800 {
		t.Errorf("%d events, want 800", n)
	}
}
