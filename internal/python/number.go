package python

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Float parses s as Python's float(s) does: surrounding white space allowed,
// decimal digits of any script, underscores between digits, "inf", "infinity" and
// "nan" in any case.
func Float(s string) (float64, bool) {
	// As float() reads a str: beyond ASCII, white space becomes a space and a
	// decimal digit of any script its ASCII digit, anything else fails; then
	// ASCII white space (not U+001C..U+001F) is stripped.
	ascii := make([]byte, 0, len(s))
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			ascii = append(ascii, byte(r))
		case IsSpace(r):
			ascii = append(ascii, ' ')
		case IsDigit(r):
			ascii = append(ascii, byte('0'+DigitValue(r)))
		default:
			return 0, false
		}
	}
	s = strings.Trim(string(ascii), " \t\n\v\f\r")
	if s == "" {
		return 0, false
	}
	body := strings.TrimLeft(s, "+-")
	switch strings.ToLower(body) {
	case "inf", "infinity", "nan":
		if len(s)-len(body) > 1 {
			return 0, false
		}
		v := math.Inf(1)
		if strings.ToLower(body) == "nan" {
			v = math.NaN()
		}
		if s[0] == '-' {
			v = -v
		}
		return v, true
	}
	if strings.Contains(s, "_") {
		// Underscores are allowed only between digits.
		for i := 0; i < len(s); i++ {
			if s[i] != '_' {
				continue
			}
			if i == 0 || i == len(s)-1 || !isDigit(s[i-1]) || !isDigit(s[i+1]) {
				return 0, false
			}
		}
		s = strings.ReplaceAll(s, "_", "")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-' {
			return 0, false // hex, "0x", named values other than the above
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// Strip is Python's str.strip() with no argument.
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// FloatRepr returns Python's repr (and str) of v: the shortest digits that read
// back as v, positional when the decimal exponent is in [-4, 16), otherwise
// d.ddde±XX, with ".0" added to whole numbers.
func FloatRepr(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	sign := ""
	if math.Signbit(v) {
		sign, v = "-", -v
	}
	if v == 0 {
		return sign + "0.0"
	}
	e := strconv.FormatFloat(v, 'e', -1, 64)
	p := strings.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[p+1:])
	digits := strings.Replace(e[:p], ".", "", 1)
	n, decpt := len(digits), exp+1
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			return sign + "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= n:
			return sign + digits + strings.Repeat("0", decpt-n) + ".0"
		default:
			return sign + digits[:decpt] + "." + digits[decpt:]
		}
	}
	m := digits[:1]
	if n > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if exp < 0 {
		es, exp = "-", -exp
	}
	if exp < 10 {
		es += "0"
	}
	return sign + m + "e" + es + strconv.Itoa(exp)
}
