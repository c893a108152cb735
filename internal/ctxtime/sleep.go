// Package ctxtime holds the time helpers the packages of the module share.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits for d, or until ctx ends, in which case it returns ctx's
// error. A d of zero or less returns at once (nil unless ctx has ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
