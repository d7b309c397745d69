package score

import (
	"encoding/json"
	"runtime"
	"sort"
	"strconv"

	"github.com/agentrace/agentrace/internal/python"
	"github.com/agentrace/agentrace/schemas"
	"github.com/sourcegraph/conc/pool"
)

// Output is a completed turn's response, rebuilt as one assistant message.
type Output struct {
	Content   string
	Reasoning string
	// ToolCalls is the JSON array of the merged tool calls, nil when none.
	ToolCalls json.RawMessage

	// completed is 1 + the output's position among the run's completed responses
	// (0 when unknown), which carries its OSL count back to the turn.
	completed int
}

// Attempt is one issued client turn of one trajectory instance.
type Attempt struct {
	SessionID      string
	ConversationID string // source id
	Repeat         int
	Turn           int32 // dataset turn number of the client row
	// Output is nil when the turn did not complete with a response (error, timeout,
	// aborted, or never finished).
	Output   *Output
	InWindow bool
	// OSL is the turn's output tokens, -1 when unknown or not completed.
	OSL int32
}

// Accuracy is inline accuracy as the reference scorer reports it.
type Accuracy struct {
	// Score is the mean turn score rounded to 4 places; meaningless (and written as
	// null) when Turns.Scored is 0.
	Score   float64
	Turns   schemas.TurnCounts
	Domains map[string]schemas.DomainScore
	PerTurn []schemas.TurnScore
	// Excluded lists every expected turn of the dataset without ground truth.
	Excluded []schemas.ExcludedTurn
}

type attemptKey struct {
	conv   string
	repeat int
	turn   int32
}

// ScoreAccuracy computes inline accuracy (spec §8) over the issued turns of a run.
// The denominator is every issued turn (each repeat counted, each (conversation,
// repeat, turn) once) whose client turn has scorable ground truth; a turn without
// output scores 0. When one key was issued more than once, the last attempt with
// an output supplies the answer.
func ScoreAccuracy(truth *Truth, attempts []Attempt) *Accuracy {
	return scoreAccuracy(truth, attempts, 0, &recycler{}, true)
}

// issued is one issued key of an expected turn, with its attempt.
type issued struct {
	key attemptKey
	exp *Expectation
	at  *Attempt
}

// scoreAccuracy is ScoreAccuracy on at most workers goroutines (0: GOMAXPROCS),
// its working slices taken from re; perTurn keeps each turn's score in PerTurn.
func scoreAccuracy(truth *Truth, attempts []Attempt, workers int, re *recycler, perTurn bool) *Accuracy {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	acc := &Accuracy{Domains: map[string]schemas.DomainScore{}}
	for _, e := range truth.sorted {
		if !e.Scorable() {
			acc.Excluded = append(acc.Excluded, schemas.ExcludedTurn{
				ConversationID: e.ConversationID, Turn: e.AssistantTurn, Domain: e.Domain, Reason: "no ground truth",
			})
		}
	}

	// One entry per issued key of an expected turn.
	all := take[issued](&re.issued, len(attempts))
	defer func() { give(&re.issued, all) }()
	for i := range attempts {
		a := &attempts[i]
		if e, ok := truth.Lookup(a.ConversationID, a.Turn); ok {
			all = append(all, issued{attemptKey{a.ConversationID, a.Repeat, a.Turn}, e, a})
		}
	}
	// In the reference's order, (conversation, repeat, turn); a stable sort keeps
	// one key's attempts in log order.
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i].key, all[j].key
		if a.conv != b.conv {
			return a.conv < b.conv
		}
		if a.repeat != b.repeat {
			return a.repeat < b.repeat
		}
		return a.turn < b.turn
	})
	// One entry per key: the last attempt with an output, else the first.
	list := all[:0]
	for _, it := range all {
		if n := len(list); n > 0 && list[n-1].key == it.key {
			if it.at.Output != nil || list[n-1].at.Output == nil {
				list[n-1].at = it.at
			}
			continue
		}
		list = append(list, it)
	}
	acc.Turns.Issued = len(list)

	scorable := list[:0]
	for _, it := range list {
		if it.exp.Scorable() {
			scorable = append(scorable, it)
		}
	}

	// Score the turns in parallel, then sum in the reference's order so that the
	// float totals agree bit for bit.
	if perTurn {
		acc.PerTurn = make([]schemas.TurnScore, len(scorable))
	}
	raw := take[float64](&re.raw, len(scorable))[:len(scorable)]
	defer give(&re.raw, raw)
	p := pool.New().WithMaxGoroutines(workers)
	const batch = 512
	for start := 0; start < len(scorable); start += batch {
		end := min(start+batch, len(scorable))
		p.Go(func() {
			for i := start; i < end; i++ {
				it := scorable[i]
				ts, v := scoreTurn(it.exp, it.at, it.key.repeat)
				if perTurn {
					acc.PerTurn[i] = ts
				}
				raw[i] = v
			}
		})
	}
	p.Wait()
	var total float64
	domTotal := map[string]float64{}
	domCount := map[string]int{}
	for i := range scorable {
		e := scorable[i].exp
		if scorable[i].at.Output != nil {
			acc.Turns.Observed++
		}
		total += raw[i]
		domTotal[e.Domain] += raw[i]
		domCount[e.Domain]++
	}
	acc.Turns.Expected = len(scorable)
	acc.Turns.Scored = len(scorable)
	acc.Turns.Missing = acc.Turns.Expected - acc.Turns.Observed
	if n := len(scorable); n > 0 {
		acc.Score = python.Round(total/float64(n), 4)
	}
	for d, n := range domCount {
		acc.Domains[d] = schemas.DomainScore{Score: python.Round(domTotal[d]/float64(n), 4), Scored: n}
	}
	return acc
}

