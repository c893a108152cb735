// Package externaltest tests operators written with reconcile/kit/external:
// a fake world with the shape of many cloud APIs (a create makes a new
// object at every call, named by the world, with no idempotency key; a
// listing with the marks read back), fault injection that crashes a
// step of the world or a write of the store before or after its effect,
// a driver that reconciles one key until it settles, as a restarted
// process would (Settle), a crash test that kills the scenario at each of
// its steps and checks the recovery (EveryCrash), and a store server to
// run an operator against (Serve). Run is the kit's crash suite, which a
// store backend runs from its tests as it runs store/storetest. Wrap a real World with WithFaults to
// crash-test it the same way.
//
// It imports testing only through httpstoretest's Serve; use it from
// tests.
package externaltest
