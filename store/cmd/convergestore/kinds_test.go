package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dbRules are the kind rules the tests serve: databases/ objects have a
// spec with a name and a connectionLimit of at least -1, -1 by default.
const dbRules = `{"kinds":[{"prefix":"databases/","spec":{"type":"object","required":["name"],
  "properties":{"name":{"type":"string","minLength":1},
    "connectionLimit":{"type":"integer","minimum":-1,"default":-1}}},
  "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}]}`

// TestAnApplyThatBreaksAKindsRuleIsRefusedNamingTheFieldAndStoresNothing
// runs convergestore -kinds and convergectl as a user does: an apply of a
// bad spec prints the field and exits non-zero, and a get shows the old
// object unchanged; a good apply gets the defaults filled in.
func TestAnApplyThatBreaksAKindsRuleIsRefusedNamingTheFieldAndStoresNothing(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(t.TempDir(), "kinds.json")
	if err := os.WriteFile(rules, []byte(dbRules), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, dir, "-kinds", rules)
	ctl := func(doc string, args ...string) result {
		t.Helper()
		var file []string
		if doc != "" {
			name := filepath.Join(t.TempDir(), "doc.json")
			if err := os.WriteFile(name, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			file = []string{name}
		}
		args = append([]string{"-server", s.url, "-token-file", filepath.Join(dir, TokenFile)}, args...)
		return runBinary(t, ctlBinary, "", append(args, file...)...)
	}
	if r := ctl(`{"spec":{"name":"app"}}`, "apply", "databases/app"); r.code != 0 {
		t.Fatalf("apply of a good spec: exit %d\n%s", r.code, r.stderr)
	}
	before := ctl("", "get", "databases/app")
	var obj struct {
		Revision int64
		Value    struct{ Spec map[string]any }
	}
	if err := json.Unmarshal([]byte(before.stdout), &obj); err != nil {
		t.Fatalf("get: %v\n%s", err, before.stdout)
	}
	if obj.Value.Spec["connectionLimit"] != -1.0 {
		t.Errorf("the stored spec %v lacks the default connectionLimit -1", obj.Value.Spec)
	}

	r := ctl(`{"spec":{"name":"app","connectionLimit":-5}}`, "apply", "databases/app")
	if r.code == 0 || !strings.Contains(r.stderr, "spec.connectionLimit") {
		t.Errorf("apply of a spec below the minimum: exit %d, stderr %q; want non-zero and the field named", r.code, r.stderr)
	}
	r = ctl(`{"spec":{"connectionLimit":3}}`, "apply", "databases/app")
	if r.code == 0 || !strings.Contains(r.stderr, "spec.name") {
		t.Errorf("apply of a spec without its required name: exit %d, stderr %q; want non-zero and the field named", r.code, r.stderr)
	}
	if after := ctl("", "get", "databases/app"); after.stdout != before.stdout {
		t.Errorf("a refused apply changed the object:\n%s\nwas\n%s", after.stdout, before.stdout)
	}
	r = ctl(`{"spec":{"name":""}}`, "apply", "databases/new")
	if r.code == 0 || !strings.Contains(r.stderr, "spec.name") {
		t.Errorf("apply creating a bad spec: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := ctl("", "get", "databases/new"); r.code == 0 {
		t.Errorf("a refused apply created the object: %s", r.stdout)
	}
	if r := ctl(`{"spec":[1]}`, "apply", "other/x"); r.code != 0 {
		t.Errorf("a key of no kind is of no rule: exit %d\n%s", r.code, r.stderr)
	}
}

// TestKindRulesItCannotKeepStopTheServerBeforeItServes: a rules file that
// does not parse, or names an unknown keyword, is an error naming the
// file, and nothing is served.
func TestKindRulesItCannotKeepStopTheServerBeforeItServes(t *testing.T) {
	for _, rules := range []string{`{"kinds":[{"prefix":"a/","spec":{"format":"email"}}]}`, `{"kinds":`} {
		name := filepath.Join(t.TempDir(), "kinds.json")
		if err := os.WriteFile(name, []byte(rules), 0o600); err != nil {
			t.Fatal(err)
		}
		s := launch(t, t.TempDir(), "-kinds", name)
		if code := s.refused(t); code != exitError || !strings.Contains(s.stderr.String(), "-kinds "+name) {
			t.Errorf("rules %s: exit %d, stderr %q; want %d and the file named", rules, code, s.stderr, exitError)
		}
	}
}

// TestConvergectlGetShowsThePrinterColumnsTheServersKindsDeclare: the
// columns of convergestore -kinds reach convergectl through the server:
// get -o table prints them for the object, as kubectl get does.
func TestConvergectlGetShowsThePrinterColumnsTheServersKindsDeclare(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(t.TempDir(), "kinds.json")
	doc := `{"kinds":[{"prefix":"databases/","columns":[{"name":"READY","path":".status.ready"},{"name":"NAME","path":".spec.name"}]}]}`
	if err := os.WriteFile(rules, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, dir, "-kinds", rules)
	base := []string{"-server", s.url, "-token-file", filepath.Join(dir, TokenFile)}
	file := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(file, []byte(`{"spec":{"name":"app"},"status":{"ready":true}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runBinary(t, ctlBinary, "", append(base, "put", "databases/app", file)...); r.code != 0 {
		t.Fatalf("put: exit %d\n%s", r.code, r.stderr)
	}
	r := runBinary(t, ctlBinary, "", append(base, "get", "-o", "table", "databases/app")...)
	if got, want := strings.Fields(r.stdout), []string{"KEY", "READY", "NAME", "databases/app", "true", "app"}; r.code != 0 || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("get -o table: exit %d, %q (%s); want %q", r.code, got, r.stderr, want)
	}
}
