package ingest

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/python"
)

// The reference client reads a flat trace file with pandas (read_json, lines=True)
// and works on Python values. The helpers here restate, for one JSON value, what
// Python makes of it where that decides whether the reference accepts a row and what
// it sends: float(), str() of a number, truthiness, and pandas' JSON reader's fast
// (imprecise) float parsing. Their origin: pandas/io/json/_json.py and the vendored
// ujson decoder (pandas/_libs/src/vendored/ujson/lib/ultrajsondec.c, decode_numeric
// and createDouble), CPython's float() and float_repr; the reference's use of them:
// src/inference_endpoint/dataset_manager/agentic_inference_dataset.py at ea332753.

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// numberIsInt reports whether a JSON number literal is an integer literal (Python
// reads it as an int).
func numberIsInt(tok []byte) bool { return bytes.IndexAny(tok, ".eE") < 0 }

// pyNumberStr returns Python's str() of the value a JSON number literal reads as
// on its own: an int's decimal digits, a float's repr.
func pyNumberStr(tok []byte) string {
	if numberIsInt(tok) {
		if string(tok) == "-0" {
			return "0"
		}
		return string(tok)
	}
	v, _ := strconv.ParseFloat(string(tok), 64)
	return python.FloatRepr(v)
}

// pow10 holds the exact powers of ten a double represents.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fracPow10 is ujson's table of 10^-k, k = 0..15, as the C literals round them.
var fracPow10 = [...]float64{1.0, 0.1, 0.01, 0.001, 0.0001, 0.00001, 0.000001, 0.0000001,
	0.00000001, 0.000000001, 0.0000000001, 0.00000000001, 0.000000000001,
	0.0000000000001, 0.00000000000001, 0.000000000000001}

// pandasNumber is what pandas' JSON reader makes of a JSON number literal: an
// integer (ok false when it is outside the reader's 64-bit range, which makes it
// refuse the file), or a float computed the fast, imprecise way (precise_float is
// off by default): the integer part plus the first 15 fractional digits scaled by
// a rounded power of ten, times 10^exponent.
func pandasNumber(tok []byte) (f float64, isInt, ok bool) {
	i, neg := 0, false
	if i < len(tok) && tok[i] == '-' {
		neg, i = true, i+1
	}
	var iv uint64
	for ; i < len(tok) && isDigit(tok[i]); i++ {
		// As ujson checks it: a wrap-around of the unsigned accumulator (positive)
		// or a magnitude beyond 2^63 (negative).
		prev := iv
		iv = iv*10 + uint64(tok[i]-'0')
		if (!neg && prev > iv) || (neg && iv > 1<<63) {
			return 0, true, false
		}
	}
	if i == len(tok) {
		return 0, true, true
	}
	frc, dc := 0.0, 0
	if tok[i] == '.' {
		for i++; i < len(tok) && isDigit(tok[i]); i++ {
			if dc < 15 {
				frc = frc*10 + float64(tok[i]-'0')
				dc++
			}
		}
	}
	sign := 1.0
	if neg {
		sign = -1
	}
	f = (float64(iv) + frc*fracPow10[dc]) * sign
	if i < len(tok) && (tok[i] == 'e' || tok[i] == 'E') {
		i++
		eneg := false
		if i < len(tok) && (tok[i] == '-' || tok[i] == '+') {
			eneg, i = tok[i] == '-', i+1
		}
		ev := 0.0
		for ; i < len(tok) && isDigit(tok[i]); i++ {
			ev = ev*10 + float64(tok[i]-'0')
		}
		var p float64
		if ev < float64(len(pow10)) {
			p = pow10[int(ev)]
			if eneg {
				p = 1 / p
			}
		} else {
			if eneg {
				ev = -ev
			}
			p = math.Pow(10, ev)
		}
		f *= p
	}
	return f, false, true
}

