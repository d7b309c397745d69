package report

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	gohtml "html"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/metrics/metricstest"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/agentrace/agentrace/score/scoretest"
	"github.com/agentrace/agentrace/tokens"
	"gonum.org/v1/plot/cmpimg"
)

var update = flag.Bool("update", false, "rewrite golden files")

func defaultFake() metricstest.RunOptions {
	return metricstest.RunOptions{DatasetSize: 16, Seed: 7, Model: "Qwen/Qwen3.6-35B-A3B", ConvPrefix: "django__django-"}
}

func buildFake(t *testing.T, o Options) (*Report, string) {
	t.Helper()
	if o.Out == "" {
		o.Out = filepath.Join(t.TempDir(), "out")
	}
	r, err := Build(context.Background(), o)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return r, o.Out
}

func TestBuildSweep(t *testing.T) {
	sweep := writeFakeSweep(t, filepath.Join(t.TempDir(), "sweep"), defaultFake())
	r, out := buildFake(t, Options{Runs: []string{sweep}})
	if len(r.Systems) != 1 || len(r.Systems[0].Points) != 8 {
		t.Fatalf("systems = %d, points = %d", len(r.Systems), len(r.Systems[0].Points))
	}
	s := r.Systems[0]
	if s.CMin != 1 || s.CMax != 128 || s.Regions == nil {
		t.Fatalf("C_min %d C_max %d regions %v (%s)", s.CMin, s.CMax, s.Regions, s.RegionsErr)
	}
	wantRegion := map[int]string{1: score.RegionLowLatency, 2: score.RegionLow, 4: score.RegionLow,
		8: score.RegionMedium, 16: score.RegionMedium, 32: score.RegionHigh, 64: score.RegionHigh, 128: score.RegionHigh}
	for _, p := range s.Points {
		if p.Region != wantRegion[p.Concurrency] {
			t.Errorf("c=%d region %q, want %q", p.Concurrency, p.Region, wantRegion[p.Concurrency])
		}
		if !p.SystemTPS.Valid() || !p.E2EAvgInteractivity.Valid() || !p.TPSPerUser.Valid() {
			t.Errorf("c=%d has missing headline metrics: %+v", p.Concurrency, p)
		}
	}
	// Throughput grows and interactivity falls with load in the fake server.
	if !(s.Points[7].SystemTPS > s.Points[0].SystemTPS && s.Points[7].E2EAvgInteractivity < s.Points[0].E2EAvgInteractivity) {
		t.Errorf("fake sweep has no trade-off: c=1 %v/%v, c=128 %v/%v", s.Points[0].SystemTPS, s.Points[0].E2EAvgInteractivity,
			s.Points[7].SystemTPS, s.Points[7].E2EAvgInteractivity)
	}
	status := map[string]string{}
	for _, c := range s.Checks {
		status[c.Name] = c.Status
	}
	for name, want := range map[string]string{
		"at least 7 points (point-count)": curve.CheckPass, "at most 32 points (point-cap)": curve.CheckPass,
		"C_max and C_min within bounds (region-basis, region-computation)": curve.CheckPass,
		"point in a region (concurrency-in-range)":                         curve.CheckPass,
		"an ultra-low point, 1..32 (ultra-low-concurrency-coverage)":       curve.CheckPass,
		"a point in low_concurrency (low-concurrency-coverage)":            curve.CheckPass,
		"a point in med_concurrency (med-concurrency-coverage)":            curve.CheckPass,
		"a point in high_concurrency (high-concurrency-coverage)":          curve.CheckPass,
		"one agentic load pattern (benchmark-type-consistency)":            curve.CheckPass,
		"one model (config-consistency-model)":                             curve.CheckPass,
		"accuracy at the 4 mandatory bands (accuracy-coverage)":            curve.CheckFail,
		"trajectory budget a multiple of the dataset size":                 curve.CheckPass,
		"official dataset size (613)":                                      curve.CheckFail, "official settings": curve.CheckPass, "metric consistency within 1% (metric-consistency-*)": curve.CheckPass,
		"runs complete": curve.CheckPass, "accuracy gates per point (agentic-accuracy-inline, agentic-osl-range)": curve.CheckFail, "official token counts": curve.CheckFail,
	} {
		if status[name] != want {
			t.Errorf("check %q = %q, want %q (%+v)", name, status[name], want, s.Checks)
		}
	}

	// Files.
	for _, f := range []string{HTMLFile, SummaryFile, PointsFile, "plots/pareto.png", "plots/pareto.svg",
		"plots/system_tps.png", "plots/ttft_p90.svg", "plots/tps_per_user.png", "plots/context_growth.png",
		"plots/ttft_vs_isl.svg", "plots/osl_histogram.png", "points/c1/result_summary.json", "points/c128/point.yaml"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("output %s: %v", f, err)
		}
	}
	// points.json field names.
	b, err := os.ReadFile(filepath.Join(out, PointsFile))
	if err != nil {
		t.Fatal(err)
	}
	var pts []map[string]any
	if err := json.Unmarshal(b, &pts); err != nil {
		t.Fatal(err)
	}
	if len(pts) != 8 {
		t.Fatalf("points.json has %d points", len(pts))
	}
	for _, k := range []string{"concurrency", "system_tps", "e2e_avg_interactivity", "output_tokens_per_turn_total",
		"e2e_turn_time_seconds_total", "tps_per_user", "ttft_p90_ms", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
		"tpot_p90_ms", "tpot_p99_ms", "itl_p50_ms", "itl_p90_ms", "itl_p99_ms", "latency_p50_ms", "latency_p90_ms",
		"latency_p99_ms", "isl", "osl", "osl_full_run", "progress_rate_tokens_per_s", "prefix_cache_hit_ratio",
		"client_lag_p99_ms", "counts", "window_counts", "window_start_ns", "window_end_ns", "window_duration_s",
		"turns_excluded_by_window", "region", "token_source", "unofficial"} {
		if _, ok := pts[3][k]; !ok {
			t.Errorf("points.json lacks %q", k)
		}
	}
	y, err := os.ReadFile(filepath.Join(out, "points/c8/point.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"concurrency: 8\n", "region: med_concurrency",
		"model_name: qwen3_6-35b-a3b", "runtime_settings:\n", "  load_pattern: agentic_inference\n", "warmup:\n"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("point.yaml lacks %q:\n%s", want, y)
		}
	}
	// Nothing the run does not know: no C_max was declared (the highest point
	// stands in for the regions), nor a division.
	if strings.Contains(string(y), "division") || strings.Contains(string(y), "TODO") || strings.Contains(string(y), "max_supported_concurrency") {
		t.Errorf("point.yaml declares what only the submitter knows:\n%s", y)
	}
	y16, _ := os.ReadFile(filepath.Join(out, "points/c16/point.yaml"))
	if !strings.Contains(string(y16), "region: med_concurrency") {
		t.Errorf("every medium point is in the medium region:\n%s", y16)
	}
	html, _ := os.ReadFile(filepath.Join(out, HTMLFile))
	assertSelfContained(t, string(html))
	md, _ := os.ReadFile(filepath.Join(out, SummaryFile))
	for _, want := range []string{"## Verdict", "| a point in med_concurrency (med-concurrency-coverage) | pass |", "region form cmin-v1.0", "## Points", "| 128 | high_concurrency |", "Turn time"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
}

