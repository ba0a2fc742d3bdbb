package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	api "github.com/txengine/txengine/client"
	"github.com/txengine/txengine/internal/servicetest"
)

// checkedDoer sends the generated client's requests and checks every
// response against the served OpenAPI document, like service.call. With
// ops set it records the operationId of every request.
type checkedDoer struct {
	t   *testing.T
	s   *service
	ops *operations
}

// operations is a set of operationIds, safe for concurrent use.
type operations struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (d checkedDoer) Do(req *http.Request) (*http.Response, error) {
	if d.ops != nil {
		if err := d.s.contract.load(d.s.URL); err != nil {
			return nil, err
		}
		if route, _, err := d.s.contract.router.FindRoute(req); err == nil {
			d.ops.mu.Lock()
			d.ops.seen[route.Operation.OperationID] = true
			d.ops.mu.Unlock()
		}
	}
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
func generatedClient(t *testing.T, s *service, token string, ops ...*operations) *api.ClientWithResponses {
	t.Helper()
	d := checkedDoer{t: t, s: s}
	if len(ops) > 0 {
		d.ops = ops[0]
	}
	c, err := api.NewClientWithResponses(s.URL, api.WithHTTPClient(d),
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
	bin, err := servicetest.Build(t.TempDir(), "github.com/txengine/txengine/cmd/txload", false)
	if err != nil {
		t.Fatal(err)
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

// expect fails t unless the call got an answer of status want.
func expect(t *testing.T, what string, err error, res interface{ StatusCode() int }, want int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if res.StatusCode() != want {
		t.Fatalf("%s: status %d, want %d: %s", what, res.StatusCode(), want, body(res))
	}
}

// TestGeneratedClientEveryOperation calls every operation of the served
// document once through the generated Go client against the real binary,
// each with the status of its success, and fails when the document has an
// operation no call reached: a change to the document is exercised by a
// real call.
func TestGeneratedClientEveryOperation(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	s := startService(t, t.TempDir())
	ops := &operations{seen: map[string]bool{}}
	c := generatedClient(t, s, s.Token, ops)
	ctx := context.Background()
	dev := api.NetworkParam("dev")

	// Operational endpoints.
	{
		r1, err := c.HealthzWithResponse(ctx, nil)
		expect(t, "healthz", err, r1, 200)
		r2, err := c.ReadyzWithResponse(ctx, nil)
		expect(t, "readyz", err, r2, 200)
		r3, err := c.OpenapiWithResponse(ctx, nil)
		expect(t, "openapi", err, r3, 200)
		r4, err := c.MetricsWithResponse(ctx, nil)
		expect(t, "metrics", err, r4, 200)
		r5, err := c.ListNetworksWithResponse(ctx, nil)
		expect(t, "networks", err, r5, 200)
	}

	// Accounts.
	def, err := c.GetDefaultAccountWithResponse(ctx, nil)
	expect(t, "default account", err, def, 200)
	opAddr := def.JSON200.Data.Address
	created, err := c.CreateAccountWithResponse(ctx, nil, api.CreateAccountJSONRequestBody{})
	expect(t, "create account", err, created, 201)
	acct := created.JSON201.Data
	{
		r1, err := c.ListAccountsWithResponse(ctx, nil)
		expect(t, "list accounts", err, r1, 200)
		r2, err := c.GetAccountWithResponse(ctx, acct.Id, nil)
		expect(t, "get account", err, r2, 200)
		network := "dev"
		r3, err := c.AccountBalanceWithResponse(ctx, acct.Id, &api.AccountBalanceParams{Network: &network})
		expect(t, "account balance", err, r3, 200)
		r4, err := c.DefaultAccountBalanceWithResponse(ctx, &api.DefaultAccountBalanceParams{Network: &network})
		expect(t, "default account balance", err, r4, 200)
		r5, err := c.SetDefaultAccountWithResponse(ctx, nil, api.SetDefaultAccountRequest{Account: def.JSON200.Data.Id})
		expect(t, "set default account", err, r5, 200)
	}

	// Tokens.
	tokens, err := c.ListTokensWithResponse(ctx, nil)
	expect(t, "list tokens", err, tokens, 200)
	tok := tokens.JSON200.Data[0]
	{
		r1, err := c.GetTokenWithResponse(ctx, tok.Id, nil)
		expect(t, "get token", err, r1, 200)
		r2, err := c.GetDefaultBalanceWithResponse(ctx, tok.Id, nil)
		expect(t, "default balance", err, r2, 200)
		r3, err := c.GetAddressBalanceWithResponse(ctx, tok.Id, acct.Address, nil)
		expect(t, "address balance", err, r3, 200)
		r4, err := c.CreateTransferWithResponse(ctx, tok.Id, nil, api.TransferRequest{To: acct.Address, Value: "5"})
		expect(t, "transfer", err, r4, 202)
		r5, err := c.ListTokenTransfersWithResponse(ctx, tok.Id, nil)
		expect(t, "token transfers", err, r5, 200)
		r6, err := c.NetworkTokenWithResponse(ctx, "dev", tok.Address, nil)
		expect(t, "network token", err, r6, 200)
		r7, err := c.TokenSupplyWithResponse(ctx, "dev", tok.Address, nil)
		expect(t, "supply", err, r7, 200)
		r8, err := c.TokenCirculatingWithResponse(ctx, "dev", tok.Address, nil)
		expect(t, "circulating", err, r8, 200)
	}

	// Contracts.
	cid := api.ContractIdAnyParam(tok.Id)
	erc20 := api.CreateContractRequestTypeErc20
	{
		r1, err := c.ListContractsWithResponse(ctx, nil)
		expect(t, "list contracts", err, r1, 200)
		r2, err := c.CreateContractWithResponse(ctx, nil, api.CreateContractRequest{Name: "Again", Network: "dev", Address: tok.Address, Type: &erc20})
		expect(t, "register contract", err, r2, 201)
		r3, err := c.GetContractWithResponse(ctx, cid, nil)
		expect(t, "get contract", err, r3, 200)
		r4, err := c.CallContractWithResponse(ctx, cid, "balanceOf", nil, api.CallRequest{Arg: []string{opAddr}})
		expect(t, "call", err, r4, 200)
		r5, err := c.SendContractWithResponse(ctx, cid, "transfer", nil, api.SendRequest{Arg: []string{acct.Address, "1"}})
		expect(t, "send", err, r5, 202)
		r6, err := c.ContractEventsWithResponse(ctx, cid, nil)
		expect(t, "events", err, r6, 200)
		r7, err := c.BatchCallWithResponse(ctx, nil, api.BatchCallRequest{Calls: []api.BatchCall{{ContractId: &tok.Id, Method: "totalSupply"}}})
		expect(t, "batch call", err, r7, 200)
		direct := api.DirectCallRequestTypeErc20
		r8, err := c.CallDirectWithResponse(ctx, dev, tok.Address, "symbol", nil, api.DirectCallRequest{Type: &direct})
		expect(t, "direct call", err, r8, 200)
		directSend := api.DirectSendRequestTypeErc20
		r9, err := c.SendDirectWithResponse(ctx, dev, tok.Address, "transfer", nil, api.DirectSendRequest{Type: &directSend, Arg: []string{acct.Address, "1"}})
		expect(t, "direct send", err, r9, 202)
		r10, err := c.LatestBlockWithResponse(ctx, dev, nil)
		expect(t, "latest block", err, r10, 200)
		r11, err := c.BlockByNumberWithResponse(ctx, dev, "1", nil)
		expect(t, "block 1", err, r11, 200)
		r12, err := c.GasPriceWithResponse(ctx, dev, nil)
		expect(t, "gas price", err, r12, 200)
	}

	// Transactions: two that wait for more ETH than there is, one cancelled,
	// one abandoned.
	waiting := func() api.Transaction {
		t.Helper()
		asset, value := "ETH", "1000000000000000000000000000"
		r, err := c.CreateTransferWithResponse(ctx, tok.Id, nil, api.TransferRequest{To: opAddr, Value: "1", From: &created.JSON201.Data.Address, WaitForAsset: &asset, WaitForValue: &value})
		expect(t, "waiting transfer", err, r, 202)
		return r.JSON202.Data
	}
	{
		w1, w2 := waiting(), waiting()
		r1, err := c.ListTransactionsWithResponse(ctx, nil)
		expect(t, "list transactions", err, r1, 200)
		r2, err := c.GetTransactionWithResponse(ctx, w1.Id, nil)
		expect(t, "get transaction", err, r2, 200)
		r3, err := c.CancelTransactionWithResponse(ctx, w1.Id, nil)
		expect(t, "cancel", err, r3, 200)
		r4, err := c.AbandonTransactionWithResponse(ctx, w2.Id, nil)
		expect(t, "abandon", err, r4, 200)
	}

	// Users.
	{
		auth := true
		r1, err := c.CreateUserWithResponse(ctx, nil, api.CreateUserRequest{Auth: &auth})
		expect(t, "create user", err, r1, 201)
		user := r1.JSON201.Data
		r2, err := c.GetMeWithResponse(ctx, nil)
		expect(t, "me", err, r2, 200)
		r3, err := c.CreateUserTokenWithResponse(ctx, user.Id, nil, api.CreateUserTokenJSONRequestBody{})
		expect(t, "user token", err, r3, 201)
		r4, err := c.SetUserLimitsWithResponse(ctx, user.Id, nil, api.RateLimits{PerSecond: 100, PerHour: 1000})
		expect(t, "user limits", err, r4, 200)
		r5, err := c.ListUserTokensWithResponse(ctx, user.Id, nil)
		expect(t, "list user tokens", err, r5, 200)
		if n := len(r5.JSON200.Data); n != 2 {
			t.Fatalf("list user tokens: %d tokens, want 2 (the one of POST /users and the one added)", n)
		}
		r6, err := c.RevokeUserTokenWithResponse(ctx, user.Id, r5.JSON200.Data[0].Id.String(), nil)
		expect(t, "revoke user token", err, r6, 200)
		if d := r6.JSON200.Data; d.Id != r5.JSON200.Data[0].Id || d.Current || d.Revoked == nil {
			t.Fatalf("revoke user token: answered %+v, want token %s, not current, with revoked set", d, r5.JSON200.Data[0].Id)
		}
		r7, err := c.ListUserTokensWithResponse(ctx, user.Id, nil)
		expect(t, "list user tokens", err, r7, 200)
		if n := len(r7.JSON200.Data); n != 1 || r7.JSON200.Data[0].Id == r5.JSON200.Data[0].Id {
			t.Fatalf("list user tokens after the revocation: %+v, want only %s", r7.JSON200.Data, r5.JSON200.Data[1].Id)
		}
	}

	// Subscriptions.
	{
		event := "Transfer"
		r1, err := c.CreateSubscriptionWithResponse(ctx, nil, api.CreateSubscriptionJSONRequestBody{ContractId: &tok.Id, Event: &event})
		expect(t, "create subscription", err, r1, 201)
		id := r1.JSON201.Data.Id
		r2, err := c.ListSubscriptionsWithResponse(ctx, nil)
		expect(t, "list subscriptions", err, r2, 200)
		r3, err := c.GetSubscriptionWithResponse(ctx, id, nil)
		expect(t, "get subscription", err, r3, 200)
		r4, err := c.ListSubscriptionEventsWithResponse(ctx, id, nil)
		expect(t, "subscription events", err, r4, 200)
		r5, err := c.DeleteSubscriptionWithResponse(ctx, id, nil)
		expect(t, "delete subscription", err, r5, 200)
	}

	// Sender pools (no treasury: the faucet funds the members' gas).
	{
		r1, err := c.CreatePoolWithResponse(ctx, nil, api.CreatePoolJSONRequestBody{Name: "client", Network: "dev", Size: 2})
		expect(t, "create pool", err, r1, 201)
		id := r1.JSON201.Data.Id
		if n := len(r1.JSON201.Data.Members); n != 2 {
			t.Fatalf("create pool: %d members, want 2", n)
		}
		r2, err := c.ListPoolsWithResponse(ctx, nil)
		expect(t, "list pools", err, r2, 200)
		r3, err := c.GetPoolWithResponse(ctx, id, nil)
		expect(t, "get pool", err, r3, 200)
		r4, err := c.ResizePoolWithResponse(ctx, id, nil, api.ResizePoolJSONRequestBody{Size: 1})
		expect(t, "resize pool", err, r4, 200)
		if r4.JSON200.Data.Size != 1 || len(r4.JSON200.Data.Members) != 1 {
			t.Fatalf("resize pool to 1: %+v", r4.JSON200.Data)
		}
		r5, err := c.DeletePoolWithResponse(ctx, id, nil)
		expect(t, "delete pool", err, r5, 200)
	}

	// Every operation of the served document was called.
	if err := s.contract.load(s.URL); err != nil {
		t.Fatal(err)
	}
	var missing []string
	for path, item := range s.contract.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if !ops.seen[op.OperationID] {
				missing = append(missing, op.OperationID+" ("+method+" "+path+")")
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("operations of the document no call of this test reached: %v", missing)
	}
}
