package datasets

import (
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentrace/agentrace/internal/python"
	"github.com/agentrace/agentrace/schemas"
	"golang.org/x/crypto/blake2b"
)

// repeatSep separates a source conversation id from its repeat number in a logical
// trajectory id (X-Session-ID).
const repeatSep = "__repeat_"

// SaltHex returns the lowercase hex of the 2-byte BLAKE2b digest of s's UTF-8 bytes,
// as the reference client salts system prompts (spec §4): SaltHex("1") == "4461".
func SaltHex(s string) string {
	h, err := blake2b.New(2, nil)
	if err != nil {
		// blake2b.New fails only for a digest size outside 1..64 or a key over 64
		// bytes; neither can happen here.
		panic("datasets: blake2b.New(2): " + err.Error())
	}
	h.Write([]byte(s))
	return hex.EncodeToString(h.Sum(nil))
}

// SessionID returns the logical trajectory id of instance repeat (1-based) of source
// conversation conversationID: the id itself on the first pass, id + "__repeat_N"
// for N >= 2.
func SessionID(conversationID string, repeat int) string {
	if repeat <= 1 {
		return conversationID
	}
	return conversationID + repeatSep + strconv.Itoa(repeat)
}

// ParseSessionID splits a logical trajectory id into the source conversation id and
// the repeat number (1 when there is no valid "__repeat_N" suffix with N >= 2).
func ParseSessionID(s string) (conversationID string, repeat int) {
	i := strings.LastIndex(s, repeatSep)
	if i < 0 {
		return s, 1
	}
	n, err := strconv.Atoi(s[i+len(repeatSep):])
	if err != nil || n < 2 || strconv.Itoa(n) != s[i+len(repeatSep):] {
		return s, 1
	}
	return s[:i], n
}

// ParseReferenceSessionID splits a logical trajectory id the way the reference
// scorer does: a trailing __repeat_(\d+) (Python semantics) gives the repeat number
// (any value, leading zeros allowed); otherwise the repeat is 1. ok is false when the
// number does not fit an int.
func ParseReferenceSessionID(s string) (conversationID string, repeat int, ok bool) {
	body := strings.TrimSuffix(s, "\n")
	end := len(body)
	j := end
	for j > 0 {
		r, size := utf8.DecodeLastRuneInString(body[:j])
		if !python.IsDigit(r) {
			break
		}
		j -= size
	}
	if j == end || !strings.HasSuffix(body[:j], "__repeat_") {
		return s, 1, true
	}
	n := 0
	for _, r := range body[j:end] {
		n = n*10 + python.DigitValue(r)
		if n > 1<<40 {
			return s, 0, false
		}
	}
	return body[:j-len("__repeat_")], n, true
}

var workflowID = regexp.MustCompile(`^sim_\d+$`)

// Domain classifies a source conversation id: schemas.DomainWorkflow when it matches
// ^sim_\d+$, otherwise schemas.DomainCoding.
func Domain(conversationID string) string {
	if workflowID.MatchString(conversationID) {
		return schemas.DomainWorkflow
	}
	return schemas.DomainCoding
}
