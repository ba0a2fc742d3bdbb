package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/internal/provision"
)

// TestBannerPrintsTokenOnlyWhenCreated: the start that created the
// operator token prints it (with a curl line using it); a later start
// prints the file that holds it and a curl line reading that file, and not
// the token.
func TestBannerPrintsTokenOnlyWhenCreated(t *testing.T) {
	op := &provision.Operator{User: &engine.User{ID: "usr_1"}, Token: "txe_SECRETTOKEN", Created: true}
	var out bytes.Buffer
	printBanner(&out, "http://127.0.0.1:8080", op, "/data/operator.token")
	got := out.String()
	for _, want := range []string{"txengine is listening on http://127.0.0.1:8080\n", "operator token: txe_SECRETTOKEN\n",
		"Bearer txe_SECRETTOKEN' http://127.0.0.1:8080/tokens", "/data/operator.token"} {
		if !strings.Contains(got, want) {
			t.Errorf("created banner lacks %q:\n%s", want, got)
		}
	}
	op.Created = false
	out.Reset()
	printBanner(&out, "http://127.0.0.1:8080", op, "/data/operator.token")
	got = out.String()
	if strings.Contains(got, "SECRETTOKEN") || strings.Contains(got, "operator token: ") {
		t.Errorf("a later start prints the token:\n%s", got)
	}
	for _, want := range []string{"txengine is listening on http://127.0.0.1:8080\n", "operator token file: /data/operator.token\n",
		`Bearer $(cat /data/operator.token)" http://127.0.0.1:8080/tokens`} {
		if !strings.Contains(got, want) {
			t.Errorf("later banner lacks %q:\n%s", want, got)
		}
	}
}
