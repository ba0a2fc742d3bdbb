// Package http serves the txengine HTTP API with gin: routing, request
// decoding, bearer authentication, the mapping of engine error codes to HTTP
// statuses, and the OpenAPI document of what is implemented.
//
// The package depends on the engine's store roles and on the small Engine
// facade declared here; it knows nothing of actors.
package http

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

// Engine is what the HTTP layer needs of the actor system. It is declared
// here and implemented by actors/.
type Engine interface {
	// Submit hands a fully built, validated transaction (status new, ID,
	// Created, Data set) to the sender account's actor, which stores it
	// durably and returns it. An error means nothing was stored.
	Submit(ctx context.Context, tx *engine.Transaction) (*engine.Transaction, error)
	// AccountCreated tells the engine about a new account (faucet funding
	// on networks with a faucet). Best effort, non-blocking.
	AccountCreated(ctx context.Context, a *engine.Account)
	// Settled tells the engine that transactions turned terminal outside it
	// (cancelled), so that the transactions depending on them fail or run.
	Settled(ctx context.Context, ids []string)
	// CheckInFlight asks the account's actor to look at its in-flight
	// transactions now (one was abandoned: its nonce is to be filled).
	CheckInFlight(accountID, network string)
	// AssignPoolMember gives a send through p the member that covers need
	// (docs/pools.md): the least loaded member that can, else the least
	// loaded one with Wait set.
	AssignPoolMember(ctx context.Context, p *engine.Pool, need engine.PoolNeed) (engine.PoolAssignment, error)
	// PoolStatus returns p's live state (GET /pools/{id}).
	PoolStatus(ctx context.Context, p *engine.Pool) (engine.PoolStatus, error)
	// PoolChanged tells the engine that p was created, resized or deleted.
	// Best effort, non-blocking.
	PoolChanged(ctx context.Context, p *engine.Pool)
	// PoolShort returns why the pool cannot cover its members as its
	// keeper last found, "" when it can or when the keeper does not run
	// on this node. It reads nothing (transaction views ask it).
	PoolShort(network, poolID string) string
}

// Store is the part of engine.Store that the HTTP layer uses, by role.
// Any engine.Store satisfies it.
type Store interface {
	engine.UserStore
	engine.UserAdminStore
	engine.TokenStore
	engine.IdempotencyStore
	engine.FaucetStore
	engine.AccountStore
	engine.ContractStore
	engine.SubscriptionStore
	engine.PoolStore
	TransactionStore
	NonceStore
	IndexReader
	Pinger
}

// TransactionStore is what the API does with transactions: reads them by
// id and by filter (GET /transactions), cancels one still new or waiting,
// and records the error of an abandoned submitted one.
type TransactionStore interface {
	// TransactionByID returns the transaction with this id (any owner).
	TransactionByID(ctx context.Context, id string) (*engine.Transaction, error)
	// ListTransactions lists transactions (GET /transactions).
	ListTransactions(ctx context.Context, f engine.TxFilter) ([]*engine.Transaction, *engine.TxCursor, error)
	// CancelTransaction cancels a transaction still new or waiting.
	CancelTransaction(ctx context.Context, id string, txErr *engine.TxError, ended time.Time) (*engine.Transaction, error)
	// NoteError records an error on a transaction without changing its
	// status (an abandoned submitted transaction).
	NoteError(ctx context.Context, id string, status engine.TxStatus, txErr *engine.TxError) error
	// Statuses returns the statuses of the transactions ids (any owner;
	// unknown ids are absent): the dependencies a waitReason names.
	Statuses(ctx context.Context, ids []string) (map[string]engine.TxStatus, error)
}

// NonceStore reads an account's nonces on a network (GET /accounts/{id}:
// nonces).
type NonceStore interface {
	InFlightSummary(ctx context.Context, accountID, network string) (engine.InFlightSummary, error)
	MaxNonce(ctx context.Context, accountID, network string) (uint64, bool, error)
}

// IndexReader reads what the indexer stored.
type IndexReader interface {
	// ListTransfers lists a token's indexed transfers, newest first.
	ListTransfers(ctx context.Context, f engine.TransferFilter) ([]engine.TokenTransfer, *engine.TransferCursor, error)
	// NFTOwners returns the holders of the ERC-721 contracts as indexed.
	NFTOwners(ctx context.Context, network string, contracts []common.Address) ([]common.Address, error)
}

// Pinger checks that the database answers (GET /readyz).
type Pinger interface {
	Ping(ctx context.Context) error
}

var _ Store = engine.Store(nil)

