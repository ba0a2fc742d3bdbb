// Package settings holds the two rules the configuration of every package
// follows (Default + Validate, docs/configuration.md): a zero setting takes
// its default (Positive), and Validate names the first negative one
// (NonNegative).
package settings

import "fmt"

// Number is what a numeric setting can be: a count, a size or a duration.
type Number interface {
	~int | ~int32 | ~int64 | ~float64
}

// Positive returns v when it is above zero, else d: the default of a
// setting left zero (or negative, where the constructor does not validate).
func Positive[T Number](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// Field is a named numeric setting, for NonNegative.
type Field struct {
	Name  string
	Value float64
}

// F names v for NonNegative.
func F[T Number](name string, v T) Field {
	return Field{Name: name, Value: float64(v)}
}

// NonNegative returns an error naming the first of fields below zero
// ("Name: must not be negative"), nil when there is none.
func NonNegative(fields ...Field) error {
	for _, f := range fields {
		if f.Value < 0 {
			return fmt.Errorf("%s: must not be negative", f.Name)
		}
	}
	return nil
}
