package actors_test

import (
	"testing"

	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// TestMain stops the throwaway PostgreSQL cluster the cluster tests start.
func TestMain(m *testing.M) { pgtest.RunMain(m) }
