package cluster

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	_ "github.com/lib/pq" // the database check's driver

	"github.com/txengine/txengine/internal/gethtest"
)

// txRow is a transaction as GET /transactions lists it.
type txRow struct {
	ID              string         `json:"id"`
	Status          string         `json:"status"`
	From            string         `json:"from"`
	Nonce           *uint64        `json:"nonce"`
	TransactionHash string         `json:"transactionHash"`
	BlockNumber     *uint64        `json:"blockNumber"`
	Parameters      []any          `json:"parameters"`
	Error           map[string]any `json:"error"`
}

// to is the transfer's recipient, lower case.
func (r txRow) to() string {
	if len(r.Parameters) == 0 {
		return ""
	}
	return lower(fmt.Sprint(r.Parameters[0]))
}

// listTransfers lists every transaction of the test's token through a
// running node (page by page, 1000 a page).
func (s *stack) listTransfers() ([]txRow, error) {
	var last error
	for _, n := range s.nodes {
		if !n.running() {
			continue
		}
		rows, err := n.listTransfers(s.token, s.tokenID)
		if err == nil {
			return rows, nil
		}
		last = err
	}
	return nil, fmt.Errorf("no running node listed the transactions: %v", last)
}

func (n *node) listTransfers(token, tokenID string) ([]txRow, error) {
	var out []txRow
	cursor := ""
	for {
		path := "/transactions?limit=1000&contractId=" + tokenID
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Data []txRow `json:"data"`
			Next string  `json:"next"`
		}
		r, err := n.get(path, token)
		if err != nil {
			return nil, err
		}
		if r.Status != 200 {
			return nil, fmt.Errorf("%s GET %s: %d %s", n.name, path, r.Status, r.Raw)
		}
		if err := jsonUnmarshal(r.Raw, &page); err != nil {
			return nil, fmt.Errorf("%s GET %s: %w", n.name, path, err)
		}
		out = append(out, page.Data...)
		if page.Next == "" {
			return out, nil
		}
		cursor = page.Next
	}
}

// waitDrained waits until every accepted job's transaction is listed and
// every listed transaction has ended (completed or failed); it returns the
// rows. It logs progress every 15 s.
func (s *stack) waitDrained(jobs []*job, timeout time.Duration) []txRow {
	s.t.Helper()
	began := time.Now()
	lastLog := began
	for {
		rows, err := s.listTransfers()
		if err == nil {
			listed := map[string]bool{}
			open := 0
			for _, r := range rows {
				listed[r.ID] = true
				if r.Status != "completed" && r.Status != "failed" {
					open++
				}
			}
			missing := 0
			for _, j := range jobs {
				if j.accepted() && !listed[j.id] {
					missing++
				}
			}
			if open == 0 && missing == 0 {
				return rows
			}
			if time.Since(lastLog) > 15*time.Second {
				s.t.Logf("draining: %d listed, %d not ended, %d accepted but not listed (%s)", len(rows), open, missing, time.Since(began).Round(time.Second))
				lastLog = time.Now()
			}
			if time.Since(began) > timeout {
				var stuck []string
				for _, r := range rows {
					if r.Status != "completed" && r.Status != "failed" && len(stuck) < 10 {
						stuck = append(stuck, fmt.Sprintf("%s %s from %s nonce %v hash %q", r.ID, r.Status, r.From, derefNonce(r.Nonce), r.TransactionHash))
					}
				}
				s.t.Fatalf("after %s: %d of %d listed transactions not ended, %d accepted ones not listed; not ended (10 at most):\n%s",
					timeout, open, len(rows), missing, strings.Join(stuck, "\n"))
			}
		} else if time.Since(began) > timeout {
			s.t.Fatalf("list the transactions: %v", err)
		}
		time.Sleep(time.Second)
	}
}

