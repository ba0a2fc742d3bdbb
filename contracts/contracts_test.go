package contracts

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

func TestArtifacts(t *testing.T) {
	erc20Methods := []string{"name", "symbol", "decimals", "totalSupply", "balanceOf",
		"transfer", "transferFrom", "approve", "allowance", "mint"}
	tests := []struct {
		art     Artifact
		name    string
		methods []string
		events  []string
		ctor    int
	}{
		{ERC20(), NameERC20, erc20Methods, []string{"Transfer", "Approval"}, 4},
		{SecurityToken(), NameSecurityToken,
			append([]string{"allow", "disallow", "isAllowed"}, erc20Methods...),
			[]string{"Transfer", "Approval"}, 4},
		{SystemNFT(), NameSystemNFT,
			[]string{"name", "symbol", "balanceOf", "ownerOf", "transferFrom", "safeTransferFrom",
				"safeTransferFrom0", "approve", "setApprovalForAll", "getApproved",
				"isApprovedForAll", "supportsInterface", "mint"},
			[]string{"Transfer", "Approval", "ApprovalForAll"}, 3},
		{Disperse(), NameDisperse, []string{"disperseEther", "disperseToken"}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.art.Name != tt.name {
				t.Fatalf("Name = %q, want %q", tt.art.Name, tt.name)
			}
			if len(tt.art.Bin) < 1000 {
				t.Fatalf("bytecode is %d bytes, want a compiled contract", len(tt.art.Bin))
			}
			parsed, err := tt.art.ParsedABI()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range tt.methods {
				if _, ok := parsed.Methods[m]; !ok {
					t.Errorf("method %s missing", m)
				}
			}
			for _, e := range tt.events {
				if _, ok := parsed.Events[e]; !ok {
					t.Errorf("event %s missing", e)
				}
			}
			if got := len(parsed.Constructor.Inputs); got != tt.ctor {
				t.Errorf("constructor has %d inputs, want %d", got, tt.ctor)
			}
		})
	}
}

func TestERC20Selectors(t *testing.T) {
	parsed, err := ERC20().ParsedABI()
	if err != nil {
		t.Fatal(err)
	}
	// Selectors and topic every ERC-20 client relies on.
	want := map[string]string{"transfer": "a9059cbb", "balanceOf": "70a08231", "approve": "095ea7b3",
		"transferFrom": "23b872dd", "allowance": "dd62ed3e", "mint": "40c10f19"}
	for m, sel := range want {
		if got := common.Bytes2Hex(parsed.Methods[m].ID); got != sel {
			t.Errorf("%s selector = %s, want %s", m, got, sel)
		}
	}
	const transferTopic = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
	if got := parsed.Events["Transfer"].ID.Hex(); got != transferTopic {
		t.Errorf("Transfer topic = %s, want %s", got, transferTopic)
	}
}

func TestDeployData(t *testing.T) {
	art := ERC20()
	owner := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	data, err := art.DeployData("Tx", "TX", big.NewInt(1000), owner)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) <= len(art.Bin) || string(data[:len(art.Bin)]) != string(art.Bin) {
		t.Fatal("deploy data does not start with the bytecode followed by arguments")
	}
	if _, err := art.DeployData("Tx"); err == nil {
		t.Fatal("DeployData accepted too few constructor arguments")
	}
	// Fresh values: mutating one artifact does not affect the next.
	art.Bin[0] ^= 0xff
	if ERC20().Bin[0] == art.Bin[0] {
		t.Fatal("artifacts share their bytecode buffer")
	}
}