// scoreTurn scores one issued turn against its expectation: 1 or 0 for a workflow
// turn (the model's intent code among the expected ones), the multiset Jaccard of
// bash actions for a coding turn; a turn without output answers nothing.
func scoreTurn(e *Expectation, a *Attempt, repeat int) (schemas.TurnScore, float64) {
	ts := schemas.TurnScore{
		SessionID:      a.SessionID,
		ConversationID: e.ConversationID,
		Repeat:         int32(repeat),
		Turn:           e.AssistantTurn,
		ClientTurn:     e.ClientTurn,
		Domain:         e.Domain,
		Missing:        a.Output == nil,
		InWindow:       a.InWindow,
	}
	if a.OSL >= 0 {
		osl := a.OSL
		ts.OSL = &osl
	}
	if ts.SessionID == "" {
		ts.SessionID = sessionID(e.ConversationID, repeat)
	}
	out := a.Output
	if out == nil {
		out = &Output{}
	}
	var s float64
	if e.Domain == schemas.DomainWorkflow {
		ts.GTIntents = e.Intents
		if code, ok := ModelIntent(out.Reasoning, out.Content); ok {
			ts.ModelIntent = &code
			if containsString(e.Intents, code) {
				s = 1
			}
		}
	} else {
		got := ToolCallsActions(out.ToolCalls)
		if got == nil {
			got = []string{}
		}
		ts.GTActions = e.Actions
		ts.ModelActions = got
		s = MultisetJaccard(e.Actions, got)
	}
	ts.Score = python.Round(s, 4)
	return ts, s
}

// sessionID is the logical trajectory id of a repeat.
func sessionID(conv string, repeat int) string {
	if repeat <= 1 {
		return conv
	}
	return conv + "__repeat_" + itoa(repeat)
}

func itoa(n int) string { return strconv.Itoa(n) }

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// MultisetJaccard is |a ∩ b| / |a ∪ b| over multisets: per distinct item, the
// smaller count over the larger count, summed. Two empty lists give 0.
func MultisetJaccard(a, b []string) float64 {
	ca := make(map[string]int, len(a))
	for _, x := range a {
		ca[x]++
	}
	cb := make(map[string]int, len(b))
	for _, x := range b {
		cb[x]++
	}
	inter, union := 0, 0
	for k, n := range ca {
		m := cb[k]
		inter += min(n, m)
		union += max(n, m)
	}
	for k, m := range cb {
		if _, ok := ca[k]; !ok {
			union += m
		}
	}
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}
