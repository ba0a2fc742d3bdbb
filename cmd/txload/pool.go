package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/txengine/txengine/cmd/txload/internal/check"
)

// pool is a sender pool as txload uses it (docs/pools.md).
type pool struct {
	ID      string       `json:"id"`
	Size    int          `json:"size"`
	Members []poolMember `json:"members"`
}

// poolMember is one member of a pool.
type poolMember struct {
	Slot    int    `json:"slot"`
	Account string `json:"account"`
	Address string `json:"address"`
}

// setupPool returns the pool the transfers go through: --pool, or a new
// pool of --pool-size members on the token's network whose treasury is the
// operator's default account (which holds the tokens: the pool's top-ups
// move them to the members).
func (r *runner) setupPool(ctx context.Context, tk token, treasury account) (*pool, error) {
	var p pool
	if r.opt.PoolID != "" {
		if err := r.c.raw(ctx, http.MethodGet, "/pools/"+r.opt.PoolID, nil, http.StatusOK, &p); err != nil {
			return nil, fmt.Errorf("pool %s: %w", r.opt.PoolID, err)
		}
		return &p, nil
	}
	r.prog.phase("create pool", 1)
	body := map[string]any{"name": fmt.Sprintf("txload-%d", time.Now().UnixNano()), "network": tk.Network, "size": r.opt.PoolSize, "treasury": treasury.ID}
	if err := r.c.raw(ctx, http.MethodPost, "/pools", body, http.StatusCreated, &p); err != nil {
		return nil, fmt.Errorf("create a pool of %d: %w", r.opt.PoolSize, err)
	}
	r.prog.add(1)
	return &p, nil
}

// poolTransfer requests one token transfer through the pool, with the
// ordering key when key is not empty.
func (r *runner) poolTransfer(ctx context.Context, tk token, p *pool, to, value, key string, callbacks *[]string) (txView, error) {
	body := map[string]any{"to": to, "value": value, "pool": p.ID}
	if key != "" {
		body["orderingKey"] = key
	}
	if callbacks != nil {
		body["callbacks"] = *callbacks
	}
	var t txView
	if err := r.c.raw(ctx, http.MethodPost, "/tokens/"+tk.ID+"/transfers", body, http.StatusAccepted, &t); err != nil {
		return txView{}, err
	}
	return t, nil
}

// orderingKey is the key of the i-th transfer with --ordering-keys k
// ("" without keys).
func orderingKey(i, k int) string {
	if k == 0 {
		return ""
	}
	return fmt.Sprintf("txload-%d", i%k)
}

// checkPool adds to v the pool's own checks: every accepted transfer's
// sender is a member of the pool, and, with ordering keys, each key's
// transfers completed in request order (sent holds them in request order
// per key: a key's transfers are sent one after the other). Order on chain:
// from one member, increasing nonces; from another member (the key moved
// once its transfers had all ended), a later block.
func checkPool(v *check.Verdict, p *pool, sent []check.Sent, keys []string, obs map[string]check.Observed) {
	members := map[string]bool{}
	for _, m := range p.Members {
		members[strings.ToLower(m.Address)] = true
	}
	last := map[string]check.Observed{}
	for i, s := range sent {
		if !members[strings.ToLower(s.From)] {
			v.AddProblem(&v.PoolOutsiders, "transaction %s: sent from %s, not a member of pool %s", s.ID, s.From, p.ID)
		}
		if keys == nil || keys[i] == "" {
			continue
		}
		o := obs[s.ID]
		if o.Status != "completed" || o.Nonce == nil || o.BlockNumber == nil {
			continue // counted by Run
		}
		prev, ok := last[keys[i]]
		last[keys[i]] = o
		if !ok {
			continue
		}
		inOrder := *o.BlockNumber > *prev.BlockNumber
		if strings.EqualFold(o.From, prev.From) {
			inOrder = *o.Nonce > *prev.Nonce
		}
		if !inOrder {
			v.AddProblem(&v.OrderViolations, "key %s: transaction %s (block %d, nonce %d of %s) completed before the one requested before it (block %d, nonce %d of %s)",
				keys[i], s.ID, *o.BlockNumber, *o.Nonce, o.From, *prev.BlockNumber, *prev.Nonce, prev.From)
		}
	}
	v.Settle()
}

// raw calls the API with a JSON body (nil: none) and decodes the data of
// an answer of status want into out; another status is an *apiError.
func (c *client) raw(ctx context.Context, method, path string, body any, want int, out any) error {
	base := c.bases[(c.next.Add(1)-1)%uint64(len(c.bases))]
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.hc.Do(req)
	pg, err := answer[json.RawMessage](method+" "+path, res, err, want)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(pg.Data, out); err != nil {
		return fmt.Errorf("%s %s: decode: %w", method, path, err)
	}
	return nil
}