// checkExactlyOnce checks the outcome of jobs against the rows of the
// listing, the chain and the database:
//
//   - one row per accepted job, with the id of its 202; no row for a job
//     refused with an answer (an error stores nothing); at most one row for
//     a job whose try failed in transit; no row of no job;
//   - every row completed;
//   - per account, the nonces of its rows are 0..n-1 and its nonce on the
//     chain is n;
//   - the chain's transaction of every recorded hash is from the row's
//     address with the row's nonce, mined successfully in the row's block;
//   - tx_attempts holds one hash per (account, nonce), the row's, and, when
//     minNodes > 1, attempts by at least minNodes nodes.
func (s *stack) checkExactlyOnce(accts []account, jobs []*job, rows []txRow, minNodes int) {
	s.t.Helper()
	t := s.t
	byTo := map[string]*job{}
	for _, j := range jobs {
		byTo[j.to] = j
	}
	seenID := map[string]bool{}
	rowOf := map[*job]txRow{}
	stored := 0
	for _, r := range rows {
		if seenID[r.ID] {
			t.Errorf("transaction %s listed twice", r.ID)
		}
		seenID[r.ID] = true
		j := byTo[r.to()]
		switch {
		case j == nil:
			t.Errorf("transaction %s (to %s) is no transfer of the test", r.ID, r.to())
			continue
		case rowOf[j].ID != "":
			t.Errorf("transfer to %s stored twice: %s and %s", j.to, rowOf[j].ID, r.ID)
			continue
		}
		rowOf[j] = r
		stored++
		if r.Status != "completed" {
			t.Errorf("transaction %s ended %s: %v", r.ID, r.Status, r.Error)
		}
	}
	lostOnes, phantom, inTransit := 0, 0, 0
	for _, j := range jobs {
		r, ok := rowOf[j]
		switch {
		case j.accepted() && !ok:
			lostOnes++
			t.Errorf("accepted transfer %s (to %s, by node%d) was lost: not listed", j.id, j.to, j.by)
		case j.accepted() && r.ID != j.id:
			t.Errorf("accepted transfer %s (to %s) is listed as %s", j.id, j.to, r.ID)
		case !j.accepted() && ok && !j.ambiguous:
			phantom++
			t.Errorf("transfer to %s was refused (%d) but stored as %s", j.to, j.status, r.ID)
		case !j.accepted() && ok:
			inTransit++ // stored by a node that died before it answered: fine, it must complete
		}
	}

	// Per account: nonces 0..n-1, the chain's nonce n.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	addrID := map[string]string{}
	for _, a := range accts {
		addrID[lower(a.address.Hex())] = a.id
	}
	nonces := map[string][]uint64{}
	for _, r := range rowOf {
		if r.Nonce == nil || r.TransactionHash == "" {
			t.Errorf("transaction %s (%s) has no nonce or hash", r.ID, r.Status)
			continue
		}
		nonces[lower(r.From)] = append(nonces[lower(r.From)], *r.Nonce)
	}
	for from, ns := range nonces {
		sort.Slice(ns, func(i, k int) bool { return ns[i] < ns[k] })
		for i, n := range ns {
			if n != uint64(i) {
				t.Errorf("account %s: nonces %v, want 0..%d", from, ns, len(ns)-1)
				break
			}
		}
		onChain, err := s.eth.NonceAt(ctx, common.HexToAddress(from), nil)
		if err != nil {
			t.Fatalf("nonce of %s: %v", from, err)
		}
		if onChain != uint64(len(ns)) {
			t.Errorf("account %s: nonce %d on the chain, %d completed transactions", from, onChain, len(ns))
		}
	}

	// The chain holds every recorded hash, from the right address with the
	// right nonce, mined in the recorded block.
	s.checkChain(ctx, rowOf)

	// What geth accepted: one hash per (account, nonce), the recorded one.
	s.checkGethLog(rowOf)

	// The nodes' records: one broadcast hash per (account, nonce).
	nodes := s.checkAttempts(ctx, rowOf, addrID)
	if minNodes > 1 && len(nodes) < minNodes {
		t.Errorf("tx_attempts rows come from %d node(s) %v, want at least %d (the work was not spread)", len(nodes), nodes, minNodes)
	}
	t.Logf("exactly once: %d jobs, %d accepted, %d stored (%d of them accepted without an answer), %d lost, %d stored though refused; "+
		"%d accounts with contiguous nonces matching the chain; broadcasts per node %v",
		len(jobs), countAccepted(jobs), stored, inTransit, lostOnes, phantom, len(nonces), nodes)
}

