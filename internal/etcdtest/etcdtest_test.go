package etcdtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

func TestStartPutGetStop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs etcd")
	}
	s := Start(t)
	// The v3 API over its JSON gateway: put a key, read it back.
	gw := func(path string, body map[string]string, out any) {
		t.Helper()
		raw, _ := json.Marshal(body)
		res, err := http.Post(s.ClientURL+path, "application/json", bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d", path, res.StatusCode)
		}
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	var put map[string]any
	gw("/v3/kv/put", map[string]string{"key": b64("/etcdtest/k"), "value": b64("v")}, &put)
	var got struct {
		Kvs []struct{ Value string } `json:"kvs"`
	}
	gw("/v3/kv/range", map[string]string{"key": b64("/etcdtest/k")}, &got)
	if len(got.Kvs) != 1 || got.Kvs[0].Value != b64("v") {
		t.Fatalf("range /etcdtest/k = %+v, want one value v", got.Kvs)
	}

	s.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.health(ctx); err == nil {
		t.Fatal("a stopped server still reports healthy")
	}
}

func TestBinaryFromEnv(t *testing.T) {
	t.Setenv(EnvBin, filepath.Join(t.TempDir(), "no-etcd"))
	if _, err := Binary(); err == nil {
		t.Fatalf("Binary() with %s naming a missing file: no error", EnvBin)
	}
}
