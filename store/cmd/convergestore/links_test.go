package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The store server links only what it runs: the store, its server, the
// lock and the process runner, never the loop (the controller, its queue,
// its kits or observers).
func TestTheStoreServerLinksNoPartOfTheLoop(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command here: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list is not available here: %v", err)
	}
	const mod = "github.com/converge-go/converge/"
	for _, dep := range strings.Fields(string(out)) {
		pkg, ours := strings.CutPrefix(dep, mod)
		loop := pkg == "reconcile" || pkg == "queue" ||
			strings.HasPrefix(pkg, "reconcile/kit/") || strings.HasPrefix(pkg, "reconcile/observe/")
		if ours && loop {
			t.Errorf("the store server links %s", dep)
		}
	}
}
