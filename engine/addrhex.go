package engine

import (
	"sync"

	"github.com/ethereum/go-ethereum/common"
)

// addrHexCacheSize bounds the addresses whose checksummed form is kept;
// when full the cache starts over.
const addrHexCacheSize = 4096

// addrHexCache keeps the EIP-55 form of the addresses that recur (senders,
// contracts): computing it hashes the address (Keccak-256), and a transfer
// needs the sender's and the token's several times (views, rows).
var addrHexCache struct {
	mu sync.RWMutex
	m  map[common.Address]string
}

// AddressHex returns a.Hex(), the EIP-55 checksummed form, from a cache.
// Use it for addresses that recur (accounts, contracts); a one-off address
// gains nothing from it.
func AddressHex(a common.Address) string {
	addrHexCache.mu.RLock()
	h, ok := addrHexCache.m[a]
	addrHexCache.mu.RUnlock()
	if ok {
		return h
	}
	h = a.Hex()
	addrHexCache.mu.Lock()
	if addrHexCache.m == nil || len(addrHexCache.m) >= addrHexCacheSize {
		addrHexCache.m = make(map[common.Address]string)
	}
	addrHexCache.m[a] = h
	addrHexCache.mu.Unlock()
	return h
}
