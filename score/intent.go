package score

import (
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/python"
)

// ModelIntent returns the model's workflow intent code (spec §8): the first match of
// \bintent:\s*(I\d{3})\b (case-insensitive) in reasoning, then in content,
// upper-cased; else the LAST bare \bI(\d{3})\b in reasoning if it has one, else in
// content. ok is false when there is none. Word boundaries, digits, whitespace and
// case folding follow Python's re module on str patterns.
func ModelIntent(reasoning, content string) (code string, ok bool) {
	for _, s := range [2]string{reasoning, content} {
		if c, ok := explicitIntent(s); ok {
			return c, true
		}
	}
	for _, s := range [2]string{reasoning, content} {
		if c, ok := lastBareIntent(s); ok {
			return c, true
		}
	}
	return "", false
}

// foldI tells whether r matches a case-insensitive 'i' in Python's re: i, I, the
// dotless ı (a listed equivalence) and İ (whose lower case is i).
func foldI(r rune) bool { return r == 'i' || r == 'I' || r == 'ı' || r == 'İ' }

// upperI is Python's str.upper() of a foldI rune.
func upperI(r rune) string {
	if r == 'İ' {
		return "İ"
	}
	return "I"
}

// prevIsWord tells whether the code point before byte offset i of s is a word
// character.
func prevIsWord(s string, i int) bool {
	if i == 0 {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return python.IsWord(r)
}

// nextIsWord tells whether the code point at byte offset i of s is a word character.
func nextIsWord(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return python.IsWord(r)
}

// threeDigits reads exactly three decimal digits at s[i:] followed by a word
// boundary, returning them and the offset after them.
func threeDigits(s string, i int) (string, int, bool) {
	start := i
	for n := 0; n < 3; n++ {
		if i >= len(s) {
			return "", 0, false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !python.IsDigit(r) {
			return "", 0, false
		}
		i += size
	}
	if nextIsWord(s, i) {
		return "", 0, false
	}
	return s[start:i], i, true
}

// explicitIntent finds the first \bintent:\s*(I\d{3})\b, ignoring case.
func explicitIntent(s string) (string, bool) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if foldI(r) && !prevIsWord(s, i) {
			if code, ok := explicitIntentAt(s, i+size); ok {
				return code, true
			}
		}
		i += size
	}
	return "", false
}

// explicitIntentAt matches "ntent:\s*(I\d{3})\b" at s[i:], the 'i' already seen.
func explicitIntentAt(s string, i int) (string, bool) {
	for _, want := range "ntent:" {
		if i >= len(s) {
			return "", false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != want && !(want != ':' && r == want-'a'+'A') {
			return "", false
		}
		i += size
	}
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !python.IsSpace(r) {
			break
		}
		i += size
	}
	if i >= len(s) {
		return "", false
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	if !foldI(r) {
		return "", false
	}
	digits, _, ok := threeDigits(s, i+size)
	if !ok {
		return "", false
	}
	return upperI(r) + digits, true
}

// lastBareIntent finds the last \bI(\d{3})\b (case-sensitive) and returns "I" and
// its digits.
func lastBareIntent(s string) (string, bool) {
	code, found := "", false
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], 'I')
		if j < 0 {
			break
		}
		i += j
		if !prevIsWord(s, i) {
			if digits, end, ok := threeDigits(s, i+1); ok {
				code, found = "I"+digits, true
				i = end
				continue
			}
		}
		i++
	}
	return code, found
}

// GroundTruthIntents returns the expected intent codes of an assistant row from its
// intent_codes JSON: the non-empty strings of the list, upper-cased, as a sorted
// set. Anything that is not a list gives none.
func GroundTruthIntents(intentCodesJSON []byte) []string {
	if jsontext.KindOf(intentCodesJSON) != jsontext.Array {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(intentCodesJSON, &items) != nil {
		return nil
	}
	var out []string
	for _, it := range items {
		if jsontext.KindOf(it) != jsontext.String {
			continue
		}
		var s string
		if json.Unmarshal(it, &s) != nil || s == "" {
			continue
		}
		out = append(out, strings.ToUpper(s))
	}
	sort.Strings(out)
	return compactStrings(out)
}

// compactStrings removes adjacent duplicates of a sorted slice.
func compactStrings(s []string) []string {
	if len(s) < 2 {
		return s
	}
	out := s[:1]
	for _, v := range s[1:] {
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}
