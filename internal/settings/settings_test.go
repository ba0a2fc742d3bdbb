package settings

import (
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	if got := Positive(0, 5); got != 5 {
		t.Errorf("Positive(0, 5) = %d, want the default", got)
	}
	if got := Positive(-1*time.Second, 2*time.Second); got != 2*time.Second {
		t.Errorf("Positive(-1s, 2s) = %s, want the default", got)
	}
	if got := Positive(int64(7), 5); got != 7 {
		t.Errorf("Positive(7, 5) = %d, want the setting", got)
	}
}

func TestNonNegative(t *testing.T) {
	if err := NonNegative(F("A", 0), F("B", time.Second)); err != nil {
		t.Errorf("zero and positive settings refused: %v", err)
	}
	err := NonNegative(F("A", 1), F("B", -time.Nanosecond), F("C", -1))
	if err == nil || err.Error() != "B: must not be negative" {
		t.Errorf("NonNegative = %v, want the first negative setting named", err)
	}
}