// pandasFloatDiffers reports, for a JSON number literal that is not an integer,
// whether pandas' fast float parsing gives another double than the literal's
// correctly rounded value, and that double.
func pandasFloatDiffers(tok []byte) (float64, bool) {
	f, isInt, ok := pandasNumber(tok)
	if isInt || !ok {
		return 0, false
	}
	want, err := strconv.ParseFloat(string(tok), 64)
	if err != nil && !math.IsInf(want, 0) {
		return 0, false
	}
	return f, f != want && !(math.IsNaN(f) && math.IsNaN(want))
}

// pandasNumberNote says what pandas' JSON reader makes of the numbers in raw when
// that is not what the file says: a float read imprecisely (the reference sends the
// imprecise value), an integer it cannot read (the reference refuses the file). ""
// when every number reads as written.
func pandasNumberNote(raw []byte) string {
	note := ""
	jsontext.EachNumber(raw, func(tok []byte) {
		if note != "" {
			return
		}
		if _, isInt, ok := pandasNumber(tok); !ok {
			note = fmt.Sprintf("the integer %s is beyond the 64 bits the reference's JSON reader (pandas) accepts: the reference refuses the file", tok)
		} else if !isInt {
			if f, differs := pandasFloatDiffers(tok); differs {
				note = fmt.Sprintf("the reference's JSON reader (pandas, fast float mode) reads %s as %s and sends that", tok, python.FloatRepr(f))
			}
		}
	})
	return note
}

// pandasColumn tracks one column of a flat file to tell what pandas' type inference
// (read_json with dtype=True) does to its values: a column whose values are all
// numbers, numeric strings or booleans becomes numeric, as floats when a row lacks
// the value (100 is then sent as 100.0, and a run default filled into the column as
// a float too), as integers when every value is a whole number (8192.0 is then sent
// as 8192).
type pandasColumn struct {
	nonNull, ints, floatsWhole, floatsFrac, strWhole, strFrac, bools int
	other                                                            bool
	example                                                          string
}

func (c *pandasColumn) add(raw []byte) {
	if c.other || isNull(raw) {
		return // a column with a value pandas cannot make a number stays as it is (note)
	}
	c.nonNull++
	switch kind(raw) {
	case "number":
		f, _ := strconv.ParseFloat(string(raw), 64)
		switch {
		case numberIsInt(raw):
			c.ints++
		case f == math.Trunc(f):
			c.floatsWhole++
			if c.example == "" {
				c.example = string(raw)
			}
		default:
			c.floatsFrac++
		}
	case "string":
		s, _ := jsontext.DecodeString(raw)
		f, ok := python.Float(s)
		switch {
		case !ok:
			c.other = true
		case f == math.Trunc(f):
			c.strWhole++
		default:
			c.strFrac++
		}
		if ok && c.example == "" {
			c.example = string(raw)
		}
	case "boolean":
		c.bools++
	default:
		c.other = true
	}
}

// note says how pandas alters the column's values in a file of rows data rows, ""
// when it does not.
func (c *pandasColumn) note(name string, rows int) string {
	if c.nonNull == 0 || c.other {
		return ""
	}
	gaps := rows - c.nonNull
	strs := c.strWhole + c.strFrac
	if c.bools == c.nonNull && gaps == 0 {
		return "" // a boolean column stays boolean
	}
	switch {
	case gaps > 0 && c.ints+strs+c.bools > 0:
		return fmt.Sprintf("%s is set on %d of %d rows: the reference's pandas reads the column as floats and sends its values as floats (100 as 100.0, true as 1.0), a run default filled into its gaps too (8192.0); agentrace sends the file's values", name, c.nonNull, rows)
	case gaps == 0 && c.floatsFrac+c.strFrac == 0 && c.floatsWhole+strs+c.bools > 0:
		return fmt.Sprintf("every %s of the file is a whole number: the reference's pandas reads the column as integers (%s is sent as an integer); agentrace sends the file's values", name, c.example)
	case gaps == 0 && c.floatsFrac+c.strFrac > 0 && c.ints+strs+c.bools > 0:
		return fmt.Sprintf("%s mixes integers with fractions: the reference's pandas reads the column as floats (100 is sent as 100.0); agentrace sends the file's values", name)
	}
	return ""
}
