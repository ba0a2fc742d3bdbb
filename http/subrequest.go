package http

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/abicodec"
)

// maxSubscriptionConfirmations bounds the confirmations of a subscription.
const maxSubscriptionConfirmations = 1000

// subscriptionRequest is the body of POST /subscriptions. An events
// subscription names its contract by contractId, or by network and address
// with abi or type; a deposits subscription names only its network.
type subscriptionRequest struct {
	Kind       *string         `json:"kind"`
	ContractID *string         `json:"contractId"`
	Network    *string         `json:"network"`
	Address    *string         `json:"address"`
	ABI        json.RawMessage `json:"abi"`
	Type       *string         `json:"type"`
	// Event is the event's name, or its full signature when the name is
	// overloaded.
	Event *string `json:"event"`
	// Filters maps an indexed argument's name to a value or a list of
	// values (engine.EventFilterTopics).
	Filters   map[string]json.RawMessage `json:"filters"`
	Callbacks []string                   `json:"callbacks"`
	// Confirmations defaults to the network's confirmation depth.
	Confirmations *int64 `json:"confirmations"`
	// FromBlock is "latest" (the default), or a block number as a JSON
	// number or a decimal string.
	FromBlock json.RawMessage `json:"fromBlock"`
}

// given reports whether the raw member v was given (not absent, not null).
func given(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && string(v) != "null"
}

// subscriptionOf validates req for u and returns the subscription it asks
// for (without its id, owner, blocks and creation time) and its network.
func (s *Server) subscriptionOf(ctx context.Context, u *engine.User, req *subscriptionRequest) (*engine.Subscription, *engine.Network, error) {
	kind := engine.SubscriptionEvents
	if req.Kind != nil {
		kind = *req.Kind
	}
	var (
		sub *engine.Subscription
		nw  *engine.Network
		err error
	)
	switch kind {
	case engine.SubscriptionEvents:
		sub, nw, err = s.eventSubscription(ctx, u, req)
	case engine.SubscriptionDeposits:
		sub, nw, err = s.depositSubscription(req)
	default:
		return nil, nil, engine.Invalid("kind", "kind must be %s or %s", engine.SubscriptionEvents, engine.SubscriptionDeposits)
	}
	if err != nil {
		return nil, nil, err
	}
	b := engine.Builder{MaxCallbacks: s.cfg.MaxCallbacks, AllowPrivateCallbacks: s.cfg.AllowPrivateCallbacks}
	if sub.Callbacks, err = b.CallbackURLs(req.Callbacks); err != nil {
		return nil, nil, err
	}
	if sub.Callbacks == nil {
		sub.Callbacks = []string{}
	}
	sub.Confirmations = nw.Confirmations
	if c := req.Confirmations; c != nil {
		if *c < 0 || *c > maxSubscriptionConfirmations {
			return nil, nil, engine.Invalid("confirmations", "confirmations must be an integer from 0 to %d", maxSubscriptionConfirmations)
		}
		sub.Confirmations = uint64(*c)
	}
	return sub, nw, nil
}

// eventSubscription validates the contract, event and filters of an events
// subscription.
func (s *Server) eventSubscription(ctx context.Context, u *engine.User, req *subscriptionRequest) (*engine.Subscription, *engine.Network, error) {
	direct := req.Network != nil || req.Address != nil || given(req.ABI) || req.Type != nil
	var (
		tg  txTarget
		raw json.RawMessage
		err error
	)
	switch {
	case req.ContractID != nil && direct:
		return nil, nil, engine.Invalid("contractId", "give either contractId, or network, address and abi or type")
	case req.ContractID != nil:
		id, perr := uuid.Parse(*req.ContractID)
		if perr != nil || len(*req.ContractID) != 36 {
			return nil, nil, notFound("contractId", "contract %s not found", *req.ContractID)
		}
		ct, err := s.ownContract(ctx, u.ID, id.String(), "contractId")
		if err != nil {
			return nil, nil, err
		}
		if tg, err = s.contractTarget(ct); err != nil {
			return nil, nil, err
		}
		raw = ct.ABI
	default:
		if tg, err = s.bodyTarget(req.Network, req.Address, req.ABI, req.Type); err != nil {
			return nil, nil, err
		}
		raw = tg.rawABI
	}
	if req.Event == nil || *req.Event == "" {
		return nil, nil, engine.Invalid("event", "event is required: the event's name, or its full signature when the name is overloaded")
	}
	ev, fragment, err := findEvent(tg.abi, raw, *req.Event)
	if err != nil {
		return nil, nil, err
	}
	topics, err := engine.EventFilterTopics(ev, req.Filters)
	if err != nil {
		return nil, nil, err
	}
	sub := &engine.Subscription{
		Network: tg.network.Name, Kind: engine.SubscriptionEvents, Address: tg.address,
		Event: ev.RawName, Signature: ev.Sig, ABI: fragment, Topics: topics,
	}
	if len(req.Filters) > 0 {
		sub.Filters = req.Filters
	}
	if tg.contract != nil {
		sub.ContractID = tg.contract.ID
	}
	return sub, tg.network, nil
}

// bodyTarget returns the contract that the body fields network, address
// and abi or type describe (POST /contracts/call, POST /subscriptions): a
// missing field, an unknown network, a bad address or ABI are
// invalid_argument naming the field.
func (s *Server) bodyTarget(network, address *string, rawABI json.RawMessage, typ *string) (txTarget, error) {
	if network == nil || *network == "" {
		return txTarget{}, engine.Invalid("network", "contractId or network is required")
	}
	nw, err := s.bodyNetwork(*network)
	if err != nil {
		return txTarget{}, err
	}
	if address == nil {
		return txTarget{}, engine.Invalid("address", "address is required")
	}
	return addressTarget(nw, *address, rawABI, typ)
}

