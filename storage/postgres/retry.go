// This file holds the retry of requests that failed because the database
// was out of reach (restarting, failing over, a dropped connection): as the
// etcd client waits for its cluster, the store waits for the database, until
// the request's context ends.

package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// unreachable reports whether err says the database could not be reached
// or went away (not what a statement did): for a read, trying again is
// safe.
func unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 08: connection exception; 57P01-03: the server shuts down,
		// crashed, or is starting up.
		return len(pe.Code) == 5 && (pe.Code[:2] == "08" || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03")
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err)
}

// retry runs f until it succeeds, fails with an error retryable does not
// accept, or ctx ends (the last error then), waiting a little longer each
// time.
func (s *Store) retry(ctx context.Context, retryable func(error) bool, f func() error) error {
	wait := 20 * time.Millisecond
	for {
		err := f()
		if err == nil || !retryable(err) || s.isClosed() {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-s.quit:
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// retryRead is retry for a read: any unreachable database is waited for.
func (s *Store) retryRead(ctx context.Context, f func() error) error {
	return s.retry(ctx, unreachable, f)
}

// retryWrite is retry for a write: only a failure that pgx knows happened
// before anything was sent is retried (a write whose commit may have
// happened is not repeated).
func (s *Store) retryWrite(ctx context.Context, f func() error) error {
	return s.retry(ctx, pgconn.SafeToRetry, f)
}
