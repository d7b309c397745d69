package metrics

import (
	"bytes"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/python"
)

// The reference client's summary statistics (mlcommons/endpoints at ea332753: the
// metrics aggregator's registry.py SeriesSampler, its exact COMPLETE-snapshot path,
// and metrics/report.py _series_to_metric_dict), restated: every series keeps its
// raw values, and its block in result_summary.json is
//
//	{total, min, max, median, avg, std_dev, percentiles, [early_stopping_percentiles], histogram}
//
// with total, min and max as the series' own type (integers for nanoseconds and
// token counts, floats for TPOT); percentiles the "lower" percentiles (the observed
// value at index floor(p/100 * (n-1)), numpy's method="lower") of the grid 99.9,
// 99.0, 97.0, 95.0, 90.0, 80.0, 75.0, 50.0, 25.0, 10.0, 5.0, 1.0, keyed as Python's
// str(float) writes them ("99.9", "50.0"), in that order; median the "50.0" entry;
// avg total / count; std_dev the sample standard deviation from the float sum of
// squares, sqrt(max(0, (sum_sq - total^2 / n) / (n - 1))), 0 for one sample; the
// histogram 30 buckets with log-spaced edges exp(log(lo) + i * (log(hi) - log(lo))
// / 30), lo = max(min, 1), hi = max(max, 10 lo), values clipped into [lo, hi], each
// bucket [e_i, e_i+1) and the last closed; and, for TTFT, TPOT and latency, the
// early-stopping estimates (metrics/early_stopping.py) of the grid's percentiles
// from 50 up. An empty series is {} (an early-stopping series {"early_stopping_
// percentiles": {every key: null}}). Numbers are written as msgspec writes them
// (jsontext.AppendPyFloat).

// refPercentiles is the reference's percentile grid (registry.DEFAULT_PERCENTILES).
var refPercentiles = []float64{99.9, 99.0, 97.0, 95.0, 90.0, 80.0, 75.0, 50.0, 25.0, 10.0, 5.0, 1.0}

// refHistogramBuckets is the reference's bucket count (the aggregator's default).
const refHistogramBuckets = 30

// Early-stopping constants (metrics/early_stopping.py).
const (
	esConfidence    = 0.99
	esMinPercentile = 50.0
)

// PercentileKey writes a percentile as Python's str(float) does ("90.0", "99.9"):
// the keys of result_summary.json's percentile maps.
func PercentileKey(p float64) string { return python.FloatRepr(p) }

// refSeries is one series of the reference's metrics, with every raw value.
type refSeries struct {
	float bool
	ints  []int64
	flts  []float64
	// sumSqF is the running float sum of squares of a float series, summed in
	// arrival order as the reference does.
	sumSqF, totalF float64
}

func (s *refSeries) addInt(v int64) { s.ints = append(s.ints, v) }

func (s *refSeries) addFloat(v float64) {
	s.flts = append(s.flts, v)
	s.totalF += v
	s.sumSqF += v * v
}

func (s *refSeries) len() int {
	if s.float {
		return len(s.flts)
	}
	return len(s.ints)
}

// sorted returns the values in ascending order as floats (the series is sorted
// in place; arrival order is no longer needed once the block is built).
func (s *refSeries) sorted() []float64 {
	if s.float {
		slices.Sort(s.flts)
		return s.flts
	}
	slices.Sort(s.ints)
	out := make([]float64, len(s.ints))
	for i, v := range s.ints {
		out[i] = float64(v)
	}
	return out
}

// StatBlock is one series' block of result_summary.json, in the reference's shape.
// A nil *StatBlock is written as {}.
type StatBlock struct {
	Count int
	// Int tells that Total, Min and Max are integers (written without a fraction).
	Int                    bool
	Total, Min, Max        float64
	TotalInt, MinInt       int64
	MaxInt                 int64
	Median, Avg, StdDev    float64
	Percentiles            []float64 // in refPercentiles order
	EarlyStopping          []*float64
	EarlyStoppingKeys      []string
	HistEdges              [][2]float64
	HistCounts             []int
	emptyWithEarlyStopping bool
}

// Percentile returns the block's value for a grid percentile (NaN when absent).
func (b *StatBlock) Percentile(p float64) float64 {
	if b == nil {
		return math.NaN()
	}
	for i, q := range refPercentiles {
		if q == p && i < len(b.Percentiles) {
			return b.Percentiles[i]
		}
	}
	return math.NaN()
}

