package engine

import (
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

func TestAddressHex(t *testing.T) {
	for i := range addrHexCacheSize + 10 { // past the bound: the cache starts over
		a := common.BigToAddress(common.Big1)
		a[0], a[1] = byte(i), byte(i>>8)
		for range 2 {
			if got, want := AddressHex(a), a.Hex(); got != want {
				t.Fatalf("AddressHex(%x) = %s, want %s", a, got, want)
			}
		}
	}
}
