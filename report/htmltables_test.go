package report

import (
	"math"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/curve"
)

// A column's digits follow its typical value: three significant digits, none
// from 100 up, at most three decimals, thousands separators.
func TestColumnDigits(t *testing.T) {
	nan := metrics.Num(math.NaN())
	for _, tc := range []struct {
		vals []metrics.Num
		v    metrics.Num
		want string
	}{
		{[]metrics.Num{4288.04, 268.1, 1469.8}, 4288.04, "4,288"},
		{[]metrics.Num{2.04, 2.30, 7.91}, 2.04, "2.04"},
		{[]metrics.Num{0.04, 0.041, 0.07}, 0.0412, "0.041"},
		{[]metrics.Num{0.0213, 1.18, 3.61}, 0.0213, "0.02"}, // ITL: its median 1.18 gives two decimals
		{[]metrics.Num{14.3, 18.3, 38.9}, 14.3, "14.3"},
		{[]metrics.Num{0.00001, 0.00002}, 0.00001, "0.000"},
		{[]metrics.Num{nan, 5}, nan, "–"},
		{[]metrics.Num{nan}, 3, "3"},
	} {
		if got := newColumn(tc.vals...).fmt(tc.v); got != tc.want {
			t.Errorf("column %v: %v shown %q, want %q", tc.vals, tc.v, got, tc.want)
		}
	}
}

// Against the simulated server a point's modelled figures come first, the run's
// clock below them, labelled; latencies are in ms; a missing ITL is explained.
func TestPointsTablesModelledFirst(t *testing.T) {
	p := &curve.Point{Concurrency: 64, Region: "high_concurrency", Point: metrics.Point{SystemTPS: 287937, E2EAvgInteractivity: 4527, TurnsPerS: 459, TokenTimes: metrics.TokenTimes{TPSPerUser: 3584, TTFTP50Ms: 30, TTFTP90Ms: 45, TTFTP99Ms: 67, TPOTP50Ms: 0.141, TPOTP90Ms: 0.279, TPOTP99Ms: 0.444}, ITLP50Ms: metrics.Num(math.NaN()), ITLP90Ms: metrics.Num(math.NaN()), ITLP99Ms: metrics.Num(math.NaN()), LatencyP50Ms: 74, LatencyP90Ms: 147, LatencyP99Ms: 246, WindowDurationS: 0.49, ClientLagP99Ms: 75.8, PrefixCacheHitRatio: metrics.Num(math.NaN())}}
	p.Manifest.SimSpeedup = 60
	tabs := pointsTables(&curve.System{Points: []*curve.Point{p}})
	if len(tabs) != 3 {
		t.Fatalf("%d tables", len(tabs))
	}
	main := tabs[0]
	if len(main.Rows) != 2 || main.Head[1] != "clock" || !strings.Contains(string(main.Head[9]), "latency ms") {
		t.Fatalf("head %v, %d rows", main.Head, len(main.Rows))
	}
	text := func(r htmlRow) []string {
		var out []string
		for _, c := range r.Cells {
			out = append(out, c.Text)
		}
		return out
	}
	modelled, clock := text(main.Rows[0]), text(main.Rows[1])
	if want := []string{"64", "modelled", "high_concurrency", "4,799", "75.5", "59.7", "7.65", "1,800 / 2,700 / 4,020", "8.5 / 16.7 / 26.6", "4,440 / 8,820 / 14,760"}; strings.Join(modelled[:10], "|") != strings.Join(want, "|") {
		t.Errorf("modelled row %q\nwant %q", modelled[:10], want)
	}
	if want := []string{"", "run's clock", "", "287,937", "4,527", "3,584", "459", "30.0 / 45.0 / 67.0", "0.141 / 0.279 / 0.444", "74 / 147 / 246"}; strings.Join(clock[:10], "|") != strings.Join(want, "|") {
		t.Errorf("run's clock row %q\nwant %q", clock[:10], want)
	}
	if main.Rows[1].Class != "clock" || !strings.Contains(main.Notes[0], "modelled hardware's figures first") {
		t.Errorf("clock row class %q, notes %q", main.Rows[1].Class, main.Notes)
	}
	more := tabs[1]
	if got := text(more.Rows[0])[2]; got != "– / – / –" || len(more.Notes) != 1 || !strings.Contains(more.Notes[0], "ITL – (no inter-token latency): no completed window turn was streamed") {
		t.Errorf("ITL %q, notes %q", got, more.Notes)
	}
	// not against the simulated server: one row, no clock column
	p.Manifest.SimSpeedup = 0
	if tabs := pointsTables(&curve.System{Points: []*curve.Point{p}}); len(tabs[0].Rows) != 1 || tabs[0].Head[1] != "region" || text(tabs[0].Rows[0])[2] != "287,937" {
		t.Errorf("a real run's table: head %v, rows %v", tabs[0].Head, tabs[0].Rows)
	}
}

// A note several gates share is said once, below the table.
func TestGatesTableNotesOnce(t *testing.T) {
	long := strings.TrimSuffix(strings.Repeat("unofficial: the server's usage counts, not the reference tokenizer; ", 5), "; ")
	var pts []*curve.Point
	for c := 1; c <= 7; c++ {
		pts = append(pts, &curve.Point{Concurrency: c, Judgement: curve.Judgement{Ruleset: "r", Gates: []schemas.Gate{
			{Name: "inline_accuracy", Value: 0.9, Threshold: ">= 0.5586", Pass: true, Outcome: schemas.OutcomePass},
			{Name: "osl_window", Value: 383, Threshold: "[344, 422]", Pass: true, Outcome: schemas.OutcomePass, Note: long},
		}}})
	}
	pts[0].Gates[0].Note = "only here"
	tab := gatesTable(&curve.System{Points: pts})
	if len(tab.Rows) != 14 || len(tab.Notes) != 1 || tab.Notes[0] != "Note 1: "+long {
		t.Fatalf("%d rows, notes %q", len(tab.Rows), tab.Notes)
	}
	for _, r := range tab.Rows {
		note := r.Cells[6].Text
		if r.Cells[2].Text == "osl_window" && note != "note 1" || strings.Contains(note, "unofficial") {
			t.Errorf("row %v: note %q", r.Cells[0].Text, note)
		}
	}
	if got := tab.Rows[0].Cells[6].Text; got != "only here" {
		t.Errorf("a note of one gate: %q", got)
	}
}

// The settings say a run's max tokens default in words: 0 is not a limit of 0.
func TestMaxTokensText(t *testing.T) {
	for n, want := range map[int]string{0: "the profile's (else 1024)", -1: "no run default (the first user row's, else 128)", 2048: "2048"} {
		if got := maxTokensText(n); got != want {
			t.Errorf("max tokens %d: %q, want %q", n, got, want)
		}
	}
}
