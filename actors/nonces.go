package actors

import "github.com/txengine/txengine/engine"

// NonceStuck returns the nonce health of the account on network when the
// account's submitter on this node finds its nonce stuck (engine.NonceBook);
// false when it is not stuck, or runs on another node of a cluster.
func (s *System) NonceStuck(accountID, network string) (engine.NonceHealth, bool) {
	return s.nonces.Stuck(accountID, network)
}
