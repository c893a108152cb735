// Package poll waits, in the examples and their tests, for a condition
// that a process outside this one makes true: a daemon serving, a row in
// PostgreSQL, a file written. Waits inside one process use channels.
package poll

import (
	"context"
	"fmt"
	"time"
)

// Until calls cond every interval until it reports true or an error, ctx
// ends or limit has passed; what names the condition in the error it
// returns then (cond's own error wrapped, or the deadline's).
func Until(ctx context.Context, limit, interval time.Duration, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		done, err := cond()
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", what, err)
		case done:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not after %v: %w", what, limit, ctx.Err())
		case <-time.After(interval):
		}
	}
}