// Config tunes the HTTP layer (config.go: Default, Validate). Zero fields
// take the values of Default.
type Config struct {
	// MaxBodyBytes bounds request bodies; larger ones get 413.
	MaxBodyBytes int64
	// Version is sent as X-API-Version on every response.
	Version string
	// ReadyTimeout bounds each dependency check of /readyz.
	ReadyTimeout time.Duration
	// ChainTimeout bounds the node calls made while serving one request.
	ChainTimeout time.Duration
	// MaxCallbacks bounds the callback URLs of one transaction.
	MaxCallbacks int
	// AllowPrivateCallbacks accepts callback URLs whose host is "localhost"
	// or an address engine.PrivateAddr refuses (engine.CheckCallbackHost).
	AllowPrivateCallbacks bool
	// RateLimit sets the per-user request limits (ratelimit.go).
	RateLimit RateLimitConfig
	// Quotas caps what one user tree may create (budget.go).
	Quotas QuotaConfig
	// MaxHeadAge makes /readyz report a network whose latest block is
	// older than this as not ready (a stuck node); 0 disables the check.
	MaxHeadAge time.Duration
	// RequestTimeout bounds the handling of one request; a request that
	// exceeds it gets 503 unavailable.
	RequestTimeout time.Duration
	// Cluster says that other nodes share the store (cluster mode): a
	// user's default account, which another node may change, is then read
	// from the store on every request instead of cached.
	Cluster bool
	// TrustedProxies are the addresses or CIDR ranges of the reverse
	// proxies whose X-Forwarded-For / X-Real-IP name the client address
	// (the per-address limit of failed authentications counts on it).
	// Empty trusts none: the client address is the connection's peer, and
	// a client cannot choose it by sending those headers.
	TrustedProxies []string
}

// Deps are the collaborators of the server.
type Deps struct {
	// Store is usually the whole engine.Store of the persistence backend.
	Store Store
	// Sealer creates accounts with their sealed keys.
	Sealer *keystore.KeySealer
	// KMS creates and attaches accounts whose key is in AWS KMS; nil:
	// KMS is not configured (such a request is 400).
	KMS *keystore.KMSSigner
	// Networks are the configured networks by name.
	Networks map[string]*engine.Network
	Engine   Engine
	// Clock defaults to engine.SystemClock.
	Clock engine.Clock
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
	// Metrics receives HTTP measurements (metrics.go); nil discards them.
	Metrics Metrics
	// MetricsHandler serves GET /metrics; nil answers 404 there.
	MetricsHandler http.Handler
	// Revocations tells the other cluster members of a revoked token;
	// nil in single-node mode.
	Revocations TokenRevocations
}

// Server is the HTTP API. Create it with NewServer and serve Handler().
type Server struct {
	cfg      Config
	store    Store
	sealer   *keystore.KeySealer
	kms      *keystore.KMSSigner
	networks map[string]*engine.Network
	engine   Engine
	clock    engine.Clock
	log      *slog.Logger
	router   *gin.Engine
	draining atomic.Bool
	// idemLocks serialises requests with the same user and Idempotency-Key.
	idemLocks keyedMutex
	// idemReads merges the reads of concurrent requests' Idempotency-Keys.
	idemReads *readMerger[idemKey, *engine.IdempotencyRecord]
	// accountReads merges the reads of the account cache's misses.
	accountReads *readMerger[string, *engine.Account]
	// subLocks serialises the subscription creations of one user tree
	// (the cap is counted before the insert).
	subLocks keyedMutex
	// users caches the users of tokens for a short while.
	users userCache
	// contracts caches registered contracts and their parsed ABIs.
	contracts contractCache
	// pools caches the pools that sends name (poolcache.go).
	pools poolCache
	// accounts caches accounts (id, owner, address) and default accounts.
	accounts accountCache
	// tokenStatics caches the fields of ERC-20 tokens that cannot change.
	tokenStatics tokenStatics

	limiter        *limiter
	metrics        Metrics
	metricsHandler http.Handler
	revocations    TokenRevocations
}

