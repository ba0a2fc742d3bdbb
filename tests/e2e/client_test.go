package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	api "github.com/txengine/txengine/client"
)

// checkedDoer sends the generated client's requests and checks every
// response against the served OpenAPI document, like service.call.
type checkedDoer struct {
	t *testing.T
	s *service
}

func (d checkedDoer) Do(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	d.s.contract.check(d.t, d.s.URL, req, res.StatusCode, res.Header, raw)
	res.Body = io.NopCloser(bytes.NewReader(raw))
	return res, nil
}

// generatedClient returns the Go client generated from the document
// (package client) for s, authenticated with token.
func generatedClient(t *testing.T, s *service, token string) *api.ClientWithResponses {
	t.Helper()
	c, err := api.NewClientWithResponses(s.URL, api.WithHTTPClient(checkedDoer{t: t, s: s}),
		api.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGeneratedClientLifecycle drives a transfer through the real binary
// with the generated Go client only: the document's requests reach the
// routes and every answer decodes into the document's types (and matches
// its schema).
func TestGeneratedClientLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	s := startService(t, t.TempDir())
	c := generatedClient(t, s, s.Token)
	ctx := context.Background()

	tokens, err := c.ListTokensWithResponse(ctx, nil)
	if err != nil || tokens.JSON200 == nil || len(tokens.JSON200.Data) != 1 {
		t.Fatalf("GET /tokens: %v %s", err, body(tokens))
	}
	tok := tokens.JSON200.Data[0]
	if tok.Parameters.Symbol != "DEMO" || tok.Network != "dev" {
		t.Fatalf("demo token: %+v", tok)
	}

	acct, err := c.CreateAccountWithResponse(ctx, nil, api.CreateAccountJSONRequestBody{})
	if err != nil || acct.JSON201 == nil {
		t.Fatalf("POST /accounts: %v %s", err, body(acct))
	}
	to := acct.JSON201.Data.Address

	key := api.IdempotencyKeyParam("generated-client-" + uuid.NewString())
	req := api.TransferRequest{To: to, Value: "1234500"}
	created, err := c.CreateTransferWithResponse(ctx, tok.Id, &api.CreateTransferParams{IdempotencyKey: &key}, req)
	if err != nil || created.JSON202 == nil {
		t.Fatalf("POST /tokens/{contractId}/transfers: %v %s", err, body(created))
	}
	tx := created.JSON202.Data
	if !slices.Equal(tx.Parameters, []string{to, "1234500"}) {
		t.Fatalf("parameters %q, want [to, value] as strings", tx.Parameters)
	}
	// The same key and body again: the first answer, nothing created.
	again, err := c.CreateTransferWithResponse(ctx, tok.Id, &api.CreateTransferParams{IdempotencyKey: &key}, req)
	if err != nil || again.JSON202 == nil || again.JSON202.Data.Id != tx.Id || again.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %v %s", err, body(again))
	}

	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := c.GetTransactionWithResponse(ctx, tx.Id, nil)
		if err != nil || got.JSON200 == nil {
			t.Fatalf("GET /transactions/{id}: %v %s", err, body(got))
		}
		tx = got.JSON200.Data
		if tx.Status == api.TransactionStatusCompleted {
			break
		}
		if tx.Status == api.TransactionStatusFailed || time.Now().After(deadline) {
			t.Fatalf("transfer did not complete: %s", got.Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if tx.Events == nil || len(*tx.Events) == 0 || tx.TransactionHash == nil || tx.BlockNumber == nil {
		t.Fatalf("completed transfer: %+v", tx)
	}

	bal, err := c.GetAddressBalanceWithResponse(ctx, tok.Id, to, nil)
	if err != nil || bal.JSON200 == nil || bal.JSON200.Data != "1234500" {
		t.Fatalf("GET /tokens/{contractId}/balances/{address}: %v %s", err, body(bal))
	}
	info, err := c.NetworkTokenWithResponse(ctx, "dev", tok.Address, nil)
	if err != nil || info.JSON200 == nil || info.JSON200.Data.Symbol != "DEMO" || info.JSON200.Data.Network != "dev" {
		t.Fatalf("GET /tokens/{network}/{address}: %v %s", err, body(info))
	}
	supply, err := c.TokenSupplyWithResponse(ctx, "dev", tok.Address, nil)
	if err != nil || supply.StatusCode() != 200 || string(supply.Body) != "1000000" {
		t.Fatalf("GET /tokens/{network}/{address}/supply: %v %s", err, body(supply))
	}

	// Lists page with limit and cursor (two transfers: two pages of one).
	second, err := c.CreateTransferWithResponse(ctx, tok.Id, nil, api.TransferRequest{To: to, Value: "1"})
	if err != nil || second.JSON202 == nil {
		t.Fatalf("second transfer: %v %s", err, body(second))
	}
	limit := 1
	page, err := c.ListTransactionsWithResponse(ctx, &api.ListTransactionsParams{Limit: &limit})
	if err != nil || page.JSON200 == nil || len(page.JSON200.Data) != 1 || page.JSON200.Next == nil {
		t.Fatalf("GET /transactions?limit=1: %v %s", err, body(page))
	}
	next, err := c.ListTransactionsWithResponse(ctx, &api.ListTransactionsParams{Limit: &limit, Cursor: page.JSON200.Next})
	if err != nil || next.JSON200 == nil || len(next.JSON200.Data) != 1 || next.JSON200.Data[0].Id == page.JSON200.Data[0].Id {
		t.Fatalf("GET /transactions?cursor=: %v %s", err, body(next))
	}

	// A bad request decodes into the documented error.
	bad, err := c.CreateTransferWithResponse(ctx, tok.Id, nil, api.TransferRequest{To: to, Value: "1.5"})
	if err != nil || bad.JSON400 == nil || bad.JSON400.Error.Code != api.ErrorCodeInvalidArgument || bad.JSON400.Error.Field == nil || *bad.JSON400.Error.Field != "value" {
		t.Fatalf("bad value: %v %s", err, body(bad))
	}
}

// body is a generated response (a *XResponse) as a failure message: its
// status and raw body.
func body(r any) string {
	v := reflect.ValueOf(r)
	if !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
		return "(no response)"
	}
	v = reflect.Indirect(v)
	res, _ := v.FieldByName("HTTPResponse").Interface().(*http.Response)
	raw, _ := v.FieldByName("Body").Interface().([]byte)
	if res == nil {
		return string(raw)
	}
	return res.Status + " " + string(raw)
}

// TestTxloadOnEmbedded runs cmd/txload, whose calls go through the generated
// client, against the real binary: a small burst from two new accounts, with
// its check (every transfer completed, no nonce gap, balances as sent).
func TestTxloadOnEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	bin := filepath.Join(t.TempDir(), "txload")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/txload")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build txload: %v\n%s", err, out)
	}
	s := startService(t, t.TempDir())
	cmd := exec.Command(bin, "--url", s.URL, "--token", s.Token, "--n", "30", "--accounts", "2",
		"--concurrency", "4", "--recipients", "3", "--json", "--timeout", "2m")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("txload: %v\n%s", err, out)
	}
	var rep struct {
		Accepted  int            `json:"accepted"`
		Completed int            `json:"completed"`
		Errors    map[string]int `json:"errors"`
		Check     *struct {
			OK bool `json:"ok"`
		} `json:"check"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("txload report: %v\n%s", err, out)
	}
	if rep.Accepted != 30 || rep.Completed != 30 || len(rep.Errors) != 0 || rep.Check == nil || !rep.Check.OK {
		t.Fatalf("txload: %s", out)
	}
}
