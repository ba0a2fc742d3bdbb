package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common/math"

	"github.com/txengine/txengine/engine/internal/abitest"
)

// FuzzParseAmount: ParseAmount accepts exactly the strings of decimal digits
// whose value is at most 2^256-1, and the value it returns prints back to
// the input without its leading zeros.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{
		"", "0", "00", "1", "007", "-1", "+1", " 1", "1 ", "1.0", "1e18", "0x10", "１",
		abitest.MaxU256, abitest.TwoTo256, "0" + abitest.MaxU256, strings.Repeat("0", 79) + "1",
		strings.Repeat("9", 78), strings.Repeat("9", 79), "1_000", "\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseAmount("value", s)
		digits := s != "" && strings.Trim(s, "0123456789") == ""
		if err != nil {
			if e, ok := fuzzAsError(err); !ok || e.Code != CodeInvalidArgument || e.Field != "value" {
				t.Fatalf("ParseAmount(%q): error %v is not invalid_argument on value", s, err)
			}
			if digits {
				trimmed := strings.TrimLeft(s, "0")
				if len(trimmed) < 78 || len(trimmed) == 78 && trimmed <= abitest.MaxU256 {
					t.Fatalf("ParseAmount(%q) refused a value <= 2^256-1: %v", s, err)
				}
			}
			return
		}
		if !digits {
			t.Fatalf("ParseAmount(%q) accepted a non-digit string as %s", s, v)
		}
		if v.Sign() < 0 || v.Cmp(math.MaxBig256) > 0 {
			t.Fatalf("ParseAmount(%q) = %s, out of range", s, v)
		}
		want := strings.TrimLeft(s, "0")
		if want == "" {
			want = "0"
		}
		if got := v.String(); got != want {
			t.Fatalf("ParseAmount(%q) = %s, want %s", s, got, want)
		}
	})
}

// FuzzParseAddress: ParseAddress accepts only 0x (or 0X) followed by 40 hex
// digits, all of one case or EIP-55 checksummed, and returns the address
// whose checksummed form equals the input case-insensitively.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{
		"", "0x", abitest.AddrLower, abitest.AddrCheck, abitest.AddrBad, abitest.Addr2, "0X" + abitest.AddrLower[2:],
		"0x" + strings.ToUpper(abitest.AddrLower[2:]), abitest.AddrLower[2:], abitest.AddrLower + "0", abitest.AddrLower[:41],
		" " + abitest.AddrLower, "0x" + strings.Repeat("0", 40), "0x" + strings.Repeat("g", 40), "0x0x" + abitest.AddrLower[4:],
	} {
		f.Add(s)
	}
	isHex := func(s string) bool {
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
		return true
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress("to", s)
		shape := len(s) == 42 && (s[:2] == "0x" || s[:2] == "0X") && isHex(s[2:])
		if err != nil {
			if e, ok := fuzzAsError(err); !ok || e.Code != CodeInvalidArgument || e.Field != "to" {
				t.Fatalf("ParseAddress(%q): error %v is not invalid_argument on to", s, err)
			}
			if body := s[min(2, len(s)):]; shape && (body == strings.ToLower(body) || body == strings.ToUpper(body)) {
				t.Fatalf("ParseAddress(%q) refused a single-case address: %v", s, err)
			}
			return
		}
		if !shape {
			t.Fatalf("ParseAddress(%q) accepted something that is not 0x + 40 hex digits", s)
		}
		if !strings.EqualFold(a.Hex(), s) {
			t.Fatalf("ParseAddress(%q) = %s, not the same address", s, a.Hex())
		}
		body := s[2:]
		if body != strings.ToLower(body) && body != strings.ToUpper(body) && a.Hex()[2:] != body {
			t.Fatalf("ParseAddress(%q) accepted mixed case that is not the checksum %s", s, a.Hex())
		}
		if b, err := ParseAddress("to", a.Hex()); err != nil || b != a {
			t.Fatalf("ParseAddress(%s) of its own output = %s, %v", a.Hex(), b.Hex(), err)
		}
	})
}

// fuzzAsError returns the *Error in err's chain.
func fuzzAsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
