package redis

// SubscriptionLostHandler is implemented by a broker.EventHandler that
// wants to know when this node's pub/sub subscription to some channels was
// interrupted (Redis restarted, failed over, the connection broke, or a
// cluster slot moved). Publications sent to those channels while the
// subscription was down were not delivered and never will be.
//
// The Broker calls HandleSubscriptionLost after it has subscribed the
// channels again, in order with their publications: everything delivered
// before the call was published before the interruption, everything after
// it is live. So a handler that reads History for each channel in the call
// (or in reaction to it) and compares the top with the last offset it
// delivered finds every missed publication; one that cannot recover tells
// its subscribers they lost state (unsubscribe 2500 insufficient state).
// The call happens on the goroutine that delivers the channels'
// publications, so a handler doing Redis reads should hand the work to
// another goroutine rather than stall delivery.
//
// A channel may be reported although nothing was missed, for example when
// Subscribe raced with a reconnection; reporting too often is safe,
// missing a report is not. A channel whose pub/sub message could not be
// decoded is reported at that message's place, for the same reason.
//
// Pattern scopes (SubscribePatternScope) are reported the same way, on
// their own path, to a handler that implements
// broker.PatternScopeLostHandler.
type SubscriptionLostHandler interface {
	HandleSubscriptionLost(channels []string) error
}
