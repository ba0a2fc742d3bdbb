package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// The domain of event subscriptions: the subscription, its deliveries and
// what the store keeps of them, shared by the API, the store, the callback
// dispatcher and the processor. The processor itself (reading logs,
// matching, reorgs) is package engine/subscribe, which imports this one.

// Subscription is a standing request for the logs of one event of one
// contract (Kind SubscriptionEvents) or for the ERC-20 Transfer logs of any
// token whose recipient is one of the owner's accounts (Kind
// SubscriptionDeposits), delivered in block and log order to Callbacks and
// readable with SubscriptionEvents.
type Subscription struct {
	ID      string
	Owner   string
	Network string
	Kind    string
	// ContractID is the registered contract of an events subscription made
	// with contractId ("" otherwise).
	ContractID string
	// Address is the contract whose logs are delivered (zero for deposits:
	// any token).
	Address common.Address
	// Event is the event's name, Signature its canonical signature
	// ("Transfer(address,address,uint256)").
	Event     string
	Signature string
	// ABI is the JSON ABI of the event alone (a list of one fragment), so
	// its logs decode without the contract.
	ABI json.RawMessage
	// Filters is what the subscriber gave (an indexed argument's name to a
	// value or a list of values; nil when none), kept for the view.
	Filters map[string]json.RawMessage
	// Topics is EventFilterTopics of Filters: topic 0 is the event's id.
	// Deposits compute theirs when processed (subscribe.DepositFilter).
	Topics [][]common.Hash
	// Callbacks are the URLs each delivery is POSTed to (none: pull only).
	Callbacks []string
	// Confirmations is how many blocks must be on top of a block before
	// its logs are delivered.
	Confirmations uint64
	// FromBlock is the first block whose logs are delivered.
	FromBlock uint64
	// Next is the next block to process: every block below it is
	// delivered (set by SaveSubscriptionStep). The processor stores it
	// with each delivery and at least every CheckpointBlocks blocks, so the
	// stored value may lag its progress by blocks that delivered nothing.
	Next uint64
	// LastSeq is the Seq of the subscription's last delivery (0: none).
	LastSeq int64
	Created time.Time
	// Seq is the insertion order the store gives the subscription (set
	// when read): with Created, the keyset of a listing's cursor
	// (SubscriptionCursor{Created, Seq} of a page's last row).
	Seq int64
}

// SubscriptionEvent is one delivery of a subscription: a matched log, or
// the retraction (Removed) of one delivered before whose block a reorg took
// back.
type SubscriptionEvent struct {
	// ID is the stable delivery id, sent as X-Callback-Id.
	ID             string
	SubscriptionID string
	// Seq numbers the subscription's deliveries from 1 without gaps: their
	// order, and the pull cursor.
	Seq         int64
	BlockNumber uint64
	BlockHash   common.Hash
	TxHash      common.Hash
	LogIndex    uint
	Removed     bool
	// Body is the delivery as the API shows it (subscribe.DeliveryView),
	// built once when the log is matched.
	Body    json.RawMessage
	Created time.Time
}

// SubscriptionCursor is a position in a listing of subscriptions: the
// keyset (created, insertion order) of the last row of a page.
type SubscriptionCursor = TxCursor

// SubscriptionStore keeps the subscriptions of the API.
type SubscriptionStore interface {
	// CreateSubscription inserts s (Next and LastSeq as given), and idem
	// when not nil, in one database transaction.
	CreateSubscription(ctx context.Context, s *Subscription, idem *IdempotencyRecord) error
	// SubscriptionByID returns the subscription with this id (any owner);
	// ErrNotFound once deleted.
	SubscriptionByID(ctx context.Context, id string) (*Subscription, error)
	// ListSubscriptions returns up to limit of the owner's subscriptions
	// not deleted, oldest first, after the cursor (nil: from the first).
	ListSubscriptions(ctx context.Context, owner string, after *SubscriptionCursor, limit int) ([]*Subscription, error)
	// DeleteSubscription deletes the owner's subscription id: it is no
	// longer processed, listed or read, and its pending deliveries are
	// abandoned. ErrNotFound when the owner has no such subscription.
	DeleteSubscription(ctx context.Context, owner, id string) error
	// CountSubscriptions returns how many subscriptions not deleted the
	// users of root's tree hold.
	CountSubscriptions(ctx context.Context, root string) (int, error)
	// SubscriptionEvents returns up to limit deliveries of subscription id
	// with Seq above afterSeq, in Seq order.
	SubscriptionEvents(ctx context.Context, id string, afterSeq int64, limit int) ([]SubscriptionEvent, error)
	// SubscriptionEventByID returns the delivery with this id.
	SubscriptionEventByID(ctx context.Context, id string) (*SubscriptionEvent, error)
}

