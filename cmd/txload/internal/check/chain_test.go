package check

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

// chainFixture is fixture() with the senders' addresses, the blocks the
// service reports and a node that agrees with all of it.
func chainFixture() ([]Sent, map[string]Observed, map[string]*big.Int, map[string]OnChain) {
	sent, obs, bal := fixture()
	addr := map[string]string{"S1": "0xAaAa000000000000000000000000000000000001", "S2": "0xBbBb000000000000000000000000000000000002"}
	for i := range sent {
		sent[i].Sender = addr[sent[i].From]
	}
	blocks := map[string]uint64{"a": 7, "b": 7, "c": 8, "d": 8}
	chain := map[string]OnChain{}
	for id, o := range obs {
		o.BlockNumber = u(blocks[id])
		o.BlockHash = "0xB" + string(rune('0'+blocks[id]))
		obs[id] = o
		chain[o.Hash] = OnChain{Tx: true, Sender: strings.ToLower(addr[o.From]), Nonce: *o.Nonce,
			Receipt: true, Status: 1, BlockNumber: blocks[id], BlockHash: "0xb" + string(rune('0'+blocks[id]))}
	}
	return sent, obs, bal, chain
}

func TestChainAllGood(t *testing.T) {
	sent, obs, bal, chain := chainFixture()
	v := Run(sent, obs, bal)
	v.Chain(sent, obs, chain)
	if !v.OK || v.ChainCounts == nil || v.ChainChecked != 4 || v.ChainSenders != 2 || v.ChainProblems() != 0 || len(v.Problems) != 0 {
		t.Fatalf("verdict = %+v", v)
	}
}

func TestChainDetectsEachProblem(t *testing.T) {
	edit := func(m map[string]OnChain, hash string, f func(*OnChain)) {
		c := m[hash]
		f(&c)
		m[hash] = c
	}
	cases := map[string]struct {
		mutate func([]Sent, map[string]Observed, map[string]OnChain)
		count  func(Verdict) int
		want   int
		text   string
	}{
		"no receipt": {func(_ []Sent, _ map[string]Observed, c map[string]OnChain) {
			edit(c, "h2", func(x *OnChain) { *x = OnChain{Tx: true, Sender: x.Sender, Nonce: x.Nonce} })
		}, func(v Verdict) int { return v.ReceiptMissing }, 1, "h2 has no receipt"},
		"no hash": {func(_ []Sent, o map[string]Observed, _ map[string]OnChain) {
			x := o["b"]
			x.Hash = ""
			o["b"] = x
		}, func(v Verdict) int { return v.ReceiptMissing }, 1, "completed without a transaction hash"},
		"reverted": {func(_ []Sent, _ map[string]Observed, c map[string]OnChain) {
			edit(c, "h4", func(x *OnChain) { x.Status = 0 })
		}, func(v Verdict) int { return v.ReceiptFailed }, 1, "receipt status 0"},
		"unknown hash": {func(_ []Sent, _ map[string]Observed, c map[string]OnChain) {
			c["h1"] = OnChain{}
		}, func(v Verdict) int { return v.TxMissing + v.ReceiptMissing }, 2, "h1 unknown to the node (no transaction, no receipt)"},
		"receipt without transaction": {func(_ []Sent, _ map[string]Observed, c map[string]OnChain) {
			edit(c, "h1", func(x *OnChain) { x.Tx, x.Sender, x.Nonce = false, "", 0 })
		}, func(v Verdict) int { return v.TxMissing }, 1, "h1 has a receipt but the node does not return the transaction"},
		"read error": {func(_ []Sent, _ map[string]Observed, c map[string]OnChain) {
			edit(c, "h3", func(x *OnChain) { x.Err = "boom" })
		}, func(v Verdict) int { return v.ChainReadErrors }, 1, "reading h3 from the node: boom"},
		"not read": {func(_ []Sent, _ map[string]Observed, c map[string]OnChain) {
			delete(c, "h3")
		}, func(v Verdict) int { return v.ChainReadErrors }, 1, "h3 not read"},
		"other signer": {func(_ []Sent, _ map[string]Observed, c map[string]OnChain) {
			edit(c, "h4", func(x *OnChain) { x.Sender = "0xcccc000000000000000000000000000000000003" })
		}, func(v Verdict) int { return v.SenderMismatch }, 1, "signed by 0xcccc"},
		"other nonce": {func(_ []Sent, _ map[string]Observed, c map[string]OnChain) {
			edit(c, "h3", func(x *OnChain) { x.Nonce = 13 })
		}, func(v Verdict) int { return v.NonceMismatch + v.ChainNonceGaps }, 2, "nonce 13 on chain, 12 reported"},
		"duplicate nonce on chain": {func(_ []Sent, _ map[string]Observed, c map[string]OnChain) {
			edit(c, "h2", func(x *OnChain) { x.Nonce = 10 })
		}, func(v Verdict) int { return v.ChainNonceDuplicates + v.ChainNonceGaps }, 2, "on chain: 1 nonce gaps, 1 duplicates"},
		"no nonce reported": {func(_ []Sent, o map[string]Observed, _ map[string]OnChain) {
			x := o["d"]
			x.Nonce = nil
			o["d"] = x
		}, func(v Verdict) int { return v.NonceMismatch }, 1, "none reported"},
		"other block number": {func(_ []Sent, _ map[string]Observed, c map[string]OnChain) {
			edit(c, "h1", func(x *OnChain) { x.BlockNumber = 9 })
		}, func(v Verdict) int { return v.BlockMismatch }, 1, "mined in block 9, 7 reported"},
		"other block hash": {func(_ []Sent, _ map[string]Observed, c map[string]OnChain) {
			edit(c, "h1", func(x *OnChain) { x.BlockHash = "0xb9" })
		}, func(v Verdict) int { return v.BlockMismatch }, 1, "mined in block 0xb9, 0xB7 reported"},
		"no block reported": {func(_ []Sent, o map[string]Observed, _ map[string]OnChain) {
			x := o["a"]
			x.BlockNumber = nil
			o["a"] = x
		}, func(v Verdict) int { return v.BlockMismatch }, 1, "mined in block 7, none reported"},
		"sender from the service when the tool does not know it": {func(s []Sent, o map[string]Observed, _ map[string]OnChain) {
			s[3].Sender = ""
			x := o["d"]
			x.From = "0xdddd000000000000000000000000000000000004"
			o["d"] = x
		}, func(v Verdict) int { return v.SenderMismatch }, 1, "sent from 0xdddd"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			sent, obs, bal, chain := chainFixture()
			c.mutate(sent, obs, chain)
			v := Run(sent, obs, bal)
			v.Chain(sent, obs, chain)
			if v.OK || c.count(v) != c.want || v.ChainProblems() < c.want {
				t.Fatalf("count = %d, want %d; verdict = %+v", c.count(v), c.want, v)
			}
			if !strings.Contains(strings.Join(v.Problems, "\n"), c.text) {
				t.Errorf("problems %q lack %q", v.Problems, c.text)
			}
		})
	}
}

