package http

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// networkView is one network of GET /networks.
type networkView struct {
	Name          string        `json:"name"`
	ChainID       string        `json:"chainId"`
	Confirmations uint64        `json:"confirmations"`
	Healthy       bool          `json:"healthy"`
	Error         string        `json:"error,omitempty"`
	LatestBlock   *blockSummary `json:"latestBlock,omitempty"`
	SystemNFTs    []string      `json:"systemNfts"`
}

// blockSummary is the head of a network as GET /networks shows it.
type blockSummary struct {
	Number    uint64 `json:"number"`
	Hash      string `json:"hash"`
	Timestamp string `json:"timestamp"`
}

// listNetworks serves GET /networks: every configured network with its
// latest block and health (the node answers within ReadyTimeout and its
// head is not older than MaxHeadAge), sorted by name. A network whose node
// is down is listed with healthy false and the reason; the request itself
// succeeds.
func (s *Server) listNetworks(c *gin.Context) {
	ctx := c.Request.Context()
	out := make([]networkView, 0, len(s.networks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, nw := range s.networks {
		wg.Go(func() {
			v := s.networkStatus(ctx, name, nw)
			mu.Lock()
			out = append(out, v)
			mu.Unlock()
		})
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	ok(c, out)
}

// networkStatus reads the head of nw within ReadyTimeout.
func (s *Server) networkStatus(ctx context.Context, name string, nw *engine.Network) networkView {
	v := networkView{Name: name, Confirmations: nw.Confirmations, SystemNFTs: []string{}}
	if nw.ChainID != nil {
		v.ChainID = nw.ChainID.String()
	}
	for _, a := range nw.SystemNFTs {
		v.SystemNFTs = append(v.SystemNFTs, a.Hex())
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ReadyTimeout)
	defer cancel()
	head, err := chainOf(nw).HeaderByNumber(ctx, nil)
	if err != nil {
		v.Error = s.readyReason(ctx, "node", nodeCallError{method: "eth_getBlockByNumber", err: err})
		return v
	}
	v.LatestBlock = &blockSummary{Number: head.Number.Uint64(), Hash: head.Hash().Hex(), Timestamp: engine.FormatTime(time.Unix(int64(head.Time), 0))}
	if err := s.checkHeadAge(head.Time); err != nil {
		v.Error = s.readyReason(ctx, "node", err)
		return v
	}
	v.Healthy = true
	return v
}
