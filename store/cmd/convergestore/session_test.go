package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheConvergectlSessionOfThePackageDocWorksAsShown runs the example
// session of the package documentation: convergectl writes, lists and
// deletes through the server with the generated token file, and the
// delete of an object with a finalizer only marks it.
func TestTheConvergectlSessionOfThePackageDocWorksAsShown(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir)
	tokenFile := filepath.Join(dir, TokenFile)
	ctl := func(stdin string, args ...string) string {
		t.Helper()
		r := runBinary(t, ctlBinary, stdin, append([]string{"-server", s.url, "-token-file", tokenFile}, args...)...)
		if r.code != 0 {
			t.Fatalf("convergectl %v: exit %d\n%s", args, r.code, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	const (
		put    = `{"key":"app/web","revision":1,"createRevision":1,"value":{"metadata":{"generation":1,"finalizers":["app/cleanup"]},"spec":{"replicas":3}}}`
		listed = `{"revision":1,"objects":[` + put + `]}`
		marked = `{"key":"app/web","revision":2,"marked":true}`
	)
	for _, step := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{`{"metadata":{"finalizers":["app/cleanup"]},"spec":{"replicas":3}}`, []string{"put", "app/web"}, put},
		{"", []string{"list"}, listed},
		{"", []string{"delete", "app/web"}, marked},
	} {
		if got := ctl(step.stdin, step.args...); got != step.want {
			t.Errorf("convergectl %v:\n%s\nwant, as the package doc shows:\n%s", step.args, got, step.want)
		}
	}
	var obj struct {
		Value struct {
			Metadata struct {
				Deletion *struct{ Revision int64 }
			}
		}
	}
	if err := json.Unmarshal([]byte(ctl("", "get", "app/web")), &obj); err != nil {
		t.Fatal(err)
	}
	if d := obj.Value.Metadata.Deletion; d == nil || d.Revision != 1 {
		t.Errorf("after convergectl delete, app/web is not marked at revision 1: %+v", d)
	}
}
