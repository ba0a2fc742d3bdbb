package keystore

import (
	"context"
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

// TestRotateOptionsDefaults: zero options take DefaultRotateOptions'
// values (1,000 rows a batch, every column); a negative Batch or Pause is
// refused with its name, by Validate and by RotateKeys before it reads
// anything (it took the default, or no pause, before).
func TestRotateOptionsDefaults(t *testing.T) {
	d := DefaultRotateOptions()
	if d.Batch != 1000 || len(d.Kinds) != len(SealedKinds()) || d.Pause != 0 || d.Validate() != nil {
		t.Errorf("DefaultRotateOptions() = %+v, Validate() = %v", d, d.Validate())
	}
	if got := (RotateOptions{}).withDefaults(); got.Batch != d.Batch || len(got.Kinds) != len(d.Kinds) {
		t.Errorf("RotateOptions{}.withDefaults() = %+v", got)
	}
	if got := (RotateOptions{Batch: 2, Kinds: []SealedKind{SealedAccountKeys}}).withDefaults(); got.Batch != 2 || len(got.Kinds) != 1 {
		t.Errorf("set options were overwritten: %+v", got)
	}
	for want, o := range map[string]RotateOptions{
		"Batch: must not be negative": {Batch: -1},
		"Pause: must not be negative": {Pause: -time.Second},
	} {
		if err := o.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q...", err, want)
		}
		// A nil store: RotateKeys must refuse before it reads.
		if _, err := RotateKeys(context.Background(), nil, nil, o); err == nil || !strings.Contains(err.Error(), "rotate keys: "+want) {
			t.Errorf("RotateKeys() = %v, want %q", err, want)
		}
	}
}
