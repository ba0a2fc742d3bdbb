package e2e

import (
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/txengine/txengine/engine/keystore"
	_ "modernc.org/sqlite" // the embedded store's driver, to read the sealed keys
)

// readAccountKeys opens every sealed account key of the embedded store in
// dir with the data dir's master key, by account address.
func readAccountKeys(dir string) (map[string][]byte, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "master.key"))
	if err != nil {
		return nil, err
	}
	master, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("master.key: %w", err)
	}
	sealer, err := keystore.NewKeySealer(master)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "txengine.db")+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT address, encrypted_key FROM accounts`)
	if err != nil {
		return nil, fmt.Errorf("read accounts: %w", err)
	}
	defer rows.Close()
	keys := map[string][]byte{}
	for rows.Next() {
		var addr string
		var sealed []byte
		if err := rows.Scan(&addr, &sealed); err != nil {
			return nil, err
		}
		plain, err := sealer.OpenAccountKey(common.HexToAddress(addr), sealed)
		if err != nil {
			return nil, fmt.Errorf("open key of %s: %w", addr, err)
		}
		keys[addr] = plain
	}
	return keys, rows.Err()
}
