package subscribe

// DeliveryView is one delivery of a subscription as the API shows it: in
// the body of its callbacks ({"event": ...}) and in GET
// /subscriptions/{id}/events. It is built once, when the log is matched (or
// retracted), and stored as engine.SubscriptionEvent.Body.
type DeliveryView struct {
	// ID is the stable delivery id, also sent as X-Callback-Id.
	ID             string `json:"id"`
	SubscriptionID string `json:"subscriptionId"`
	// Sequence numbers the subscription's deliveries from 1 without gaps.
	Sequence int64  `json:"sequence"`
	Network  string `json:"network"`
	// ContractID is the registered contract the subscription names, when
	// it names one.
	ContractID      string `json:"contractId,omitempty"`
	Address         string `json:"address"`
	Event           string `json:"event"`
	Signature       string `json:"signature"`
	BlockNumber     uint64 `json:"blockNumber"`
	BlockHash       string `json:"blockHash"`
	TransactionHash string `json:"transactionHash"`
	LogIndex        uint   `json:"logIndex"`
	// ReturnValues holds the event's arguments by name, as GET
	// /contracts/{id}/events shows them (an object; any, so that a stored
	// view decodes into json.RawMessage and encodes back unchanged).
	ReturnValues any `json:"returnValues"`
	// Removed is true when a reorg took back the log of an earlier
	// delivery (the same fields, the same log).
	Removed bool `json:"removed"`
}
