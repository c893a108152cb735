package apistore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

// qualifiedName is Kubernetes' qualified name, as its documentation
// states it: an optional DNS-1123 subdomain prefix and '/', then a name of
// letters, digits, '-', '_' and '.', beginning and ending alphanumeric.
var qualifiedName = regexp.MustCompile(`^(([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/)?([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$`)

// validFinalizer is the model of ValidateFinalizer.
func validFinalizer(f string) bool {
	m := qualifiedName.FindStringSubmatch(f)
	return m != nil && len(m[2]) <= 253 && len(m[6]) <= 63
}

// randomFinalizer draws a name near the edges of the rule.
func randomFinalizer(rng *rand.Rand) string {
	const alphabet = "abz09AZ-_./\n é"
	var b strings.Builder
	n := rng.IntN(8)
	switch rng.IntN(10) {
	case 0:
		n = 60 + rng.IntN(8)
	case 1:
		n = 250 + rng.IntN(70)
	}
	runes := []rune(alphabet)
	for range n {
		b.WriteRune(runes[rng.IntN(len(runes))])
	}
	return b.String()
}

// TestFinalizerNamesAreAcceptedExactlyWhenQualifiedNames: ValidateFinalizer
// agrees with Kubernetes' qualified-name rule on random names near its
// edges.
func TestFinalizerNamesAreAcceptedExactlyWhenQualifiedNames(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 37))
	for range 20000 {
		f := randomFinalizer(rng)
		err := apistore.ValidateFinalizer(f)
		require.Equal(t, validFinalizer(f), err == nil, "%q: %v", f, err)
		if err != nil {
			require.ErrorIs(t, err, store.ErrInvalid)
		}
	}
	for _, f := range []string{"cleanup", "a", "postgres.converge.dev/role", apistore.ForegroundFinalizer, apistore.OrphanFinalizer, "ex.com/A_b.C-9"} {
		require.NoError(t, apistore.ValidateFinalizer(f), f)
	}
}

// TestRandomFinalizerWritesStoreOnlyValidNamesOrNamesAlreadyStored: over
// random stored lists (bad names and duplicates included, as left by an
// older writer) and random writes, a write is accepted exactly when each
// name it lists is a valid name listed once, or is listed by the stored
// object at least as many times; an accepted write stores the list as
// written; a write that removes names only is always accepted.
func TestRandomFinalizerWritesStoreOnlyValidNamesOrNamesAlreadyStored(t *testing.T) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(2, 37))
	mem := store.NewMemory[json.RawMessage]()
	t.Cleanup(func() { mem.Close() })
	s, err := apistore.New[json.RawMessage](mem, apistore.JSONKind{})
	require.NoError(t, err)
	pool := []string{"a", "b", "ex.com/c", "bad name", "", "x\ny", strings.Repeat("f", 100), "A/b"}
	pick := func() []string {
		var out []string
		for range rng.IntN(5) {
			out = append(out, pool[rng.IntN(len(pool))])
		}
		return out
	}
	value := func(fins []string) json.RawMessage {
		v, err := json.Marshal(map[string]any{"metadata": apistore.Meta{Generation: 1, Finalizers: fins}, "spec": 1})
		require.NoError(t, err)
		return v
	}
	for i := range 2000 {
		key := fmt.Sprint("k", i)
		stored := pick()
		obj, err := mem.Create(ctx, key, value(stored))
		require.NoError(t, err)
		write, removal := pick(), rng.IntN(3) == 0
		if removal {
			write = subList(rng, stored)
		}
		got, err := s.Update(ctx, key, value(write), obj.Revision)
		want := acceptable(stored, write)
		require.True(t, want || !removal, "the model accepts every removal")
		require.Equal(t, want, err == nil, "stored %q, written %q: %v", stored, write, err)
		if err != nil {
			require.True(t, errors.Is(err, store.ErrInvalid), "%v", err)
			continue
		}
		m, err := apistore.JSONKind{}.Meta(got.Value)
		require.NoError(t, err)
		require.Equal(t, len(write), len(m.Finalizers), "stored %q, written %q", stored, write)
	}
}

// acceptable is the model of the rule: each name written is a valid name
// at its first listing, or is listed no more often than stored lists it.
func acceptable(stored, write []string) bool {
	have, seen := map[string]int{}, map[string]int{}
	for _, f := range stored {
		have[f]++
	}
	for _, f := range write {
		seen[f]++
		if seen[f] > have[f] && (seen[f] > 1 || !validFinalizer(f)) {
			return false
		}
	}
	return true
}

// subList returns some of list's items, in order.
func subList(rng *rand.Rand, list []string) []string {
	var out []string
	for _, f := range list {
		if rng.IntN(2) == 0 {
			out = append(out, f)
		}
	}
	return out
}
