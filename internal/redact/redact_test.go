package redact

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"wss://host/v3/SECRETKEY?apikey=SECRET2", "wss://host/v3/REDACTED?apikey=REDACTED"},
		{"https://mainnet.infura.io/v3/0123456789abcdef0123456789abcdef", "https://mainnet.infura.io/v3/REDACTED"},
		{"https://eth-mainnet.g.alchemy.com/v2/aB3dE_fG-hIjKlMnOpQrStUvWxYz1234", "https://eth-mainnet.g.alchemy.com/v2/REDACTED"},
		{"wss://name.quiknode.pro/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b/", "wss://name.quiknode.pro/REDACTED/"},
		{"https://rpc.ankr.com/eth/5KQwrPbwdL6PhXujxW37FSSQZ1JiwsST4cqQzDeyXtP", "https://rpc.ankr.com/eth/REDACTED"},
		{"https://user:pass@node.example:8545/rpc", "https://REDACTED@node.example:8545/rpc"},
		{"https://apikeyonly@node.example/", "https://REDACTED@node.example/"},
		{"http://127.0.0.1:8545", "http://127.0.0.1:8545"},
		{"ws://127.0.0.1:8546/", "ws://127.0.0.1:8546/"},
		{"https://node.example/ethereum-mainnet/rpc", "https://node.example/ethereum-mainnet/rpc"},
		{"https://cb.example/hook?token=abc&x=1#frag", "https://cb.example/hook?token=REDACTED&x=REDACTED#REDACTED"},
		{"https://cb.example/hook?SECRETNAME3=1", "https://cb.example/hook?REDACTED=REDACTED"},
		{"https://cb.example/hook?", "https://cb.example/hook?"},
		{"https://node.example/a%2FSECRETKEY5", "https://node.example/REDACTED"},
		{"https://node.example/v3/Secret12", "https://node.example/v3/REDACTED"},
		{"not a url SECRET9", "(invalid URL, not shown)"},
		{"https://ho st/SECRET9", "(invalid URL, not shown)"},
		{"", "(invalid URL, not shown)"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestKeyLike(t *testing.T) {
	keep := []string{"", "v3", "rpc", "ws", "eth", "mainnet", "ethereum-mainnet", "polygon_amoy.rpc", strings.Repeat("a", 40)}
	cut := []string{"SECRETKEY", "0123456789abcdef0123456789abcdef", "abcdefg1", "Mainnet1", "a--bcdefgh", strings.Repeat("a", 41), "abc%2Fdefgh"}
	for _, s := range keep {
		if KeyLike(s) {
			t.Errorf("KeyLike(%q) = true", s)
		}
	}
	for _, s := range cut {
		if !KeyLike(s) {
			t.Errorf("KeyLike(%q) = false", s)
		}
	}
}

func TestWithoutQuery(t *testing.T) {
	if got := WithoutQuery("https://cb.example/hook/x?token=SECRET"); got != "https://cb.example/hook/x" {
		t.Errorf("WithoutQuery = %q", got)
	}
	if got := WithoutQuery("https://u:p@cb.example/hook#SECRET"); got != "https://REDACTED@cb.example/hook" {
		t.Errorf("WithoutQuery = %q", got)
	}
}

func TestError(t *testing.T) {
	inner := &url.Error{Op: "Post", URL: "https://h/v3/SECRETKEY?apikey=SECRET2", Err: errors.New("refused")}
	if got := Error(inner); got != error(inner) {
		t.Fatalf("Error returned another error: %v", got)
	}
	err := fmt.Errorf("call: %w", inner)
	if strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("Error = %v", err)
	}
	var ue *url.Error
	if !errors.As(err, &ue) || ue.URL != "https://h/v3/REDACTED?apikey=REDACTED" {
		t.Fatalf("url.Error after = %+v", ue)
	}
	if Error(nil) != nil {
		t.Fatal("Error(nil) != nil")
	}
	nested := &url.Error{Op: "Get", URL: "https://a/SECRETKEY1", Err: &url.Error{Op: "Get", URL: "https://b/SECRETKEY2", Err: errors.New("x")}}
	if s := Error(nested).Error(); strings.Contains(s, "SECRET") {
		t.Fatalf("nested: %s", s)
	}
}

func TestText(t *testing.T) {
	u := "wss://host/v3/SECRETKEY?apikey=SECRET2"
	got := Text("dial "+u+": refused", u, "")
	if got != "dial wss://host/v3/REDACTED?apikey=REDACTED: refused" {
		t.Fatalf("Text = %q", got)
	}
}
