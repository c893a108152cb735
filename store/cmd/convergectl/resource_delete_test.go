package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

// TestDeleteOfAResourceWithFinalizersReportsTheMarkAndApplyNeverCompletesIt:
// delete of an object with finalizers only marks it: the line says
// "marked": true, stderr names the finalizers it waits for, and the object
// stays readable; deleting it again changes nothing; an apply, whatever
// finalizers its document names, leaves it marked with its finalizers,
// and one adding a finalizer is refused.
func TestDeleteOfAResourceWithFinalizersReportsTheMarkAndApplyNeverCompletesIt(t *testing.T) {
	m, url := serveLayer(t)
	r := runAs(t, url, `{"metadata":{"finalizers":["a","b"]},"spec":{"n":1}}`, "apply", "k")
	require.Equal(t, exitOK, r.code, r.stderr)

	r = ctl(t, url, "", "delete", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "convergectl: k: marked for deletion; waiting for finalizers [a b]\n", r.stderr)
	o := decodeObject(t, r.stdout)
	obj, got := stored(t, m, "k")
	require.Equal(t, object{Key: "k", Revision: obj.Revision, Marked: true}, o)
	require.NotNil(t, got.meta.Deletion, "the object is marked")
	require.Equal(t, []string{"a", "b"}, got.meta.Finalizers)

	r = runAs(t, url, "", "delete", "-rev", fmt.Sprint(obj.Revision), "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, object{Key: "k", Revision: obj.Revision, Marked: true}, decodeObject(t, r.stdout), "a marked object stays as it is")

	for _, doc := range []string{`{"metadata":{"finalizers":["b"]},"spec":{"n":1}}`, `{"spec":{"n":2}}`, `{"metadata":{"finalizers":[]}}`} {
		r = ctl(t, url, doc, "apply", "k")
		require.Equal(t, exitOK, r.code, r.stderr)
		require.Empty(t, r.stderr, doc)
		_, got = stored(t, m, "k")
		require.Equal(t, []string{"a", "b"}, got.meta.Finalizers, "%s: an apply removes no finalizer", doc)
		require.NotNil(t, got.meta.Deletion, "%s: the object stays marked", doc)
	}
	r = runAs(t, url, `{"metadata":{"finalizers":["b","late"]},"spec":{"n":1}}`, "apply", "k")
	require.Equal(t, exitError, r.code, "a finalizer added after the mark")
	require.Contains(t, r.stderr, "being deleted")
}

// TestDeleteWithoutFinalizersDeletesAndSaysNothingMore: an object without
// finalizers is deleted, as before the layer, with nothing on stderr.
func TestDeleteWithoutFinalizersDeletesAndSaysNothingMore(t *testing.T) {
	m, url := serveLayer(t)
	r := runAs(t, url, `{"spec":{"n":1}}`, "apply", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runAs(t, url, "", "delete", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Empty(t, r.stderr)
	require.False(t, decodeObject(t, r.stdout).Marked)
	_, err := m.Get(t.Context(), "k")
	require.ErrorIs(t, err, store.ErrNotFound)
}

// TestDeletePropagationMarksWithTheLayersFinalizer: -propagation
// foreground and orphan mark the object with the layer's finalizer, which
// the garbage collector removes once it has dealt with the children.
func TestDeletePropagationMarksWithTheLayersFinalizer(t *testing.T) {
	m, url := serveLayer(t)
	for p, finalizer := range map[string]string{"foreground": apistore.ForegroundFinalizer, "orphan": apistore.OrphanFinalizer} {
		r := runAs(t, url, `{"spec":{"n":1}}`, "apply", p)
		require.Equal(t, exitOK, r.code, r.stderr)
		r = runAs(t, url, "", "delete", "-propagation", p, p)
		require.Equal(t, exitOK, r.code, r.stderr)
		require.True(t, decodeObject(t, r.stdout).Marked, p)
		require.Equal(t, "convergectl: "+p+": marked for deletion; waiting for finalizers ["+finalizer+"]\n", r.stderr)
		_, got := stored(t, m, p)
		require.Equal(t, apistore.Propagation(p), got.meta.Deletion.Propagation)
	}
}

// TestStatusAndPropagationAreRefusedClearlyByAServerWithoutTheLayer: a
// server that serves a store without the layer refuses a status write and
// a foreground or orphan delete; convergectl says the server applies no
// layer (exit 1), and nothing is written. A background delete works there
// as it always did.
func TestStatusAndPropagationAreRefusedClearlyByAServerWithoutTheLayer(t *testing.T) {
	m, url := serve(t)
	obj, err := m.Create(t.Context(), "k", value(`{"metadata":{"finalizers":["f"]},"spec":{"n":1}}`))
	require.NoError(t, err)
	for _, c := range []struct {
		stdin string
		args  []string
	}{
		{`{"status":{"ready":true}}`, []string{"status", "k"}},
		{"", []string{"delete", "-propagation", "foreground", "k"}},
		{"", []string{"delete", "-propagation", "orphan", "-rev", fmt.Sprint(obj.Revision), "k"}},
	} {
		r := runAs(t, url, c.stdin, c.args...)
		require.Equal(t, exitError, r.code, c.args)
		require.Regexp(t, `^convergectl: the server applies no API-server layer: [^\n]+\n$`, r.stderr, c.args)
		require.False(t, namesAPackageTwice(r.stderr), r.stderr)
		require.Empty(t, r.stdout)
	}
	got, err := m.Get(t.Context(), "k")
	require.NoError(t, err)
	require.Equal(t, obj, got, "a refused command wrote")

	r := runAs(t, url, "", "delete", "-propagation", "background", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	_, err = m.Get(t.Context(), "k")
	require.ErrorIs(t, err, store.ErrNotFound, "without the layer, finalizers are plain data")
}

// TestTheNewFlagsUsageErrorsNameTheProblem: a bad -o or -propagation is a
// usage error (exit 2) that names it, before the command's usage, and
// sends nothing.
func TestTheNewFlagsUsageErrorsNameTheProblem(t *testing.T) {
	_, url := serveLayer(t)
	for _, c := range []struct {
		args  []string
		first string
	}{
		{[]string{"get", "-o", "yaml", "k"}, `get: -o "yaml": want json, spec, status, metadata or table`},
		{[]string{"delete", "-propagation", "sideways", "k"}, `delete: -propagation "sideways": want background, foreground or orphan`},
		{[]string{"status", "k", "a", "b"}, "status: want KEY [FILE], got 3 arguments"},
		{[]string{"apply", "-patch=maybe", "k"}, `apply: invalid boolean value "maybe" for -patch: parse error`},
	} {
		r := runAs(t, url, "", c.args...)
		require.Equal(t, exitUsage, r.code, c.args)
		first, rest, _ := strings.Cut(r.stderr, "\n")
		require.Equal(t, "convergectl: "+c.first, first, c.args)
		require.True(t, strings.HasPrefix(rest, "Usage: convergectl [flags] "+c.args[0]), rest)
		require.Empty(t, r.stdout)
	}
}

// TestApplyPatchMergesIntoAResource: with -patch, a resource document is
// a merge patch: the spec members it names change, the others stay, and
// the layer still keeps the status and bumps the generation.
func TestApplyPatchMergesIntoAResource(t *testing.T) {
	m, url := serveLayer(t)
	r := runAs(t, url, `{"spec":{"replicas":2,"image":"app:1"}}`, "apply", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runAs(t, url, `{"status":{"ready":2}}`, "status", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runAs(t, url, `{"spec":{"replicas":3},"status":{"ready":0}}`, "apply", "-patch", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	_, got := stored(t, m, "k")
	require.JSONEq(t, `{"replicas":3,"image":"app:1"}`, got.spec)
	require.Equal(t, map[string]string{"status": `{"ready":2}`}, got.status, "the layer keeps the status")
	require.Equal(t, int64(2), got.meta.Generation)
}
