package engine

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/engine/keystore/kmsfake"
)

// newKMSTestSender is newTestSender for an account whose key is in f,
// signed through keystore.Custody as in production.
func newKMSTestSender(t *testing.T, chain *fakeChain, store senderStore, window int, f *kmsfake.KMS, opts keystore.KMSOptions) *Sender {
	t.Helper()
	sealer, err := keystore.NewKeySealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	k := keystore.NewKMSSigner(f, opts)
	acct := kmsAccount(t, k)
	net := &Network{Name: "dev", ChainID: big.NewInt(1337), InFlight: window, GasMarginPercent: 20, Chain: chain}
	s := NewSender(acct, net, store, &keystore.Custody{Local: sealer, KMS: k}, fixedClock{time.Unix(1_700_000_000, 0).UTC()}, discardLog)
	st := NewSubmitStage(net, store)
	t.Cleanup(st.Close)
	return s.WithStage(st)
}

// checkSentBy checks that every transaction sent recovers addr.
func checkSentBy(t *testing.T, s *Sender, chain *fakeChain) {
	t.Helper()
	for _, tx := range chain.sent {
		from, err := types.Sender(types.LatestSignerForChainID(big.NewInt(1337)), tx)
		if err != nil || from != s.account.Address {
			t.Fatalf("nonce %d sent by %s, %v; want %s", tx.Nonce(), from.Hex(), err, s.account.Address.Hex())
		}
	}
}

// TestSenderKMSSignsBatchConcurrently: a batch of a KMS account is signed
// with several Sign calls in flight (within the bound), so 64 signatures
// of 20 ms each take far less than 64 × 20 ms; nonces are gapless in
// order.
func TestSenderKMSSignsBatchConcurrently(t *testing.T) {
	chain, store, f := &fakeChain{nonce: 7}, newMemStore(), kmsfake.New()
	s := newKMSTestSender(t, chain, store, 64, f, keystore.KMSOptions{Concurrency: 16})
	f.Delay = 20 * time.Millisecond
	ids := make([]string, 64)
	for i := range ids {
		ids[i] = string(rune('A'+i/26)) + string(rune('a'+i%26))
	}
	queue(t, s, ids...)
	began := time.Now()
	n, err := s.Pump(context.Background())
	took := time.Since(began)
	if err != nil || n != 64 {
		t.Fatalf("Pump = %d, %v", n, err)
	}
	for i, id := range ids {
		if got := store.txs[id]; got.Nonce == nil || *got.Nonce != uint64(7+i) || got.Status != StatusSubmitted {
			t.Fatalf("%s: nonce %v status %s, want %d submitted", id, got.Nonce, got.Status, 7+i)
		}
	}
	checkSentBy(t, s, chain)
	_, most := f.Stats()
	if most < 2 || most > 16 {
		t.Fatalf("%d Sign calls in flight at most, want 2..16", most)
	}
	if took > 64*20*time.Millisecond/2 {
		t.Fatalf("64 signatures of 20 ms took %s: not concurrent", took)
	}
	t.Logf("64 signatures of 20 ms, 16 at once: %s, %d in flight at most", took, most)
}

