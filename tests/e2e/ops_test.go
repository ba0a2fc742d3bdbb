package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// TestHelp: the command and every subcommand print their usage and exit 0.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"}, {"serve", "--help"}, {"migrate", "--help"},
		{"users", "--help"}, {"users", "create", "--help"}, {"transactions", "--help"}, {"transactions", "abandon", "--help"},
		{"keys", "--help"}, {"keys", "rotate", "--help"},
	} {
		out, err := combinedOutput(t, exec.Command(binary, args...))
		if err != nil {
			t.Errorf("txengine %v: %v\n%s", args, err, out)
			continue
		}
		want := "Usage: txengine " + args[0]
		if args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
			want = "txengine users create [--admin]" // the overview lists every command
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("txengine %v: output lacks %q:\n%s", args, want, out)
		}
	}
	out, err := combinedOutput(t, exec.Command(binary, "frobnicate"))
	if err == nil || !strings.Contains(string(out), `unknown command "frobnicate"`) {
		t.Errorf("unknown command: err %v, output %s", err, out)
	}
}

// TestMigrateAndUsersCreate: migrate prepares the store, users create
// --admin prints an operator token that the service then accepts, and a
// bad configuration names its key.
func TestMigrateAndUsersCreate(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	dir := t.TempDir()
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), append([]string{"TXENGINE_DATA_DIR=" + dir}, env...)...)
		out, err := combinedOutput(t, cmd)
		return string(out), err
	}
	if out, err := run(nil, "migrate"); err != nil || !strings.Contains(out, "migrations applied") {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "txengine.db")); err != nil {
		t.Fatalf("migrate made no store: %v", err)
	}
	out, err := run([]string{"TXENGINE_RATE_LIMIT_PER_HOUR=0"}, "migrate")
	if err == nil || !strings.Contains(out, "rateLimit.perHour") {
		t.Fatalf("bad configuration: %v\n%s", err, out)
	}
	out, err = run(nil, "users", "create", "--admin")
	if err != nil {
		t.Fatalf("users create --admin: %v\n%s", err, out)
	}
	token := field(out, "token: ")
	if !strings.HasPrefix(out, "operator: ") || token == "" {
		t.Fatalf("users create --admin printed:\n%s", out)
	}
	out, err = run(nil, "users", "create")
	if err != nil || !strings.HasPrefix(out, "user: ") {
		t.Fatalf("users create: %v\n%s", err, out)
	}
	userToken := field(out, "token: ")

	// The default limits, not the harness's generous ones.
	s := startService(t, dir, "TXENGINE_RATE_LIMIT_PER_SECOND=10", "TXENGINE_RATE_LIMIT_PER_HOUR=3600")
	if s.Token == token {
		t.Fatal("the service's operator is the CLI's: the bootstrap should have its own")
	}
	accts := s.must(200, "GET", "/accounts", token, nil).([]any)
	if len(accts) != 1 || accts[0].(map[string]any)["defaultAccount"] != true {
		t.Fatalf("operator's accounts: %v", accts)
	}
	// The operator is exempt (Remaining = Limit); the normal user is counted.
	r := s.call("GET", "/accounts", token, nil)
	if r.Header.Get("X-RateLimit-Remaining") != r.Header.Get("X-RateLimit-Limit") {
		t.Errorf("operator's limit headers: %v", r.Header)
	}
	r = s.call("GET", "/accounts", userToken, nil)
	if r.Status != 200 || r.Header.Get("X-RateLimit-Limit") != "10" || r.Header.Get("X-RateLimit-Remaining") != "9" {
		t.Errorf("user's limit headers: %d %v", r.Status, r.Header)
	}
	s.stop()
}

