package actors

// WakeBatches returns how many WakeBatch messages this node sent that
// were acknowledged, and the wakes they held (cluster mode; tests only).
func (s *System) WakeBatches() (batches, wakes int) {
	if s.wakes == nil {
		return 0, 0
	}
	return s.wakes.stats()
}
