package sqlrow

import (
	"database/sql"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// msTime is a TimeColumn of unix milliseconds, as SQLite's.
type msTime struct{ sql.NullInt64 }

func (c msTime) At() (time.Time, bool) { return time.UnixMilli(c.Int64).UTC(), c.Valid }

func ms(t time.Time) msTime { return msTime{sql.NullInt64{Int64: t.UnixMilli(), Valid: true}} }

// msValue is the TimeValue of msTime.
func msValue(t *time.Time) any {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

func TestTxArgsMatchColumns(t *testing.T) {
	args, err := TxArgs(&engine.Transaction{ID: "t1"}, msValue)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(TxColumns, ",")); len(args) != n {
		t.Fatalf("TxArgs gives %d values for %d columns", len(args), n)
	}
	if args[13] != string(engine.StatusNew) {
		t.Fatalf("empty status stored as %v, want new", args[13])
	}
}

func TestTransaction(t *testing.T) {
	created := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	h := common.HexToHash("0x01")
	r := Tx[msTime]{
		Seq: 7, ID: "t1", From: "0x00000000000000000000000000000000000000aa",
		Value: sql.NullString{String: "1000000000000000000000", Valid: true}, Status: "submitted",
		Created: ms(created), Nonce: sql.NullInt64{Int64: 3, Valid: true},
		Hash:        sql.NullString{String: common.HexToHash("0x02").Hex(), Valid: true},
		MatchedHash: sql.NullString{String: h.Hex(), Valid: true},
	}
	tx, err := r.Transaction()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := new(big.Int).SetString("1000000000000000000000", 10)
	switch {
	case !tx.Created.Equal(created) || tx.Submitted != nil:
		t.Errorf("times: created %v submitted %v", tx.Created, tx.Submitted)
	case tx.Value.Cmp(want) != 0 || tx.Nonce == nil || *tx.Nonce != 3:
		t.Errorf("value %v nonce %v", tx.Value, tx.Nonce)
	case tx.Hash == nil || *tx.Hash != h:
		t.Errorf("hash %v, want the matched one %v", tx.Hash, h)
	}

	r.Created = msTime{}
	if _, err := r.Transaction(); err == nil || !strings.Contains(err.Error(), "transaction t1: created is NULL") {
		t.Errorf("NULL created: %v", err)
	}
}

func TestTxPage(t *testing.T) {
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	rows := make([]Tx[msTime], 3)
	for i := range rows {
		rows[i] = Tx[msTime]{Seq: int64(i + 1), ID: "t", Created: ms(base.Add(time.Duration(i) * time.Second))}
	}
	txs, next, err := TxPage(rows, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(txs) != 2 || next == nil || next.Seq != 2 || !next.Created.Equal(base.Add(time.Second)) {
		t.Fatalf("page of 2 of 3: %d rows, cursor %+v", len(txs), next)
	}
	if txs, next, err = TxPage(rows, 3); err != nil || len(txs) != 3 || next != nil {
		t.Fatalf("last page: %d rows, cursor %+v, %v", len(txs), next, err)
	}
}

func TestPrefixed(t *testing.T) {
	if got := Prefixed("t.", "a, b,\n\tc"); got != "t.a, t.b, t.c" {
		t.Fatalf("Prefixed = %q", got)
	}
}