// bodyNetwork returns the configured network name of a body field network;
// an unknown one is invalid_argument.
func (s *Server) bodyNetwork(name string) (*engine.Network, error) {
	nw, found := s.networks[name]
	if !found || nw.Chain == nil {
		return nil, engine.Invalid("network", "network %q is not configured", name)
	}
	return nw, nil
}

// depositSubscription validates a deposits subscription: a network and
// nothing that names a contract or an event. It selects ERC-20 Transfer
// logs of any token; the recipients (the owner's accounts) are added when
// it is processed (subscribe.DepositFilter).
func (s *Server) depositSubscription(req *subscriptionRequest) (*engine.Subscription, *engine.Network, error) {
	for _, f := range []struct {
		name  string
		given bool
	}{
		{"contractId", req.ContractID != nil}, {"address", req.Address != nil}, {"abi", given(req.ABI)},
		{"type", req.Type != nil}, {"event", req.Event != nil}, {"filters", req.Filters != nil},
	} {
		if f.given {
			return nil, nil, engine.Invalid(f.name, "a deposits subscription takes no %s: it delivers the ERC-20 Transfer logs of any token to one of your accounts", f.name)
		}
	}
	if req.Network == nil || *req.Network == "" {
		return nil, nil, engine.Invalid("network", "network is required")
	}
	nw, err := s.bodyNetwork(*req.Network)
	if err != nil {
		return nil, nil, err
	}
	erc20, _ := builtinABI(engine.TypeERC20)
	parsed, err := abicodec.ParseABI(erc20)
	if err != nil {
		return nil, nil, err
	}
	ev, fragment, err := findEvent(parsed, erc20, "Transfer")
	if err != nil {
		return nil, nil, err
	}
	return &engine.Subscription{
		Network: nw.Name, Kind: engine.SubscriptionDeposits, Event: ev.RawName, Signature: ev.Sig,
		ABI: fragment, Topics: [][]common.Hash{{ev.ID}},
	}, nw, nil
}

// findEvent returns the event of a (whose JSON is raw) that name names,
// and its fragment: the JSON ABI of that event alone. An unknown event, an
// overloaded name and an anonymous event (its logs carry no id to select
// them by) are invalid_argument on event.
func findEvent(a *abi.ABI, raw json.RawMessage, name string) (*abi.Event, json.RawMessage, error) {
	if utf8.RuneCountInString(name) > engine.MaxMethodLen {
		return nil, nil, engine.Invalid("event", "event is longer than %d characters", engine.MaxMethodLen)
	}
	ids, err := engine.EventTopics(a, "event", name)
	if err != nil {
		return nil, nil, err
	}
	if len(ids) > 1 {
		var sigs []string
		for _, ev := range a.Events {
			if ev.RawName == name {
				sigs = append(sigs, ev.Sig)
			}
		}
		slices.Sort(sigs)
		return nil, nil, engine.Invalid("event", "event %q is overloaded: give its full signature, one of %s", name, strings.Join(sigs, ", "))
	}
	var ev *abi.Event
	for _, e := range a.Events {
		if e.ID == ids[0] {
			ev = &e
			break
		}
	}
	if ev == nil {
		return nil, nil, engine.Invalid("event", "the contract's ABI has no event %q", name)
	}
	if ev.Anonymous {
		return nil, nil, engine.Invalid("event", "event %s is anonymous: its logs carry no event id to select them by", ev.Sig)
	}
	fragment, err := eventFragment(raw, ev)
	if err != nil {
		return nil, nil, err
	}
	return ev, fragment, nil
}

// eventFragment returns the JSON ABI of ev alone, a list of one item taken
// from the ABI raw that describes it.
func eventFragment(raw json.RawMessage, ev *abi.Event) (json.RawMessage, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, engine.Invalid("abi", "abi must be a JSON array")
	}
	for _, item := range items {
		var head struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if json.Unmarshal(item, &head) != nil || head.Type != "event" || head.Name != ev.RawName {
			continue
		}
		one := append(append([]byte{'['}, compactJSON(item)...), ']')
		parsed, err := abicodec.ParseABI(one)
		if err != nil {
			continue
		}
		for _, e := range parsed.Events {
			if e.ID == ev.ID {
				return one, nil
			}
		}
	}
	return nil, engine.Invalid("event", "the ABI's fragment of event %s was not found", ev.Sig)
}

// fromBlock returns the first block of a subscription on nw: raw absent,
// null or "latest" is the block after the network's head (read from its
// node: a failure is 503 unavailable), otherwise a block number, as a JSON
// number or a decimal string, below the head (the past is delivered too)
// or above it.
func (s *Server) fromBlock(ctx context.Context, nw *engine.Network, raw json.RawMessage) (uint64, error) {
	raw = bytes.TrimSpace(raw)
	if given(raw) && string(raw) != `"latest"` {
		v := string(raw)
		if raw[0] == '"' {
			if err := json.Unmarshal(raw, &v); err != nil {
				v = ""
			}
		}
		n, err := strconv.ParseUint(v, 10, 63)
		if v == "" || strings.Trim(v, "0123456789") != "" || err != nil {
			return 0, engine.Invalid("fromBlock", `fromBlock must be "latest" or a block number (a JSON number or a decimal string of digits), got %s`, truncate(string(raw), 64))
		}
		return n, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ChainTimeout)
	defer cancel()
	head, err := chainOf(nw).HeaderByNumber(ctx, nil)
	if err != nil {
		return 0, networkFailure(nw.Name, err)
	}
	return head.Number.Uint64() + 1, nil
}

// truncate returns s cut to at most n bytes (on a rune boundary), marked
// with an ellipsis when cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