// TestChainSkipsUnfinished: only completed transfers are looked up, so a
// failed one needs no receipt (Run already fails the verdict for it).
func TestChainSkipsUnfinished(t *testing.T) {
	sent, obs, bal, chain := chainFixture()
	obs["d"] = Observed{Status: "failed", From: "S2", ErrorCode: "reverted"}
	delete(chain, "h4")
	bal["R2"] = big.NewInt(7)
	v := Run(sent, obs, bal)
	v.Chain(sent, obs, chain)
	if v.ChainChecked != 3 || v.ChainProblems() != 0 || v.OK || v.Failed != 1 {
		t.Fatalf("verdict = %+v", v)
	}
}

func TestSameHex(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"0xAB", "0xab", true}, {"ab", "0xAB", true}, {"0xab", "0xac", false}, {"", "", false}, {"0xab", "", false}} {
		if got := sameHex(c.a, c.b); got != c.want {
			t.Errorf("sameHex(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// TestChainJSON: the chain counts appear in JSON, zeros included, only when
// the node was read.
func TestChainJSON(t *testing.T) {
	sent, obs, bal, chain := chainFixture()
	v := Run(sent, obs, bal)
	raw, _ := json.Marshal(v)
	if strings.Contains(string(raw), "chainChecked") || strings.Contains(string(raw), "receiptMissing") {
		t.Errorf("chain counts without a chain check: %s", raw)
	}
	v.Chain(sent, obs, chain)
	raw, _ = json.Marshal(v)
	for _, want := range []string{`"chainChecked":4`, `"receiptMissing":0`, `"senderMismatch":0`, `"chainNonceGaps":0`, `"ok":true`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("JSON lacks %s: %s", want, raw)
		}
	}
	var back Verdict
	if err := json.Unmarshal(raw, &back); err != nil || back.ChainCounts == nil || back.ChainChecked != 4 {
		t.Errorf("decoded %+v, %v", back, err)
	}
}
