package keystore

import (
	"strings"
	"testing"
	"time"
)

// TestKMSOptionsDefaults: DefaultKMSOptions (32 calls in flight, 5 s a
// call, no retry, 50 ms backoff) validates and is what zero options take;
// a negative option is refused with its name.
func TestKMSOptionsDefaults(t *testing.T) {
	d := DefaultKMSOptions()
	if d != (KMSOptions{Concurrency: 32, CallTimeout: 5 * time.Second, Backoff: 50 * time.Millisecond}) {
		t.Errorf("DefaultKMSOptions() = %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	if got := (KMSOptions{}).withDefaults(); got != d {
		t.Errorf("KMSOptions{}.withDefaults() = %+v, want %+v", got, d)
	}
	if got := (KMSOptions{Retries: 3}).withDefaults(); got.Retries != 3 || got.Concurrency != d.Concurrency {
		t.Errorf("a set option was overwritten or a zero one left: %+v", got)
	}
	for want, o := range map[string]KMSOptions{
		"kms options: Concurrency: must not be negative": {Concurrency: -1},
		"kms options: CallTimeout:":                      {CallTimeout: -1},
		"kms options: Retries:":                          {Retries: -1},
		"kms options: Backoff:":                          {Backoff: -1},
	} {
		if err := o.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q...", err, want)
		}
	}
}
