package exactjson

import (
	"strconv"
	"strings"
)

// maxExponentDigits bounds the digits of an exponent, leading zeros
// aside, so that every exponent fits an int64.
const maxExponentDigits = 18

// number reads a number; in build mode its Text is the canonical decimal
// (see Value.Text).
func (p *parser) number() (Value, bool) {
	neg := p.data[p.pos] == '-'
	if neg {
		p.pos++
	}
	intPart := p.digits()
	switch {
	case len(intPart) == 0:
		return Value{}, p.fail(Malformed, "malformed number")
	case len(intPart) > 1 && intPart[0] == '0':
		return Value{}, p.fail(Malformed, "number with a leading zero")
	}
	var frac, exp []byte
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if frac = p.digits(); len(frac) == 0 {
			return Value{}, p.fail(Malformed, "malformed fraction")
		}
	}
	expNeg := false
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			expNeg = p.data[p.pos] == '-'
			p.pos++
		}
		if exp = p.digits(); len(exp) == 0 {
			return Value{}, p.fail(Malformed, "malformed exponent")
		}
	}
	if len(strings.TrimLeft(string(exp), "0")) > maxExponentDigits {
		return Value{}, p.fail(LongExponent, "exponent of more than %d digits", maxExponentDigits)
	}
	if !p.build {
		return Value{}, true
	}
	return Value{Kind: Number, Text: canonical(neg, string(intPart)+string(frac), len(frac), string(exp), expNeg)}, true
}

// canonical returns the canonical decimal of sign neg, digits and
// exponent exp (its digits, at most maxExponentDigits) - fracLen.
func canonical(neg bool, digits string, fracLen int, exp string, expNeg bool) string {
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	e, _ := strconv.ParseInt("0"+strings.TrimLeft(exp, "0"), 10, 64)
	if expNeg {
		e = -e
	}
	e += int64(len(digits)-len(trimmed)) - int64(fracLen)
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + trimmed + "e" + strconv.FormatInt(e, 10)
}

// digits reads a run of decimal digits.
func (p *parser) digits() []byte {
	start := p.pos
	for p.pos < len(p.data) && '0' <= p.data[p.pos] && p.data[p.pos] <= '9' {
		p.pos++
	}
	return p.data[start:p.pos]
}
