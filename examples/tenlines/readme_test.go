package tenlines_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestREADMETenLinesAreTheExample checks that the Go block of the README's
// "Ten lines" section is, line for line, the code Example runs (between its
// "README: ten lines" and "end README" markers, less one tab of
// indentation): the README shows code that compiles and works.
func TestREADMETenLinesAreTheExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	section := between(t, string(readme), "\n## Ten lines\n", "\n## ")
	block := between(t, section, "```go\n", "```\n")

	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	region := between(t, string(src), "\t// README: ten lines\n", "\t// end README\n")
	var code strings.Builder
	for line := range strings.Lines(region) {
		code.WriteString(strings.TrimPrefix(line, "\t"))
	}
	require.Equal(t, code.String(), block, "README.md's ten lines differ from Example in examples/tenlines/example_test.go")
}

// between returns the text of s after the first start and before the next
// end, failing the test if either is missing.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	_, after, ok := strings.Cut(s, start)
	require.True(t, ok, "%q not found", start)
	inside, _, ok := strings.Cut(after, end)
	require.True(t, ok, "%q not found after %q", end, start)
	return inside
}

// TestREADMEOperatorIsTheExample checks the README's operator written with
// the kit against Example_operator, as TestREADMETenLinesAreTheExample
// does for the ten lines.
func TestREADMEOperatorIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	section := between(t, string(readme), "\n## An operator in ten lines\n", "\n## ")
	block := between(t, section, "```go\n", "```\n")

	src, err := os.ReadFile("operator_test.go")
	require.NoError(t, err)
	region := between(t, string(src), "\t// README: operator\n", "\t// end README\n")
	var code strings.Builder
	for line := range strings.Lines(region) {
		code.WriteString(strings.TrimPrefix(line, "\t"))
	}
	require.Equal(t, code.String(), block, "README.md's operator differs from Example_operator in examples/tenlines/operator_test.go")
}