// SubscriptionStep is what one step of a network's subscription processor
// stores in one database transaction.
type SubscriptionStep struct {
	Network string
	// Events are the new deliveries, each with one pending outbox row per
	// callback URL of its subscription (due at once), in order; a
	// subscription deleted meanwhile gets its rows but no outbox rows.
	Events []SubscriptionEvent
	// Retracted are the ids of deliveries a reorg took back (their Removed
	// rows are among Events): they are not returned by LiveDeliveries
	// again.
	Retracted []string
	// Next sets the next block of each subscription (by id); LastSeq is
	// the highest Seq among Events of each.
	Next map[string]uint64
	// Blocks are the hashes of blocks processed, kept to detect reorgs;
	// those at or above ForgetFrom (when set) are deleted first, and those
	// below the highest stored minus KeepBlocks pruned.
	Blocks     []IndexedBlock
	ForgetFrom *uint64
	KeepBlocks uint64
}

// SubscriptionsVersion changes whenever a subscription of a network is
// created or deleted: the count of its live subscriptions and the highest
// insertion order among them (a creation raises the highest, a deletion
// lowers the count, and a deletion with a creation does both).
type SubscriptionsVersion struct {
	Count  int
	MaxSeq int64
}

// SubscriptionProcessorStore is what a network's subscription processor
// needs of the store.
type SubscriptionProcessorStore interface {
	// SubscriptionsVersion returns the version of the network's live
	// subscriptions: the processor reads them again only when it changed.
	SubscriptionsVersion(ctx context.Context, network string) (SubscriptionsVersion, error)
	// LiveSubscriptions returns the network's subscriptions not deleted,
	// in creation order.
	LiveSubscriptions(ctx context.Context, network string) ([]*Subscription, error)
	// OwnerAddresses returns the addresses of the accounts of each owner.
	OwnerAddresses(ctx context.Context, owners []string) (map[string][]common.Address, error)
	// SubscriptionBlocks returns up to limit stored block hashes of the
	// network, highest first.
	SubscriptionBlocks(ctx context.Context, network string, limit int) ([]IndexedBlock, error)
	// LiveDeliveries returns the deliveries of the network's live (not
	// deleted) subscriptions in blocks at or above from that are not
	// Removed rows and not Retracted, by subscription, then Seq.
	LiveDeliveries(ctx context.Context, network string, from uint64) ([]SubscriptionEvent, error)
	// SaveSubscriptionStep stores step in one database transaction, fenced
	// by the network's lease (FencedFollowerStore's rule; the zero fence
	// checks nothing).
	SaveSubscriptionStep(ctx context.Context, f NetworkFence, step SubscriptionStep) error
}

// SubscriptionResult is what a Poll of a network's subscription processor
// (engine/subscribe) did: the subscriptions actor and Metrics read it.
type SubscriptionResult struct {
	Head uint64
	// Subscriptions is how many live subscriptions the network has.
	Subscriptions int
	// Delivered and Retracted count the deliveries stored by this Poll.
	Delivered, Retracted int
	// Rewound is the block the subscriptions were rewound to after a
	// reorg, if any.
	Rewound *uint64
	// Lag is how many blocks deep enough for some subscription are not
	// processed yet (0 when every subscription is caught up).
	Lag uint64
	// More is true when blocks remain to be read now.
	More bool
	// Failed counts the steps of this Poll that failed on the node: their
	// groups halve their range (a log limit) or wait, the others go on.
	Failed int
	// Waiting is how many subscriptions wait after a failed step.
	Waiting int
}
