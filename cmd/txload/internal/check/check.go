// Package check verifies a load run after the fact: every accepted
// transaction completed exactly once, the nonces of each sender are
// contiguous and unique, and the recipients' balances add up to what was
// sent to them (Run, from the service's data); and, with the node's data,
// that each completed transaction is on chain as the service reports it
// (Verdict.Chain).
package check

import (
	"fmt"
	"math/big"
	"sort"
)

// maxProblems bounds the problems a Verdict lists (the counts stay exact).
const maxProblems = 20

// Sent is one transfer the API accepted (202).
type Sent struct {
	ID   string
	From string
	// Sender is the address of the account the transfer was sent from, as
	// the tool chose it ("" when unknown; Verdict.Chain then compares with
	// the service's from).
	Sender string
	To     string
	Value  *big.Int
}

// Observed is what the API reports about a transaction after the run.
type Observed struct {
	Status    string
	From      string
	Nonce     *uint64
	Hash      string
	ErrorCode string
	// BlockNumber and BlockHash are the block the service reports the
	// transaction mined in (nil, "": not reported).
	BlockNumber *uint64
	BlockHash   string
}

// Verdict is the outcome of the check.
type Verdict struct {
	OK                bool `json:"ok"`
	Accepted          int  `json:"accepted"`
	Completed         int  `json:"completed"`
	Failed            int  `json:"failed"`
	NotTerminal       int  `json:"notTerminal"`
	Missing           int  `json:"missing"`
	Senders           int  `json:"senders"`
	NonceGaps         int  `json:"nonceGaps"`
	NonceDuplicates   int  `json:"nonceDuplicates"`
	HashDuplicates    int  `json:"hashDuplicates"`
	Recipients        int  `json:"recipients"`
	BalanceMismatches int  `json:"balanceMismatches"`
	// PoolOutsiders counts transfers sent through a pool whose sender is
	// not one of its members; OrderViolations the transfers of an
	// ordering key that completed before one requested before them
	// (txload's pool checks, AddProblem).
	PoolOutsiders   int `json:"poolOutsiders,omitempty"`
	OrderViolations int `json:"orderViolations,omitempty"`

	// ChainCounts is the check against the node (Verdict.Chain); nil, and
	// absent from JSON, when the node was not read.
	*ChainCounts

	Problems []string `json:"problems,omitempty"`
}

// ChainCounts are the counts of the check against the node.
type ChainCounts struct {
	// ChainChecked is the number of completed transfers looked up on chain.
	ChainChecked int `json:"chainChecked"`
	// ChainReadErrors counts transfers whose transaction or receipt could
	// not be read (an error answer of the node, not "not found").
	ChainReadErrors int `json:"chainReadErrors"`
	// TxMissing counts hashes the node does not know.
	TxMissing int `json:"txMissing"`
	// ReceiptMissing counts completed transfers without a receipt (or
	// without a hash); ReceiptFailed those whose receipt status is not 1.
	ReceiptMissing int `json:"receiptMissing"`
	ReceiptFailed  int `json:"receiptFailed"`
	// SenderMismatch counts transactions whose recovered sender is not the
	// sending account.
	SenderMismatch int `json:"senderMismatch"`
	// NonceMismatch counts transactions whose nonce on chain is not the
	// one the service reports.
	NonceMismatch int `json:"nonceMismatch"`
	// BlockMismatch counts receipts in another block (number or hash) than
	// the service reports.
	BlockMismatch int `json:"blockMismatch"`
	// ChainSenders, ChainNonceGaps and ChainNonceDuplicates are the nonce
	// check per recovered sender, from the transactions on chain.
	ChainSenders         int `json:"chainSenders"`
	ChainNonceGaps       int `json:"chainNonceGaps"`
	ChainNonceDuplicates int `json:"chainNonceDuplicates"`
}

