package ingest

import (
	"fmt"
	"strings"

	"github.com/agentrace/agentrace/internal/jsonscan"
)

// A flat trace line that is not JSON but that the reference's reader (pandas'
// read_json, its ujson decoder) accepts: NaN, Infinity and -Infinity as numbers,
// raw control characters inside strings. Such a line is read only after the strict
// scan failed (the hot path never comes here), rewritten into JSON with the same
// meaning for the reference, and read as usual; each kind of liberty becomes a
// warning, so that --strict refuses the line as before.
//
//   - NaN becomes null. pandas makes a top-level NaN a missing value, as null is;
//     inside a list or an object it is a float NaN, which the reference's encoder
//     (msgspec) sends as null.
//   - Infinity and -Infinity become 1e999 and -1e999: numbers that overflow to the
//     same float infinities, which msgspec sends as null; a delay of 1e999 is
//     capped like any overlong delay (MaxDelaySeconds), -1e999 is no delay.
//   - A raw control character in a string becomes its \u escape: the same string.
//
// Lowercase nan and inf are refused, as pandas refuses them.

// pandasLine rewrites the line l, which the strict scan refused, into JSON when
// pandas' reader accepts it; ok is false when it does not (the strict error
// stands). warnings say what was rewritten.
func pandasLine(l []byte) (out []byte, warnings []string, ok bool) {
	if !jsonscan.Valid(l, jsonscan.Pandas) {
		return nil, nil, false
	}
	out = make([]byte, 0, len(l)+16)
	var nan, inf, ninf int
	var ctl [32]int
	inString := false
	for i := 0; i < len(l); i++ {
		c := l[i]
		if inString {
			switch {
			case c == '\\':
				out = append(out, c, l[i+1])
				i++
			case c == '"':
				inString = false
				out = append(out, c)
			case c < 0x20:
				ctl[c]++
				out = append(out, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
			default:
				out = append(out, c)
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
			out = append(out, c)
		case c == 'N': // NaN (the scan validated every literal)
			nan++
			out = append(out, "null"...)
			i += len("NaN") - 1
		case c == 'I':
			inf++
			out = append(out, "1e999"...)
			i += len("Infinity") - 1
		case c == '-' && i+1 < len(l) && l[i+1] == 'I':
			ninf++
			out = append(out, "-1e999"...)
			i += len("-Infinity") - 1
		default:
			out = append(out, c)
		}
	}
	if nan > 0 {
		warnings = append(warnings, fmt.Sprintf("NaN (%d on this line) is not JSON: the reference's reader (pandas) takes it as a missing value at the top level and as a float NaN inside a list or object, which it sends as null; agentrace reads it as null", nan))
	}
	if inf+ninf > 0 {
		warnings = append(warnings, fmt.Sprintf("Infinity or -Infinity (%d on this line) is not JSON: the reference's reader (pandas) takes it as a float infinity, which it sends as null; agentrace reads it as 1e999 or -1e999 (the same overflow), sent as null", inf+ninf))
	}
	var cs []string
	for c, n := range ctl {
		if n > 0 {
			cs = append(cs, fmt.Sprintf("U+%04X", c))
		}
	}
	if len(cs) > 0 {
		warnings = append(warnings, fmt.Sprintf("raw control character %s in a string is not JSON: the reference's reader (pandas) takes it and sends it escaped; so does agentrace", strings.Join(cs, ", ")))
	}
	return out, warnings, true
}
