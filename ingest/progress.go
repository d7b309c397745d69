package ingest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrace/agentrace/internal/english"
)

// Phases of an ingest, in order. Reading, validating, building, tokenizing and
// writing the conversations overlap (each conversation goes through them in
// turn while the next ones are read); the phase named is the earliest one not
// finished. The Parquet tables are finished last (phaseTables).
const (
	phaseRun int32 = iota
	phaseTables
	phaseDone
)

// progressCounts is what the progress line reports; the counters are updated by
// the stages as they go.
type progressCounts struct {
	begin time.Time
	total int64 // bytes of all inputs (as stored: compressed when gzipped)

	data      atomic.Int64 // input bytes read, decompressed
	rows      atomic.Int64 // rows (or snapshot lines) read and checked
	queued    atomic.Int64 // conversations handed to the build workers
	turns     atomic.Int64 // their client turns
	validated atomic.Int64 // conversations whose rows were checked against each other
	built     atomic.Int64 // conversations built
	tokenized atomic.Int64 // client turns whose ISL was counted
	doneData  atomic.Int64 // bytes of the flat rows written
	flat      atomic.Bool  // a flat file is being read (the ETA follows doneData)
	phase     atomic.Int32

	mu      sync.Mutex
	read    time.Time // when reading ended (zero before)
	eta     etaState
	etaFrom string // what the ETA is measured on
}

// etaState estimates the time left of one measure from its rate since it began.
type etaState struct {
	t0 time.Time
	f0 float64
}

func (p *progressCounts) start(inputs []string) {
	p.begin = time.Now()
	p.etaFrom, p.eta = "read", etaState{t0: p.begin}
	for _, in := range inputs {
		if st, err := os.Stat(in); err == nil && st.Mode().IsRegular() {
			p.total += st.Size()
		}
	}
}

func (p *progressCounts) readDone(now time.Time) {
	p.mu.Lock()
	p.read = now
	p.mu.Unlock()
}

// status is the progress line: the phase, every stage's count, and an ETA.
func (p *progressCounts) status(in, written *atomic.Int64, isl bool, now time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	readBytes, data := in.Load(), p.data.Load()
	queued, turns := p.queued.Load(), p.turns.Load()
	validated, built, tokenized, done := p.validated.Load(), p.built.Load(), p.tokenized.Load(), written.Load()
	reading := p.read.IsZero()

	phase := "write"
	switch {
	case p.phase.Load() == phaseDone:
		phase = "done"
	case reading:
		phase = "read"
	case validated < queued:
		phase = "validate"
	case built < queued:
		phase = "build"
	case isl && tokenized < turns:
		phase = "tokenize"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ingest [%s] read %s", phase, mb(readBytes))
	if p.total > 0 && readBytes <= p.total {
		fmt.Fprintf(&b, " of %s", mb(p.total))
	}
	if data != readBytes {
		fmt.Fprintf(&b, " (%s decompressed)", mb(data))
	}
	fmt.Fprintf(&b, ", %s rows validated, %s/%s conversations built", count(p.rows.Load()), count(built), count(queued))
	if isl {
		fmt.Fprintf(&b, ", %s/%s turns tokenized", count(tokenized), count(turns))
	}
	fmt.Fprintf(&b, ", %s written", count(done))
	if p.phase.Load() == phaseTables {
		b.WriteString(", finishing the Parquet tables")
	}
	if phase == "done" {
		fmt.Fprintf(&b, " in %s", clock(now.Sub(p.begin)))
		return b.String()
	}
	// The ETA: while reading, from the input done (the bytes of the flat rows
	// written, of the total the input decompresses to at the rate seen so far;
	// for snapshot files, which are converted once read, the bytes read); after,
	// from the turns left to tokenize or the conversations left to write.
	var f float64
	var from string
	switch {
	case p.phase.Load() == phaseTables:
	case reading && p.total > 0 && readBytes > 0:
		f, from = float64(readBytes)/float64(p.total), "read"
		if p.flat.Load() {
			f = float64(p.doneData.Load()) / (float64(p.total) * float64(data) / float64(readBytes))
		}
	case isl && turns > 0:
		f, from = float64(tokenized)/float64(turns), "tokenize"
	case queued > 0:
		f, from = float64(done)/float64(queued), "write"
	}
	if from != p.etaFrom {
		p.etaFrom, p.eta = from, etaState{t0: now, f0: f}
	}
	// An ETA once the measure moved for a second, or by 5% (not at once: a
	// first estimate is noise).
	if el := now.Sub(p.eta.t0); from != "" && f > p.eta.f0 && (el >= time.Second || el >= 100*time.Millisecond && f-p.eta.f0 >= 0.05) {
		rate := (f - p.eta.f0) / now.Sub(p.eta.t0).Seconds()
		left := time.Duration((1 - f) / rate * float64(time.Second))
		fmt.Fprintf(&b, "; ETA %s", clock(left))
	}
	return b.String()
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// count writes n with thousands separators.
func count(n int64) string {
	if n < 0 {
		return fmt.Sprint(n)
	}
	return english.Thousands(float64(n), 0)
}

// clock writes d as 1m05s or 12s.
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	if d >= time.Minute {
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return fmt.Sprintf("%ds", int(d/time.Second))
}
