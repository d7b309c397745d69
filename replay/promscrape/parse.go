package promscrape

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one sample of a page: a series' name, labels and value, with its
// family's name and type. Histograms and summaries give several (NAME_bucket
// with le, NAME_sum, NAME_count; quantile), as the text format writes them.
type Sample struct {
	Family string
	Metric string
	// Labels are written as Prometheus writes them, {a="x", b="y"}; "" when
	// the series has none.
	Labels string
	Kind   string // counter, gauge, histogram, summary, untyped
	Value  float64
}

// Parse reads a page of the Prometheus text format (version 0.0.4, what vLLM,
// SGLang, TensorRT-LLM and llama.cpp serve) with the Prometheus library's
// parser and returns its samples, families in name order.
func Parse(r io.Reader) ([]Sample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics page: %w", err)
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []Sample
	for _, n := range names {
		out = appendFamily(out, fams[n])
	}
	return out, nil
}

func appendFamily(out []Sample, f *dto.MetricFamily) []Sample {
	name := f.GetName()
	kind := typeName(f.GetType())
	for _, m := range f.GetMetric() {
		ls := model.LabelSet{}
		for _, l := range m.GetLabel() {
			ls[model.LabelName(l.GetName())] = model.LabelValue(l.GetValue())
		}
		add := func(metric string, extra model.LabelSet, v float64) {
			s := Sample{Family: name, Metric: metric, Kind: kind, Value: v}
			all := ls
			if len(extra) > 0 {
				all = ls.Merge(extra)
			}
			if len(all) > 0 {
				s.Labels = all.String()
			}
			out = append(out, s)
		}
		switch {
		case m.Counter != nil:
			add(name, nil, m.Counter.GetValue())
		case m.Gauge != nil:
			add(name, nil, m.Gauge.GetValue())
		case m.Untyped != nil:
			add(name, nil, m.Untyped.GetValue())
		case m.Histogram != nil:
			h := m.Histogram
			for _, b := range h.GetBucket() {
				add(name+"_bucket", model.LabelSet{"le": model.LabelValue(formatFloat(b.GetUpperBound()))}, float64(b.GetCumulativeCount()))
			}
			add(name+"_sum", nil, h.GetSampleSum())
			add(name+"_count", nil, float64(h.GetSampleCount()))
		case m.Summary != nil:
			sm := m.Summary
			for _, q := range sm.GetQuantile() {
				add(name, model.LabelSet{"quantile": model.LabelValue(formatFloat(q.GetQuantile()))}, q.GetValue())
			}
			add(name+"_sum", nil, sm.GetSampleSum())
			add(name+"_count", nil, float64(sm.GetSampleCount()))
		}
	}
	return out
}

// formatFloat writes a bucket bound or quantile as the text format does.
func formatFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func typeName(t dto.MetricType) string {
	switch t {
	case dto.MetricType_COUNTER:
		return "counter"
	case dto.MetricType_GAUGE:
		return "gauge"
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return "histogram"
	case dto.MetricType_SUMMARY:
		return "summary"
	}
	return "untyped"
}
