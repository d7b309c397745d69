package replay

import (
	"context"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/agentrace/agentrace/bench/yardstick"
	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/testenv"
)

var sample struct {
	once sync.Once
	dir  string
	d    *datasets.Dataset
	err  error
}

// sampleDataset ingests the shared sample once per test binary.
func sampleDataset(b testing.TB) *datasets.Dataset {
	path := testenv.SampleFlat(b)
	sample.once.Do(func() {
		dir, err := os.MkdirTemp("", "agentrace-replay-bench-*")
		if err != nil {
			sample.err = err
			return
		}
		sample.dir = dir + "/ds"
		if sample.err = ingest.Files(context.Background(), sample.dir, path); sample.err != nil {
			return
		}
		sample.d, sample.err = datasets.Open(context.Background(), sample.dir)
	})
	if sample.err != nil {
		b.Fatal(sample.err)
	}
	return sample.d
}

const benchTokens = 64

// BenchmarkReplay replays the sample (tiled by repeats) closed-loop against an
// endpoint that answers at once; one op is one turn. Compare with
// BenchmarkMinimalClient, the same load from the yardstick client.
func BenchmarkReplay(b *testing.B) {
	d := sampleDataset(b)
	srv := httptest.NewServer(yardstick.Endpoint(benchTokens))
	defer srv.Close()
	for _, c := range []int{16, 256} {
		b.Run(concName(c), func(b *testing.B) {
			turns, lagP99 := 0, int64(0)
			for b.Loop() {
				sum, err := Run(context.Background(), Options{Data: d, Endpoint: srv.URL, Out: b.TempDir(), Concurrency: c,
					Trajectories: trajectoriesFor(c, len(d.Conversations)), NoDelays: true, Profile: "qwen3.6-35b-a3b"})
				if err != nil {
					b.Fatal(err)
				}
				turns += sum.Turns
				lagP99 = max(lagP99, int64(sum.LagP99))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(turns), "ns/turn")
			b.ReportMetric(float64(turns)/b.Elapsed().Seconds(), "turns/s")
			b.ReportMetric(float64(lagP99)/1e3, "lag-p99-µs")
		})
	}
}

// BenchmarkMinimalClient is BenchmarkReplay's load from the yardstick client,
// posting precomputed bodies.
func BenchmarkMinimalClient(b *testing.B) {
	d := sampleDataset(b)
	srv := httptest.NewServer(yardstick.Endpoint(benchTokens))
	defer srv.Close()
	bodies := yardstick.Bodies(d, datasets.BodyOptions{Salt: true, Repeat: 1, Stream: true, IncludeUsage: true, Profile: mustProfile(b, "qwen3.6-35b-a3b")})
	for _, c := range []int{16, 256} {
		b.Run(concName(c), func(b *testing.B) {
			var turns int64
			for b.Loop() {
				n := trajectoriesFor(c, len(d.Conversations))
				res, err := yardstick.Minimal(context.Background(), srv.URL+"/v1/chat/completions", c, n, func(k int) [][]byte { return bodies[k%len(bodies)] }, nil)
				if err != nil {
					b.Fatal(err)
				}
				turns += res.Turns
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(turns), "ns/turn")
			b.ReportMetric(float64(turns)/b.Elapsed().Seconds(), "turns/s")
		})
	}
}

func trajectoriesFor(c, n int) int {
	k := (c + n - 1) / n
	if k < 2 {
		k = 2
	}
	return k * n
}

func concName(c int) string { return "c" + strconv.Itoa(c) }

func mustProfile(b testing.TB, name string) *datasets.Profile {
	p, err := datasets.LookupProfile(name)
	if err != nil {
		b.Fatal(err)
	}
	return &p
}
