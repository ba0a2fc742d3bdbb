package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// TestSecretsAtRest runs users with tokens, accounts and a transfer, stops
// the service and scans every column of every table of the embedded store
// (and the store's raw files): no API token, no callback secret, no
// account private key (raw or hex) and no master key appears, and no 32-byte window of a sealed key
// is the account's private key. Then a start with another master key is
// refused with an error that names the master key and shows no key, and a
// start with the right one works.
func TestSecretsAtRest(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	dir := t.TempDir()
	s := startService(t, dir)
	op := s.Token
	u := s.must(201, "POST", "/users", op, map[string]any{"auth": true, "account": true}).(map[string]any)
	uid, utok := u["id"].(string), u["token"].(string)
	// The callback secrets, shown by GET /users/me, stored sealed.
	secrets := []string{
		s.must(200, "GET", "/users/me", op, nil).(map[string]any)["callbackSecret"].(string),
		s.must(200, "GET", "/users/me", utok, nil).(map[string]any)["callbackSecret"].(string),
	}
	tok2 := s.must(201, "POST", "/users/"+uid+"/tokens", op, nil).(map[string]any)["token"].(string)
	// A token created with an Idempotency-Key: its response is kept for replays.
	r := s.callHeaders("POST", "/users/"+uid+"/tokens", utok, "{}", "Idempotency-Key", "secret-token-1")
	if r.Status != 201 {
		t.Fatalf("token with a key: %d %s", r.Status, r.Raw)
	}
	tok3 := r.Body["data"].(map[string]any)["token"].(string)
	r = s.callHeaders("POST", "/users", op, `{"auth":true}`, "Idempotency-Key", "secret-user-1")
	if r.Status != 201 {
		t.Fatalf("user with a key: %d %s", r.Status, r.Raw)
	}
	tok4 := r.Body["data"].(map[string]any)["token"].(string)
	s.must(201, "POST", "/accounts", utok, nil)
	var tokID string
	for _, c := range s.must(200, "GET", "/tokens", op, nil).([]any) {
		tokID = c.(map[string]any)["id"].(string)
	}
	uAddr := u["account"].(map[string]any)["address"].(string)
	tx := s.must(202, "POST", "/tokens/"+tokID+"/transfers", op, map[string]any{"to": uAddr, "value": "1000"}).(map[string]any)["id"].(string)
	if st := s.waitTerminal(tx, op, 60*time.Second)["status"]; st != "completed" {
		t.Fatalf("transfer %v", st)
	}
	s.stop()

	keys, err := readAccountKeys(dir)
	if err != nil {
		t.Fatalf("read account keys: %v", err)
	}
	if len(keys) < 3 {
		t.Fatalf("%d account keys, want at least 3", len(keys))
	}
	masterHex, err := os.ReadFile(filepath.Join(dir, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	master, err := hex.DecodeString(strings.TrimSpace(string(masterHex)))
	if err != nil {
		t.Fatal(err)
	}
	// needles are searched as is; hex needles also in upper case.
	needles := map[string][]byte{"master key": master, "master key (hex)": []byte(hex.EncodeToString(master))}
	for i, tok := range []string{op, utok, tok2, tok3, tok4} {
		needles[fmt.Sprintf("API token %d", i)] = []byte(tok)
		// The token's random part alone, whatever its prefix.
		if _, rest, ok := strings.Cut(tok, "_"); ok {
			needles[fmt.Sprintf("API token %d (without prefix)", i)] = []byte(rest)
		}
	}
	for i, secret := range secrets {
		if len(secret) < 32 {
			t.Fatalf("callback secret %d is %d characters", i, len(secret))
		}
		needles[fmt.Sprintf("callback secret %d", i)] = []byte(secret)
		// Half of it: no part of the secret either.
		needles[fmt.Sprintf("callback secret %d (first half)", i)] = []byte(secret[:len(secret)/2])
	}
	for addr, key := range keys {
		needles["private key of "+addr] = key
		needles["private key of "+addr+" (hex)"] = []byte(hex.EncodeToString(key))
	}
	found := func(where string, v []byte) {
		lower := bytes.ToLower(v)
		for name, n := range needles {
			if bytes.Contains(v, n) || bytes.Contains(lower, n) {
				t.Errorf("%s holds the %s", where, name)
			}
		}
	}

	db := openStoreReadOnly(t, dir)
	defer db.Close()
	cells := 0
	for _, table := range storeTables(t, db) {
		cells += scanTable(t, db, table, found)
	}
	// The sealed keys: no 32-byte window signs for the account.
	rows, err := db.Query(`SELECT address, encrypted_key FROM accounts`)
	if err != nil {
		t.Fatal(err)
	}
	sealedKeys := 0
	for rows.Next() {
		var addr string
		var sealed []byte
		if err := rows.Scan(&addr, &sealed); err != nil {
			t.Fatal(err)
		}
		sealedKeys++
		want := common.HexToAddress(addr)
		for i := 0; i+32 <= len(sealed); i++ {
			if k, err := crypto.ToECDSA(sealed[i : i+32]); err == nil && crypto.PubkeyToAddress(k.PublicKey) == want {
				t.Errorf("the sealed key of %s holds its private key in plain at byte %d", addr, i)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	// The raw files too (free pages, the WAL).
	files, _ := filepath.Glob(filepath.Join(dir, "txengine.db*"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		found(filepath.Base(f), raw)
	}
	t.Logf("scanned %d cells, %d sealed keys, %d store files for %d secrets", cells, sealedKeys, len(files), len(needles))

	// Another master key: refused at start, naming the setting, not the key.
	other := strings.Repeat("ab", 32)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve")
	cmd.Env = append(os.Environ(), "TXENGINE_LISTEN=127.0.0.1:0", "TXENGINE_DATA_DIR="+dir, "TXENGINE_MASTER_KEY="+other)
	out, err := combinedOutput(t, cmd)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("start with another master key: err %v (want a refusal)\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, "master key") || !strings.Contains(text, "TXENGINE_MASTER_KEY") {
		t.Errorf("refusal does not name the master key: %s", text)
	}
	for _, k := range []string{other, strings.ToUpper(other), hex.EncodeToString(master)} {
		if strings.Contains(strings.ToLower(text), strings.ToLower(k)) {
			t.Errorf("refusal shows a key: %s", text)
		}
	}
	if strings.Contains(text, "txengine is listening on") {
		t.Errorf("the service served with another master key: %s", text)
	}
	t.Logf("refusal: %s", strings.TrimSpace(text))

	// The right key still works, and nothing was changed by the refusal.
	s2 := startService(t, dir)
	if s2.Token != op {
		t.Errorf("operator token changed after the refused start")
	}
	// A start that did not create the token prints its file, not the token.
	if strings.Contains(s2.Logs(), op) || !strings.Contains(s2.Logs(), "operator token file: "+filepath.Join(dir, "operator.token")) {
		t.Errorf("the restart's output shows the operator token or not its file:\n%s", s2.Logs())
	}
	s2.must(200, "GET", "/users/me", utok, nil)
	s2.stop()
}

// scanTable passes every text and blob value of table to found, labelled
// table.column row n; it returns the number of values.
func scanTable(t *testing.T, db *sql.DB, table string, found func(where string, v []byte)) int {
	t.Helper()
	rows, err := db.Query(fmt.Sprintf(`SELECT * FROM %q`, table))
	if err != nil {
		t.Fatalf("scan %s: %v", table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	n, row := 0, 0
	for rows.Next() {
		row++
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("scan %s: %v", table, err)
		}
		for i, v := range vals {
			n++
			where := fmt.Sprintf("%s.%s (row %d)", table, cols[i], row)
			switch v := v.(type) {
			case []byte:
				found(where, v)
			case string:
				found(where, []byte(v))
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
