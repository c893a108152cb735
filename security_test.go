package converge_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSecurityMdSaysWhatEveryExampleServes: SECURITY.md's section on the
// examples names every example (every directory of examples/ that holds
// Go files) in the first column of one of its tables, so that an example
// added with a surface of its own is not left out of what the page says
// each surface protects.
func TestSecurityMdSaysWhatEveryExampleServes(t *testing.T) {
	doc, err := os.ReadFile("SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	const heading = "## What the examples serve\n"
	_, section, ok := strings.Cut(string(doc), heading)
	if !ok {
		t.Fatalf("SECURITY.md has no section %q", strings.TrimSpace(heading))
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	named := map[string]bool{}
	firstColumn := regexp.MustCompile("(?m)^\\| ([^|]*)\\|")
	for _, m := range firstColumn.FindAllStringSubmatch(section, -1) {
		for _, ex := range regexp.MustCompile("`examples/([a-z0-9]+)").FindAllStringSubmatch(m[1], -1) {
			named[ex[1]] = true
		}
	}
	files, err := filepath.Glob(filepath.Join("examples", "*", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	examples := map[string]bool{}
	for _, f := range files {
		examples[filepath.Base(filepath.Dir(f))] = true
	}
	if len(examples) == 0 {
		t.Fatal("no example found under examples/")
	}
	for name := range examples {
		if !named[name] {
			t.Errorf("SECURITY.md's %q names no surface of examples/%s", strings.TrimSpace(heading), name)
		}
	}
}
