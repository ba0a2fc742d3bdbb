package keystore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/internal/settings"
)

// SealedKind names a column of sealed values.
type SealedKind string

// The sealed columns `txengine keys rotate` re-encrypts.
const (
	SealedAccountKeys     SealedKind = "account keys"
	SealedIdempotency     SealedKind = "idempotency records"
	SealedCallbackSecrets SealedKind = "callback secrets"
)

// SealedKinds lists every sealed column.
func SealedKinds() []SealedKind {
	return []SealedKind{SealedAccountKeys, SealedIdempotency, SealedCallbackSecrets}
}

// SealedValue is one stored sealed value and what it is bound to.
type SealedValue struct {
	// ID is the row's key: the account id, or the user id (idempotency
	// records and callback secrets).
	ID string
	// Key is the idempotency key (idempotency records only).
	Key string
	// Address is the account address (account keys only).
	Address common.Address
	// Sealed is the stored value.
	Sealed []byte
	// InKMS: an account whose key is in AWS KMS (Sealed is empty): the
	// service seals nothing of it, and rotation leaves it alone.
	InKMS bool
}

// Reseal replaces a row's sealed value Old by New, if it is still Old.
type Reseal struct {
	ID, Key  string
	Old, New []byte
}

// SealedStore lists and replaces sealed values; both stores implement it.
type SealedStore interface {
	// SealedValues returns up to limit values of kind whose (ID, Key) is
	// after (afterID, afterKey), in (ID, Key) order.
	SealedValues(ctx context.Context, kind SealedKind, afterID, afterKey string, limit int) ([]SealedValue, error)
	// ResealValues applies swaps in one database transaction, each only
	// where the row's value is still Old (compare and swap: a value written
	// meanwhile is kept), and returns how many rows it changed.
	ResealValues(ctx context.Context, kind SealedKind, swaps []Reseal) (int, error)
	// PlainCallbackSecrets returns up to limit callback secrets stored in
	// plain text (first byte PlainVersion), in id order, reading no other.
	PlainCallbackSecrets(ctx context.Context, limit int) ([]SealedValue, error)
}

// purpose is the KeySealer purpose of a sealed column.
func (k SealedKind) purpose() Purpose {
	switch k {
	case SealedAccountKeys:
		return PurposeAccountKey
	case SealedIdempotency:
		return PurposeIdempotency
	}
	return PurposeCallbackSecret
}

// additional is the additional data v was sealed with.
func (k SealedKind) additional(v SealedValue) []byte {
	switch k {
	case SealedAccountKeys:
		return v.Address.Bytes()
	case SealedIdempotency:
		return IdempotencyAdditional(v.ID, v.Key)
	}
	return callbackAdditional(v.ID)
}

// RotateOptions configure RotateKeys.
type RotateOptions struct {
	// Batch is the number of rows read and re-encrypted per database
	// transaction (default 1,000).
	Batch int
	// Kinds are the columns to rotate (default all).
	Kinds []SealedKind
	// Pause, when positive, is slept between batches, leaving the store to
	// the service.
	Pause time.Duration
}

// DefaultRotateOptions returns batches of 1,000 rows, every column, no
// pause.
func DefaultRotateOptions() RotateOptions {
	return RotateOptions{Batch: 1000, Kinds: SealedKinds()}
}

// withDefaults gives a zero Batch and no Kinds DefaultRotateOptions'
// values.
func (o RotateOptions) withDefaults() RotateOptions {
	d := DefaultRotateOptions()
	o.Batch = settings.Positive(o.Batch, d.Batch)
	if len(o.Kinds) == 0 {
		o.Kinds = d.Kinds
	}
	return o
}

// Validate names the first option of o out of range: a negative Batch
// (zero takes the default) or Pause.
func (o RotateOptions) Validate() error {
	if o.Batch < 0 {
		return fmt.Errorf("Batch: must not be negative, got %d", o.Batch)
	}
	if o.Pause < 0 {
		return fmt.Errorf("Pause: must not be negative, got %s", o.Pause)
	}
	return nil
}

// RotateCount is what RotateKeys did with one column.
type RotateCount struct {
	Kind SealedKind
	// Scanned is the number of values read by the rewrite pass.
	Scanned int
	// Resealed is the number of values re-encrypted under the current key
	// (Legacy and Plain among them: values without a header, callback
	// secrets in plain text).
	Resealed, Legacy, Plain int
	// Raced is the number of values that changed between read and write
	// (a concurrent write, kept) and were read again.
	Raced int
	// InKMS is the number of accounts whose key is in AWS KMS: left alone
	// (the service seals nothing of theirs).
	InKMS int
}

// RotateReport is the result of RotateKeys.
type RotateReport struct {
	KeyID   KeyID
	Counts  []RotateCount
	Elapsed time.Duration
}

// UnopenableError reports values that open under no known master key.
type UnopenableError struct {
	// Counts are the unopenable values per column.
	Counts map[SealedKind]int
	// Examples name a few rows (ids, never values).
	Examples []string
}

