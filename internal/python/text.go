package python

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The reference scorer's regular expressions and string methods work on Unicode
// code points with Python's character classes; these restate the classes it
// relies on, so that non-ASCII input is handled as it is there.

// IsSpace is Python's str.isspace() (and the re module's \s on str patterns):
// Unicode White_Space plus the ASCII separators 0x1C..0x1F.
func IsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// IsWord is the re module's \w on str patterns: alphanumerics (letters and
// numbers of any script) and the underscore.
func IsWord(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// IsDigit is the re module's \d on str patterns: a decimal digit (category Nd)
// of any script.
func IsDigit(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.Is(unicode.Nd, r)
}

// DigitValue is the value of a decimal digit r (IsDigit(r) must hold). Every
// script's decimal digits are encoded as a contiguous run 0..9, so the value is the
// distance from the start of r's run of digits, modulo 10.
func DigitValue(r rune) int {
	if r < utf8.RuneSelf {
		return int(r - '0')
	}
	start := r
	for start > 0 && unicode.Is(unicode.Nd, start-1) {
		start--
	}
	return int(r-start) % 10
}

// Lower is Python's str.lower() as far as a lookup in an ASCII table can tell:
// Go's simple case mapping, except that U+0130 (İ) becomes "i̇" (two code points),
// as Python's full case mapping makes it.
func Lower(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	for _, r := range s {
		if r == 0x130 {
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
