package score

import (
	"bytes"
	"math/big"
)

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
