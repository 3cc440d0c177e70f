package match

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/nats-io/nats-server/v2/server"
)

// Sublist is a server.Sublist driven with subscriptions made here.
type Sublist struct {
	*server.Sublist
}

// Subscription is a *server.subscription, made by NewSubscription.
type Subscription unsafe.Pointer

// subscriptionType is server.subscription: the type Insert takes a pointer to.
var subscriptionType = reflect.TypeOf((*server.Sublist).Insert).In(1).Elem()

var (
	insert = methodOf[func(*server.Sublist, Subscription) error]((*server.Sublist).Insert)
	remove = methodOf[func(*server.Sublist, Subscription) error]((*server.Sublist).Remove)
)

// methodOf returns method, a func(*server.Sublist, *server.subscription)
// error, as a value of type F, whose second parameter is a Subscription:
// both are one pointer, passed the same way, so the function is the same.
// It panics if method does not have that shape.
func methodOf[F any](method any) F {
	got, want := reflect.TypeOf(method), reflect.TypeFor[F]()
	if got.NumIn() != 2 || got.In(0) != want.In(0) || got.In(1) != reflect.PointerTo(subscriptionType) ||
		got.NumOut() != 1 || got.Out(0) != want.Out(0) {
		panic(fmt.Sprintf("bench/match: %v does not have the shape of %v", got, want))
	}
	// A func value in an interface is the interface's data word.
	var f F
	*(*unsafe.Pointer)(unsafe.Pointer(&f)) = (*[2]unsafe.Pointer)(unsafe.Pointer(&method))[1]
	return f
}

// NewSubscription returns a plain (non-queue) subscription to subject, with
// no client, as the server's own sublist tests make them.
func NewSubscription(subject string) Subscription {
	sub := reflect.New(subscriptionType)
	field := sub.Elem().FieldByName("subject")
	if field.Type() != reflect.TypeFor[[]byte]() {
		panic("bench/match: server.subscription.subject is not a []byte")
	}
	*(*[]byte)(unsafe.Pointer(field.UnsafeAddr())) = []byte(subject)
	return Subscription(sub.UnsafePointer())
}

// Insert adds sub.
func (s Sublist) Insert(sub Subscription) error { return insert(s.Sublist, sub) }

// Remove removes sub.
func (s Sublist) Remove(sub Subscription) error { return remove(s.Sublist, sub) }

// Matches returns the number of plain subscriptions in a Match result.
func Matches(r *server.SublistResult) int {
	return reflect.ValueOf(r).Elem().FieldByName("psubs").Len()
}
