package schemas

import (
	"bytes"
	"encoding/json"
)

// marshalNoHTML encodes v without escaping <, > and & (thresholds read ">= 0.5").
func marshalNoHTML(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// MarshalJSON writes Scores with "score": null when no turn was scored, as the
// reference scorer does.
func (s Scores) MarshalJSON() ([]byte, error) {
	type plain Scores
	var score *float64
	if s.Turns.Scored > 0 {
		v := s.Score
		score = &v
	}
	if s.PerTurn == nil {
		s.PerTurn = []TurnScore{}
	}
	if s.ExcludedTurns == nil {
		s.ExcludedTurns = []ExcludedTurn{}
	}
	return marshalNoHTML(struct {
		Score *float64 `json:"score"`
		plain
	}{score, plain(s)})
}

// MarshalJSON writes a TurnScore in the reference's per_turn shape: workflow rows
// carry gt_intents and model_intent (null when none), coding rows gt_actions and
// model_actions (a list, possibly empty). The default decoding reads it back.
func (t TurnScore) MarshalJSON() ([]byte, error) {
	type common struct {
		SessionID  string `json:"session_id"`
		ClientTurn int32  `json:"client_turn"`
		InWindow   bool   `json:"in_window"`
		OSL        *int32 `json:"osl"`
	}
	// head is the fields both shapes open with.
	type head struct {
		ConversationID string `json:"conversation_id"`
		Repeat         int32  `json:"repeat"`
		Turn           int32  `json:"turn"`
		Domain         string `json:"domain"`
		Missing        bool   `json:"missing,omitempty"`
	}
	id := head{t.ConversationID, t.Repeat, t.Turn, t.Domain, t.Missing}
	extra := common{t.SessionID, t.ClientTurn, t.InWindow, t.OSL}
	if t.Domain == DomainWorkflow {
		gt := t.GTIntents
		if gt == nil {
			gt = []string{}
		}
		return marshalNoHTML(struct {
			head
			GTIntents   []string `json:"gt_intents"`
			ModelIntent *string  `json:"model_intent"`
			Score       float64  `json:"score"`
			common
		}{id, gt, t.ModelIntent, t.Score, extra})
	}
	gt, got := t.GTActions, t.ModelActions
	if gt == nil {
		gt = []string{}
	}
	if got == nil {
		got = []string{}
	}
	return marshalNoHTML(struct {
		head
		GTActions    []string `json:"gt_actions"`
		ModelActions []string `json:"model_actions"`
		Score        float64  `json:"score"`
		common
	}{id, gt, got, t.Score, extra})
}

// MarshalJSON writes a gate that was not evaluated with "value": null and
// "pass": null, so that a reader never takes nothing for a measured zero; the
// default decoding reads it back (null leaves 0 and false).
func (g Gate) MarshalJSON() ([]byte, error) {
	var value *float64
	var pass *bool
	if g.Outcome != OutcomeNotEvaluated {
		value, pass = &g.Value, &g.Pass
	}
	return marshalNoHTML(struct {
		Name          string   `json:"name"`
		Value         *float64 `json:"value"`
		Threshold     string   `json:"threshold"`
		Pass          *bool    `json:"pass"`
		Outcome       string   `json:"outcome"`
		Severity      string   `json:"severity,omitempty"`
		Reason        string   `json:"reason,omitempty"`
		Source        string   `json:"source,omitempty"`
		Rederived     *float64 `json:"rederived,omitempty"`
		Note          string   `json:"note,omitempty"`
		Informational bool     `json:"informational,omitempty"`
	}{g.Name, value, g.Threshold, pass, g.Outcome, g.Severity, g.Reason, g.Source, g.Rederived, g.Note, g.Informational})
}
