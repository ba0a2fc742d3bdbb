package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"testing"

	"github.com/txengine/txengine/internal/ci"
)

// TestReadmePools runs README's "Pools" block after its curl session (the
// block continues it), as written, on the embedded default: the pool is
// created with 8 members and the default account as treasury, the
// transfer through it is accepted (202) from a member with its pool and
// orderingKey, GET /pools/{id} shows the 8 members, and GET
// /transactions?pool= lists the transfer.
func TestReadmePools(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary")
	}
	for _, tool := range []string{"sh", "curl", "sed", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			ci.SkipOrFail(t, "README's pools block needs %s on PATH: %v", tool, err)
		}
	}
	dir := t.TempDir()
	s := startService(t, dir)
	out := runReadme(t, s, dir, readmeBlock(t, "## A session with curl")+readmeBlock(t, "## Pools"))
	var values []map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var v any
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("output %d is not JSON: %v\n%s", len(values)+1, err, out)
		}
		m, _ := v.(map[string]any)
		values = append(values, m)
	}
	// The session prints 6 values; the pools block 3: the transfer, the
	// pool, the pool's transactions.
	if len(values) != 9 {
		t.Fatalf("README's session and pools block printed %d JSON values, want 9:\n%s", len(values), out)
	}
	tx, _ := values[6]["data"].(map[string]any)
	pool, _ := values[7]["data"].(map[string]any)
	listed, _ := values[8]["data"].([]any)
	members, _ := pool["members"].([]any)
	if pool["name"] != "payouts" || len(members) != 8 || pool["treasury"] == nil {
		t.Fatalf("GET /pools/{id}: %v", pool)
	}
	isMember := false
	for _, m := range members {
		if mm, _ := m.(map[string]any); mm["address"] == tx["from"] {
			isMember = true
		}
	}
	if tx["status"] != "new" || tx["pool"] != pool["id"] || tx["orderingKey"] != "customer-42" || !isMember {
		t.Fatalf("the transfer through the pool: %v (members %v)", tx, members)
	}
	found := false
	for _, l := range listed {
		if lm, _ := l.(map[string]any); lm["id"] == tx["id"] {
			found = true
		}
	}
	if !found {
		t.Fatalf("GET /transactions?pool= does not list the transfer %v: %v", tx["id"], listed)
	}
}
