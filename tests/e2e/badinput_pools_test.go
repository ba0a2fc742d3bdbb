package e2e

import (
	"strings"

	"github.com/google/uuid"
)

// poolBadInputRows are the catalogue's rows of sender pools
// (docs/pools.md#errors) that need no pool to exist: the fields of POST
// /pools and PATCH /pools/{id}, unknown pools on every pool route, and
// the pool and orderingKey fields of the three send routes.
func poolBadInputRows(f catalogueFixtures) []badRequest {
	const (
		inv = "invalid_argument"
		nf  = "not_found"
	)
	unknown := "/pools/" + uuid.NewString()
	pool := func(fields string) string { return `{"name":"p","network":"dev",` + fields + `}` }
	tr := "/tokens/" + f.tokID + "/transfers"
	xfer := func(fields string) string { return `{"to":"` + f.bAddr + `","value":"1",` + fields + `}` }
	sendBody := func(fields string) string { return `{"arg":["` + f.bAddr + `","1"],` + fields + `}` }
	withFrom := `"pool":"` + uuid.NewString() + `","from":"` + f.opAcctID + `"`
	return []badRequest{
		{name: "pool size 0", method: "POST", path: "/pools", body: pool(`"size":0`), status: 400, code: inv, field: "size"},
		{name: "pool size 257", method: "POST", path: "/pools", body: pool(`"size":257`), status: 400, code: inv, field: "size"},
		{name: "pool size not whole", method: "POST", path: "/pools", body: pool(`"size":1.5`), status: 400, code: inv, field: "size"},
		{name: "pool without size", method: "POST", path: "/pools", body: `{"name":"p","network":"dev"}`, status: 400, code: inv, field: "size"},
		{name: "pool name empty", method: "POST", path: "/pools", body: `{"name":"","network":"dev","size":1}`, status: 400, code: inv, field: "name"},
		{name: "pool name of 101", method: "POST", path: "/pools", body: `{"name":"` + strings.Repeat("n", 101) + `","network":"dev","size":1}`, status: 400, code: inv, field: "name"},
		{name: "pool on an unknown network", method: "POST", path: "/pools", body: `{"name":"p","network":"moon","size":1}`, status: 400, code: inv, field: "network"},
		{name: "another user's treasury", method: "POST", path: "/pools", body: pool(`"size":1,"treasury":"` + f.bAcctID + `"`), status: 404, code: nf, field: "treasury"},
		{name: "treasury not an id", method: "POST", path: "/pools", body: pool(`"size":1,"treasury":"` + f.opAddr + `"`), status: 400, code: inv, field: "treasury"},
		{name: "unknown pool", method: "GET", path: unknown, status: 404, code: nf},
		{name: "pool id not a UUID", method: "GET", path: "/pools/payouts", status: 404, code: nf},
		{name: "resize an unknown pool", method: "PATCH", path: unknown, body: `{"size":2}`, status: 404, code: nf},
		{name: "delete an unknown pool", method: "DELETE", path: unknown, status: 404, code: nf},
		{name: "pool with from", method: "POST", path: tr, body: xfer(withFrom), status: 400, code: inv, field: "pool"},
		{name: "pool with from", method: "POST", path: "/contracts/" + f.tokID + "/send/transfer", body: sendBody(withFrom), status: 400, code: inv, field: "pool"},
		{name: "pool with from", method: "POST", path: "/contracts/network/dev/address/" + f.tokAddr + "/send/transfer",
			body: `{"arg":["` + f.bAddr + `","1"],"type":"erc20",` + withFrom + `}`, status: 400, code: inv, field: "pool"},
		{name: "unknown pool in a send", method: "POST", path: tr, body: xfer(`"pool":"` + uuid.NewString() + `"`), status: 404, code: nf, field: "pool"},
		{name: "pool not an id", method: "POST", path: tr, body: xfer(`"pool":"payouts"`), status: 400, code: inv, field: "pool"},
		{name: "orderingKey without pool", method: "POST", path: tr, body: xfer(`"orderingKey":"k"`), status: 400, code: inv, field: "orderingKey"},
		{name: "pool filter not an id", method: "GET", path: "/transactions?pool=payouts", status: 400, code: inv, field: "pool"},
	}
}
