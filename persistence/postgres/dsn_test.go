package postgres

import "testing"

func TestOneRoundTrip(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u@h:5/db":                         "postgres://u@h:5/db?binary_parameters=yes",
		"postgresql://u@h/db?sslmode=disable":         "postgresql://u@h/db?sslmode=disable&binary_parameters=yes",
		"host=h dbname=db":                            "host=h dbname=db binary_parameters=yes",
		"postgres://h/db?binary_parameters=no":        "postgres://h/db?binary_parameters=no",
		"host=h binary_parameters=no sslmode=disable": "host=h binary_parameters=no sslmode=disable",
	} {
		if got := oneRoundTrip(in); got != want {
			t.Errorf("oneRoundTrip(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWithStatementTimeout(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u@h:5/db":                        "postgres://u@h:5/db?statement_timeout=30000",
		"postgres://u@h/db?sslmode=disable":          "postgres://u@h/db?sslmode=disable&statement_timeout=30000",
		"host=h dbname=db":                           "host=h dbname=db statement_timeout=30000",
		"postgres://h/db?statement_timeout=5s":       "postgres://h/db?statement_timeout=5s",
		"host=h statement_timeout=0 sslmode=disable": "host=h statement_timeout=0 sslmode=disable",
	} {
		if got := withStatementTimeout(in); got != want {
			t.Errorf("withStatementTimeout(%q) = %q, want %q", in, got, want)
		}
	}
}
