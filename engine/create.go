package engine

import "github.com/ethereum/go-ethereum/common"

// MethodCreate is the Method of a transaction that creates a contract: its
// Data is the creation code (with any constructor arguments), its
// ContractAddress is zero and it is sent to no address. No API route makes
// one (an ABI method cannot be named so); the pool keeper deploys its
// treasury's disperser with one. The contract's address is
// crypto.CreateAddress(From, Nonce).
const MethodCreate = "(create)"

// IsCreation reports whether tx creates a contract (MethodCreate).
func IsCreation(tx *Transaction) bool {
	return tx.Method == MethodCreate && tx.ContractAddress == (common.Address{})
}

// txTo returns where tx is sent: nil when it creates a contract.
func txTo(tx *Transaction) *common.Address {
	if IsCreation(tx) {
		return nil
	}
	to := tx.ContractAddress
	return &to
}
