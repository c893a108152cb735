package main

import (
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/apistore/schema"
	"github.com/stretchr/testify/require"
)

// serveRules serves a store with the layer and the kind rules given.
func serveRules(t *testing.T, rules string) (*store.Memory[value], string) {
	t.Helper()
	r, err := schema.Parse([]byte(rules))
	require.NoError(t, err)
	m := store.NewMemory[value]()
	t.Cleanup(func() { _ = m.Close() })
	layer, err := apistore.New[value](m, apistore.JSONKind{}, r.Options()...)
	require.NoError(t, err)
	return m, serveStore(t, layer)
}

// TestAWriteThatBreaksAKindsRulePrintsTheFieldExitsNonZeroAndChangesNothing:
// apply, put and status of a value its kind's rule refuses print the
// field, exit with exitError, and get shows the old object unchanged.
func TestAWriteThatBreaksAKindsRulePrintsTheFieldExitsNonZeroAndChangesNothing(t *testing.T) {
	_, url := serveRules(t, `{"kinds":[{"prefix":"databases/",
	  "spec":{"type":"object","properties":{"connectionLimit":{"type":"integer","minimum":-1}}},
	  "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}]}`)
	r := ctl(t, url, "", "apply", "databases/app", writeFile(t, `{"spec":{"connectionLimit":5}}`))
	require.Equal(t, exitOK, r.code, r.stderr)
	before := ctl(t, url, "", "get", "databases/app")
	require.Equal(t, exitOK, before.code, before.stderr)

	for what, args := range map[string][]string{
		"apply":  {"apply", "databases/app", writeFile(t, `{"spec":{"connectionLimit":-7}}`)},
		"patch":  {"apply", "-patch", "databases/app", writeFile(t, `{"spec":{"connectionLimit":"many"}}`)},
		"put":    {"put", "databases/app", writeFile(t, `{"spec":{"connectionLimit":-7}}`)},
		"status": {"status", "databases/app", writeFile(t, `{"status":{"ready":"yes"}}`)},
	} {
		r := ctl(t, url, "", args...)
		require.Equal(t, exitError, r.code, "%s: %s", what, r.stderr)
		field := "spec.connectionLimit"
		if what == "status" {
			field = "status.ready"
		}
		require.Contains(t, r.stderr, field, "%s: the field is named", what)
		after := ctl(t, url, "", "get", "databases/app")
		require.Equal(t, before.stdout, after.stdout, "%s: the object is unchanged", what)
	}
}
