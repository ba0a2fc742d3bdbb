package http

import (
	"context"
	"net/http"
	"testing"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/internal/kmstest"
)

// TestCreateAccountCustodyRefusals: custody that cannot be honoured is a
// 400 on the field at fault, nothing stored: KMS not configured, an
// unknown custody type, keyId with local custody, unknown fields.
func TestCreateAccountCustodyRefusals(t *testing.T) {
	env := newTestEnv(t)
	before := env.store.rows(t)
	for _, c := range []struct{ body, field string }{
		{`{"custody":{"type":"kms"}}`, "custody.type"},
		{`{"custody":{"type":"kms","keyId":"alias/x"}}`, "custody.type"},
		{`{"custody":{"type":"vault"}}`, "custody.type"},
		{`{"custody":{"type":"local","keyId":"alias/x"}}`, "custody.keyId"},
		{`{"custody":{"type":"kms","region":"us-east-1"}}`, "region"},
	} {
		rec := env.do("POST", "/accounts", env.aliceToken, c.body)
		wantError(t, rec, http.StatusBadRequest, engine.CodeInvalidArgument, c.field)
	}
	if after := env.store.rows(t); after != before {
		t.Fatalf("rows %d -> %d: a refused creation stored something", before, after)
	}
	rec := env.do("POST", "/accounts", env.aliceToken, `{"custody":{"type":"local"}}`)
	wantStatus(t, rec, http.StatusCreated)
	var a accountView
	decodeData(t, rec, &a)
	if a.Custody != (custodyView{Type: "local"}) {
		t.Fatalf("custody %+v, want local", a.Custody)
	}
}

// TestKMSAccounts: with local-kms, POST /accounts creates an account whose
// key is a new KMS key, or attaches an existing key by alias; the views
// say where the key lives. A key already attached is 409; an unknown key,
// a key of another spec and a KMS that does not answer are 400, 400 and
// 503, nothing stored.
func TestKMSAccounts(t *testing.T) {
	srv := kmstest.Start(t)
	client := srv.Client(t)
	env := newTestEnv(t)
	env.server.kms = keystore.NewKMSSigner(client, keystore.KMSOptions{})

	rec := env.do("POST", "/accounts", env.aliceToken, `{"custody":{"type":"kms"}}`)
	wantStatus(t, rec, http.StatusCreated)
	var created accountView
	decodeData(t, rec, &created)
	if created.Custody.Type != "kms" || created.Custody.KeyID == "" {
		t.Fatalf("custody %+v", created.Custody)
	}
	stored, err := env.store.AccountByID(t.Context(), created.ID)
	if err != nil || stored.KMSKeyID != created.Custody.KeyID || len(stored.EncryptedKey) != 0 || stored.Address.Hex() != created.Address {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	spki, err := client.PublicKey(t.Context(), created.Custody.KeyID)
	if err != nil {
		t.Fatal(err)
	}
	if addr, err := keystore.AddressFromSPKI(spki); err != nil || addr.Hex() != created.Address {
		t.Fatalf("the key's address %s, %v; the account's %s", addr.Hex(), err, created.Address)
	}
	var got accountView
	decodeData(t, env.do("GET", "/accounts/"+created.ID, env.aliceToken, ""), &got)
	if got.Custody != created.Custody {
		t.Fatalf("GET custody %+v, want %+v", got.Custody, created.Custody)
	}

	arn := srv.CreateKey(t, keystore.KMSKeySpec, keystore.KMSKeyUsage)
	if err := client.CreateAlias(context.Background(), "alias/treasury", arn); err != nil {
		t.Fatal(err)
	}
	rec = env.do("POST", "/accounts", env.bobToken, `{"custody":{"type":"kms","keyId":"alias/treasury"}}`)
	wantStatus(t, rec, http.StatusCreated)
	var attached accountView
	decodeData(t, rec, &attached)
	if attached.Custody != (custodyView{Type: "kms", KeyID: arn}) || attached.Owner != env.bob.ID {
		t.Fatalf("attached %+v, want key %s", attached, arn)
	}

	before := env.store.rows(t)
	for _, c := range []struct {
		token, body string
		status      int
		code        engine.Code
	}{
		{env.bobToken, `{"custody":{"type":"kms","keyId":"alias/treasury"}}`, http.StatusConflict, engine.CodeConflict},
		{env.aliceToken, `{"custody":{"type":"kms","keyId":"` + arn + `"}}`, http.StatusConflict, engine.CodeConflict},
		{env.aliceToken, `{"custody":{"type":"kms","keyId":"alias/none"}}`, http.StatusBadRequest, engine.CodeInvalidArgument},
		{env.aliceToken, `{"custody":{"type":"kms","keyId":"` + srv.CreateKey(t, "ECC_NIST_P256", "SIGN_VERIFY") + `"}}`, http.StatusBadRequest, engine.CodeInvalidArgument},
		{env.aliceToken, `{"custody":{"type":"kms","keyId":"` + srv.CreateKey(t, "SYMMETRIC_DEFAULT", "ENCRYPT_DECRYPT") + `"}}`, http.StatusBadRequest, engine.CodeInvalidArgument},
	} {
		wantError(t, env.do("POST", "/accounts", c.token, c.body), c.status, c.code, "custody.keyId")
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	wantError(t, env.do("POST", "/accounts", env.aliceToken, `{"custody":{"type":"kms"}}`), http.StatusServiceUnavailable, engine.CodeUnavailable, "")
	if after := env.store.rows(t); after != before {
		t.Fatalf("rows %d -> %d: a refused creation stored something", before, after)
	}
}
