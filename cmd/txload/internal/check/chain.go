package check

import (
	"strings"
)

// OnChain is what the node returns for one transaction hash: the
// transaction (eth_getTransactionByHash) and its receipt
// (eth_getTransactionReceipt).
type OnChain struct {
	// Err says why the transaction or its receipt could not be read (an
	// error answer, an undecodable result); "not found" is not an error.
	Err string
	// Tx reports whether the node knows the transaction; Sender and Nonce
	// are set with it.
	Tx bool
	// Sender is the address recovered from the signature.
	Sender string
	Nonce  uint64
	// Receipt reports whether the node has a receipt; Status, BlockNumber
	// and BlockHash are set with it.
	Receipt     bool
	Status      uint64
	BlockNumber uint64
	BlockHash   string
}

// Chain adds to v the check of every completed transfer against the node
// (onChain, by transaction hash as the service reported it): the node knows
// the transaction and has a receipt with status 1, in the block the service
// reports; the recovered sender is the account the transfer was sent from
// (Sent.Sender, else the service's from); the nonce is the service's; and
// per sender the nonces on chain are contiguous and unique. It recomputes
// v.OK, which fails on any mismatch.
func (v *Verdict) Chain(sent []Sent, observed map[string]Observed, onChain map[string]OnChain) {
	v.ChainCounts = &ChainCounts{}
	nonces := map[string][]uint64{}
	seen := map[string]bool{}
	for _, s := range sent {
		o, ok := observed[s.ID]
		if seen[s.ID] || !ok || o.Status != "completed" {
			continue
		}
		seen[s.ID] = true
		v.ChainChecked++
		if o.Hash == "" {
			v.ReceiptMissing++
			v.problem("transaction %s: completed without a transaction hash", s.ID)
			continue
		}
		c, ok := onChain[o.Hash]
		switch {
		case !ok:
			v.ChainReadErrors++
			v.problem("transaction %s: %s not read from the node", s.ID, o.Hash)
			continue
		case c.Err != "":
			v.ChainReadErrors++
			v.problem("transaction %s: reading %s from the node: %s", s.ID, o.Hash, c.Err)
			continue
		}
		if !c.Tx && !c.Receipt {
			v.TxMissing++
			v.ReceiptMissing++
			v.problem("transaction %s: %s unknown to the node (no transaction, no receipt)", s.ID, o.Hash)
			continue
		}
		if !c.Tx {
			v.TxMissing++
			v.problem("transaction %s: %s has a receipt but the node does not return the transaction", s.ID, o.Hash)
		} else {
			want := s.Sender
			if want == "" {
				want = o.From
			}
			if !sameHex(c.Sender, want) {
				v.SenderMismatch++
				v.problem("transaction %s: %s signed by %s, sent from %s", s.ID, o.Hash, c.Sender, want)
			}
			switch {
			case o.Nonce == nil:
				v.NonceMismatch++
				v.problem("transaction %s: nonce %d on chain, none reported", s.ID, c.Nonce)
			case *o.Nonce != c.Nonce:
				v.NonceMismatch++
				v.problem("transaction %s: nonce %d on chain, %d reported", s.ID, c.Nonce, *o.Nonce)
			}
			nonces[strings.ToLower(c.Sender)] = append(nonces[strings.ToLower(c.Sender)], c.Nonce)
		}
		if !c.Receipt {
			v.ReceiptMissing++
			v.problem("transaction %s: %s has no receipt", s.ID, o.Hash)
			continue
		}
		if c.Status != 1 {
			v.ReceiptFailed++
			v.problem("transaction %s: %s has receipt status %d", s.ID, o.Hash, c.Status)
		}
		switch {
		case o.BlockNumber == nil:
			v.BlockMismatch++
			v.problem("transaction %s: mined in block %d, none reported", s.ID, c.BlockNumber)
		case *o.BlockNumber != c.BlockNumber:
			v.BlockMismatch++
			v.problem("transaction %s: mined in block %d, %d reported", s.ID, c.BlockNumber, *o.BlockNumber)
		case o.BlockHash != "" && !sameHex(o.BlockHash, c.BlockHash):
			v.BlockMismatch++
			v.problem("transaction %s: mined in block %s, %s reported", s.ID, c.BlockHash, o.BlockHash)
		}
	}
	v.ChainSenders = len(nonces)
	for _, from := range sortedKeys(nonces) {
		gaps, dups := Contiguity(nonces[from])
		if gaps > 0 || dups > 0 {
			v.problem("sender %s on chain: %d nonce gaps, %d duplicates", from, gaps, dups)
		}
		v.ChainNonceGaps += gaps
		v.ChainNonceDuplicates += dups
	}
	v.settle()
}

// ChainProblems is the number of mismatches the chain check found (0 when
// it did not run).
func (v *Verdict) ChainProblems() int {
	if v.ChainCounts == nil {
		return 0
	}
	return v.ChainReadErrors + v.TxMissing + v.ReceiptMissing + v.ReceiptFailed + v.SenderMismatch +
		v.NonceMismatch + v.BlockMismatch + v.ChainNonceGaps + v.ChainNonceDuplicates
}

// sameHex compares two hex strings (addresses, hashes) ignoring case.
func sameHex(a, b string) bool {
	return a != "" && strings.EqualFold(strings.TrimPrefix(strings.ToLower(a), "0x"), strings.TrimPrefix(strings.ToLower(b), "0x"))
}
