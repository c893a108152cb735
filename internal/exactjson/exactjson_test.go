package exactjson_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/converge-go/converge/internal/exactjson"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// A text that breaks a part of the rule is refused by Check, Parse and
// ParseObject alike, with an *Error naming that part and matching
// store.ErrInvalid.
func TestATextThatBreaksTheRuleIsRefusedNamingThePart(t *testing.T) {
	deep := strings.Repeat("[", exactjson.MaxDepth+1) + strings.Repeat("]", exactjson.MaxDepth+1)
	for _, tc := range []struct {
		text    string
		problem exactjson.Problem
	}{
		{``, exactjson.Malformed},
		{`{"a":`, exactjson.Malformed},
		{`{"a":1} x`, exactjson.Malformed},
		{`{"a":01}`, exactjson.Malformed},
		{`{"a":1.}`, exactjson.Malformed},
		{`{"a":"\x"}`, exactjson.Malformed},
		{"{\"a\":\"\xff\"}", exactjson.Malformed},
		{"{\"a\":\"\x01\"}", exactjson.Malformed},
		{`{"a":tru}`, exactjson.Malformed},
		{`{"a":[1,]}`, exactjson.Malformed},
		{`{` + deep[1:len(deep)-1] + `}`, exactjson.Malformed},
		{`{"a":` + deep + `}`, exactjson.TooDeep},
		{`{"a":1,"a":2}`, exactjson.Duplicate},
		{`{"a":1,"\u0061":2}`, exactjson.Duplicate},
		{`{"😀":1,"\ud83d\ude00":2}`, exactjson.Duplicate},
		{`[{"b":[1,{"c":2,"c":3}]}]`, exactjson.Duplicate},
		{`{"a":"\ud800"}`, exactjson.LoneSurrogate},
		{`{"a":"x\udc00"}`, exactjson.LoneSurrogate},
		{`{"a":"\ud800\u0041"}`, exactjson.LoneSurrogate},
		{`{"a":1e1234567890123456789}`, exactjson.LongExponent},
	} {
		_, perr := exactjson.Parse([]byte(tc.text))
		for _, err := range []error{exactjson.Check([]byte(tc.text)), perr} {
			var e *exactjson.Error
			require.True(t, errors.As(err, &e), "%.40q: %v", tc.text, err)
			require.Equal(t, tc.problem, e.Problem, "%.40q: %v", tc.text, err)
			require.ErrorIs(t, err, store.ErrInvalid, "%.40q", tc.text)
		}
	}
}

// Many members are checked for duplicates as surely as few.
func TestADuplicateAmongManyMembersIsRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{`)
	for i := range 200 {
		b.WriteString(`"m` + strings.Repeat("x", i) + `":0,`)
	}
	ok := b.String() + `"last":0}`
	require.NoError(t, exactjson.Check([]byte(ok)))
	for _, dup := range []string{`"m":1}`, `"m\u0078":1}`, `"last":0,"last":1}`} {
		err := exactjson.Check([]byte(b.String() + dup))
		var e *exactjson.Error
		require.True(t, errors.As(err, &e), dup)
		require.Equal(t, exactjson.Duplicate, e.Problem, dup)
	}
}

// With Options.LoneSurrogates, a lone surrogate is accepted as its code
// unit: distinct from every other text, U+FFFD included.
func TestAnAcceptedLoneSurrogateIsTextOfItsOwn(t *testing.T) {
	o := exactjson.Options{LoneSurrogates: true}
	parse := func(s string) exactjson.Value {
		v, err := o.Parse([]byte(s))
		require.NoError(t, err, s)
		return v
	}
	require.False(t, parse(`"\ud800"`).Equal(parse(`"\ud801"`)))
	require.False(t, parse(`"\ud800"`).Equal(parse(`"\ufffd"`)))
	require.True(t, parse(`"\ud800\udc00"`).Equal(parse(`"𐀀"`)))
	_, err := o.ParseObject([]byte(`{"\ud800":1,"\ud801":2}`))
	require.NoError(t, err)
	_, err = o.ParseObject([]byte(`{"\ud800":1,"\uD800":2}`))
	require.ErrorIs(t, err, store.ErrInvalid)
}

// Values are equal exactly when they are the same JSON value: numbers as
// decimals, strings by their text, objects in any order.
func TestValuesAreEqualExactlyWhenTheyAreTheSameJSONValue(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{`1`, `1.0`, true},
		{`1`, `10e-1`, true},
		{`120`, `1.2E+2`, true},
		{`0`, `-0.0e5`, true},
		{`1e400`, `10e399`, true},
		{`9007199254740993`, `9007199254740992`, false},
		{`0.1`, `0.10000000000000001`, false},
		{`"\u00e9\/"`, `"é/"`, true},
		{`{"a":1,"b":[1,2]}`, "{ \"b\" : [1, 2],\n\t\"a\":1 }", true},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
		{`true`, `"true"`, false},
		{`null`, `false`, false},
		{`0`, `""`, false},
	} {
		a, err := exactjson.Parse([]byte(tc.a))
		require.NoError(t, err)
		b, err := exactjson.Parse([]byte(tc.b))
		require.NoError(t, err)
		require.Equal(t, tc.same, a.Equal(b), "%s and %s", tc.a, tc.b)
	}
}

// ParseObject gives the top-level members in the order written, each name
// as text and as written, each value as written.
func TestParseObjectGivesTheMembersAsWritten(t *testing.T) {
	ms, err := exactjson.Options{}.ParseObject([]byte(` { "b" : [1, 2] , "\u0061":{"x":1.0} } `))
	require.NoError(t, err)
	require.Len(t, ms, 2)
	require.Equal(t, "b", ms[0].Name)
	require.Equal(t, `"b"`, string(ms[0].Key))
	require.Equal(t, `[1, 2]`, string(ms[0].Raw))
	require.Equal(t, "a", ms[1].Name)
	require.Equal(t, `"\u0061"`, string(ms[1].Key))
	require.Equal(t, `{"x":1.0}`, string(ms[1].Raw))
	require.Equal(t, "1e0", ms[1].Value.Members["x"].Text)
	_, err = exactjson.Options{}.ParseObject([]byte(`[1]`))
	var e *exactjson.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, exactjson.NotObject, e.Problem)
}

// Check builds nothing: a small object costs one allocation at most.
func TestCheckingASmallObjectAllocatesNothing(t *testing.T) {
	body := []byte(`{"counter":41,"writer":3,"note":"a value","tags":["a",{"b":1.5e3}]}`)
	allocs := testing.AllocsPerRun(100, func() {
		if exactjson.Check(body) != nil {
			t.Fatal("refused")
		}
	})
	require.LessOrEqual(t, allocs, 1.0)
}
