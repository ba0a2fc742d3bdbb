// Package subscribe is the processor of event subscriptions: it delivers
// the logs of a network to the subscriptions of the API. A subscription
// (engine.Subscription) is a standing request for the logs of one event of
// one contract (kind events), or for the ERC-20 Transfer logs of any token
// whose recipient is one of the owner's accounts (kind deposits). Each
// network's Processor reads the logs of a block range once, with the
// queries of Queries (the union of every subscription's addresses and
// topics), matches them in memory (Matcher), whatever the number of
// subscriptions, and stores the deliveries (DeliveryView, as the API shows
// them) through engine.SubscriptionProcessorStore; a reorg retracts what it
// took back. The subscriptions actor (actors/subscriptions) drives it.
//
// The subscription, its deliveries and the store contracts are domain types
// of the engine package, which the callback dispatcher and the store share;
// this package imports engine, never the reverse.
package subscribe
