package tokens

import (
	"errors"

	"github.com/agentrace/agentrace/schemas"
)

var errNotYet = errors.New("chat templates: not implemented yet")

// Render renders the chat template (being written).
func (t *Tokenizer) Render(messagesJSON, toolsJSON []byte, addGenerationPrompt bool, kwargs map[string]any) (string, error) {
	return "", errNotYet
}

// CountISL counts a client turn's input tokens (being written).
func (t *Tokenizer) CountISL(messagesJSON, toolsJSON []byte, kwargs map[string]any) (int, error) {
	return 0, errNotYet
}

// CountOSL counts a response's output tokens (being written).
func (t *Tokenizer) CountOSL(r schemas.Response) (int, error) { return 0, errNotYet }

// CountTPOTSuffix counts the tokens after the first output-bearing chunk (being written).
func (t *Tokenizer) CountTPOTSuffix(r schemas.Response, firstContentBytes, firstReasoningBytes int) (int, error) {
	return 0, errNotYet
}

// Approx is a fast deterministic approximation of a token count (being written).
type Approx struct{}

// CountText approximates the tokens of s.
func (Approx) CountText(s string) int { return (len(s) + 3) / 4 }
