// Package contracts holds the Solidity sources of the contracts txengine
// deploys (an ERC-20, a security token with a transfer allow-list, an
// ERC-721 for System NFTs, and the disperser a pool's treasury refills its
// members with) and embeds their compiled ABI and bytecode.
//
// The artifacts under build/ are produced by build.sh (solc-js from the npm
// registry, pinned) and committed, so building the service needs no compiler.
package contracts

import (
	"embed"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
)

// build is read-only; every accessor returns fresh copies of its contents.
//
//go:embed build/*.abi build/*.bin
var build embed.FS

// Names of the embedded contracts, as in their .sol file names.
const (
	NameERC20         = "TxToken"
	NameSecurityToken = "SecurityToken"
	NameSystemNFT     = "SystemNFT"
	NameDisperse      = "Disperse"
)

// Artifact is one compiled contract.
type Artifact struct {
	// Name is the contract name, e.g. "TxToken".
	Name string
	// ABI is the contract's JSON ABI.
	ABI []byte
	// Bin is the creation bytecode (decoded from the hex of <Name>.bin),
	// without constructor arguments.
	Bin []byte
}

// ERC20 returns the plain ERC-20 (TxToken):
// constructor(string name, string symbol, uint256 initialSupply, address owner),
// plus mint(address to, uint256 amount) for the owner.
func ERC20() Artifact { return mustLoad(NameERC20) }

// SecurityToken returns the ERC-20 whose transfers require sender and
// recipient on an allow-list kept by the owner (allow, disallow, isAllowed):
// constructor(string name, string symbol, uint256 initialSupply, address owner).
func SecurityToken() Artifact { return mustLoad(NameSecurityToken) }

// SystemNFT returns the minimal ERC-721:
// constructor(string name, string symbol, address owner), plus
// mint(address to, uint256 tokenId) for the owner.
func SystemNFT() Artifact { return mustLoad(NameSystemNFT) }

// Disperse returns the disperser a pool's treasury refills its members
// with, one transaction per asset: no constructor arguments,
// disperseEther(address[] recipients, uint256[] values) payable (msg.value
// must be the sum) and disperseToken(address token, address[] recipients,
// uint256[] values) (transferFrom of the caller: it approves the
// disperser first). Either reverts, moving nothing, if one send fails.
func Disperse() Artifact { return mustLoad(NameDisperse) }

// All returns every embedded contract.
func All() []Artifact { return []Artifact{ERC20(), SecurityToken(), SystemNFT(), Disperse()} }

// Load returns the embedded artifact called name.
func Load(name string) (Artifact, error) {
	abiJSON, err := build.ReadFile("build/" + name + ".abi")
	if err != nil {
		return Artifact{}, fmt.Errorf("contract %s: abi: %w", name, err)
	}
	binHex, err := build.ReadFile("build/" + name + ".bin")
	if err != nil {
		return Artifact{}, fmt.Errorf("contract %s: bin: %w", name, err)
	}
	bin, err := hex.DecodeString(strings.TrimSpace(string(binHex)))
	if err != nil {
		return Artifact{}, fmt.Errorf("contract %s: bin: %w", name, err)
	}
	if len(bin) == 0 {
		return Artifact{}, fmt.Errorf("contract %s: empty bytecode", name)
	}
	return Artifact{Name: name, ABI: abiJSON, Bin: bin}, nil
}

// mustLoad is for the artifacts embedded at build time, which the package's
// tests check: failing here means the build directory is broken.
func mustLoad(name string) Artifact {
	a, err := Load(name)
	if err != nil {
		panic(err)
	}
	return a
}

// ParsedABI parses the artifact's ABI.
func (a Artifact) ParsedABI() (abi.ABI, error) {
	parsed, err := abi.JSON(strings.NewReader(string(a.ABI)))
	if err != nil {
		return abi.ABI{}, fmt.Errorf("contract %s: parse abi: %w", a.Name, err)
	}
	return parsed, nil
}

// DeployData returns the creation bytecode followed by the ABI-encoded
// constructor arguments: the data of a contract-creation transaction.
func (a Artifact) DeployData(args ...any) ([]byte, error) {
	parsed, err := a.ParsedABI()
	if err != nil {
		return nil, err
	}
	packed, err := parsed.Pack("", args...)
	if err != nil {
		return nil, fmt.Errorf("contract %s: pack constructor: %w", a.Name, err)
	}
	return append(append([]byte{}, a.Bin...), packed...), nil
}