// checkChain fetches the transaction and receipt of every row's hash.
func (s *stack) checkChain(ctx context.Context, rowOf map[*job]txRow) {
	t := s.t
	signer := types.LatestSignerForChainID(bigChainID())
	work := make(chan txRow)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for r := range work {
				hash := common.HexToHash(r.TransactionHash)
				tx, pending, err := s.eth.TransactionByHash(ctx, hash)
				if err != nil || pending {
					t.Errorf("transaction %s: hash %s on the chain: pending %v, %v", r.ID, r.TransactionHash, pending, err)
					continue
				}
				from, err := types.Sender(signer, tx)
				if err != nil || lower(from.Hex()) != lower(r.From) || r.Nonce == nil || tx.Nonce() != *r.Nonce {
					t.Errorf("transaction %s: chain has %s from %s nonce %d (%v); recorded from %s nonce %v",
						r.ID, r.TransactionHash, from.Hex(), tx.Nonce(), err, r.From, derefNonce(r.Nonce))
				}
				rc, err := s.eth.TransactionReceipt(ctx, hash)
				if err != nil || rc.Status != types.ReceiptStatusSuccessful || r.BlockNumber == nil || rc.BlockNumber.Uint64() != *r.BlockNumber {
					t.Errorf("transaction %s: receipt of %s: %v (status %v); recorded block %v", r.ID, r.TransactionHash, err, receiptStatus(rc), derefNonce(r.BlockNumber))
				}
			}
		})
	}
	for _, r := range rowOf {
		if r.TransactionHash != "" {
			work <- r
		}
	}
	close(work)
	wg.Wait()
}

// submittedRE matches the line geth logs for every transaction it accepts
// into its pool (eth_sendRawTransaction included).
var submittedRE = regexp.MustCompile(`Submitted transaction\s+hash=(0x[0-9a-fA-F]{64})\s+from=(0x[0-9a-fA-F]{40})\s+nonce=(\d+)`)

// checkGethLog reads geth's log: every transaction geth accepted from the
// rows' accounts must be the row's hash for its nonce, so no (account,
// nonce) ever reached the node with a second hash.
func (s *stack) checkGethLog(rowOf map[*job]txRow) {
	t := s.t
	type key struct {
		from  string
		nonce uint64
	}
	want := map[key]string{}
	for _, r := range rowOf {
		if r.Nonce != nil {
			want[key{lower(r.From), *r.Nonce}] = lower(r.TransactionHash)
		}
	}
	seen := map[key]map[string]bool{}
	for _, m := range submittedRE.FindAllStringSubmatch(s.geth.LogTail(math.MaxInt32), -1) {
		nonce, _ := strconv.ParseUint(m[3], 10, 64)
		k := key{lower(m[2]), nonce}
		if _, ours := want[k]; !ours {
			continue
		}
		if seen[k] == nil {
			seen[k] = map[string]bool{}
		}
		seen[k][lower(m[1])] = true
	}
	if len(want) > 0 && len(seen) == 0 {
		t.Errorf("geth's log shows none of the %d transactions as submitted (its log format changed?)", len(want))
		return
	}
	for k, hash := range want {
		if got := seen[k]; len(got) != 1 || !got[hash] {
			t.Errorf("geth accepted %v from %s with nonce %d, want only %s", keys(got), k.from, k.nonce, hash)
		}
	}
}

