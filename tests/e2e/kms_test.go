package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/internal/hardhattest"
	"github.com/txengine/txengine/internal/kmstest"
)

// kmsEnv turns KMS custody on against srv (credentials from the AWS SDK's
// standard chain: the environment).
func kmsEnv(srv *kmstest.Server) []string {
	return append(srv.Env(), "TXENGINE_KMS_ENABLED=true", "TXENGINE_KMS_ENDPOINT="+srv.Endpoint, "TXENGINE_KMS_REGION="+kmstest.Region)
}

// kmsChain is a chain the KMS tests run on.
type kmsChain struct {
	name, network string
	// start starts the node and returns the service's environment for it
	// and the node's JSON-RPC URL.
	start func(t *testing.T) (env []string, rpcURL string)
}

func kmsChains() []kmsChain {
	return []kmsChain{
		{name: "geth", network: "geth", start: func(t *testing.T) ([]string, string) {
			node := gethtest.Start(t)
			return gethEnv(node), node.HTTPURL
		}},
		{name: "hardhat", network: "hardhat", start: func(t *testing.T) ([]string, string) {
			node := hardhattest.Start(t)
			return hardhatEnv(node), node.HTTPURL
		}},
	}
}

// kmsSetup starts local-kms, the chain and the service (the operator's
// token deployed to its default account), creates an account whose key is
// a new KMS key, gives it tokens and waits until the faucet has paid its
// gas. It returns the service, the token id, the KMS account and a client
// of the node.
func kmsSetup(t *testing.T, c kmsChain, tokens string, args ...string) (*service, string, map[string]any, *ethclient.Client, []string, string) {
	t.Helper()
	s, tok, acct, node, env, dir, _ := kmsSetupOn(t, kmstest.Start(t), c, tokens, args...)
	return s, tok, acct, node, env, dir
}

// kmsSetupOn is kmsSetup on the local-kms srv, which it returns too.
func kmsSetupOn(t *testing.T, srv *kmstest.Server, c kmsChain, tokens string, args ...string) (*service, string, map[string]any, *ethclient.Client, []string, string, *kmstest.Server) {
	t.Helper()
	chainEnv, rpcURL := c.start(t)
	dir := t.TempDir()
	deployToken(t, dir, chainEnv, c.network, "Test Token", "TT", "1000000000000000000000000")
	env := append(chainEnv, kmsEnv(srv)...)
	s := startServiceArgs(t, dir, args, env...)
	tok := operatorToken(t, s, c.network)["id"].(string)

	acct := s.must(201, "POST", "/accounts", s.Token, map[string]any{"custody": map[string]any{"type": "kms"}}).(map[string]any)
	custody := acct["custody"].(map[string]any)
	if custody["type"] != "kms" || !strings.HasPrefix(custody["keyId"].(string), "arn:aws:kms:") {
		t.Fatalf("custody %v", custody)
	}
	fund := s.must(202, "POST", "/tokens/"+tok+"/transfers", s.Token, map[string]any{"to": acct["address"], "value": tokens}).(map[string]any)
	if done := s.waitTerminal(fund["id"].(string), s.Token, 60*time.Second); done["status"] != "completed" {
		t.Fatalf("funding transfer ended %v: %v", done["status"], done["error"])
	}
	node, err := ethclient.Dial(rpcURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Close)
	addr := common.HexToAddress(acct["address"].(string))
	eventually(t, 60*time.Second, "the faucet pays the KMS account's gas", func() bool {
		bal, err := node.BalanceAt(context.Background(), addr, nil)
		return err == nil && bal.Sign() > 0
	})
	return s, tok, acct, node, env, dir, srv
}

// TestKMSAccountTransfer: on geth and on Hardhat, a token transfer from an
// account whose key is in KMS (local-kms) completes; the node says the
// transaction is from the account's address, so KMS signed it.
func TestKMSAccountTransfer(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary, local-kms and a node")
	}
	for _, c := range kmsChains() {
		t.Run(c.name, func(t *testing.T) {
			s, tok, acct, node, _, _ := kmsSetup(t, c, "1000000")
			to := randomAddress()
			created := s.must(202, "POST", "/tokens/"+tok+"/transfers", s.Token, map[string]any{"to": to, "value": "1234", "from": acct["id"]}).(map[string]any)
			done := s.waitTerminal(created["id"].(string), s.Token, 60*time.Second)
			if done["status"] != "completed" {
				t.Fatalf("transfer from the KMS account ended %v: %v", done["status"], done["error"])
			}
			hash := common.HexToHash(done["transactionHash"].(string))
			receipt, err := node.TransactionReceipt(t.Context(), hash)
			if err != nil || receipt.Status != 1 {
				t.Fatalf("node's receipt of %s: %+v, %v", hash.Hex(), receipt, err)
			}
			tx, _, err := node.TransactionByHash(t.Context(), hash)
			if err != nil {
				t.Fatal(err)
			}
			from, err := node.TransactionSender(t.Context(), tx, receipt.BlockHash, receipt.TransactionIndex)
			if err != nil || !strings.EqualFold(from.Hex(), acct["address"].(string)) {
				t.Fatalf("the node says %s sent it (%v), want the KMS account %s", from.Hex(), err, acct["address"])
			}
			if got := s.must(200, "GET", "/tokens/"+tok+"/balances/"+strings.ToLower(to), s.Token, nil); got != "1234" {
				t.Fatalf("recipient holds %v", got)
			}
		})
	}
}