func assertSelfContained(t *testing.T, html string) {
	t.Helper()
	if strings.Contains(strings.ToLower(html), "<script") {
		t.Error("report.html holds a script element")
	}
	for _, re := range []string{`(?i)<link\b`, `(?i)\bsrc\s*=\s*"https?:`, `(?i)url\(\s*['"]?https?:`, `(?i)<img\b`, `(?i)@import`} {
		if regexp.MustCompile(re).MatchString(html) {
			t.Errorf("report.html references an external resource (%s)", re)
		}
	}
	for _, id := range []string{`<svg id="fig-pareto"`, `<svg id="fig-system_tps"`, `<svg id="fig-ttft_p90"`,
		`<svg id="fig-tps_per_user"`, `<svg id="fig-context_growth"`, `<svg id="fig-ttft_vs_isl"`, `<svg id="fig-osl_histogram"`} {
		if !strings.Contains(html, id) {
			t.Errorf("report.html lacks %s", id)
		}
	}
	if strings.Contains(html, "<?xml") {
		t.Error("inline SVG still carries an XML prolog")
	}
}

func TestBuildWithScores(t *testing.T) {
	sweep := writeFakeSweep(t, filepath.Join(t.TempDir(), "sweep"), defaultFake())
	for i, c := range fakeSweepConcurrencies() {
		sc := schemas.Scores{SchemaVersion: "1", Score: 0.6,
			OSL: &schemas.OSLResult{Mean: 400, Window: [2]float64{355, 434}},
			Verdict: schemas.Verdict{Ruleset: "qwen-readme-2026-08", Pass: i != 3, Gates: []schemas.Gate{
				{Name: "inline_accuracy", Value: 0.6, Threshold: ">= 0.5586", Pass: true},
				{Name: "osl_window", Value: 400, Threshold: "[355, 434]", Pass: i != 3},
			}}}
		writeScores(t, filepath.Join(sweep, "c"+itoa(c)), sc)
	}
	r, out := buildFake(t, Options{Runs: []string{sweep}})
	html, _ := os.ReadFile(filepath.Join(out, HTMLFile))
	if !regexp.MustCompile(`<td class="n">8</td><td>qwen-readme-2026-08</td><td>osl_window</td><td class="n">400</td><td>\[355, 434\]</td><td class="fail">fail</td>`).Match(html) {
		t.Error("report.html lacks the failing gate row of c=8")
	}
	s := r.Systems[0]
	if s.OSLWindow == nil || s.OSLWindow[0] != 355 || s.Ruleset != "qwen-readme-2026-08" {
		t.Errorf("OSL window %v ruleset %q", s.OSLWindow, s.Ruleset)
	}
	for _, c := range s.Checks {
		if c.Name == "accuracy gates per point (agentic-accuracy-inline, agentic-osl-range)" && (c.Status != curve.CheckFail || !strings.Contains(c.Reason, "c=8 (osl_window 400 not [355, 434])")) {
			t.Errorf("accuracy gates check = %+v", c)
		}
	}
	if p := s.Points[3]; p.GatesPass == nil || *p.GatesPass || len(p.Gates) != 2 {
		t.Errorf("c=8 gates %+v", p.Gates)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestCoverageFailures(t *testing.T) {
	root := t.TempDir()
	o := defaultFake()
	// Three points only, one above C_max: too few, regions uncovered, a margin point.
	for _, c := range []int{4, 40, 60} {
		oo := o
		oo.Concurrency, oo.Trajectories = c, 3*o.DatasetSize
		m, recs := metricstest.Run(oo)
		if c == 40 {
			m.Config.Salt = false
			m.Config.Trajectories = 47
		}
		writeRun(t, filepath.Join(root, "c"+itoa(c)), m, recs)
	}
	r, _ := buildFake(t, Options{Runs: []string{root}, CMax: 56})
	s := r.Systems[0]
	got := map[string]curve.Check{}
	for _, c := range s.Checks {
		got[c.Name] = c
	}
	if c := got["at least 7 points (point-count)"]; c.Status != curve.CheckFail || !strings.Contains(c.Reason, "3 points") {
		t.Errorf("point count check = %+v", c)
	}
	if c := got["a point in high_concurrency (high-concurrency-coverage)"]; !strings.Contains(c.Reason, "margin points (legal, satisfy no region): c=60") {
		t.Errorf("high region check = %+v", c)
	}
	if c := got["a point in low_concurrency (low-concurrency-coverage)"]; c.Status != curve.CheckFail {
		t.Errorf("low region check = %+v", c)
	}
	if c := got["official settings"]; c.Status != curve.CheckFail || !strings.Contains(c.Reason, "c=40: cache salting off") {
		t.Errorf("settings check = %+v", c)
	}
	if c := got["trajectory budget a multiple of the dataset size"]; c.Status != curve.CheckFail || !strings.Contains(c.Reason, "c=40: budget of 47 trajectories") {
		t.Errorf("budget check = %+v", c)
	}
	// The curve limits are the ruleset's: a user ruleset allowing 2 points at most
	// fails the same three points on point-cap, and needs 2 for point-count.
	rs, err := rulesets.Load("")
	if err != nil {
		t.Fatal(err)
	}
	rs.Name, rs.Derivation, rs.Curve.MinPoints, rs.Curve.MaxPoints = "two-points", nil, 2, 2
	b, err := rulesets.JSON(rs)
	if err != nil {
		t.Fatal(err)
	}
	rsFile := filepath.Join(t.TempDir(), "two-points.json")
	if err := os.WriteFile(rsFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r3, _ := buildFake(t, Options{Runs: []string{root}, CMax: 56, Ruleset: rsFile})
	got3 := map[string]curve.Check{}
	for _, c := range r3.Systems[0].Checks {
		got3[c.Name] = c
	}
	if c := got3["at most 2 points (point-cap)"]; c.Status != curve.CheckFail || !strings.Contains(c.Reason, "3 points; the rules allow 2") {
		t.Errorf("point cap under a 2-point ruleset = %+v", c)
	}
	if c := got3["at least 2 points (point-count)"]; c.Status != curve.CheckPass {
		t.Errorf("point count under a 2-point ruleset = %+v", c)
	}
	// C_max at or below 32 is rejected with the regions' error.
	r2, _ := buildFake(t, Options{Runs: []string{filepath.Join(root, "c4")}})
	if s := r2.Systems[0]; s.Regions != nil || !strings.Contains(s.RegionsErr, "C_max 4 must be greater than 32") {
		t.Errorf("regions for a single c=4 point: %v %q", s.Regions, s.RegionsErr)
	}
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	a := writeFakeSweep(t, filepath.Join(dir, "systemA"), defaultFake())
	fast := defaultFake()
	fast.Speed, fast.Seed = 1.6, 9
	b := writeFakeSweep(t, filepath.Join(dir, "systemB"), fast)
	r, out := buildFake(t, Options{Compare: []string{a, b}})
	if len(r.Systems) != 2 || r.Systems[0].Name != "systemA" || r.Systems[1].Name != "systemB" {
		t.Fatalf("systems %v", r.Systems)
	}
	svg, err := os.ReadFile(filepath.Join(out, "plots/pareto.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"step curve: systemA", "step curve: systemB"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("compare Pareto lacks legend %q", want)
		}
	}
	for _, f := range []string{"points/systemA/c8/result_summary.json", "points/systemB/c128/point.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := Build(context.Background(), Options{Out: t.TempDir(), Compare: []string{a}}); err == nil {
		t.Error("--compare with one system should fail")
	}
}

// TestHTMLEscapesTraceText feeds hostile model, dataset, conversation, endpoint and
// output text and checks it reaches the page and summary only escaped.
func TestHTMLEscapesTraceText(t *testing.T) {
	const script = `<script>alert(1)</script>`
	const img = `"><img src=x onerror=alert(2)>`
	o := defaultFake()
	o.Model = script + img
	o.ConvPrefix = img
	root := filepath.Join(t.TempDir(), `sweep<script>x</script>`)
	for _, c := range fakeSweepConcurrencies()[:3] {
		oo := o
		oo.Concurrency, oo.Trajectories = c, o.DatasetSize
		m, recs := metricstest.Run(oo)
		m.Config.Dataset = img
		m.Config.Endpoint = script
		m.EndpointDescription = img + script
		m.DatasetHash = script
		m.Config.NonOfficial = []string{img}
		for i := range recs {
			recs[i].OutputContent = script + img
			recs[i].Domain = img // shows up in plot legends
		}
		writeRun(t, filepath.Join(root, "c"+itoa(c)), m, recs)
		sc := schemas.Scores{Verdict: schemas.Verdict{Ruleset: script, Gates: []schemas.Gate{{Name: img, Threshold: script, Note: img}}}}
		writeScores(t, filepath.Join(root, "c"+itoa(c)), sc)
	}
	_, out := buildFake(t, Options{Runs: []string{root}})
	html, err := os.ReadFile(filepath.Join(out, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, raw := range []string{"<script", "<img"} {
		if strings.Contains(strings.ToLower(page), raw) {
			t.Errorf("report.html contains raw %q", raw)
		}
	}
	if strings.Contains(page, `"><img`) {
		t.Error("report.html contains the raw attribute break-out")
	}
	// The text is there, escaped.
	for _, esc := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt;"} {
		if !strings.Contains(page, esc) {
			t.Errorf("report.html lacks the escaped form %q", esc)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, SummaryFile))
	if strings.Contains(string(md), "<script") || strings.Contains(string(md), "<img") {
		t.Error("summary.md contains raw HTML from the trace")
	}
	svg, _ := os.ReadFile(filepath.Join(out, "plots/context_growth.svg"))
	if strings.Contains(string(svg), "<img") {
		t.Error("context_growth.svg contains raw HTML from the trace")
	}
}

// measureText is the script the Chromium test adds to a copy of report.html: it
// measures, as laid out with whatever fonts the machine has, every text element
// of every figure against its figure's box, and the figures' sizes, and writes
// the findings into the page for --dump-dom.
const measureText = `<script>
(function () {
  var cut = [], sizes = [];
  document.querySelectorAll("figure svg").forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    sizes.push(svg.id + " " + Math.round(box.width) + "x" + Math.round(box.height));
    svg.querySelectorAll("text").forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (r.width === 0) { return; }
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) {
        cut.push(svg.id + ": " + JSON.stringify(t.textContent) + " [" + r.left.toFixed(1) + ", " + r.right.toFixed(1) +
          "] x [" + r.top.toFixed(1) + ", " + r.bottom.toFixed(1) + "] outside [" + box.left.toFixed(1) + ", " + box.right.toFixed(1) +
          "] x [" + box.top.toFixed(1) + ", " + box.bottom.toFixed(1) + "]");
      }
    });
  });
  var p = document.createElement("pre");
  p.id = "measured";
  p.textContent = "texts cut: " + cut.length + "\n" + cut.join("\n") + "\nfigures: " + sizes.join("; ");
  document.body.appendChild(p);
})();
</script>`

// TestChromiumRendersReport opens report.html in headless Chromium, saves a
// screenshot and checks the rendered DOM: the Pareto figure is there and no error
// marker is shown; with the machine's own fonts (Liberation or not), no text of
// any figure runs outside its figure, and the figures are the same size.
func TestChromiumRendersReport(t *testing.T) {
	chromium := testenv.Chromium(t)
	sweep := writeFakeSweep(t, filepath.Join(t.TempDir(), "sweep"), defaultFake())
	_, out := buildFake(t, Options{Runs: []string{sweep}})
	html, err := os.ReadFile(filepath.Join(out, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	// a copy with the measuring script: report.html itself has no script
	page := filepath.Join(t.TempDir(), "measured.html")
	if err := os.WriteFile(page, bytes.Replace(html, []byte("</body>"), []byte(measureText+"</body>"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	args := func(extra ...string) []string {
		return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=" + t.TempDir(), "--window-size=1400,3000"}, append(extra, "file://"+page)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// One browser start does both: the screenshot file and the DOM on stdout.
	cmd := exec.CommandContext(ctx, chromium, args("--screenshot="+shot, "--dump-dom")...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v (size %d)", shot, err, sizeOf(st))
	}
	if n := distinctColors(t, shot); n < 50 {
		t.Errorf("screenshot has %d distinct colours: the page looks blank", n)
	}
	d := string(dom)
	if !strings.Contains(d, `<svg id="fig-pareto"`) {
		t.Error("rendered page has no Pareto figure")
	}
	if !strings.Contains(d, "Agentic Pareto curve") || !strings.Contains(d, `id="verdict"`) {
		t.Error("rendered page lacks its headings")
	}
	if strings.Contains(d, `class="error"`) {
		t.Error("rendered page shows an error marker")
	}
	m := regexp.MustCompile(`(?s)<pre id="measured">(.*?)</pre>`).FindStringSubmatch(d)
	if m == nil {
		t.Fatal("the measuring script left no result")
	}
	measured := gohtml.UnescapeString(m[1])
	if !strings.HasPrefix(measured, "texts cut: 0\n") {
		t.Errorf("text runs outside its figure:\n%s", measured)
	}
	figs := regexp.MustCompile(`fig-\w+ (\d+x\d+)`).FindAllStringSubmatch(measured, -1)
	if len(figs) < 5 {
		t.Errorf("measured %d figures: %s", len(figs), measured)
	}
	for _, f := range figs {
		if f[1] != figs[0][1] {
			t.Errorf("figures of different sizes: %s", measured)
			break
		}
	}
	t.Logf("%s", measured)
	if dir := os.Getenv("AGENTRACE_REPORT_SCREENSHOT_DIR"); dir != "" {
		b, _ := os.ReadFile(shot)
		_ = os.WriteFile(filepath.Join(dir, "report-test.png"), b, 0o644)
	}
}

func distinctColors(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	seen := map[color.RGBA]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}] = true
		}
	}
	return len(seen)
}

func sizeOf(st os.FileInfo) int64 {
	if st == nil {
		return 0
	}
	return st.Size()
}

// TestParetoGolden compares the Pareto PNG of a fixed fake sweep with a golden
// image, within a colour tolerance (refresh with -update).
func TestParetoGolden(t *testing.T) {
	var pts []*curve.Point
	for _, c := range fakeSweepConcurrencies() {
		o := defaultFake()
		o.Concurrency, o.Trajectories = c, o.DatasetSize*max(1, 2*c/o.DatasetSize)
		m, recs := metricstest.Run(o)
		p, err := metrics.FoldRun(m, recs, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		pts = append(pts, curve.NewPoint(m, p))
	}
	s := curve.NewSystem("golden", pts, 0)
	f, err := ParetoPlot([]*curve.System{s})
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "pareto_golden.png")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, f.PNG, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	ok, err := cmpimg.EqualApprox("png", f.PNG, want, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		_ = os.WriteFile(filepath.Join(t.TempDir(), "pareto_got.png"), f.PNG, 0o644)
		t.Errorf("Pareto plot differs from %s (run with -update if the change is intended)", golden)
	}
}

func TestRulesetWindow(t *testing.T) {
	sweep := writeFakeSweep(t, filepath.Join(t.TempDir(), "sweep"), defaultFake())
	r, _ := buildFake(t, Options{Runs: []string{sweep}, Ruleset: "readme-2026-08-qwen3.6"})
	if w := r.Systems[0].OSLWindow; w == nil || *w != [2]float64{355, 434} || r.Systems[0].Ruleset != "readme-2026-08-qwen3.6" {
		t.Errorf("window %v ruleset %q, want [355 434] of readme-2026-08-qwen3.6", w, r.Systems[0].Ruleset)
	}
	r, _ = buildFake(t, Options{Runs: []string{sweep}})
	if w := r.Systems[0].OSLWindow; w == nil || *w != [2]float64{344, 422} {
		t.Errorf("default window %v, want the checker's [344 422]", w)
	}
	if _, err := Build(context.Background(), Options{Out: t.TempDir(), Runs: []string{sweep}, Ruleset: "no-such-ruleset"}); err == nil {
		t.Error("an unknown ruleset should fail the report")
	}
}

// TestTruncatedLog folds a killed run's log as far as it goes and fails the
// "runs complete" check with the reason. A killed run's manifest still says
// "running" (and counts nothing); one that claims the run complete while its log
// is cut is refused (TestLoadPointRefusesDisagreement).
func TestTruncatedLog(t *testing.T) {
	o := defaultFake()
	o.Concurrency, o.Trajectories = 4, o.DatasetSize
	m, recs := metricstest.Run(o)
	m.State, m.Counts = schemas.RunRunning, nil
	dir := filepath.Join(t.TempDir(), "c4")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, schemas.TurnLogFile)
	half := len(recs) / 2
	scoretest.WriteLog(t, path, recs, half)
	if err := runlog.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()-100); err != nil {
		t.Fatal(err)
	}
	p, err := curve.LoadPoint(context.Background(), dir, nil, nil)
	if err != nil {
		t.Fatalf("LoadPoint of a truncated log: %v", err)
	}
	if n := p.Counts["ok"] + p.Counts["error"] + p.Counts["aborted"]; n != half {
		t.Errorf("folded %d records, want the first batch's %d", n, half)
	}
	if !strings.Contains(p.LogNote, "truncated") {
		t.Errorf("log note %q", p.LogNote)
	}
	s := curve.NewSystem("x", []*curve.Point{p}, 64)
	for _, c := range s.Checks {
		if c.Name == "runs complete" && (c.Status != curve.CheckFail || !strings.Contains(c.Reason, "truncated")) {
			t.Errorf("runs complete check = %+v", c)
		}
	}
}

// TestStandInTokenizer: a report counted with a tokenizer that is not the
// model's own (Qwen3's, for a Qwen3.6 run) names it and its digest in
// points.json, summary.md and report.html, says it is a stand-in and marks
// every point unofficial.
func TestStandInTokenizer(t *testing.T) {
	sweep := writeFakeSweep(t, filepath.Join(t.TempDir(), "sweep"), defaultFake())
	tk, err := tokens.Load(context.Background(), testenv.Tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	r, out := buildFake(t, Options{Runs: []string{sweep}, Tokenizer: tk})
	digest := tk.Identity().TokenizerSHA256
	for _, p := range r.Systems[0].Points {
		if !p.Unofficial || p.Tokenizer == nil || !p.Tokenizer.StandIn || p.Tokenizer.TokenizerSHA256 != digest ||
			!strings.Contains(p.TokenNote, schemas.StandInLabel) {
			t.Errorf("c=%d: unofficial %v, tokenizer %+v, note %q", p.Concurrency, p.Unofficial, p.Tokenizer, p.TokenNote)
		}
	}
	for _, f := range []string{"points.json", "summary.md", "report.html"} {
		data, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(data), "&#39;", "'")
		for _, want := range []string{schemas.StandInLabel, digest[:12]} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q", f, want)
			}
		}
	}
}