// checkAttempts runs the query of docs/cluster.md ("for every (account,
// nonce) exactly one hash was broadcast") on the shared database, checks
// that the one hash of each row's (account, nonce) is the row's, and
// returns how many attempts each node recorded.
func (s *stack) checkAttempts(ctx context.Context, rowOf map[*job]txRow, addrID map[string]string) map[string]int {
	t := s.t
	db, err := sql.Open("postgres", s.dbURL)
	if err != nil {
		t.Fatalf("open the database: %v", err)
	}
	defer db.Close()
	dup, err := db.QueryContext(ctx, `SELECT account_id, nonce FROM tx_attempts GROUP BY account_id, nonce HAVING count(DISTINCT hash) > 1`)
	if err != nil {
		t.Fatalf("tx_attempts query: %v", err)
	}
	for dup.Next() {
		var acct string
		var nonce int64
		if err := dup.Scan(&acct, &nonce); err != nil {
			t.Fatal(err)
		}
		t.Errorf("account %s nonce %d: more than one hash broadcast", acct, nonce)
	}
	if err := dup.Err(); err != nil {
		t.Fatal(err)
	}
	dup.Close()

	rows, err := db.QueryContext(ctx, `SELECT account_id, nonce, hash, node FROM tx_attempts`)
	if err != nil {
		t.Fatalf("tx_attempts: %v", err)
	}
	defer rows.Close()
	type key struct {
		acct  string
		nonce int64
	}
	hashes := map[key]map[string]bool{}
	perNode := map[string]int{}
	for rows.Next() {
		var acct, hash string
		var nonce sql.NullInt64
		var node sql.NullString
		if err := rows.Scan(&acct, &nonce, &hash, &node); err != nil {
			t.Fatal(err)
		}
		if !nonce.Valid || !node.Valid {
			t.Errorf("tx_attempts row %s of account %s without nonce or node", hash, acct)
			continue
		}
		k := key{acct, nonce.Int64}
		if hashes[k] == nil {
			hashes[k] = map[string]bool{}
		}
		hashes[k][lower(hash)] = true
		perNode[s.nodeName(node.String)]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if s.provider != single {
		var moved, zero int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM account_leases WHERE epoch > 1`).Scan(&moved); err != nil {
			t.Errorf("account_leases: %v", err)
		}
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM tx_attempts WHERE epoch = 0 OR node = ''`).Scan(&zero); err != nil {
			t.Errorf("tx_attempts epochs: %v", err)
		}
		if zero > 0 {
			t.Errorf("%d tx_attempts rows without a node or an epoch in cluster mode", zero)
		}
		t.Logf("accounts whose grain was activated more than once (lease epoch > 1): %d", moved)
	}
	for _, r := range rowOf {
		if r.Nonce == nil {
			continue
		}
		got := hashes[key{addrID[lower(r.From)], int64(*r.Nonce)}]
		if len(got) != 1 || !got[lower(r.TransactionHash)] {
			t.Errorf("transaction %s (%s nonce %d): tx_attempts hashes %v, want only %s", r.ID, r.From, *r.Nonce, keys(got), r.TransactionHash)
		}
	}
	return perNode
}

// countAccepted counts the jobs that got 202.
func countAccepted(jobs []*job) int {
	n := 0
	for _, j := range jobs {
		if j.accepted() {
			n++
		}
	}
	return n
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func derefNonce(p *uint64) any {
	if p == nil {
		return nil
	}
	return *p
}

func receiptStatus(rc *types.Receipt) any {
	if rc == nil {
		return nil
	}
	return rc.Status
}

func bigChainID() *big.Int { return big.NewInt(gethtest.ChainID) }

// jsonUnmarshal decodes raw into v, naming what failed.
func jsonUnmarshal(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode %s: %w", strings.TrimSpace(string(raw[:min(len(raw), 200)])), err)
	}
	return nil
}

// nodeName is the harness's name of the node whose cluster name (host:port
// of its remoting) is name; name itself when it is no node of the stack
// ("" in single-node mode).
func (s *stack) nodeName(name string) string {
	for _, n := range s.nodes {
		if name == fmt.Sprintf("127.0.0.1:%d", n.clusterPort) {
			return n.name
		}
	}
	return name
}

// leaseHolder returns the node that holds the lease of the network (it
// runs the watcher), or nil when none does.
func (s *stack) leaseHolder() *node {
	s.t.Helper()
	db, err := sql.Open("postgres", s.dbURL)
	if err != nil {
		s.t.Fatalf("open the database: %v", err)
	}
	defer db.Close()
	var holder string
	err = db.QueryRow(`SELECT node FROM network_leases WHERE network = $1 AND expires > now()`, network).Scan(&holder)
	if err != nil {
		s.t.Logf("no holder of the lease of %s: %v", network, err)
		return nil
	}
	for _, n := range s.nodes {
		if s.nodeName(holder) == n.name {
			return n
		}
	}
	s.t.Logf("the lease of %s is held by %s, no node of the test", network, holder)
	return nil
}
