package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// jsonString returns a JSON string of exactly n bytes.
func jsonString(n int) string { return `"` + strings.Repeat("a", n-2) + `"` }

// countingReader yields 'a' bytes, up to total, and counts those read.
type countingReader struct{ read, total int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	if r.read >= r.total {
		return 0, io.EOF
	}
	n := min(int64(len(p)), r.total-r.read)
	for i := range p[:n] {
		p[i] = 'a'
	}
	r.read += n
	return int(n), nil
}

// TestAValueLargerThanTheLimitIsRefusedAsSuchFromStdinAndFiles: put and
// apply refuse an input of more than store.DefaultMaxValueSize bytes (by
// default) saying it is too large, not that it is bad JSON, whether it
// comes from stdin or a file, and write nothing.
func TestAValueLargerThanTheLimitIsRefusedAsSuchFromStdinAndFiles(t *testing.T) {
	m, url := serve(t)
	obj, err := m.Create(t.Context(), "k", value(`1`))
	require.NoError(t, err)
	tooLarge := jsonString(store.DefaultMaxValueSize + 1)
	file := filepath.Join(t.TempDir(), "v.json")
	require.NoError(t, os.WriteFile(file, []byte(tooLarge), 0o600))
	want := fmt.Sprintf("convergectl: invalid input: value larger than %d bytes (-max-value-size)\n", store.DefaultMaxValueSize)
	for _, c := range []struct {
		stdin string
		args  []string
	}{
		{tooLarge, []string{"put", "k"}},
		{tooLarge, []string{"put", "k", "-"}},
		{"", []string{"put", "k", file}},
		{tooLarge, []string{"apply", "k"}},
		{"", []string{"apply", "k", file}},
	} {
		r := runAs(t, url, c.stdin, c.args...)
		require.Equal(t, exitError, r.code, c.args)
		require.Equal(t, want, r.stderr, c.args)
	}
	got, err := m.Get(t.Context(), "k")
	require.NoError(t, err)
	require.Equal(t, obj.Revision, got.Revision, "a refused value was written")
}

// TestAValueOfTheServersDefaultLimitIsWritten: the default bound is the
// server's default limit exactly: a value of store.DefaultMaxValueSize
// bytes is read and accepted.
func TestAValueOfTheServersDefaultLimitIsWritten(t *testing.T) {
	m, url := serve(t)
	v := jsonString(store.DefaultMaxValueSize)
	r := runAs(t, url, v, "put", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	got, err := m.Get(t.Context(), "k")
	require.NoError(t, err)
	require.Len(t, got.Value, store.DefaultMaxValueSize)
}

// TestMaxValueSizeSetsTheLimitAndNoMoreThanOneBytePastItIsRead: with
// -max-value-size N a value of N bytes is written, one of N+1 refused, and
// of an endless input convergectl reads N+1 bytes, not one more.
func TestMaxValueSizeSetsTheLimitAndNoMoreThanOneBytePastItIsRead(t *testing.T) {
	const n = 64
	m, url := serve(t)
	r := runAs(t, url, jsonString(n), "-max-value-size", fmt.Sprint(n), "put", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runAs(t, url, jsonString(n+1), "-max-value-size", fmt.Sprint(n), "put", "k")
	require.Equal(t, exitError, r.code)
	require.Contains(t, r.stderr, "value larger than 64 bytes")

	endless := &countingReader{total: 64 << 20}
	t.Setenv("CONVERGE_SERVER", url)
	r = runIn(t, t.Context(), endless, "-max-value-size", fmt.Sprint(n), "put", "k")
	require.Equal(t, exitError, r.code)
	require.Contains(t, r.stderr, "value larger than 64 bytes")
	require.Equal(t, int64(n+1), endless.read, "bytes read of an endless input")
	got, err := m.Get(t.Context(), "k")
	require.NoError(t, err)
	require.Equal(t, jsonString(n), string(got.Value))
}