// settle sets OK from the counts.
func (v *Verdict) settle() {
	v.OK = v.Accepted > 0 && v.Completed == v.Accepted && v.NonceGaps == 0 && v.NonceDuplicates == 0 &&
		v.HashDuplicates == 0 && v.BalanceMismatches == 0 && v.ChainProblems() == 0 &&
		v.PoolOutsiders == 0 && v.OrderViolations == 0
}

// Settle sets OK from the counts again, after checks of the caller's own
// (AddProblem).
func (v *Verdict) Settle() { v.settle() }

// AddProblem counts one problem of a check of the caller's own in *count
// (a field of v) and lists it; Settle then sets OK.
func (v *Verdict) AddProblem(count *int, format string, args ...any) {
	*count++
	v.problem(format, args...)
}

func (v *Verdict) problem(format string, args ...any) {
	if len(v.Problems) < maxProblems {
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
}

// Run checks sent against observed (by transaction id) and balances (by
// recipient address, read after every transaction ended; recipients are
// assumed to start at zero). A recipient absent from balances counts as a
// mismatch; balances may be nil to skip the balance check.
func Run(sent []Sent, observed map[string]Observed, balances map[string]*big.Int) Verdict {
	v := Verdict{Accepted: len(sent)}
	nonces := map[string][]uint64{}
	hashes := map[string]string{}
	expect := map[string]*big.Int{}
	seen := map[string]bool{}
	for _, s := range sent {
		if seen[s.ID] {
			v.problem("transaction %s accepted twice", s.ID)
			v.HashDuplicates++
			continue
		}
		seen[s.ID] = true
		if expect[s.To] == nil {
			expect[s.To] = new(big.Int)
		}
		o, ok := observed[s.ID]
		if !ok {
			v.Missing++
			v.problem("transaction %s: not found", s.ID)
			continue
		}
		switch o.Status {
		case "completed":
			v.Completed++
			expect[s.To].Add(expect[s.To], s.Value)
			if o.Nonce == nil {
				v.problem("transaction %s: completed without a nonce", s.ID)
				v.NonceGaps++
			} else {
				nonces[s.From] = append(nonces[s.From], *o.Nonce)
			}
			if o.Hash != "" {
				if other, dup := hashes[o.Hash]; dup {
					v.HashDuplicates++
					v.problem("transactions %s and %s share hash %s", other, s.ID, o.Hash)
				}
				hashes[o.Hash] = s.ID
			}
		case "failed":
			v.Failed++
			v.problem("transaction %s: failed (%s)", s.ID, o.ErrorCode)
		default:
			v.NotTerminal++
			v.problem("transaction %s: still %s", s.ID, o.Status)
		}
		if o.From != "" && s.From != "" && o.From != s.From {
			v.problem("transaction %s: sent from %s, accepted from %s", s.ID, o.From, s.From)
		}
	}
	v.Senders = len(nonces)
	for _, from := range sortedKeys(nonces) {
		gaps, dups := Contiguity(nonces[from])
		if gaps > 0 || dups > 0 {
			v.problem("sender %s: %d nonce gaps, %d duplicates", from, gaps, dups)
		}
		v.NonceGaps += gaps
		v.NonceDuplicates += dups
	}
	if balances != nil {
		v.Recipients = len(expect)
		for _, to := range sortedKeys(expect) {
			got, ok := balances[to]
			if !ok || got.Cmp(expect[to]) != 0 {
				v.BalanceMismatches++
				v.problem("recipient %s: balance %v, want %v", to, got, expect[to])
			}
		}
	}
	v.settle()
	return v
}

// Contiguity sorts nonces in place and returns the number of missing values
// between the smallest and the largest (gaps) and of repeated values
// (duplicates).
func Contiguity(nonces []uint64) (gaps, duplicates int) {
	sort.Slice(nonces, func(i, j int) bool { return nonces[i] < nonces[j] })
	for i := 1; i < len(nonces); i++ {
		switch d := nonces[i] - nonces[i-1]; {
		case d == 0:
			duplicates++
		case d > 1:
			gaps += int(d - 1)
		}
	}
	return gaps, duplicates
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
