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
// A user's own tests of an operator running against a live store (one
// Serve starts, or a real store server) wait on the store, not on a
// clock: Converged says whether a resource is Ready for its latest
// generation; WaitConverged, WaitGone and WaitFor wait, driven by the
// store's watch, until keys are converged, gone, or any condition holds,
// and fail the test with what the store last held (a key's conditions);
// Delete deletes as a person would, again at the newer revision when an
// operator's status write wins the race.
//
// It imports testing; use it from tests.
package externaltest