// Error implements error.
func (e *UnopenableError) Error() string {
	var parts []string
	for _, k := range SealedKinds() {
		if n := e.Counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	return fmt.Sprintf("%s open under no known master key (e.g. %s): they were sealed under a master key that is not configured; "+
		"add it to previousMasterKeys (TXENGINE_PREVIOUS_MASTER_KEYS, or <data dir>/master.key.previous) and run again; nothing was changed",
		strings.Join(parts, ", "), strings.Join(e.Examples, ", "))
}

// Unwrap makes errors.Is(err, ErrUnknownKey) hold.
func (e *UnopenableError) Unwrap() error { return ErrUnknownKey }

// maxRotatePasses bounds the rewrite passes of one column: a pass repeats
// while values raced (changed between read and write) or were written
// under another key meanwhile.
const maxRotatePasses = 5

// RotateKeys re-encrypts under sealer's current master key every sealed
// value of store that is not under it (previous keys, legacy values, plain
// callback secrets), in batches of opts.Batch rows per database
// transaction, each row replaced only if it still holds the value read
// (a concurrent write is never lost). It first checks that every value
// opens under a known key and, if one does not, changes nothing and
// returns an *UnopenableError. Then it rewrites, and scans again until a
// pass finds every value under the current key. It can run while the
// service serves.
func RotateKeys(ctx context.Context, store SealedStore, sealer *KeySealer, opts RotateOptions) (*RotateReport, error) {
	began := time.Now()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("rotate keys: %w", err)
	}
	opts = opts.withDefaults()
	kinds := opts.Kinds
	bad := &UnopenableError{Counts: map[SealedKind]int{}}
	for _, kind := range kinds {
		err := scanSealed(ctx, store, kind, opts, func(batch []SealedValue) error {
			for _, v := range batch {
				if v.InKMS {
					continue
				}
				plain, _, err := sealer.open(kind.purpose(), v.Sealed, kind.additional(v))
				clear(plain)
				if err != nil {
					bad.Counts[kind]++
					if len(bad.Examples) < 3 {
						bad.Examples = append(bad.Examples, kind.purpose().String()+" of "+rowName(kind, v))
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(bad.Counts) > 0 {
		return nil, bad
	}
	report := &RotateReport{KeyID: sealer.CurrentKeyID()}
	for _, kind := range kinds {
		c, err := rotateKind(ctx, store, sealer, kind, opts)
		if err != nil {
			return nil, err
		}
		report.Counts = append(report.Counts, c)
	}
	report.Elapsed = time.Since(began)
	return report, nil
}

// rowName names v's row without its value.
func rowName(kind SealedKind, v SealedValue) string {
	switch kind {
	case SealedAccountKeys:
		return "account " + v.ID + " (" + v.Address.Hex() + ")"
	case SealedIdempotency:
		return "user " + v.ID + " key " + v.Key
	}
	return "user " + v.ID
}

// scanSealed passes the values of kind to fn, a batch at a time.
func scanSealed(ctx context.Context, store SealedStore, kind SealedKind, opts RotateOptions, fn func([]SealedValue) error) error {
	var afterID, afterKey string
	for {
		batch, err := store.SealedValues(ctx, kind, afterID, afterKey, opts.Batch)
		if err != nil {
			return fmt.Errorf("read %s: %w", kind, err)
		}
		if len(batch) == 0 {
			return nil
		}
		if err := fn(batch); err != nil {
			return err
		}
		last := batch[len(batch)-1]
		afterID, afterKey = last.ID, last.Key
		if len(batch) < opts.Batch {
			return nil
		}
		if opts.Pause > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(opts.Pause):
			}
		}
	}
}

// rotateKind rewrites the values of kind not under the current key, pass
// after pass until one finds none left.
func rotateKind(ctx context.Context, store SealedStore, sealer *KeySealer, kind SealedKind, opts RotateOptions) (RotateCount, error) {
	c := RotateCount{Kind: kind}
	for pass := 1; ; pass++ {
		left, scanned, inKMS := 0, 0, 0
		err := scanSealed(ctx, store, kind, opts, func(batch []SealedValue) error {
			scanned += len(batch)
			var swaps []Reseal
			for _, v := range batch {
				if v.InKMS {
					inKMS++
					continue
				}
				plain, state, err := sealer.open(kind.purpose(), v.Sealed, kind.additional(v))
				if errors.Is(err, ErrUnknownKey) {
					// Written meanwhile under a key this keyring does not
					// know (another process with another key): refuse.
					return fmt.Errorf("%s of %s: %w", kind, rowName(kind, v), err)
				}
				if err != nil {
					return err
				}
				if state == SealedCurrent {
					clear(plain)
					continue
				}
				sealed, err := sealer.Seal(kind.purpose(), plain, kind.additional(v))
				clear(plain)
				if err != nil {
					return err
				}
				switch state {
				case SealedLegacy:
					c.Legacy++
				case SealedPlain:
					c.Plain++
				}
				swaps = append(swaps, Reseal{ID: v.ID, Key: v.Key, Old: v.Sealed, New: sealed})
			}
			if len(swaps) == 0 {
				return nil
			}
			n, err := store.ResealValues(ctx, kind, swaps)
			if err != nil {
				return fmt.Errorf("re-encrypt %s: %w", kind, err)
			}
			c.Resealed += n
			c.Raced += len(swaps) - n
			left += len(swaps) - n
			return nil
		})
		if err != nil {
			return c, err
		}
		if pass == 1 {
			c.Scanned, c.InKMS = scanned, inKMS
		}
		if left == 0 {
			// A pass that changed nothing it did not expect: a last scan
			// confirms that no value under an old key is left (one may
			// have been written by a process that still sealed under it).
			rest, err := countNotCurrent(ctx, store, sealer, kind, opts)
			if err != nil {
				return c, err
			}
			if rest == 0 {
				return c, nil
			}
		}
		if pass == maxRotatePasses {
			return c, fmt.Errorf("%s: values under an old key are still being written after %d passes: "+
				"is a service still running with the old key as its masterKey?", kind, pass)
		}
	}
}

// countNotCurrent counts the values of kind not under the current key.
func countNotCurrent(ctx context.Context, store SealedStore, sealer *KeySealer, kind SealedKind, opts RotateOptions) (int, error) {
	n := 0
	err := scanSealed(ctx, store, kind, opts, func(batch []SealedValue) error {
		for _, v := range batch {
			if v.InKMS {
				continue
			}
			plain, state, err := sealer.open(kind.purpose(), v.Sealed, kind.additional(v))
			clear(plain)
			if err != nil || state != SealedCurrent {
				n++
			}
		}
		return nil
	})
	return n, err
}

// KeyUse counts the sealed values of one column by how they are sealed.
type KeyUse struct {
	Kind SealedKind
	// ByKey counts the values that open under each known master key.
	ByKey map[KeyID]int
	// Legacy values have no header, Plain ones are callback secrets in
	// plain text; Unopenable open under no known key.
	Legacy, Plain, Unopenable int
	// InKMS counts the accounts whose key is in AWS KMS (nothing sealed).
	InKMS int
}

// NotCurrent is the number of values a rotation would re-encrypt or
// refuse: all but those under current.
func (u KeyUse) NotCurrent(current KeyID) int {
	n := u.Legacy + u.Plain + u.Unopenable
	for id, c := range u.ByKey {
		if id != current {
			n += c
		}
	}
	return n
}

// SealedStatus reads every sealed value of store (batch rows at a time)
// and counts them per column and key.
func SealedStatus(ctx context.Context, store SealedStore, sealer *KeySealer, batch int) ([]KeyUse, error) {
	if batch <= 0 {
		batch = 1000
	}
	var out []KeyUse
	for _, kind := range SealedKinds() {
		use := KeyUse{Kind: kind, ByKey: map[KeyID]int{}}
		err := scanSealed(ctx, store, kind, RotateOptions{Batch: batch}, func(vs []SealedValue) error {
			for _, v := range vs {
				if v.InKMS {
					use.InKMS++
					continue
				}
				plain, state, err := sealer.open(kind.purpose(), v.Sealed, kind.additional(v))
				clear(plain)
				switch {
				case err != nil:
					use.Unopenable++
				case state == SealedLegacy:
					use.Legacy++
				case state == SealedPlain:
					use.Plain++
				default:
					id, _ := SealedKeyID(v.Sealed)
					use.ByKey[id]++
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, use)
	}
	return out, nil
}

// SealPlainCallbackSecrets seals the callback secrets that migration 0012
// left in plain text (PlainVersion), a batch of 1,000 rows per
// database transaction; serve runs it at start. It reads only the plain
// ones, so a store that has none costs one query. It returns how many it
// sealed.
func SealPlainCallbackSecrets(ctx context.Context, store SealedStore, sealer *KeySealer) (int, error) {
	const batch = 1000
	sealed := 0
	for {
		vs, err := store.PlainCallbackSecrets(ctx, batch)
		if err != nil || len(vs) == 0 {
			return sealed, err
		}
		swaps := make([]Reseal, 0, len(vs))
		for _, v := range vs {
			s, err := sealer.SealCallbackSecret(v.ID, string(v.Sealed[1:]))
			if err != nil {
				return sealed, err
			}
			swaps = append(swaps, Reseal{ID: v.ID, Old: v.Sealed, New: s})
		}
		n, err := store.ResealValues(ctx, SealedCallbackSecrets, swaps)
		sealed += n
		if err != nil {
			return sealed, err
		}
		if n == 0 {
			// No row changed (another process sealed them meanwhile):
			// reading again could return the same rows forever.
			return sealed, nil
		}
	}
}
