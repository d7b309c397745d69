package curve

import (
	"strings"
	"testing"

	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
)

// TestMarkNotComparable: a point counted otherwise than its scores.json
// records says so in its token note; one counted the same way does not.
func TestMarkNotComparable(t *testing.T) {
	tk := func(sha string) *schemas.TokenizerUse {
		return &schemas.TokenizerUse{Name: "qwen3", File: "tokenizer.json", TokenizerSHA256: sha}
	}
	for _, tc := range []struct {
		name     string
		recorded *schemas.OSLResult
		counted  *schemas.TokenizerUse // nil: the server's usage
		want     string                // in TokenNote; "" for no note
	}{
		{"same tokenizer", &schemas.OSLResult{Source: "tokenizer:qwen3", Tokenizer: tk("aa")}, tk("aa"), ""},
		{"both server usage", &schemas.OSLResult{Source: "server_usage"}, nil, ""},
		{"tokenizer over server usage", &schemas.OSLResult{Source: "server_usage"}, tk("aa"), "counted with the server's usage counts"},
		{"another tokenizer", &schemas.OSLResult{Source: "tokenizer:qwen3", Tokenizer: tk("bb")}, tk("aa"), "counted with tokenizer qwen3 (tokenizer.json sha256 bb)"},
		{"server usage over a tokenizer", &schemas.OSLResult{Source: "tokenizer:qwen3", Tokenizer: tk("bb")}, nil, "counted with tokenizer qwen3"},
		{"nothing recorded", nil, tk("aa"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Point{scores: &schemas.Scores{OSL: tc.recorded}, Point: metrics.Point{Tokenizer: tc.counted}}
			p.markNotComparable()
			if tc.want == "" {
				if p.TokenNote != "" {
					t.Fatalf("TokenNote %q, want none", p.TokenNote)
				}
				return
			}
			if !strings.HasPrefix(p.TokenNote, schemas.NotComparableLabel) || !strings.Contains(p.TokenNote, tc.want) {
				t.Fatalf("TokenNote %q, want %q ... %q", p.TokenNote, schemas.NotComparableLabel, tc.want)
			}
		})
	}
}
