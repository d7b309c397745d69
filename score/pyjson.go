package score

import (
	"bytes"
	"encoding/json"
	"math/big"
)

// pyJSONLoads validates data the way Python's json.loads would accept it and
// returns JSON that encoding/json reads. Python also accepts the constants NaN,
// Infinity and -Infinity; they are replaced by 1, which, like them, is a truthy
// non-string, the only properties the scorer looks at.
func pyJSONLoads(data []byte) (json.RawMessage, bool) {
	if json.Valid(data) {
		return data, true
	}
	fixed, changed := replacePyConstants(data)
	if !changed || !json.Valid(fixed) {
		return nil, false
	}
	return fixed, true
}

// replacePyConstants replaces NaN, Infinity and -Infinity outside strings by 1.
func replacePyConstants(data []byte) ([]byte, bool) {
	var out []byte
	changed := false
	inStr := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			out = append(out, c)
			switch c {
			case '\\':
				if i+1 < len(data) {
					i++
					out = append(out, data[i])
				}
			case '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
		case bytes.HasPrefix(data[i:], []byte("NaN")):
			out, i, changed = append(out, '1'), i+2, true
			continue
		case bytes.HasPrefix(data[i:], []byte("Infinity")):
			out, i, changed = append(out, '1'), i+7, true
			continue
		case bytes.HasPrefix(data[i:], []byte("-Infinity")):
			out, i, changed = append(out, '1'), i+8, true
			continue
		}
		out = append(out, c)
	}
	return out, changed
}

// firstByte is the first non-whitespace byte of a JSON value, 0 if none.
func firstByte(v []byte) byte {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

func isJSONString(v []byte) bool { return firstByte(v) == '"' }
func isJSONObject(v []byte) bool { return firstByte(v) == '{' }
func isJSONArray(v []byte) bool  { return firstByte(v) == '[' }

// pyTruthy is Python's bool() of a decoded JSON value: false for a missing value,
// null, false, zero, "", [] and {}.
func pyTruthy(v []byte) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return false
	}
	switch v[0] {
	case 'n', 'f':
		return false
	case 't':
		return true
	case '"':
		return len(v) > 2
	case '[', '{':
		return len(bytes.TrimSpace(v[1:len(v)-1])) > 0
	}
	// A number: zero in any spelling (0, -0, 0.0, 0e5) is falsy.
	f, ok := new(big.Float).SetString(string(v))
	return !ok || f.Sign() != 0
}