// NewServer builds the server and registers its routes. gin's mode is
// process-wide and only decides whether gin prints debug lines: the
// process's main sets it (gin.SetMode(gin.ReleaseMode)), not this
// constructor.
func NewServer(cfg Config, deps Deps) *Server {
	s := &Server{
		cfg:      cfg.withDefaults(),
		store:    deps.Store,
		sealer:   deps.Sealer,
		kms:      deps.KMS,
		networks: deps.Networks,
		engine:   deps.Engine,
		clock:    deps.Clock,
		log:      deps.Logger,
	}
	if s.clock == nil {
		s.clock = engine.SystemClock{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = slog.New(requestIDHandler{s.log.Handler()})
	s.accounts.cacheDefaults = !s.cfg.Cluster
	s.idemReads = newReadMerger(s.readIdempotency, s.cfg.RequestTimeout)
	s.accountReads = newReadMerger(func(ctx context.Context, ids []string) (map[string]*engine.Account, error) {
		return s.store.AccountsByID(ctx, ids)
	}, s.cfg.RequestTimeout)
	s.metrics, s.metricsHandler, s.revocations = deps.Metrics, deps.MetricsHandler, deps.Revocations
	if s.metrics == nil {
		s.metrics = nopMetrics{}
	}
	s.limiter = newLimiter(s.cfg.RateLimit, s.clock)
	s.limiter.log = s.log
	s.limiter.fellBack = s.metrics.RateLimitFallback
	if s.networks == nil {
		s.networks = map[string]*engine.Network{}
	}
	s.router = s.routes()
	return s
}

// Close stops the server's merged reads (readMerger) once the reads
// already waiting have run; call it after the HTTP server stopped. A
// request still running then gets 503.
func (s *Server) Close() {
	s.idemReads.Close()
	s.accountReads.Close()
}

// Handler returns the http.Handler that serves the API.
func (s *Server) Handler() http.Handler { return s.router }

// ForgetToken drops the token of hash from the cache of authenticated
// tokens at once: another cluster member revoked it (TokenRevocations).
func (s *Server) ForgetToken(hash []byte) { s.users.drop(s.clock.Now(), hash) }

// Drain makes the server refuse new API requests with 503 unavailable and
// report not ready, while /healthz stays ok. Call it when shutdown begins,
// before http.Server.Shutdown waits for the requests in progress.
func (s *Server) Drain() { s.draining.Store(true) }

// routes builds the router. Each path position uses one parameter name
// across all routes, as gin requires: /tokens/:contractId/... also serves the
// later /tokens/{network}/{address}/... as /tokens/:contractId/:address/...
func (s *Server) routes() *gin.Engine {
	r := gin.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleMethodNotAllowed = true
	r.ContextWithFallback = true
	// gin trusts every proxy by default: any client could then choose its
	// ClientIP with X-Forwarded-For. Trust only the configured ones.
	if err := r.SetTrustedProxies(s.cfg.TrustedProxies); err != nil {
		s.log.Error("trusted proxies: ignored, trusting none", "err", err)
		_ = r.SetTrustedProxies(nil)
	}

	r.Use(s.observe, s.commonHeaders, s.accessLog, s.recovery, s.limitBody, s.limitTime)
	r.NoRoute(s.noRoute)
	r.NoMethod(s.noMethod)

	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	r.GET("/openapi.json", s.openAPI)
	r.GET("/metrics", s.serveMetrics)

	api := r.Group("/", s.refuseWhenDraining, s.authenticate, s.rateLimit)
	api.GET("/accounts", s.listAccounts)
	api.POST("/accounts", s.idempotent, s.createAccount)
	api.GET("/accounts/default", s.defaultAccount)
	api.PUT("/accounts/default", s.setDefaultAccount)
	api.GET("/accounts/default/balance", s.defaultAccountBalance)
	api.GET("/accounts/:id", s.getAccount)
	api.GET("/accounts/:id/balance", s.accountBalance)

	api.POST("/users", s.idempotent, s.createUser)
	api.GET("/users/me", s.getMe)
	api.POST("/users/:id/tokens", s.idempotent, s.createUserToken)
	api.GET("/users/:id/tokens", s.listUserTokens)
	api.DELETE("/users/:id/tokens/:tokenId", s.revokeUserToken)
	api.PUT("/users/:id/limits", s.setUserLimits)

	api.GET("/tokens", s.listTokens)
	api.GET("/tokens/:contractId", s.getToken)
	api.GET("/tokens/:contractId/balances/default", s.defaultBalance)
	api.GET("/tokens/:contractId/balances/:address", s.addressBalance)
	api.POST("/tokens/:contractId/transfers", s.idempotent, s.createTransfer)
	api.GET("/tokens/:contractId/transfers", s.listTransfers)
	api.GET("/tokens/:contractId/:address", s.networkToken)
	api.GET("/tokens/:contractId/:address/supply", s.tokenSupply)
	api.GET("/tokens/:contractId/:address/circulating", s.tokenCirculating)

	api.GET("/transactions", s.listTransactions)
	api.GET("/transactions/:id", s.getTransaction)

	api.GET("/networks", s.listNetworks)
	api.DELETE("/transactions/:id", s.cancelTransaction)
	api.POST("/transactions/:id/abandon", s.abandonTransaction)

	api.PUT("/contracts", s.idempotent, s.createContract)
	api.GET("/contracts", s.listContracts)
	api.POST("/contracts/call", s.batchCall)
	api.GET("/contracts/:contractId", s.getContract)
	api.POST("/contracts/:contractId/send/:method", s.idempotent, s.sendContract)
	api.POST("/contracts/:contractId/call/:method", s.callContract)
	api.GET("/contracts/:contractId/events", s.contractEvents)
	api.GET("/contracts/network/:network/block/latest", s.latestBlock)
	api.GET("/contracts/network/:network/block/:number", s.blockByNumber)
	api.GET("/contracts/network/:network/gas-price", s.gasPrice)
	api.POST("/contracts/network/:network/address/:address/call/:method", s.callDirect)
	api.POST("/contracts/network/:network/address/:address/send/:method", s.idempotent, s.sendDirect)

	api.POST("/subscriptions", s.idempotent, s.createSubscription)
	api.GET("/subscriptions", s.listSubscriptions)
	api.GET("/subscriptions/:id", s.getSubscription)
	api.DELETE("/subscriptions/:id", s.deleteSubscription)
	api.GET("/subscriptions/:id/events", s.subscriptionEvents)

	api.POST("/pools", s.idempotent, s.createPool)
	api.GET("/pools", s.listPools)
	api.GET("/pools/:id", s.getPool)
	api.PATCH("/pools/:id", s.resizePool)
	api.DELETE("/pools/:id", s.deletePool)
	return r
}
