package etcdstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// requestError maps the error of a failed etcd request to the store's
// errors, naming the operation (format and args) and wrapping the cause:
//
//   - ctx cancelled: ctx's error;
//   - ctx's deadline expired: store.ErrUnavailable and ctx's error;
//   - a request too large for the server or the client, or with too many
//     operations, or a revision in the future: store.ErrInvalid;
//   - a compacted revision: store.ErrCompacted;
//   - anything else: store.ErrUnavailable.
func requestError(ctx context.Context, err error, format string, args ...any) error {
	op := fmt.Sprintf(format, args...)
	switch cerr := ctx.Err(); {
	case errors.Is(cerr, context.DeadlineExceeded):
		return fmt.Errorf("etcdstore: %s: %w: %w (%v)", op, store.ErrUnavailable, cerr, err)
	case cerr != nil:
		return fmt.Errorf("etcdstore: %s: %w", op, cerr)
	}
	if kind := classify(err); kind != nil {
		return fmt.Errorf("etcdstore: %s: %w: %w", op, kind, err)
	}
	return fmt.Errorf("etcdstore: %s: %w: %w", op, store.ErrUnavailable, err)
}

// classify returns the store error for the etcd errors that are not about
// availability, or nil.
func classify(err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return store.ErrCompacted
	case errors.Is(err, rpctypes.ErrRequestTooLarge),
		errors.Is(err, rpctypes.ErrTooManyOps),
		errors.Is(err, rpctypes.ErrFutureRev):
		return store.ErrInvalid
	case errors.Is(err, rpctypes.ErrTooManyRequests):
		return nil // the server is overloaded: unavailable for now
	}
	// The client refuses to send a message over its MaxCallSendMsgSize
	// with a gRPC status of its own.
	if st, ok := status.FromError(err); ok && st.Code() == codes.ResourceExhausted {
		return store.ErrInvalid
	}
	return nil
}
