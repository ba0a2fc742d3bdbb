// Package watcher holds the network watcher actor: one per network, it
// follows new heads, completes transactions from block receipts and wakes
// the account actors whose transactions changed. The logic lives in
// engine.Follower; this is its actor shell.
package watcher

// tick asks the watcher to look for new blocks.
type tick struct{}

// HeadRequest asks for the last head the watcher saw; the answer is *Head.
type HeadRequest struct{}

// Head answers HeadRequest.
type Head struct {
	Number uint64
	Err    error
}
