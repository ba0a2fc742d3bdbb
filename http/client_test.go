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

// TestGeneratedClientSubscriptions: the subscription routes through the
// generated Go client: fromBlock as the document's union, filters as an
// object, the events list with its ever-present next, and deletion.
func TestGeneratedClientSubscriptions(t *testing.T) {
	e := newSubEnv(t)
	srv := httptest.NewServer(e.server.Handler())
	t.Cleanup(srv.Close)
	c, err := client.NewClientWithResponses(srv.URL, client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+e.bobToken)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var from client.CreateSubscriptionRequest_FromBlock
	if err := from.FromCreateSubscriptionRequestFromBlock1(4); err != nil {
		t.Fatal(err)
	}
	contract := uuid.MustParse(e.bobToken20.ID)
	event := "Transfer"
	filters := map[string]interface{}{"to": e.bobAcct.Address.Hex()}
	created, err := c.CreateSubscriptionWithResponse(ctx, nil, client.CreateSubscriptionJSONRequestBody{
		ContractId: &contract, Event: &event, Filters: &filters, FromBlock: &from,
	})
	if err != nil {
		t.Fatal(err)
	}
	if created.JSON201 == nil || created.JSON201.Data.FromBlock != 4 || created.JSON201.Data.Kind != client.SubscriptionKindEvents {
		t.Fatalf("POST /subscriptions: %d %s", created.StatusCode(), created.Body)
	}
	id := created.JSON201.Data.Id

	list, err := c.ListSubscriptionsWithResponse(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if list.JSON200 == nil || len(list.JSON200.Data) != 1 || list.JSON200.Data[0].Id != id || list.JSON200.Next != nil {
		t.Fatalf("GET /subscriptions: %d %s", list.StatusCode(), list.Body)
	}
	e.putEvents(e.stored(id.String()), 2)
	limit := 1
	events, err := c.ListSubscriptionEventsWithResponse(ctx, id, &client.ListSubscriptionEventsParams{Limit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	if events.JSON200 == nil || len(events.JSON200.Data) != 1 || events.JSON200.Data[0].Sequence != 1 || events.JSON200.Next == "" {
		t.Fatalf("GET /subscriptions/{id}/events: %d %s", events.StatusCode(), events.Body)
	}
	events, err = c.ListSubscriptionEventsWithResponse(ctx, id, &client.ListSubscriptionEventsParams{Cursor: &events.JSON200.Next})
	if err != nil {
		t.Fatal(err)
	}
	if events.JSON200 == nil || len(events.JSON200.Data) != 1 || events.JSON200.Data[0].Sequence != 2 {
		t.Fatalf("the next page: %d %s", events.StatusCode(), events.Body)
	}

	deleted, err := c.DeleteSubscriptionWithResponse(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if deleted.JSON200 == nil || deleted.JSON200.Data.Id != id {
		t.Fatalf("DELETE /subscriptions/{id}: %d %s", deleted.StatusCode(), deleted.Body)
	}
	gone, err := c.GetSubscriptionWithResponse(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gone.JSON404 == nil || gone.JSON404.Error.Code != client.ErrorCodeNotFound {
		t.Fatalf("GET a deleted subscription: %d %s", gone.StatusCode(), gone.Body)
	}
}
