package simserver

import (
	"fmt"
	"strconv"
	"strings"
)

// FaultSpec gives the rates of injected faults. Each request draws at most one
// fault, deterministically from the seed and the request (session id, message
// count and a hash of the last message), so a run replayed with the same seed
// meets the same faults.
type FaultSpec struct {
	Error5xx  float64 // answer 500 at once, OpenAI error body
	Error429  float64 // answer 429 at once, as an overloaded server does
	Cut       float64 // close the connection half-way through the answer
	Malformed float64 // send one chunk of broken JSON half-way (then go on)
	Stall     float64 // stop sending half-way for StallSeconds (modelled), then go on
	// StallSeconds is the length of a stall in modelled seconds (divided by the
	// speedup like every modelled duration); 0 means 60.
	StallSeconds float64
}

// fault kinds a request can draw.
const (
	faultNone = iota
	fault5xx
	fault429
	faultCut
	faultMalformed
	faultStall
)

var faultNames = []string{"", "5xx", "429", "cut", "malformed", "stall"}

// ParseFaults parses a fault spec: comma-separated NAME=RATE pairs with NAME one
// of 5xx, 429, cut, malformed, stall, and RATE in [0, 1]; stall_s=SECONDS sets the
// stall length. The rates must add up to at most 1. "" means no faults.
//
//	5xx=0.01,429=0.01,cut=0.01,malformed=0.01,stall=0.01,stall_s=30
func ParseFaults(spec string) (FaultSpec, error) {
	var f FaultSpec
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return f, nil
	}
	for _, kv := range strings.Split(spec, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return FaultSpec{}, fmt.Errorf("fault spec %q: %q is not NAME=RATE", spec, kv)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return FaultSpec{}, fmt.Errorf("fault spec %q: %s: %w", spec, name, err)
		}
		var dst *float64
		switch strings.TrimSpace(name) {
		case "5xx":
			dst = &f.Error5xx
		case "429":
			dst = &f.Error429
		case "cut":
			dst = &f.Cut
		case "malformed":
			dst = &f.Malformed
		case "stall":
			dst = &f.Stall
		case "stall_s":
			if v < 0 {
				return FaultSpec{}, fmt.Errorf("fault spec %q: stall_s %v is negative", spec, v)
			}
			f.StallSeconds = v
			continue
		default:
			return FaultSpec{}, fmt.Errorf("fault spec %q: unknown fault %q (want 5xx, 429, cut, malformed, stall or stall_s)", spec, name)
		}
		if v < 0 || v > 1 {
			return FaultSpec{}, fmt.Errorf("fault spec %q: rate %v of %s is not in [0, 1]", spec, v, name)
		}
		*dst = v
	}
	if err := f.Validate(); err != nil {
		return FaultSpec{}, fmt.Errorf("fault spec %q: %w", spec, err)
	}
	return f, nil
}

// Validate checks the rates.
func (f FaultSpec) Validate() error {
	sum := 0.0
	for _, r := range f.rates() {
		if !(r >= 0 && r <= 1) {
			return fmt.Errorf("fault rate %v is not in [0, 1]", r)
		}
		sum += r
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("fault rates add up to %v, more than 1", sum)
	}
	return nil
}

func (f FaultSpec) rates() []float64 {
	return []float64{f.Error5xx, f.Error429, f.Cut, f.Malformed, f.Stall}
}

// String formats the spec as ParseFaults reads it.
func (f FaultSpec) String() string {
	var parts []string
	for i, r := range f.rates() {
		if r > 0 {
			parts = append(parts, faultNames[i+1]+"="+strconv.FormatFloat(r, 'g', -1, 64))
		}
	}
	if f.StallSeconds > 0 {
		parts = append(parts, "stall_s="+strconv.FormatFloat(f.StallSeconds, 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

// draw maps a uniform u in [0, 1) to a fault kind.
func (f FaultSpec) draw(u float64) int {
	acc := 0.0
	for i, r := range f.rates() {
		acc += r
		if u < acc {
			return i + 1
		}
	}
	return faultNone
}

func (f FaultSpec) stallSeconds() float64 {
	if f.StallSeconds > 0 {
		return f.StallSeconds
	}
	return 60
}
