package e2e

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/persistence/storetest"
)

// keysCommand runs `txengine keys args...` on the data dir dir (env added)
// and returns its output and error.
func keysCommand(t *testing.T, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"keys"}, args...)...)
	cmd.Env = append(append(os.Environ(), "TXENGINE_DATA_DIR="+dir), env...)
	out, err := combinedOutput(t, cmd)
	return string(out), err
}

// trafficResult is what background traffic saw.
type trafficResult struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	errors     []string
}

func (r *trafficResult) fail(format string, args ...any) {
	r.failed.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errors) < 10 {
		r.errors = append(r.errors, fmt.Sprintf(format, args...))
	}
}

// backgroundTraffic reads GET /users/me (the callback secret opens) and
// creates accounts (a key is sealed) with token until stop is closed.
func backgroundTraffic(base, token, secret string, stop <-chan struct{}, r *trafficResult) {
	client := &http.Client{Timeout: 30 * time.Second}
	do := func(method, path string) (int, []byte) {
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			return 0, []byte(err.Error())
		}
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := client.Do(req)
		if err != nil {
			return 0, []byte(err.Error())
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, body
	}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		if i%5 == 0 {
			if st, body := do("POST", "/accounts"); st != 201 {
				r.fail("POST /accounts: %d %s", st, body)
				continue
			}
			r.ok.Add(1)
			continue
		}
		st, body := do("GET", "/users/me")
		var me struct {
			Data struct {
				CallbackSecret string `json:"callbackSecret"`
			} `json:"data"`
		}
		if st != 200 || json.Unmarshal(body, &me) != nil || me.Data.CallbackSecret != secret {
			r.fail("GET /users/me: %d %s", st, body)
			continue
		}
		r.ok.Add(1)
	}
}

// TestKeyRotation rotates the master key while the service runs and
// answers reads and writes that open and seal: none fails. On the embedded
// default's data dir keyring without a restart (txengine keys rotate
// --new); with configured keys after a restart with the new key as
// masterKey and the old in TXENGINE_PREVIOUS_MASTER_KEYS (txengine keys
// rotate), on a store made to look as an older version left it (an account
// key without key id, a callback secret in plain text: serve seals it at
// start, rotate re-encrypts the other). Then prune checks, and a restart with the new key alone finds
// everything: an account created before signs a transfer, an idempotent
// request made before replays its response, GET /users/me shows the same
// callback secret, a callback is signed with it; keys status counts every
// value under the new key. A rotation with the old key alone refuses and
// changes nothing.
func TestKeyRotation(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	t.Run("data dir keyring, no restart", func(t *testing.T) { testKeyRotation(t, false) })
	t.Run("configured keys, restart", func(t *testing.T) { testKeyRotation(t, true) })
}

