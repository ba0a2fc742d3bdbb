package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlstore"
)

// TestWrapMapsLostConnectionsToUnavailable: the errors lib/pq and
// database/sql return while the server is down, shutting down or starting
// carry engine.CodeUnavailable (HTTP 503), not internal (500); statement
// errors keep their mapping.
func TestWrapMapsLostConnectionsToUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "connect: connection refused"}}
	cases := []struct {
		name string
		err  error
		want engine.Code
	}{
		{"dial refused", refused, engine.CodeUnavailable},
		{"ECONNREFUSED", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), engine.CodeUnavailable},
		{"ECONNRESET", fmt.Errorf("read: %w", syscall.ECONNRESET), engine.CodeUnavailable},
		{"bad connection", driver.ErrBadConn, engine.CodeUnavailable},
		{"connection done", sql.ErrConnDone, engine.CodeUnavailable},
		{"EOF", io.EOF, engine.CodeUnavailable},
		{"unexpected EOF", io.ErrUnexpectedEOF, engine.CodeUnavailable},
		{"admin shutdown", &pq.Error{Code: pqerror.AdminShutdown, Message: "terminating connection due to administrator command"}, engine.CodeUnavailable},
		{"shutting down", &pq.Error{Code: pqerror.CannotConnectNow, Message: "the database system is shutting down"}, engine.CodeUnavailable},
		{"crash shutdown", &pq.Error{Code: pqerror.CrashShutdown}, engine.CodeUnavailable},
		{"connection failure", &pq.Error{Code: pqerror.ConnectionFailure}, engine.CodeUnavailable},
		{"too many connections", &pq.Error{Code: pqerror.TooManyConnections}, engine.CodeUnavailable},
		{"unique", &pq.Error{Code: pqerror.UniqueViolation}, engine.CodeConflict},
		{"foreign key", &pq.Error{Code: pqerror.ForeignKeyViolation}, engine.CodeNotFound},
		{"no rows", sql.ErrNoRows, engine.CodeNotFound},
		{"syntax", &pq.Error{Code: pqerror.SyntaxError}, engine.CodeInternal},
		{"other", errors.New("boom"), engine.CodeInternal},
	}
	db, err := sqlx.Open(driverName, "postgres://u@127.0.0.1:1/db?sslmode=disable") // never connected
	if err != nil {
		t.Fatal(err)
	}
	st := sqlstore.New(dialect{}, db, db)
	defer st.Close()
	for _, c := range cases {
		err := st.Wrap(c.err, "read %s", "x")
		if got := engine.ErrorCode(err); got != c.want {
			t.Errorf("%s: code %q, want %q (%v)", c.name, got, c.want, err)
		}
		if c.want == engine.CodeUnavailable && !errors.Is(err, c.err) {
			t.Errorf("%s: %v does not wrap the driver's error", c.name, err)
		}
	}
}

// TestUnreachableServerIsUnavailable: a real lib/pq connection to a port
// where nothing listens fails with an error that Ping and a transaction
// report as unavailable.
func TestUnreachableServerIsUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	db, err := sql.Open(driverName, "postgres://u@"+addr+"/db?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	x := sqlx.NewDb(db, driverName)
	s := &Store{Store: sqlstore.New(dialect{}, x, x), db: x}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Ping(ctx); engine.ErrorCode(err) != engine.CodeUnavailable {
		t.Errorf("Ping: %v (code %q), want unavailable", err, engine.ErrorCode(err))
	}
	_, err = s.AccountByID(ctx, "a")
	if engine.ErrorCode(err) != engine.CodeUnavailable {
		t.Errorf("AccountByID: %v (code %q), want unavailable", err, engine.ErrorCode(err))
	}
}