func randomAddress() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return common.BytesToAddress(b).Hex()
}

// TestKMSKillDuringBurst: a burst of transfers from a KMS account on geth,
// the service killed (SIGKILL) while it is being signed and mined, started
// again on the same data: every accepted transfer completes once, with
// nonces 0..n-1, and the node agrees: the account's nonce is n and every
// recipient holds exactly its amount (nothing lost, nothing sent twice).
func TestKMSKillDuringBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary, local-kms and geth")
	}
	// An in-flight window of 8: the burst drains over 10 blocks, and the
	// kill lands in the middle of it.
	cfg := filepath.Join(t.TempDir(), "txengine.yaml")
	if err := os.WriteFile(cfg, []byte("engine:\n  inFlight: 8\n  minInFlight: 8\n  maxInFlight: 8\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", cfg}
	s, tok, acct, node, env, dir := kmsSetup(t, kmsChains()[0], "100000000", args...)
	accepted := sendBurst(t, s, tok, 80, map[string]any{"from": acct["id"]})
	if t.Failed() {
		return
	}
	// Let part of the burst reach the chain, then kill.
	addr := common.HexToAddress(acct["address"].(string))
	eventually(t, 60*time.Second, "16 transfers of the burst are mined", func() bool {
		mined, err := node.NonceAt(t.Context(), addr, nil)
		return err == nil && mined >= 16
	})
	s.kill()
	atKill, err := node.NonceAt(t.Context(), addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if atKill >= uint64(len(accepted)) {
		t.Fatalf("the whole burst was mined before the kill")
	}
	t.Logf("killed with %d of %d transfers mined", atKill, len(accepted))

	s2 := startServiceArgs(t, dir, args, env...)
	checkBurstCompletedOnce(t, s2, tok, accepted, 120*time.Second)
	chainNonce, err := node.NonceAt(t.Context(), addr, nil)
	if err != nil || chainNonce != uint64(len(accepted)) {
		t.Fatalf("the node's nonce of the KMS account is %d (%v), want %d: a transaction was sent twice or lost", chainNonce, err, len(accepted))
	}
}

// TestKMSOutageHoldsAccount: while local-kms is down, the transfers of a
// KMS account on geth stay queued (no nonce taken, none failed); once it
// is back every one completes, once, with nonces 0..n-1 (the node's nonce
// is n).
func TestKMSOutageHoldsAccount(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary, local-kms and geth")
	}
	srv := kmstest.Start(t)
	s, tok, acct, node, _, _, _ := kmsSetupOn(t, srv, kmsChains()[0], "1000000")
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	const n = 20
	var ids []string
	for i := range n {
		r := s.must(202, "POST", "/tokens/"+tok+"/transfers", s.Token, map[string]any{"to": randomAddress(), "value": fmt.Sprint(100 + i), "from": acct["id"]}).(map[string]any)
		ids = append(ids, r["id"].(string))
	}
	time.Sleep(4 * time.Second) // several pumps and blocks with KMS down
	for _, id := range ids {
		tx := s.must(200, "GET", "/transactions/"+id, s.Token, nil).(map[string]any)
		if tx["status"] != "new" || tx["nonce"] != nil {
			t.Fatalf("with KMS down, transfer %s is %v (nonce %v, error %v); want new without a nonce", id, tx["status"], tx["nonce"], tx["error"])
		}
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	nonces := map[float64]bool{}
	for _, id := range ids {
		tx := s.waitTerminal(id, s.Token, 120*time.Second)
		if tx["status"] != "completed" {
			t.Fatalf("transfer %s ended %v: %v", id, tx["status"], tx["error"])
		}
		nonces[tx["nonce"].(float64)] = true
	}
	// The funding transfer came from the operator's account: the KMS
	// account's nonces are 0..n-1.
	for i := range n {
		if !nonces[float64(i)] {
			t.Fatalf("nonce %d missing: %v", i, nonces)
		}
	}
	got, err := node.NonceAt(t.Context(), common.HexToAddress(acct["address"].(string)), nil)
	if err != nil || got != n {
		t.Fatalf("the node's nonce of the KMS account is %d (%v), want %d", got, err, n)
	}
}
