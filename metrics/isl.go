package metrics

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/tokens"
)

// islSource counts input tokens of run turns from their dataset: with a reference
// tokenizer, the run's salted request messages rendered with the chat template
// (the run's profile's chat_template_kwargs) and counted; without one, the turn's
// ISL stored by `ingest --tokenizer` (salted as repeat 1, ingest's profile). It
// opens each dataset once and remembers every count, since the points of a sweep
// replay the same turns.
type islSource struct {
	tok *tokens.Tokenizer
	// ctx stops a dataset being read when the command is interrupted.
	ctx context.Context

	mu       sync.Mutex
	datasets map[string]*datasets.Dataset
	failed   map[string]error
	counts   map[islKey]int
}

type islKey struct {
	dataset, conv string
	turn, repeat  int32
	salt          bool
}

// NewISLSource returns the ISL counter of an agentrace run from its manifest: with
// tok, the run's salted request messages rendered with the chat template and
// counted; without, the dataset's stored counts. Counts are shared across the runs
// it serves (a sweep replays the same turns).
func NewISLSource(ctx context.Context, tok *tokens.Tokenizer) func(schemas.RunManifest) (ISLCounter, error) {
	return newISLSource(ctx, tok).forRun
}

func newISLSource(ctx context.Context, tok *tokens.Tokenizer) *islSource {
	return &islSource{tok: tok, ctx: ctx, datasets: map[string]*datasets.Dataset{}, failed: map[string]error{}, counts: map[islKey]int{}}
}

func (s *islSource) dataset(dir string) (*datasets.Dataset, error) {
	if d, ok := s.datasets[dir]; ok {
		return d, nil
	}
	if err, ok := s.failed[dir]; ok {
		return nil, err
	}
	d, err := datasets.Open(s.ctx, dir)
	if err != nil {
		s.failed[dir] = err
		return nil, err
	}
	s.datasets[dir] = d
	return d, nil
}

// forRun returns the ISL counter of a run, or nil when its dataset cannot be
// opened (the report then uses server usage and says so).
func (s *islSource) forRun(m schemas.RunManifest) (ISLCounter, error) {
	if s == nil || m.Config.Dataset == "" {
		return nil, nil
	}
	s.mu.Lock()
	d, err := s.dataset(m.Config.Dataset)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var kwargs map[string]any
	if m.Config.Profile != "" {
		if p, err := datasets.LookupProfile(m.Config.Profile); err == nil {
			kwargs = p.ChatTemplateKwargs
		}
	}
	cfg := m.Config
	return func(rec *schemas.TurnRecord) (int, bool, error) {
		k := islKey{cfg.Dataset, rec.ConversationID, rec.Turn, max(rec.Repeat, 1), cfg.Salt}
		s.mu.Lock()
		n, ok := s.counts[k]
		s.mu.Unlock()
		if ok {
			return n, true, nil
		}
		t, err := d.Turn(rec.ConversationID, int(rec.Turn))
		if err != nil {
			return 0, false, nil // not this dataset's turn: fall back to usage
		}
		switch {
		case s.tok != nil:
			msgs := d.RequestMessages(t, datasets.BodyOptions{Salt: cfg.Salt, Repeat: int(k.repeat)})
			var tools []byte
			if t.Tools != "" {
				tools = []byte(t.Tools)
			}
			if n, err = s.tok.CountISL(msgs, tools, kwargs); err != nil {
				return 0, false, fmt.Errorf("render turn %d of %q: %w", rec.Turn, rec.ConversationID, err)
			}
		case t.ISL != nil:
			n = int(*t.ISL)
		default:
			return 0, false, nil
		}
		s.mu.Lock()
		s.counts[k] = n
		s.mu.Unlock()
		return n, true, nil
	}, nil
}
