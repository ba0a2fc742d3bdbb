package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

func TestSignKnownVector(t *testing.T) {
	// Computed independently:
	//   printf '%s' '1700000000.{"transaction":{"id":"abc"}}' | openssl dgst -sha256 -hmac 'c2VjcmV0LWtleQ'
	secret := "c2VjcmV0LWtleQ"
	body := []byte(`{"transaction":{"id":"abc"}}`)
	got := engine.Sign(secret, time.Unix(1700000000, 999_000_000), body)
	want := "t=1700000000,v1=a361e39a2fed60b7f5f236ce73f27d17242aa22023eb481691072e99d20d7ab4"
	if got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	now := time.Unix(1700000100, 0)
	if err := engine.VerifySignature(secret, got, body, now, 5*time.Minute); err != nil {
		t.Fatalf("VerifySignature of Sign's output: %v", err)
	}
	for name, c := range map[string]struct {
		secret, header string
		body           []byte
		tolerance      time.Duration
	}{
		"other secret":  {"c2VjcmV0LWtleR", got, body, 0},
		"other body":    {secret, got, []byte(`{"transaction":{"id":"abd"}}`), 0},
		"other time":    {secret, strings.Replace(got, "t=1700000000", "t=1700000001", 1), body, 0},
		"too old":       {secret, got, body, time.Minute},
		"no timestamp":  {secret, "v1=" + strings.SplitN(got, "v1=", 2)[1], body, 0},
		"no mac":        {secret, "t=1700000000", body, 0},
		"short mac":     {secret, "t=1700000000,v1=a361e3", body, 0},
		"empty header":  {secret, "", body, 0},
		"garbage field": {secret, "t=x,v1=zz", body, 0},
	} {
		err := engine.VerifySignature(c.secret, c.header, c.body, now, c.tolerance)
		if !errors.Is(err, engine.ErrBadSignature) {
			t.Errorf("%s: VerifySignature = %v, want ErrBadSignature", name, err)
		}
	}
}

func TestBackoffSchedule(t *testing.T) {
	b := engine.DefaultBackoff()
	if got := b.Wait(1, 0); got != time.Second {
		t.Errorf("first wait = %s, want 1s", got)
	}
	if got := b.Wait(2, 0); got != 2*time.Second {
		t.Errorf("second wait = %s, want 2s", got)
	}
	n := b.MaxAttempts()
	if n != 39 {
		t.Errorf("MaxAttempts = %d, want 39", n)
	}
	for _, r := range []float64{0, 0.5, 0.999999} {
		var total, prevBase time.Duration
		for i := 1; i < n; i++ { // n attempts have n-1 waits
			w := b.Wait(i, r)
			base := b.Wait(i, 0)
			if base < prevBase {
				t.Fatalf("base wait %d (%s) shorter than the one before (%s)", i, base, prevBase)
			}
			if w > time.Hour || w > base || w < base-base/10 {
				t.Fatalf("wait %d with r=%v = %s: outside [0.9, 1]·%s or over 1h", i, r, w, base)
			}
			prevBase = base
			total += w
		}
		if total < 24*time.Hour {
			t.Errorf("r=%v: retries span %s, want at least 24h", r, total)
		}
		if total > 28*time.Hour {
			t.Errorf("r=%v: retries span %s, want about a day", r, total)
		}
	}
	if got := b.Wait(1000, 0); got != time.Hour {
		t.Errorf("wait 1000 = %s, want the 1h cap", got)
	}
}

func TestCallbackBodyIsTheTransactionView(t *testing.T) {
	tx := &engine.Transaction{ID: "t1", Status: engine.StatusCompleted, Network: "dev", Method: "transfer",
		Created: time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)}
	b, err := engine.CallbackBody(tx)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"transaction":{"id":"t1","type":"contract-method","contractNetwork":"dev","from":"0x0000000000000000000000000000000000000000","method":"transfer","parameters":[],"value":"0","status":"completed","network":"dev","created":"2026-01-02T03:04:05.006Z","events":[]}}`
	if string(b) != want {
		t.Fatalf("body =\n%s\nwant\n%s", b, want)
	}
}
