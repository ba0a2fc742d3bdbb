package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/internal/servicetest"
)

// client is the HTTP client of every request: a request to a node that is
// going away must fail, not hang the test.
var client = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second},
}

// response is a decoded API response.
type response = servicetest.Response

// do sends one request to the node with the operator's token (when not
// empty), an Idempotency-Key (when not empty) and a JSON body (nil: none).
// It returns the transport error, if any; it never fails the test.
func (n *node) do(method, path, token, idemKey string, body any) (response, error) {
	var h map[string]string
	if idemKey != "" {
		h = map[string]string{"Idempotency-Key": idemKey}
	}
	r, _, err := servicetest.Call(client, n.URL(), servicetest.Request{Method: method, Path: path, Token: token, Body: body, Header: h})
	if err != nil {
		return response{}, fmt.Errorf("%s %w", n.name, err)
	}
	return r, nil
}

func (n *node) get(path, token string) (response, error) { return n.do("GET", path, token, "", nil) }

func (n *node) post(path, method, token, idemKey string, body any) (response, error) {
	return n.do(method, path, token, idemKey, body)
}

// attempts is how many nodes a client tries for one request: twice round
// a three-node cluster.
const attempts = 6

// outcome is how one request that creates something ended.
type outcome struct {
	// resp is the last answer (Status 0 when the last try failed in transit).
	resp response
	// by is the index of the node that gave the last answer.
	by int
	// ambiguous: a try failed in transit (connection refused or reset, or
	// a timeout), so that node may have stored the request.
	ambiguous bool
	// tries is how many requests were sent.
	tries int
}

// send sends one creating request as a careful client does: with an
// Idempotency-Key, first to node first, then, when the node does not answer
// or answers 503 (shutting down, unavailable) or 429, to the next node with
// the same key, attempts times at most.
func (s *stack) send(first int, method, path, idemKey string, body any) outcome {
	var o outcome
	for i := range attempts {
		o.by = (first + i) % len(s.nodes)
		o.tries++
		r, err := s.nodes[o.by].do(method, path, s.token, idemKey, body)
		o.resp = r
		if err != nil {
			o.ambiguous = true
		} else if r.Status != 503 && r.Status != 429 {
			return o
		}
		time.Sleep(time.Duration(50*(i+1)) * time.Millisecond)
	}
	return o
}

// account is one account the test created.
type account struct {
	id      string
	address common.Address
}

