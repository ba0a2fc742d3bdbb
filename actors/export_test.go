package actors

// WakeBatches returns how many WakeBatch messages this node sent that
// were acknowledged, and the wakes they held (cluster mode; tests only).
func (s *System) WakeBatches() (batches, wakes int) {
	if s.wakes == nil {
		return 0, 0
	}
	return s.wakes.stats()
}

// ForgetKeeper makes s a node that does not run network's pool keeper,
// as a cluster node that does not lead the network (tests only; call it
// from the goroutine that sends).
func (s *System) ForgetKeeper(network string) { delete(s.keepers, network) }
