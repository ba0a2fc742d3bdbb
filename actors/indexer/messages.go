// Package indexer holds the transfer indexer actor: one per network, it
// keeps the service's index of Transfer logs (registered tokens and System
// NFTs) in step with the chain, reorgs included. The logic lives in
// engine.Indexer; this is its actor shell with its own poll timer.
package indexer

// tick asks the indexer to poll the chain.
type tick struct{}

// StatusRequest asks for the indexer's last head and error; the answer is
// *Status.
type StatusRequest struct{}

// Status answers StatusRequest.
type Status struct {
	Head uint64
	Err  error
}
