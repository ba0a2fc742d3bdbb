package http

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/txengine/txengine/client"
)

// TestGeneratedClient calls the service through the Go client generated from
// openapi.json (package client): requests built from the document reach the
// routes, and the responses decode into the document's types.
func TestGeneratedClient(t *testing.T) {
	e := newContractEnv(t)
	srv := httptest.NewServer(e.server.Handler())
	t.Cleanup(srv.Close)
	bearer := func(token string) client.RequestEditorFn {
		return func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		}
	}
	c, err := client.NewClientWithResponses(srv.URL, client.WithRequestEditorFn(bearer(e.aliceToken)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	accounts, err := c.ListAccountsWithResponse(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accounts.JSON200 == nil || len(accounts.JSON200.Data) == 0 || accounts.JSON200.Data[0].Address != e.aliceAcct.Address.Hex() {
		t.Fatalf("GET /accounts: %d %s", accounts.StatusCode(), accounts.Body)
	}

	to := e.bobAcct.Address.Hex()
	token := uuid.MustParse(e.aliceToken20.ID)
	key := client.IdempotencyKeyParam("client-test-1")
	created, err := c.CreateTransferWithResponse(ctx, token, &client.CreateTransferParams{IdempotencyKey: &key},
		client.CreateTransferJSONRequestBody{To: to, Value: "1234"})
	if err != nil {
		t.Fatal(err)
	}
	if created.JSON202 == nil {
		t.Fatalf("POST /tokens/{contractId}/transfers: %d %s", created.StatusCode(), created.Body)
	}
	tx := created.JSON202.Data
	if tx.Method != "transfer" || !slices.Equal(tx.Parameters, []string{to, "1234"}) || tx.Status != client.TransactionStatusNew {
		t.Fatalf("created transfer: %s", created.Body)
	}

	read, err := c.GetTransactionWithResponse(ctx, tx.Id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if read.JSON200 == nil || read.JSON200.Data.Id != tx.Id || !slices.Equal(read.JSON200.Data.Parameters, tx.Parameters) {
		t.Fatalf("GET /transactions/{id}: %d %s", read.StatusCode(), read.Body)
	}

	// An error decodes into the documented error format.
	missing, err := c.GetTransactionWithResponse(ctx, uuid.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if missing.JSON404 == nil || missing.JSON404.Error.Code != client.ErrorCodeNotFound {
		t.Fatalf("GET /transactions/{unknown}: %d %s", missing.StatusCode(), missing.Body)
	}

	// Bob's token does not see Alice's transaction.
	cb, err := client.NewClientWithResponses(srv.URL, client.WithRequestEditorFn(bearer(e.bobToken)))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := cb.GetTransactionWithResponse(ctx, tx.Id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if foreign.StatusCode() != http.StatusNotFound {
		t.Fatalf("bob reads alice's transaction: %d %s", foreign.StatusCode(), foreign.Body)
	}
}