// createAccounts creates n accounts of the operator, spread round-robin
// over the nodes, from workers concurrent clients.
func (s *stack) createAccounts(n, workers int) []account {
	s.t.Helper()
	began := time.Now()
	out := make([]account, n)
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range work {
				o := s.send(i, "POST", "/accounts", newKey(), nil)
				if o.resp.Status != 201 {
					s.t.Errorf("create account %d: %d %s (last try on node%d)", i, o.resp.Status, o.resp.Raw, o.by)
					continue
				}
				d := o.resp.Data()
				id, _ := d["id"].(string)
				addr, _ := d["address"].(string)
				out[i] = account{id: id, address: common.HexToAddress(addr)}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if s.t.Failed() {
		s.t.FailNow()
	}
	s.t.Logf("%d accounts created over %d node(s) in %s", n, len(s.nodes), time.Since(began).Round(time.Millisecond))
	return out
}

// waitFunded waits until every account holds ETH for gas (the faucet of
// the network funds new accounts); the accounts still empty after timeout
// are funded by the test itself, which it logs.
func (s *stack) waitFunded(accts []account, timeout time.Duration) {
	s.t.Helper()
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+2*time.Minute)
	defer cancel()
	var empty []common.Address
	for {
		empty = empty[:0]
		for _, a := range accts {
			bal, err := s.eth.BalanceAt(ctx, a.address, nil)
			if err != nil {
				s.t.Fatalf("balance of %s: %v", a.address.Hex(), err)
			}
			if bal.Sign() == 0 {
				empty = append(empty, a.address)
			}
		}
		if len(empty) == 0 {
			s.t.Logf("the faucet funded all %d accounts in %s", len(accts), time.Since(began).Round(time.Millisecond))
			return
		}
		if time.Since(began) > timeout {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.t.Logf("the faucet funded %d of %d accounts in %s; the test funds the other %d", len(accts)-len(empty), len(accts), timeout, len(empty))
	s.fund(ctx, empty, big.NewInt(1e17))
}

// job is one transfer of a burst or a load: 0 tokens from an account to a
// fresh address (which names the transfer in the listings).
type job struct {
	acct int
	to   string // lower-case hex
	key  string // Idempotency-Key
	// first is the node the client tries first.
	first int

	// Set once sent.
	id        string // the transaction id of the 202
	status    int    // the status of the last answer (0: failed in transit)
	by        int    // the node that gave it
	ambiguous bool
	tries     int
}

func newJob(acct, first int) *job {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return &job{acct: acct, first: first, to: "0x" + hex.EncodeToString(b[:]), key: newKey()}
}

// accepted reports whether the transfer got 202.
func (j *job) accepted() bool { return j.status == 202 }

// newJobs returns per transfers of every account, round by round (each
// round once over every account), the first tries spread round-robin over
// nodes.
func newJobs(accts []account, per, nodes int) []*job {
	var out []*job
	for r := range per {
		for a := range accts {
			out = append(out, newJob(a, (r*len(accts)+a)%nodes))
		}
	}
	return out
}

// sendJob sends one transfer and records how it ended.
func (s *stack) sendJob(t *testing.T, accts []account, j *job) {
	o := s.send(j.first, "POST", "/tokens/"+s.tokenID+"/transfers", j.key, map[string]any{
		"from": accts[j.acct].id, "to": j.to, "value": "0",
	})
	j.status, j.by, j.ambiguous, j.tries = o.resp.Status, o.by, o.ambiguous, o.tries
	switch o.resp.Status {
	case 202:
		j.id, _ = o.resp.Data()["id"].(string)
	case 0, 503, 429:
		// Not accepted; every node refused or did not answer.
	default:
		t.Errorf("transfer to %s: %d %s, want 202 (or 503 or no answer)", j.to, o.resp.Status, o.resp.Raw)
	}
}

// burst sends jobs from clients concurrent clients.
type burst struct {
	done     chan struct{}
	began    time.Time
	elapsed  time.Duration
	sent     atomic.Int64
	accepted atomic.Int64
}

func (s *stack) startBurst(t *testing.T, accts []account, jobs []*job, clients int) *burst {
	b := &burst{done: make(chan struct{}), began: time.Now()}
	work := make(chan *job)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for j := range work {
				s.sendJob(t, accts, j)
				b.sent.Add(1)
				if j.accepted() {
					b.accepted.Add(1)
				}
			}
		})
	}
	go func() { // owned by the burst: ends when every job is sent
		for _, j := range jobs {
			work <- j
		}
		close(work)
		wg.Wait()
		b.elapsed = time.Since(b.began)
		close(b.done)
	}()
	return b
}

// wait waits until every job is sent.
func (b *burst) wait() { <-b.done }

// load is a steady load: clients each send one transfer of the next
// account (round-robin) every pace until stop.
type load struct {
	mu    sync.Mutex
	jobs  []*job
	stopc chan struct{}
	wg    sync.WaitGroup
	began time.Time
}

func (s *stack) startLoad(t *testing.T, accts []account, clients int, pace time.Duration) *load {
	l := &load{stopc: make(chan struct{}), began: time.Now()}
	var next atomic.Int64
	for c := range clients {
		l.wg.Go(func() {
			for {
				select {
				case <-l.stopc:
					return
				case <-time.After(pace):
				}
				i := int(next.Add(1) - 1)
				j := newJob(i%len(accts), (i+c)%len(s.nodes))
				s.sendJob(t, accts, j)
				l.mu.Lock()
				l.jobs = append(l.jobs, j)
				l.mu.Unlock()
			}
		})
	}
	return l
}

// stop stops the load, waits for its requests in flight and returns every
// job it sent.
func (l *load) stop() []*job {
	close(l.stopc)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.jobs
}

// counts returns how many jobs were accepted since the given time: a
// progress mark of a load.
func (l *load) acceptedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, j := range l.jobs {
		if j.accepted() {
			n++
		}
	}
	return n
}

// summary counts the jobs: accepted, refused, ambiguous (a try failed in
// transit), and the accepted ones per node that answered.
func summary(jobs []*job) (accepted, refused, ambiguous int, perNode map[int]int) {
	perNode = map[int]int{}
	for _, j := range jobs {
		if j.accepted() {
			accepted++
			perNode[j.by]++
		} else {
			refused++
		}
		if j.ambiguous {
			ambiguous++
		}
	}
	return accepted, refused, ambiguous, perNode
}

// newKey is a fresh Idempotency-Key.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "ct-" + hex.EncodeToString(b[:])
}

// lower is strings.ToLower for addresses and hashes.
func lower(s string) string { return strings.ToLower(s) }