func testKeyRotation(t *testing.T, configured bool) {
	rc := newHookReceiver(t, func(string, int) int { return http.StatusOK })
	dir := t.TempDir()
	// A short request timeout: the service says it uses a new key that
	// much after adopting it (requests begun under the old key have ended).
	env := []string{"TXENGINE_HTTP_REQUEST_TIMEOUT=3s", "TXENGINE_CALLBACKS_ALLOW_PRIVATE=true"}
	keyA, keyB := strings.Repeat("a1", 32), strings.Repeat("b2", 32)
	// keyEnv is the key configuration of a step (none on the data dir).
	keyEnv := func(master string, previous ...string) []string {
		if !configured {
			return nil
		}
		e := []string{"TXENGINE_MASTER_KEY=" + master}
		if len(previous) > 0 {
			e = append(e, "TXENGINE_PREVIOUS_MASTER_KEYS="+strings.Join(previous, ","))
		}
		return e
	}
	s := startService(t, dir, append(env, keyEnv(keyA)...)...)
	op := s.Token
	opSecret := s.must(200, "GET", "/users/me", op, nil).(map[string]any)["callbackSecret"].(string)
	u := s.must(201, "POST", "/users", op, map[string]any{"auth": true, "account": true}).(map[string]any)
	utok := u["token"].(string)
	uAddr := u["account"].(map[string]any)["address"].(string)
	uSecret := s.must(200, "GET", "/users/me", utok, nil).(map[string]any)["callbackSecret"].(string)
	// An idempotent account creation and user creation: their responses
	// are stored sealed.
	first := s.callHeaders("POST", "/accounts", utok, "{}", "Idempotency-Key", "rotate-acct-1")
	if first.Status != 201 {
		t.Fatalf("POST /accounts with a key: %d %s", first.Status, first.Raw)
	}
	firstUser := s.callHeaders("POST", "/users", op, `{"auth":true}`, "Idempotency-Key", "rotate-user-1")
	if firstUser.Status != 201 {
		t.Fatalf("POST /users with a key: %d %s", firstUser.Status, firstUser.Raw)
	}
	tok := operatorToken(t, s, "dev")
	tokID, tokAddr := tok["id"].(string), tok["address"].(string)
	tx := s.must(202, "POST", "/tokens/"+tokID+"/transfers", op, map[string]any{"to": uAddr, "value": "1000"}).(map[string]any)["id"].(string)
	if st := s.waitTerminal(tx, op, 60*time.Second)["status"]; st != "completed" {
		t.Fatalf("transfer before the rotation: %v", st)
	}
	oldMaster := keyA
	rotateArgs, rotateEnv := []string{"rotate", "--new"}, keyEnv(keyB, keyA)
	if configured {
		// Step (a): restart with the new key as masterKey, the old one
		// previous. Before, the store is made to look as an older version
		// left it: the operator's account key sealed without a key id, the
		// user's callback secret in plain text (as migration 0012 keeps it).
		s.stop()
		makeLegacy(t, dir, keyA, u["id"].(string), uSecret)
		s = startService(t, dir, append(env, rotateEnv...)...)
		if !strings.Contains(s.Logs(), "sealed callback secrets stored in plain text") {
			t.Errorf("serve did not seal the plain callback secret at start:\n%s", s.Logs())
		}
		rotateArgs = []string{"rotate"}
	} else {
		raw, err := os.ReadFile(filepath.Join(dir, "master.key"))
		if err != nil {
			t.Fatal(err)
		}
		oldMaster = strings.TrimSpace(string(raw))
	}

	// Rotate while traffic flows.
	stop := make(chan struct{})
	var traffic trafficResult
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		backgroundTraffic(s.URL, utok, uSecret, stop, &traffic)
	}()
	time.Sleep(300 * time.Millisecond)
	began := time.Now()
	out, err := keysCommand(t, dir, rotateEnv, rotateArgs...)
	t.Logf("keys %s (%s):\n%s", strings.Join(rotateArgs, " "), time.Since(began).Round(time.Millisecond), out)
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatalf("keys %s: %v", strings.Join(rotateArgs, " "), err)
	}
	if !strings.Contains(out, "every value is under key") || !strings.Contains(out, "account keys") {
		t.Errorf("rotate output lacks its counts: %s", out)
	}
	if configured && !strings.Contains(out, "(1 without key id") {
		t.Errorf("rotate did not re-encrypt the legacy account key: %s", out)
	}
	// Writes after the rotation are under the new key too.
	time.Sleep(500 * time.Millisecond)
	out, err = keysCommand(t, dir, rotateEnv, "prune")
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("keys prune: %v\n%s", err, out)
	}
	t.Logf("keys prune: %s", out)
	t.Logf("traffic during the rotation: %d answered, %d failed", traffic.ok.Load(), traffic.failed.Load())
	if traffic.failed.Load() > 0 || traffic.ok.Load() < 10 {
		t.Errorf("traffic during the rotation: %d answered, %d failed: %v", traffic.ok.Load(), traffic.failed.Load(), traffic.errors)
	}
	if _, err := os.Stat(filepath.Join(dir, "master.key.previous")); !os.IsNotExist(err) {
		t.Errorf("master.key.previous still there after prune: %v", err)
	}
	newMaster := keyB
	if !configured {
		raw, err := os.ReadFile(filepath.Join(dir, "master.key"))
		if err != nil {
			t.Fatal(err)
		}
		newMaster = strings.TrimSpace(string(raw))
	} else if !strings.Contains(out, "remove previousMasterKeys") {
		t.Errorf("prune does not say to remove previousMasterKeys: %s", out)
	}
	if oldMaster == newMaster {
		t.Fatal("the master key did not change")
	}
	s.stop()

	// The old master key alone opens nothing any more: rotate refuses.
	out, err = keysCommand(t, dir, []string{"TXENGINE_MASTER_KEY=" + oldMaster}, "rotate")
	if err == nil || !strings.Contains(out, "open under no known master key") || !strings.Contains(out, "nothing was changed") {
		t.Fatalf("rotate under the old key: err %v, want a refusal:\n%s", err, out)
	}
	if strings.Contains(out, oldMaster) || strings.Contains(out, newMaster) {
		t.Errorf("the refusal shows a key: %s", out)
	}
	t.Logf("refusal: %s", strings.TrimSpace(out))

	// Restart with the new key alone.
	s = startService(t, dir, append(env, keyEnv(keyB)...)...)
	out, err = keysCommand(t, dir, keyEnv(keyB), "status")
	if err != nil {
		t.Fatalf("keys status: %v\n%s", err, out)
	}
	t.Logf("keys status:\n%s", out)
	if !strings.Contains(out, "previous: \n") || strings.Contains(out, "legacy:1") || !strings.Contains(out, "unopenable:0") {
		t.Errorf("keys status after the rotation: %s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		if !strings.HasSuffix(line, "legacy:0 plain:0 unopenable:0") {
			t.Errorf("keys status line %q: values not under the current key", line)
		}
	}
	if got := s.must(200, "GET", "/users/me", utok, nil).(map[string]any)["callbackSecret"]; got != uSecret {
		t.Errorf("callback secret after the rotation = %v, want the one before", got)
	}
	again := s.callHeaders("POST", "/accounts", utok, "{}", "Idempotency-Key", "rotate-acct-1")
	if again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Raw) != string(first.Raw) {
		t.Errorf("replay after the rotation: %d %s %s, want the first response %s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Raw, first.Raw)
	}
	againUser := s.callHeaders("POST", "/users", op, `{"auth":true}`, "Idempotency-Key", "rotate-user-1")
	if againUser.Status != 201 || string(againUser.Raw) != string(firstUser.Raw) {
		t.Errorf("user replay after the rotation: %d %s, want %s", againUser.Status, againUser.Raw, firstUser.Raw)
	}
	// Accounts created before the rotation sign: the operator's (with a
	// callback, signed with its unchanged secret) and the user's.
	tx = s.must(202, "POST", "/tokens/"+tokID+"/transfers", op, map[string]any{
		"to": uAddr, "value": "7", "callbacks": []string{rc.URL + "/after"},
	}).(map[string]any)["id"].(string)
	if st := s.waitTerminal(tx, op, 60*time.Second)["status"]; st != "completed" {
		t.Fatalf("operator transfer after the rotation: %v", st)
	}
	eventually(t, 30*time.Second, "callback after the rotation", func() bool { return len(rc.at("/after")) > 0 })
	wantCallback(t, s, opSecret, tx, rc.at("/after")[0])
	opAddr := s.must(200, "GET", "/accounts/default", op, nil).(map[string]any)["address"].(string)
	utx := s.must(202, "POST", "/contracts/network/dev/address/"+tokAddr+"/send/transfer", utok, map[string]any{
		"arg": []any{opAddr, "1"}, "type": "erc20",
	}).(map[string]any)["id"].(string)
	if st := s.waitTerminal(utx, utok, 60*time.Second); st["status"] != "completed" {
		t.Fatalf("user transfer after the rotation: %v", st)
	}
	s.stop()
}

// makeLegacy rewrites the embedded store of dir (the service stopped) as a
// version before key versions left it: the operator's default account key
// sealed under the raw master key (nonce || ciphertext, no header), and
// user uid's callback secret in plain text behind migration 0012's marker.
func makeLegacy(t *testing.T, dir, masterHex, uid, secret string) {
	t.Helper()
	master, err := hex.DecodeString(masterHex)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := keystore.NewKeySealer(master)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "txengine.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id, addr string
	var sealed []byte
	err = db.QueryRow(`SELECT a.id, a.address, a.encrypted_key FROM accounts a JOIN users u ON u.id = a.owner
		WHERE u.operator = 1 AND a.is_default = 1`).Scan(&id, &addr, &sealed)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ring.OpenAccountKey(common.HexToAddress(addr), sealed)
	if err != nil {
		t.Fatal(err)
	}
	legacy := storetest.LegacySeal(t, master, key, common.HexToAddress(addr).Bytes())
	if _, err := db.Exec(`UPDATE accounts SET encrypted_key = ? WHERE id = ?`, legacy, id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE users SET callback_secret = ? WHERE id = ?`, append([]byte{keystore.PlainVersion}, secret...), uid); err != nil {
		t.Fatal(err)
	}
}
