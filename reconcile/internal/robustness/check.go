package robustness

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
)

// Operations converts a recorded history to porcupine's operations. An
// ambiguous write keeps its lost response, if known, as metadata: the
// visualisation shows it, the check ignores it.
func Operations(ops []Op) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		out[i] = porcupine.Operation{
			ClientId: op.Client,
			Input:    op.Input,
			Call:     op.Call,
			Output:   op.Output,
			Return:   op.Return,
			Metadata: op.Actual,
		}
	}
	return out
}

// Check reports whether the history, run on a store whose revision was
// start before it (Report.Start), is linearizable under Model once its
// ambiguous writes with a known outcome are resolved (Resolve), with the
// information Visualize needs. A timeout of 0 means no limit; if the limit is
// reached the result is porcupine.Unknown.
func Check(ops []Op, start int64, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	return porcupine.CheckOperationsVerbose(Model(start), Operations(Resolve(ops)), timeout)
}

// Visualize writes porcupine's HTML visualisation of a history checked from
// revision start to a new file in a new temporary directory and returns the
// file's path.
func Visualize(info porcupine.LinearizationInfo, start int64, name string) (string, error) {
	dir, err := os.MkdirTemp("", "converge-robustness-")
	if err != nil {
		return "", fmt.Errorf("visualisation: %w", err)
	}
	path := filepath.Join(dir, name+".html")
	if err := porcupine.VisualizePath(Model(start), info, path); err != nil {
		return "", fmt.Errorf("visualisation: %w", err)
	}
	return path, nil
}
