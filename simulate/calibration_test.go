package simulate

import (
	"context"
	"math"
	"testing"

	"github.com/agentrace/agentrace/simserver"
)

// publishedCell is one of SGLang's published Qwen3.6-35B-A3B runs on one H200
// (sgl-project/sglang, docs/src/snippets/configs/Qwen/qwen3.6-benchmarks.jsx,
// PR #32959): FP8, TP1, random data, ISL 8192, OSL 1024. The page's throughput is
// total tokens/s; output tokens/s is that divided by (8192+1024)/1024 = 9.
type publishedCell struct {
	name        string
	concurrency int
	speculative string
	ttftMs      float64 // 0: not compared (queueing at c=1024)
	tpotMs      float64
	outputTPS   float64
}

var sglangCells = []publishedCell{
	{"MTP c=1", 1, simserver.SpecMTP, 138, 1.98, 481},
	{"MTP c=16", 16, simserver.SpecMTP, 189, 6.20, 2270},
	{"no speculation c=1024", 1024, simserver.SpecOff, 0, 27.9, 3356},
}

// calibrationPoint simulates a published cell's workload on simulated hardware.
func calibrationPoint(t testing.TB, hardware string, c publishedCell) *Point {
	t.Helper()
	p, err := simserver.LookupHardware(hardware)
	if err != nil {
		t.Fatal(err)
	}
	if p, err = p.WithSpeculative(c.speculative, 0); err != nil {
		t.Fatal(err)
	}
	pt, err := Run(context.Background(), Options{Hardware: p, ISL: 8192, OSL: 1024, Concurrency: c.concurrency, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return pt
}

// TestCalibration reproduces the three published H200 FP8 cells within 15%
// each: TTFT at c=1 and c=16, TPOT and output tokens/s at all three.
func TestCalibration(t *testing.T) {
	for _, c := range sglangCells {
		pt := calibrationPoint(t, simserver.DefaultHardware, c)
		t.Logf("%s: TTFT p50 %.1f ms (mean %.1f), TPOT p50 %.2f ms, output %.0f tok/s; running limit %d, %d steps",
			c.name, float64(pt.TTFTP50Ms), float64(pt.TTFTMeanMs), float64(pt.TPOTP50Ms), float64(pt.OutputTPS), pt.RunningLimit, pt.Steps)
		check := func(what string, got, want float64) {
			if want == 0 {
				return
			}
			if d := math.Abs(got-want) / want; d > 0.15 {
				t.Errorf("%s: %s %.2f, published %.2f: off by %.0f%% (> 15%%)", c.name, what, got, want, 100*d)
			}
		}
		check("TTFT ms", float64(pt.TTFTP50Ms), c.ttftMs)
		check("TPOT ms", float64(pt.TPOTP50Ms), c.tpotMs)
		check("output tok/s", float64(pt.OutputTPS), c.outputTPS)
	}
}

// TestPredictions runs the published cells on the profiles that were not
// fitted (derived from the hardware's specifications and the H200 FP8
// efficiencies) and logs the predictions. It checks only their order: BF16
// weights and KV are slower than FP8 on the same H200 in every cell, and a B200
// (1.7x the bandwidth, 2.3x the FP8 peak) is faster.
func TestPredictions(t *testing.T) {
	if testing.Short() {
		t.Skip("six simulated cells")
	}
	for _, c := range sglangCells {
		h200 := calibrationPoint(t, simserver.DefaultHardware, c)
		for _, name := range []string{"h200-qwen3.6-35b-a3b-bf16", "b200-qwen3.6-35b-a3b"} {
			pt := calibrationPoint(t, name, c)
			t.Logf("%s %s: TTFT p50 %.1f ms, TPOT p50 %.2f ms, output %.0f tok/s (running limit %d)",
				name, c.name, float64(pt.TTFTP50Ms), float64(pt.TPOTP50Ms), float64(pt.OutputTPS), pt.RunningLimit)
			faster := pt.OutputTPS > h200.OutputTPS && pt.TPOTP50Ms < h200.TPOTP50Ms
			if bf16 := name != "b200-qwen3.6-35b-a3b"; bf16 == faster {
				t.Errorf("%s %s: %.0f tok/s, TPOT %.2f ms against the H200 FP8's %.0f and %.2f: wrong order",
					name, c.name, float64(pt.OutputTPS), float64(pt.TPOTP50Ms), float64(h200.OutputTPS), float64(h200.TPOTP50Ms))
			}
		}
	}
}

// TestKimiSpeculation runs ISL 8192 / OSL 1024 at c=1 on the Kimi K2.6
// profile: EAGLE-3 accepting every draft streams 4 tokens a verify step and
// beats no speculation; accepting none pays the 3 draft passes a token for
// nothing and loses to it. It logs the Kimi K3 profile's prediction beside
// them.
func TestKimiSpeculation(t *testing.T) {
	if testing.Short() {
		t.Skip("four simulated cells")
	}
	run := func(hardware, method string, acceptance float64) *Point {
		p, err := simserver.LookupHardware(hardware)
		if err != nil {
			t.Fatal(err)
		}
		if p, err = p.WithSpeculative(method, 0); err != nil {
			t.Fatal(err)
		}
		if p.Speculative.On() {
			p.Speculative.Acceptance = acceptance
		}
		pt, err := Run(context.Background(), Options{Hardware: p, ISL: 8192, OSL: 1024, Concurrency: 1, Requests: 4, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s, %s at acceptance %.2f: TTFT p50 %.1f ms, TPOT p50 %.2f ms, output %.0f tok/s",
			hardware, method, acceptance, float64(pt.TTFTP50Ms), float64(pt.TPOTP50Ms), float64(pt.OutputTPS))
		return pt
	}
	off := run("8xh200-kimi-k2.6", simserver.SpecOff, 0)
	all := run("8xh200-kimi-k2.6", simserver.SpecEAGLE3, 1)
	none := run("8xh200-kimi-k2.6", simserver.SpecEAGLE3, 0)
	if !(all.TPOTP50Ms < off.TPOTP50Ms && off.TPOTP50Ms < none.TPOTP50Ms) {
		t.Errorf("TPOT p50: all drafts accepted %.2f ms, no speculation %.2f, none accepted %.2f; want them in that order",
			float64(all.TPOTP50Ms), float64(off.TPOTP50Ms), float64(none.TPOTP50Ms))
	}
	// Every draft accepted: 1023 tokens after the first in 256 verify steps of 4
	// (the last with 3), so TPOT is a quarter of a verify step.
	if all.Steps != 4*(1+256) {
		t.Errorf("all drafts accepted: %d steps for 4 requests, want %d (a prefill and 256 verify steps each)", all.Steps, 4*(1+256))
	}
	k3 := run("8xb300-kimi-k3", simserver.SpecOff, 0)
	if k3.TPOTP50Ms <= off.TPOTP50Ms {
		t.Errorf("Kimi K3 (104B active) TPOT %.2f ms is not above K2.6's (32B active) %.2f", float64(k3.TPOTP50Ms), float64(off.TPOTP50Ms))
	}
}
