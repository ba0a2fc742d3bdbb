package engine

import (
	"strings"
	"testing"
)

func TestParseAmount(t *testing.T) {
	max := "115792089237316195423570985008687907853269984665640564039457584007913129639935"
	tests := []struct {
		in string
		ok bool
	}{
		{"0", true},
		{"1", true},
		{"000123", true},
		{max, true},
		{"115792089237316195423570985008687907853269984665640564039457584007913129639936", false},
		{strings.Repeat("9", 79), false},
		{"", false},
		{"-1", false},
		{"+1", false},
		{"1.5", false},
		{"1e18", false},
		{"0x10", false},
		{" 1", false},
		{"1 ", false},
		{"١", false}, // Arabic-Indic digit one
	}
	for _, tt := range tests {
		v, err := ParseAmount("value", tt.in)
		if tt.ok != (err == nil) {
			t.Errorf("ParseAmount(%q) err=%v, want ok=%v", tt.in, err, tt.ok)
			continue
		}
		if err != nil {
			if ErrorCode(err) != CodeInvalidArgument {
				t.Errorf("ParseAmount(%q) code=%s", tt.in, ErrorCode(err))
			}
			if e := err.(*Error); e.Field != "value" {
				t.Errorf("field=%q", e.Field)
			}
			continue
		}
		if strings.TrimLeft(tt.in, "0") != strings.TrimLeft(v.String(), "0") {
			t.Errorf("ParseAmount(%q) = %s", tt.in, v)
		}
	}
}

func TestParseAddress(t *testing.T) {
	const good = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	tests := []struct {
		in string
		ok bool
	}{
		{good, true},
		{strings.ToLower(good), true},
		{"0x" + strings.ToUpper(good[2:]), true},
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD", false}, // checksum broken
		{"5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", false},   // no prefix
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe", false},  // short
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAedd", false},
		{"0xZZAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", false},
		{"", false},
	}
	for _, tt := range tests {
		a, err := ParseAddress("to", tt.in)
		if tt.ok != (err == nil) {
			t.Errorf("ParseAddress(%q) err=%v, want ok=%v", tt.in, err, tt.ok)
			continue
		}
		if err == nil && a.Hex() != good {
			t.Errorf("ParseAddress(%q) = %s, want %s", tt.in, a.Hex(), good)
		}
	}
}