// field returns the value after prefix on the line that starts with it.
func field(out, prefix string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestGracefulShutdown fires transfers from several clients, sends SIGTERM
// in the middle, and checks that the process exits 0 within the configured
// bound, that every request got 202 or 503 (or found the port closed), and
// that every accepted transfer is in the store after a restart and
// completes.
func TestGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	dir := t.TempDir()
	// The bound allows for the -race build (raceShutdownTimeout): the dev
	// chain's log indexer stops slowly under pebble's race-build invariant
	// checks; an idle normal build stops in about 3 s.
	const bound = 30 * time.Second
	s := startService(t, dir, "TXENGINE_SHUTDOWN_TIMEOUT="+bound.String())
	id := demoToken(t, s)["id"].(string)

	var (
		mu               sync.Mutex
		accepted         []string
		refused, dropped int
		unanswered       []string
		bad              []string
		signalled        = make(chan struct{})
		wg               sync.WaitGroup
		stop             = make(chan struct{})
	)
	client := &http.Client{Timeout: 30 * time.Second}
	for w := 0; w < 8; w++ {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				b := make([]byte, 20)
				_, _ = rand.Read(b)
				body := fmt.Sprintf(`{"to":%q,"value":"1"}`, common.BytesToAddress(b).Hex())
				req, _ := http.NewRequest("POST", s.URL+"/tokens/"+id+"/transfers", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+s.Token)
				req.Header.Set("Content-Type", "application/json")
				res, err := client.Do(req)
				if err != nil {
					mu.Lock()
					select {
					case <-signalled:
						if errors.Is(err, syscall.ECONNREFUSED) {
							dropped++ // the listener is closed: nothing was sent
						} else {
							// No response at all: a connection still in the
							// listen backlog when the listener closed. The
							// request was never read (not a reset mid-response).
							unanswered = append(unanswered, err.Error())
						}
					default:
						bad = append(bad, "before SIGTERM: "+err.Error())
					}
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					continue
				}
				raw, rerr := io.ReadAll(res.Body)
				res.Body.Close()
				mu.Lock()
				switch {
				case rerr != nil:
					bad = append(bad, "reading the response: "+rerr.Error())
				case res.StatusCode == 202:
					var v struct {
						Data struct{ ID string } `json:"data"`
					}
					_ = json.Unmarshal(raw, &v)
					accepted = append(accepted, v.Data.ID)
				case res.StatusCode == 503:
					refused++
				default:
					bad = append(bad, fmt.Sprintf("status %d: %s", res.StatusCode, raw))
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	start := time.Now()
	close(signalled)
	if err := s.Stop(bound + 5*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.Logs())
	}
	took := time.Since(start)
	close(stop)
	wg.Wait()
	t.Logf("exit 0 after %s; %d accepted, %d refused with 503, %d found the port closed, %d unanswered %v",
		took, len(accepted), refused, dropped, len(unanswered), unanswered)
	if took > bound {
		t.Errorf("shutdown took %s, bound %s", took, bound)
	}
	if len(bad) > 0 {
		t.Errorf("%d requests neither 202 nor 503, e.g. %s", len(bad), bad[0])
	}
	if len(accepted) == 0 || refused == 0 {
		t.Errorf("want both accepted and refused requests: %d accepted, %d refused", len(accepted), refused)
	}

	s2 := startService(t, dir)
	for _, txID := range accepted {
		tx := s2.waitTerminal(txID, s2.Token, 90*time.Second)
		if tx["status"] != "completed" {
			t.Errorf("accepted transfer %s ended %v: %v", txID, tx["status"], tx["error"])
		}
	}
	s2.stop()
}

// TestMetricsAndLogsEndToEnd runs the binary with JSON logs: a transfer
// moves the operator account's counters on /metrics; every stderr line is
// a JSON record, request lines carry the request id; and no token, master
// key, faucet key or account key appears in the logs.
func TestMetricsAndLogsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	dir := t.TempDir()
	s := startService(t, dir, "TXENGINE_LOG_FORMAT=json", "TXENGINE_LOG_LEVEL=debug")
	id := demoToken(t, s)["id"].(string)
	opDefault := s.must(200, "GET", "/accounts/default", s.Token, nil).(map[string]any)
	opAcct, opAddr := opDefault["id"].(string), opDefault["address"].(string)
	user := s.must(201, "POST", "/users", s.Token, map[string]any{"auth": true, "account": true}).(map[string]any)
	userToken := user["token"].(string)
	s.must(200, "GET", "/accounts", userToken, nil)
	s.call("GET", "/accounts", "txe_"+strings.Repeat("0", 64), nil) // a wrong token is not logged either

	// Per-account series carry the id and the EIP-55 address.
	series := fmt.Sprintf(`{account=%q,address=%q,network="dev"}`, opAcct, opAddr)
	before := scrape(t, s)
	r := s.call("POST", "/tokens/"+id+"/transfers", s.Token, map[string]any{"to": user["account"].(map[string]any)["address"], "value": "5"})
	if r.Status != 202 {
		t.Fatalf("transfer: %d %s", r.Status, r.Raw)
	}
	s.waitTerminal(r.Body["data"].(map[string]any)["id"].(string), s.Token, 60*time.Second)
	after := scrape(t, s)
	for _, name := range []string{"txengine_transactions_accepted_total", "txengine_transactions_submitted_total", "txengine_transactions_completed_total"} {
		if d := after.value(name+series) - before.value(name+series); d != 1 {
			t.Errorf("%s%s moved by %v, want 1", name, series, d)
		}
	}
	for name, typ := range map[string]string{
		"txengine_transactions_accepted_total":    "counter",
		"txengine_transactions_completed_total":   "counter",
		"txengine_transaction_completion_seconds": "histogram",
		"txengine_account_in_flight":              "gauge",
		"txengine_account_queue_depth":            "gauge",
		"txengine_account_next_nonce":             "gauge",
		"txengine_network_head_number":            "gauge",
		"txengine_network_head_age_seconds":       "gauge",
		"txengine_rpc_requests_total":             "counter",
		"txengine_rpc_request_duration_seconds":   "histogram",
		"txengine_http_requests_total":            "counter",
		"txengine_http_request_duration_seconds":  "histogram",
		"go_goroutines":                           "gauge",
		"process_cpu_seconds_total":               "counter",
	} {
		if after.types[name] != typ {
			t.Errorf("%s: type %q, want %q", name, after.types[name], typ)
		}
	}
	if after.value(`txengine_http_requests_total{method="POST",route="/tokens/:contractId/transfers",status="202"}`) < 1 {
		t.Error("the transfer is not counted by route template")
	}
	s.stop()

	secrets := map[string]string{"operator token": s.Token, "user token": userToken}
	for _, f := range []string{"master.key", "faucet.key"} {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		secrets[f] = strings.TrimPrefix(strings.TrimSpace(string(raw)), "0x")
	}
	for name, key := range accountKeys(t, dir) {
		secrets[name] = key
	}
	var stderr []string
	for _, line := range strings.Split(strings.TrimSpace(s.Logs()), "\n") {
		if !strings.HasPrefix(line, "stdout: ") {
			stderr = append(stderr, line)
		}
	}
	logs := strings.Join(stderr, "\n")
	for name, secret := range secrets {
		if len(secret) < 32 {
			t.Fatalf("%s looks wrong: %q", name, secret)
		}
		if strings.Contains(strings.ToLower(logs), strings.ToLower(secret)) {
			t.Errorf("the %s appears in the logs", name)
		}
	}
	requests := 0
	for _, line := range stderr {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("not a JSON log record: %s", line)
			continue
		}
		if rec["msg"] == "http request" {
			requests++
			if id, _ := rec["request_id"].(string); id == "" {
				t.Errorf("request line without request_id: %s", line)
			}
		}
	}
	if requests < 5 {
		t.Errorf("only %d request lines logged", requests)
	}
}

// exposition is a parsed scrape: sample values by series and types by name.
type exposition struct {
	values map[string]float64
	types  map[string]string
}

func (e exposition) value(series string) float64 { return e.values[series] }

// scrape reads GET /metrics (no token) and parses the text format.
func scrape(t *testing.T, s *service) exposition {
	t.Helper()
	res, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", res.StatusCode, raw)
	}
	e := exposition{values: map[string]float64{}, types: map[string]string{}}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			e.types[name] = typ
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		var v float64
		if _, err := fmt.Sscan(line[i+1:], &v); err == nil {
			e.values[line[:i]] = v
		}
	}
	return e
}

// accountKeys returns the hex private keys of every account in the data
// dir's store, opened with its master key.
func accountKeys(t *testing.T, dir string) map[string]string {
	t.Helper()
	keys, err := readAccountKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 2 {
		t.Fatalf("found %d account keys, want the operator's and the user's", len(keys))
	}
	out := map[string]string{}
	for addr, k := range keys {
		out["private key of "+addr] = hex.EncodeToString(k)
	}
	return out
}