// block computes the series' block; es adds early-stopping estimates. It returns
// nil for an empty series without early stopping.
func (s *refSeries) block(es bool) *StatBlock {
	n := s.len()
	if n == 0 {
		if !es {
			return nil
		}
		b := &StatBlock{emptyWithEarlyStopping: true}
		b.EarlyStoppingKeys, b.EarlyStopping = esEstimates(nil)
		return b
	}
	b := &StatBlock{Count: n, Int: !s.float}
	var sumSq, mean float64
	if s.float {
		b.Total = s.totalF
		sumSq = s.sumSqF
		mean = b.Total / float64(n)
		if n > 1 {
			b.StdDev = math.Sqrt(max(0, (sumSq-b.Total*b.Total/float64(n))/float64(n-1)))
		}
	} else {
		// Exact integer sums, as Python's ints are; the reference then takes the sum of
		// squares as a float and divides total^2 by n exactly.
		tot, sq := new(big.Int), new(big.Int)
		var x big.Int
		for _, v := range s.ints {
			x.SetInt64(v)
			tot.Add(tot, &x)
			x.Mul(&x, &x)
			sq.Add(sq, &x)
		}
		nn := big.NewInt(int64(n))
		b.Total, _ = new(big.Float).SetInt(tot).Float64()
		if tot.IsInt64() {
			b.TotalInt = tot.Int64()
		}
		mean, _ = new(big.Rat).SetFrac(tot, nn).Float64()
		if n > 1 {
			sumSqF, _ := new(big.Float).SetInt(sq).Float64()
			t2n, _ := new(big.Rat).SetFrac(new(big.Int).Mul(tot, tot), nn).Float64()
			b.StdDev = math.Sqrt(max(0, (sumSqF-t2n)/float64(n-1)))
		}
	}
	b.Avg = mean
	v := s.sorted()
	b.Min, b.Max = v[0], v[n-1]
	if !s.float {
		b.MinInt, b.MaxInt = s.ints[0], s.ints[n-1]
	}
	b.Percentiles = make([]float64, len(refPercentiles))
	for i, p := range refPercentiles {
		b.Percentiles[i] = Percentile(v, p)
	}
	b.Median = Percentile(v, 50)
	b.HistEdges, b.HistCounts = logHistogram(v, b.Min, b.Max, refHistogramBuckets)
	if es {
		b.EarlyStoppingKeys, b.EarlyStopping = esEstimates(v)
	}
	return b
}

// logEdges are the reference's n+1 log-spaced bucket edges over [low, high].
func logEdges(low, high float64, n int) []float64 {
	lo := max(low, 1)
	hi := max(high, lo*10)
	ll, lh := math.Log(lo), math.Log(hi)
	step := (lh - ll) / float64(n)
	e := make([]float64, n+1)
	for i := range e {
		e[i] = math.Exp(ll + float64(i)*step)
	}
	return e
}

// logHistogram buckets sorted values as the reference does (numpy's histogram on
// the values clipped into the edges' range).
func logHistogram(sorted []float64, lo, hi float64, n int) ([][2]float64, []int) {
	e := logEdges(lo, hi, n)
	edges := make([][2]float64, n)
	for i := range n {
		edges[i] = [2]float64{e[i], e[i+1]}
	}
	counts := make([]int, n)
	for _, x := range sorted {
		x = min(max(x, e[0]), e[n])
		// The bucket i with e[i] <= x < e[i+1]; the last one holds x == e[n].
		i, _ := slices.BinarySearch(e, x)
		if i < len(e) && e[i] == x {
			// x sits on edge i: it opens bucket i (or closes the last one)
		} else {
			i--
		}
		counts[min(max(i, 0), n-1)]++
	}
	return edges, counts
}

// esEstimates are the early-stopping estimates of the grid's percentiles from the
// median up, keyed as the grid is; nil entries have too few samples.
func esEstimates(sorted []float64) ([]string, []*float64) {
	var keys []string
	var vals []*float64
	for _, p := range refPercentiles {
		if p < esMinPercentile || p >= 100 {
			continue
		}
		keys = append(keys, PercentileKey(p))
		vals = append(vals, esEstimate(sorted, p))
	}
	return keys, vals
}

// esEstimate is the conservative estimate of percentile p (0-100) over sorted
// values: the t-th highest value, t the largest over-latency count that n samples
// still certify at 99% confidence (LoadGen's early stopping); nil below the
// minimum number of samples.
func esEstimate(sorted []float64, p float64) *float64 {
	f := p / 100
	n := len(sorted)
	minQueries := findMinPassing(1, f) + 1
	if n < minQueries {
		return nil
	}
	t := discardCount(n, f)
	v := sorted[n-t]
	return &v
}

