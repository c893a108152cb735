package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/converge-go/converge/reconcile/internal/bench"
)

// TestCostCurveWritesARowPerImplementationAndSizeAndAPlot runs the command
// over two tiny sizes and checks that the CSV holds one row of every
// implementation at every size, the table says the same, the PNG is an
// image of two panels, and a heap profile is written per implementation and
// size.
func TestCostCurveWritesARowPerImplementationAndSizeAndAPlot(t *testing.T) {
	dir := t.TempDir()
	csvPath, pngPath := filepath.Join(dir, "c.csv"), filepath.Join(dir, "c.png")
	var stdout, stderr bytes.Buffer
	args := []string{"-sizes", "100,300", "-runs", "2", "-csv", csvPath, "-png", pngPath, "-heapprofiles", dir}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	impls := bench.E2EImpls()
	for _, n := range []string{"100", "300"} {
		for _, impl := range impls {
			want[n+","+impl.Name] = true
		}
	}
	rows := 2 * len(impls)
	if len(records) != len(want)+1 || strings.Join(records[0], ",") != strings.Join(csvHeader, ",") {
		t.Fatalf("CSV has %d records (header %v), want a header and %d rows", len(records), records[0], len(want))
	}
	for _, r := range records[1:] {
		if !want[r[0]+","+r[1]] || r[2] != "2" {
			t.Errorf("unexpected row %v", r)
		}
		delete(want, r[0]+","+r[1])
	}
	if got := strings.Count(stdout.String(), "\n"); got != 2+rows {
		t.Errorf("table has %d lines, want %d:\n%s", got, 2+rows, stdout.String())
	}
	profiles, err := filepath.Glob(filepath.Join(dir, "heap-*.pprof"))
	if err != nil || len(profiles) != rows {
		t.Errorf("heap profiles %v (%v), want %d", profiles, err, rows)
	}
	pf, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	img, err := png.Decode(pf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 2*panelW || b.Dy() != panelH {
		t.Errorf("plot is %v, want %dx%d", b, 2*panelW, panelH)
	}
}

// TestCostCurveRejectsABadSize checks that a size that is not a positive
// number is an error, not a run.
func TestCostCurveRejectsABadSize(t *testing.T) {
	var out bytes.Buffer
	for _, sizes := range []string{"0", "10k", "100,-1"} {
		if err := run(context.Background(), []string{"-sizes", sizes}, &out, &out); err == nil {
			t.Errorf("-sizes %s: no error", sizes)
		}
	}
}
