package tour

import (
	"github.com/agentrace/agentrace/datasets/tokens"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
)

// approxOSL counts output tokens with tokens.Approx when no reference tokenizer
// is at hand, so that a tour without `make tokenizers` still shows a plausible
// OSL mean. Its counts are unofficial and the tour marks them so: the server's
// usage counts would also do, but the simulated server's pseudo-tokenizer is
// coarser (it counts about a third more than Qwen3 on these traces).
//
// The count is Approx over the reasoning, the content and each tool call's name
// and arguments, plus the chat template's fixed tokens around a tool call
// (<tool_call>, the {"name": ..., "arguments": ...} frame, </tool_call>).
type approxOSL struct{}

// toolCallFrame is the template's tokens around one tool call in Qwen3's chat
// template, counted with the real tokenizer.
const toolCallFrame = 12

func (approxOSL) Name() string { return "approx (tokens.Approx, unofficial)" }

func (approxOSL) CountOSL(r schemas.Response) (int, error) {
	var a tokens.Approx
	n := a.CountText(r.Content)
	if r.Reasoning == "" && len(r.ToolCalls) == 0 {
		return n, nil
	}
	n += a.CountText(r.Reasoning)
	for _, tc := range r.ToolCalls {
		n += a.CountText(tc.Function.Name) + a.CountText(tc.Function.Arguments) + toolCallFrame
	}
	return n, nil
}

// markApprox marks scores counted with approxOSL as unofficial and judges them
// again, so the verdict's OSL gate says how the count was made.
func markApprox(s *schemas.Scores) {
	if s.OSL == nil {
		return
	}
	s.OSL.Unofficial = true
	if rs, err := score.LoadRuleset(s.Verdict.Ruleset); err == nil {
		s.Verdict = score.Judge(rs, s)
	}
	for i := range s.Verdict.Gates {
		if s.Verdict.Gates[i].Name == score.GateOSL && s.Verdict.Gates[i].Note != "" {
			s.Verdict.Gates[i].Note = "unofficial: approximate counts (tokens.Approx), not the reference tokenizer; run `make tokenizers`"
		}
	}
}
