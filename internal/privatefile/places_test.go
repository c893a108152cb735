//go:build unix

package privatefile

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnUnsafePlaceIsRefusedNamingItsFlagUnlessAccepted: CheckPlaces
// refuses a shared directory with an error naming the flag and AcceptFlag;
// accepted, it logs a warning naming the flag instead; a place not given
// or missing is no error of its.
func TestAnUnsafePlaceIsRefusedNamingItsFlagUnlessAccepted(t *testing.T) {
	shared := t.TempDir()
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	places := []Place{
		{Flag: "-unset", Check: Trusted},
		{Flag: "-missing", Path: filepath.Join(t.TempDir(), "missing"), Check: Trusted},
		{Flag: "-dir", Path: shared, Check: Dir},
	}
	err := CheckPlaces(nil, false, places...)
	if !errors.Is(err, ErrUnsafe) || !strings.HasPrefix(err.Error(), "-dir "+shared) || !strings.Contains(err.Error(), "-"+AcceptFlag) {
		t.Fatalf("refused: %v; want ErrUnsafe naming -dir, the path and -%s", err, AcceptFlag)
	}
	var logs bytes.Buffer
	if err := CheckPlaces(slog.New(slog.NewTextHandler(&logs, nil)), true, places...); err != nil {
		t.Fatalf("accepted: %v", err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "flag=-dir") {
		t.Fatalf("accepted without a warning naming -dir: %s", logs.String())
	}
}