func betacf(a, b, x float64) float64 {
	const eps, fpmin = 3e-16, 1e-300
	qab, qap, qam := a+b, a+1, a-1
	c := 1.0
	d := 1 - qab*x/qap
	if math.Abs(d) < fpmin {
		d = fpmin
	}
	d = 1 / d
	h := d
	// step takes the fraction's next coefficient aa (Lentz's method) and returns
	// the factor it multiplied h by.
	step := func(aa float64) float64 {
		d = 1 + aa*d
		if math.Abs(d) < fpmin {
			d = fpmin
		}
		c = 1 + aa/c
		if math.Abs(c) < fpmin {
			c = fpmin
		}
		d = 1 / d
		h *= d * c
		return d * c
	}
	for m := 1; m < 400; m++ {
		fm := float64(m)
		m2 := 2 * fm
		step(fm * (b - fm) * x / ((qam + m2) * (a + m2)))
		if de := step(-(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2))); math.Abs(de-1) < eps {
			break
		}
	}
	return h
}

// betai is the regularized incomplete beta I_x(a, b).
func betai(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	lab, _ := math.Lgamma(a + b)
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	bt := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log(1-x))
	if x < (a+1)/(a+b+2) {
		return bt * betacf(a, b, x) / a
	}
	return 1 - bt*betacf(b, a, 1-x)/b
}

// findMinPassing is the least h with odds(h, t) < 1 - confidence (tolerance 0).
func findMinPassing(t int, p float64) int {
	target := 1 - esConfidence
	odds := func(h int) float64 { return betai(float64(h), float64(1+t), p) }
	lo, hi := 1, 2
	for odds(hi) >= target {
		hi *= 2
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if odds(mid) < target {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// discardCount is the largest t >= 1 with n >= findMinPassing(t) + t, 0 below the
// floor.
func discardCount(n int, p float64) int {
	if findMinPassing(1, p)+1 > n {
		return 0
	}
	lo, hi := 1, 2
	for findMinPassing(hi, p)+hi <= n {
		hi *= 2
	}
	for lo < hi-1 {
		mid := (lo + hi) / 2
		if findMinPassing(mid, p)+mid <= n {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// jsonNum appends a float as msgspec writes it.
func jsonNum(b []byte, v float64) []byte { return jsontext.AppendPyFloat(b, v) }

// MarshalJSON writes the block in the reference's key order.
func (b *StatBlock) MarshalJSON() ([]byte, error) {
	if b == nil {
		return []byte("{}"), nil
	}
	var buf bytes.Buffer
	esMap := func() {
		buf.WriteString(`"early_stopping_percentiles":{`)
		for i, k := range b.EarlyStoppingKeys {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(strconv.Quote(k))
			buf.WriteByte(':')
			if v := b.EarlyStopping[i]; v != nil {
				buf.Write(jsonNum(nil, *v))
			} else {
				buf.WriteString("null")
			}
		}
		buf.WriteByte('}')
	}
	if b.emptyWithEarlyStopping {
		buf.WriteByte('{')
		esMap()
		buf.WriteByte('}')
		return buf.Bytes(), nil
	}
	num := func(f float64, i int64) []byte {
		if b.Int {
			return strconv.AppendInt(nil, i, 10)
		}
		return jsonNum(nil, f)
	}
	buf.WriteString(`{"total":`)
	if b.Int && float64(b.TotalInt) != b.Total {
		buf.Write(jsonNum(nil, b.Total)) // beyond int64: written as a float
	} else {
		buf.Write(num(b.Total, b.TotalInt))
	}
	buf.WriteString(`,"min":`)
	buf.Write(num(b.Min, b.MinInt))
	buf.WriteString(`,"max":`)
	buf.Write(num(b.Max, b.MaxInt))
	buf.WriteString(`,"median":`)
	buf.Write(jsonNum(nil, b.Median))
	buf.WriteString(`,"avg":`)
	buf.Write(jsonNum(nil, b.Avg))
	buf.WriteString(`,"std_dev":`)
	buf.Write(jsonNum(nil, b.StdDev))
	buf.WriteString(`,"percentiles":{`)
	for i, p := range refPercentiles {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(strconv.Quote(PercentileKey(p)))
		buf.WriteByte(':')
		buf.Write(jsonNum(nil, b.Percentiles[i]))
	}
	buf.WriteString("},")
	if b.EarlyStoppingKeys != nil {
		esMap()
		buf.WriteByte(',')
	}
	buf.WriteString(`"histogram":{"buckets":[`)
	for i, e := range b.HistEdges {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteByte('[')
		buf.Write(jsonNum(nil, e[0]))
		buf.WriteByte(',')
		buf.Write(jsonNum(nil, e[1]))
		buf.WriteByte(']')
	}
	buf.WriteString(`],"counts":[`)
	for i, c := range b.HistCounts {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(strconv.Itoa(c))
	}
	buf.WriteString("]}}")
	return buf.Bytes(), nil
}