// TestSenderKMSDeniedFailsWithCode: KMS refusing the key fails the
// transactions with key_access_denied before they take a nonce; once KMS
// signs again, the next transaction takes the nonce the failed ones did
// not (no gap).
func TestSenderKMSDeniedFailsWithCode(t *testing.T) {
	chain, store, f := &fakeChain{nonce: 7}, newMemStore(), kmsfake.New()
	s := newKMSTestSender(t, chain, store, 16, f, keystore.KMSOptions{Concurrency: 4})
	f.SetFault(func(int) error {
		return &keystore.KMSError{Fault: keystore.KMSDenied, Op: "Sign", Err: errors.New("AccessDeniedException: not authorized to perform kms:Sign")}
	})
	queue(t, s, "a", "b", "c")
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatalf("Pump: %v", err)
	}
	for _, id := range []string{"a", "b", "c"} {
		got := store.txs[id]
		if got.Status != StatusFailed || got.Error == nil || got.Error.Code != TxKeyAccessDenied || got.Nonce != nil {
			t.Fatalf("%s: %s %+v nonce %v; want failed with key_access_denied, no nonce", id, got.Status, got.Error, got.Nonce)
		}
	}
	if len(chain.sent) != 0 {
		t.Fatalf("%d sent", len(chain.sent))
	}
	f.SetFault(nil)
	queue(t, s, "d")
	if n, err := s.Pump(context.Background()); err != nil || n != 1 {
		t.Fatalf("Pump = %d, %v", n, err)
	}
	if got := store.txs["d"]; got.Nonce == nil || *got.Nonce != 7 {
		t.Fatalf("d: nonce %v, want 7", got.Nonce)
	}
	checkSentBy(t, s, chain)
}

// TestSenderKMSOutageHoldsAccount: while KMS does not answer (or
// throttles beyond the retries) the pump fails, so the account backs off;
// what signed before goes out, the rest stays queued without a nonce; once
// KMS answers every transaction goes, each once, with gapless nonces.
func TestSenderKMSOutageHoldsAccount(t *testing.T) {
	for _, fault := range []keystore.KMSFault{keystore.KMSUnavailable, keystore.KMSThrottled} {
		t.Run(fault.String(), func(t *testing.T) {
			chain, store, f := &fakeChain{nonce: 7}, newMemStore(), kmsfake.New()
			s := newKMSTestSender(t, chain, store, 16, f, keystore.KMSOptions{Concurrency: 1, Retries: 2, Backoff: time.Millisecond})
			f.SetFault(func(n int) error {
				if n > 3 { // KMS stops answering after 3 signatures
					return &keystore.KMSError{Fault: fault, Op: "Sign", Err: errors.New("no answer")}
				}
				return nil
			})
			queue(t, s, "a", "b", "c", "d", "e", "f")
			n, err := s.Pump(context.Background())
			if err == nil || keystore.KMSFaultOf(err) != fault {
				t.Fatalf("Pump = %d, %v; want a %s KMS error (the account backs off)", n, err, fault)
			}
			if n != 3 || len(chain.sent) != 3 {
				t.Fatalf("Pump = %d, %d sent; want the 3 signed before the outage", n, len(chain.sent))
			}
			for _, id := range []string{"d", "e", "f"} {
				if got := store.txs[id]; got.Status != StatusNew || got.Nonce != nil || got.Error != nil {
					t.Fatalf("%s: %s nonce %v %+v; want queued, no nonce", id, got.Status, got.Nonce, got.Error)
				}
			}
			if _, err := s.Pump(context.Background()); err == nil {
				t.Fatal("Pump succeeded while KMS is down")
			}
			f.SetFault(nil)
			if n, err := s.Pump(context.Background()); err != nil || n != 3 {
				t.Fatalf("Pump after the outage = %d, %v", n, err)
			}
			for i, id := range []string{"a", "b", "c", "d", "e", "f"} {
				if got := store.txs[id]; got.Nonce == nil || *got.Nonce != uint64(7+i) || got.Status != StatusSubmitted {
					t.Fatalf("%s: nonce %v status %s, want %d submitted", id, got.Nonce, got.Status, 7+i)
				}
			}
			if len(chain.sent) != 6 {
				t.Fatalf("%d broadcasts, want 6 (each once)", len(chain.sent))
			}
			checkSentBy(t, s, chain)
		})
	}
}

// kmsAccount returns an account whose key is a new key of k.
func kmsAccount(t *testing.T, k *keystore.KMSSigner) *Account {
	t.Helper()
	a, err := NewKMSAccount(context.Background(), k, "test")
	if err != nil {
		t.Fatal(err)
	}
	a.ID = "acct"
	return a
}

var discardLog = slog.New(slog.NewTextHandler(io.Discard, nil))
