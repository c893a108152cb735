package schema_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore/schema"
)

// checkRules runs rules over value as the layer would, and fails t if
// anything panics or breaks the hooks' contract: every error matches
// store.ErrInvalid; defaulting is idempotent; defaults never make a valid
// spec invalid.
func checkRules(t *testing.T, rules, value []byte) {
	r, err := schema.Parse(rules)
	if err != nil {
		if !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("Parse: %v does not match store.ErrInvalid", err)
		}
		return
	}
	for _, k := range r.Kinds {
		a := k.Admission()
		if a.Validate == nil {
			continue
		}
		before := a.Validate(value)
		defaulted, err := a.Default(value)
		if err != nil {
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("Default: %v does not match store.ErrInvalid", err)
			}
			continue
		}
		again, err := a.Default(defaulted)
		if err != nil || string(again) != string(defaulted) {
			t.Fatalf("Default is not idempotent: %s, then %s (%v)", defaulted, again, err)
		}
		after := a.Validate(defaulted)
		if before == nil && after != nil {
			t.Fatalf("defaults made the valid %s invalid: %s: %v", value, defaulted, after)
		}
		for _, err := range []error{before, after} {
			if err != nil && !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("Validate: %v does not match store.ErrInvalid", err)
			}
		}
		if a.ValidateStatus != nil {
			if err := a.ValidateStatus(value); err != nil && !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("ValidateStatus: %v does not match store.ErrInvalid", err)
			}
		}
	}
}

// FuzzRulesNeverPanic: no rules text and no value make Parse, Default or
// Validate panic, and the hooks keep their contract (checkRules).
func FuzzRulesNeverPanic(f *testing.F) {
	f.Add([]byte(roleRules), []byte(`{"spec":{"name":"a","members":[{}]}}`))
	f.Add([]byte(roleRules), []byte(`{"spec":{"name":"a","connectionLimit":1e999999999999}}`))
	f.Add([]byte(`{"kinds":[{"prefix":"","spec":{"additionalProperties":{"default":{"a":[1]},"properties":{"x":{"default":2}}}}}]}`), []byte(`{"spec":{"k":{}}}`))
	f.Add([]byte(`{"kinds":[{"prefix":"","spec":{"enum":[{"a":[1,2]},"x",1.0]}}]}`), []byte(`{"spec":1}`))
	f.Fuzz(func(t *testing.T, rules, value []byte) { checkRules(t, rules, value) })
}

// TestRandomRulesOverRandomValuesNeverPanicAndKeepTheHooksContract runs
// checkRules over rules and values drawn from the same small vocabulary,
// so that values often match the rules' properties, defaults and types.
func TestRandomRulesOverRandomValuesNeverPanicAndKeepTheHooksContract(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 37))
		rules := fmt.Sprintf(`{"kinds":[{"prefix":"","spec":%s,"status":%s}]}`, randomSchema(rng, 0), randomSchema(rng, 0))
		for range 20 {
			checkRules(t, []byte(rules), []byte(fmt.Sprintf(`{"spec":%s,"status":%s}`, randomValue(rng, 0), randomValue(rng, 0))))
		}
	}
}

var names = []string{"a", "b", "c"}

func randomSchema(rng *rand.Rand, depth int) string {
	var kw []string
	types := []string{"object", "array", "string", "integer", "number", "boolean", "null"}
	if rng.IntN(3) > 0 {
		kw = append(kw, fmt.Sprintf(`"type":%q`, types[rng.IntN(len(types))]))
	}
	if depth < 4 && rng.IntN(2) == 0 {
		var props []string
		for _, n := range names[:rng.IntN(len(names)+1)] {
			props = append(props, fmt.Sprintf(`%q:%s`, n, randomSchema(rng, depth+1)))
		}
		kw = append(kw, `"properties":{`+strings.Join(props, ",")+`}`)
	}
	if depth < 4 && rng.IntN(3) == 0 {
		kw = append(kw, `"items":`+randomSchema(rng, depth+1))
	}
	if depth < 4 && rng.IntN(4) == 0 {
		kw = append(kw, `"additionalProperties":`+[]string{"true", "false", randomSchema(rng, depth+1)}[rng.IntN(3)])
	}
	extra := []string{`"required":["a"]`, `"minimum":0`, `"maximum":3`, `"minLength":1`, `"maxLength":2`,
		`"pattern":"^a"`, `"enum":[1,"a",{"a":1},[1]]`, `"minItems":1`, `"maxItems":1`}
	for range rng.IntN(3) {
		kw = append(kw, extra[rng.IntN(len(extra))])
	}
	if rng.IntN(3) == 0 {
		kw = append(kw, `"default":`+randomValue(rng, 2))
	}
	return "{" + strings.Join(dedupe(kw), ",") + "}"
}

func randomValue(rng *rand.Rand, depth int) string {
	n := 8
	if depth >= 4 {
		n = 6
	}
	switch rng.IntN(n) {
	case 0:
		return []string{"0", "1", "-2", "1.5", "1e400", "3"}[rng.IntN(6)]
	case 1:
		return []string{`""`, `"a"`, `"ab"`, `"ba"`, `"\u00e9\u00e9\u00e9"`}[rng.IntN(5)]
	case 2:
		return []string{"true", "false"}[rng.IntN(2)]
	case 3, 4:
		return "null"
	case 5:
		return "{}"
	case 6:
		var items []string
		for range rng.IntN(3) {
			items = append(items, randomValue(rng, depth+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	var members []string
	for _, name := range names[:rng.IntN(len(names)+1)] {
		members = append(members, fmt.Sprintf("%q:%s", name, randomValue(rng, depth+1)))
	}
	return "{" + strings.Join(members, ",") + "}"
}

// dedupe drops keywords given twice (the later one), which the decoder
// would otherwise merge.
func dedupe(kw []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range kw {
		name, _, _ := strings.Cut(k, ":")
		if !seen[name] {
			seen[name] = true
			out = append(out, k)
		}
	}
	return out
}
