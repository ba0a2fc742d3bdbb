package engine

import (
	"regexp"
	"testing"
	"time"
)

// NewID's ids have the layout of a version 4 UUID and sort in the order
// they were made, also across milliseconds.
func TestNewIDIsOrderedVersion4(t *testing.T) {
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	prev := NewID()
	seen := map[string]bool{prev: true}
	for i := range 5000 {
		if i%1000 == 0 {
			time.Sleep(2 * time.Millisecond)
		}
		id := NewID()
		if !v4.MatchString(id) {
			t.Fatalf("id %q is not in the version 4 layout", id)
		}
		if id <= prev {
			t.Fatalf("id %q made after %q sorts before it", id, prev)
		}
		if seen[id] {
			t.Fatalf("id %q made twice", id)
		}
		seen[id] = true
		prev = id
	}
}
