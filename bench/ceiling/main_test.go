package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCeilingValidatesLikeTheService(t *testing.T) {
	h := handler()
	for body, want := range map[string]int{
		`{"to":"0x00000000000000000000000000000000000000aa","value":"1","from":"x"}`: http.StatusAccepted,
		`{"to":"0x00000000000000000000000000000000000000aa","value":"-1"}`:           http.StatusBadRequest,
		`{"to":"0xnope","value":"1"}`:                                                http.StatusBadRequest,
		`{"value":"1"}`:                                                              http.StatusBadRequest,
		`{"to":`:                                                                     http.StatusBadRequest,
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", "/tokens/abc/transfers", strings.NewReader(body)))
		if w.Code != want {
			t.Errorf("%s: status %d, want %d: %s", body, w.Code, want, w.Body)
		}
	}
}
