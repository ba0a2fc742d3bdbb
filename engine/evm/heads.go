package evm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/txengine/txengine/internal/redact"
	"github.com/txengine/txengine/internal/settings"
)

// HeadSubscriber is one connection that can subscribe to new heads;
// *ethclient.Client over a WebSocket is one.
type HeadSubscriber interface {
	SubscribeNewHead(ctx context.Context, ch chan<- *types.Header) (ethereum.Subscription, error)
	Close()
}

// HeadSourceConfig configures a HeadSource.
type HeadSourceConfig struct {
	// URL is the node's ws:// endpoint, used when Dial is nil.
	URL string
	// Dial opens a new connection; nil dials URL over WebSocket.
	Dial func(ctx context.Context) (HeadSubscriber, error)
	// MinBackoff and MaxBackoff bound the pause between reconnection
	// attempts, which doubles after each failure (defaults 100ms and 10s,
	// DefaultHeadSourceConfig's).
	MinBackoff, MaxBackoff time.Duration
	// Log receives connection state changes; nil discards them.
	Log *slog.Logger
}

// DefaultHeadSourceConfig returns reconnection pauses from 100ms doubling
// to 10s; URL or Dial is the caller's, a nil Log discards.
func DefaultHeadSourceConfig() HeadSourceConfig {
	return HeadSourceConfig{MinBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second}
}

// withDefaults gives a zero (or negative) MinBackoff DefaultHeadSourceConfig's,
// a MaxBackoff below it Default's (or MinBackoff, when that is above), a
// nil Log one that discards.
func (cfg HeadSourceConfig) withDefaults() HeadSourceConfig {
	d := DefaultHeadSourceConfig()
	cfg.MinBackoff = settings.Positive(cfg.MinBackoff, d.MinBackoff)
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(d.MaxBackoff, cfg.MinBackoff)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// Validate names the first field of cfg out of range: a negative
// MinBackoff or MaxBackoff (zero takes the default).
func (cfg HeadSourceConfig) Validate() error {
	if cfg.MinBackoff < 0 {
		return errors.New("head source config: MinBackoff: must not be negative")
	}
	if cfg.MaxBackoff < 0 {
		return errors.New("head source config: MaxBackoff: must not be negative")
	}
	return nil
}

// HeadSource follows a node's new heads over a WebSocket subscription and
// turns them into coalesced wake-ups on C: a channel of size 1 that never
// blocks the source, so a slow reader gets one wake-up for many heads. It
// also wakes after every (re)subscription, so the reader catches up on what
// happened while the connection was down. When the connection or the
// subscription fails it reconnects with exponential backoff. The reader
// learns the block numbers itself (engine.Follower walks from its cursor);
// the wake-up carries none.
type HeadSource struct {
	cfg  HeadSourceConfig
	wake chan struct{}

	mu        sync.Mutex
	cancel    context.CancelFunc
	done      chan struct{}
	connected bool
	lastErr   error
}

// NewHeadSource returns a HeadSource; Start starts it. Zero fields take
// DefaultHeadSourceConfig's values.
func NewHeadSource(cfg HeadSourceConfig) *HeadSource {
	cfg = cfg.withDefaults()
	if cfg.Dial == nil {
		url := cfg.URL
		cfg.Dial = func(ctx context.Context) (HeadSubscriber, error) {
			c, err := rpc.DialWebsocket(ctx, url, "")
			if err != nil {
				return nil, fmt.Errorf("dial %s: %w", redact.URL(url), redact.Error(err))
			}
			return ethclient.NewClient(c), nil
		}
	}
	return &HeadSource{cfg: cfg, wake: make(chan struct{}, 1)}
}

// C delivers the wake-ups.
func (h *HeadSource) C() <-chan struct{} { return h.wake }

// Start starts the goroutine that keeps the subscription up; it runs until
// ctx ends or Close. Start on a started source does nothing.
func (h *HeadSource) Start(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done != nil {
		return
	}
	ctx, h.cancel = context.WithCancel(ctx)
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		h.run(ctx)
	}()
}

// Close stops the goroutine and waits for it; the connection is closed.
func (h *HeadSource) Close() {
	h.mu.Lock()
	cancel, done := h.cancel, h.done
	h.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// Connected reports whether the subscription is up, and the last
// connection error when it is not.
func (h *HeadSource) Connected() (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.connected, h.lastErr
}

func (h *HeadSource) setState(connected bool, err error) {
	h.mu.Lock()
	h.connected, h.lastErr = connected, err
	h.mu.Unlock()
}

// notify delivers a wake-up unless one is already pending.
func (h *HeadSource) notify() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *HeadSource) run(ctx context.Context) {
	backoff := h.cfg.MinBackoff
	for {
		err := h.follow(ctx)
		if ctx.Err() != nil {
			h.setState(false, nil)
			return
		}
		h.setState(false, err)
		h.cfg.Log.Warn("new-head subscription lost; reconnecting", "url", redact.URL(h.cfg.URL), "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if errors.Is(err, errSubscriptionEnded) {
			backoff = h.cfg.MinBackoff // it was up: start over
		} else {
			backoff = min(2*backoff, h.cfg.MaxBackoff)
		}
	}
}

// errSubscriptionEnded marks a subscription that was established and then
// failed, as opposed to a failed attempt.
var errSubscriptionEnded = errors.New("subscription ended")

// follow connects, subscribes and forwards heads until the subscription or
// ctx ends.
func (h *HeadSource) follow(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := h.cfg.Dial(dctx)
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close()
	heads := make(chan *types.Header, 16)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	sub, err := conn.SubscribeNewHead(sctx, heads)
	cancel()
	if err != nil {
		return fmt.Errorf("subscribe to new heads: %w", err)
	}
	defer sub.Unsubscribe()
	h.setState(true, nil)
	h.cfg.Log.Info("subscribed to new heads", "url", redact.URL(h.cfg.URL))
	h.notify() // catch up on what happened while we were not subscribed
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-sub.Err():
			if err == nil {
				err = errors.New("closed by the node")
			}
			return fmt.Errorf("%w: %v", errSubscriptionEnded, err)
		case <-heads:
			h.notify()
		}
	}
}
