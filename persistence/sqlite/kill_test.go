package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlite"
)

// childEnv names the database file when the test binary runs as the child
// of TestKill9LosesNothing.
const childEnv = "TXENGINE_SQLITE_KILL_CHILD"

// TestMain lets the test binary act as the child process that is killed.
func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(killChild(path))
	}
	os.Exit(m.Run())
}

// killChild inserts transactions forever, printing each committed id, until
// it is killed.
func killChild(path string) int {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	created := time.Now().UTC().Truncate(time.Millisecond)
	a := &engine.Account{ID: "a1", EncryptedKey: []byte{1}, Created: created}
	a.Address[19] = 1
	if err := s.CreateUser(ctx, &engine.User{ID: "u1", Created: created}, nil, a); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		batch := make([]*engine.Transaction, 10)
		for j := range batch {
			batch[j] = &engine.Transaction{ID: fmt.Sprintf("t%d-%d", i, j), Owner: "u1", AccountID: "a1",
				Network: "dev", From: a.Address, Status: engine.StatusNew, Created: created}
		}
		if err := s.InsertTransactions(ctx, batch); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// Only what InsertTransactions acknowledged is reported.
		fmt.Fprintf(w, "%d\n", i)
		w.Flush()
	}
}

// TestKill9LosesNothing kills a writer process with SIGKILL while it commits
// batches and checks that every batch it saw acknowledged is in the file.
func TestKill9LosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	path := filepath.Join(t.TempDir(), "txengine.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	last := -1
	for sc.Scan() {
		fmt.Sscan(sc.Text(), &last)
		if last >= 30 {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	// Batches acknowledged while we were killing count too.
	for sc.Scan() {
		fmt.Sscan(sc.Text(), &last)
	}
	_ = cmd.Wait()
	if last < 30 {
		t.Fatalf("child acknowledged only %d batches; stderr: %s", last+1, stderr.String())
	}

	s := mustOpen(t, path)
	ctx := context.Background()
	for i := 0; i <= last; i++ {
		for j := range 10 {
			if _, err := s.TransactionByID(ctx, fmt.Sprintf("t%d-%d", i, j)); err != nil {
				t.Fatalf("acknowledged transaction t%d-%d lost: %v", i, j, err)
			}
		}
	}
	ready, err := s.ReadyTransactions(ctx, "a1", "dev", 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(ready)%10 != 0 {
		t.Fatalf("%d rows after the kill: a batch was torn", len(ready))
	}
}
