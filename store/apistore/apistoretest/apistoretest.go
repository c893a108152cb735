// Package apistoretest is the conformance suite of the API-server layer
// (store/apistore): one call runs a sub-test for every clause of the
// layer's contract (the package doc of apistore) over a fresh store made by
// the caller's factory, with JSON values (apistore.JSONKind).
//
//	func TestAPIStoreConformance(t *testing.T) {
//		apistoretest.Run(t, func(t *testing.T) store.Store[json.RawMessage] {
//			s := mybackend.Open[json.RawMessage](...)
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Run puts apistore.New(s, apistore.JSONKind{}, LayerOptions()...) over
// each store s the factory makes; RunWith's Options.Serve puts the layer
// there some other
// way (a server that applies it, and the client that reaches the server).
// Either way the suite also writes to s directly, bypassing the layer, as
// another program writing the same store would, and makes such a write
// land between the layer's read of a key and its compare-and-swap, to show
// that the swap fails then. The store must implement store.Identifier.
//
// Like store/storetest, the suite runs in real time, never in a
// testing/synctest bubble, and never sleeps; the times of deletion marks
// are checked against the clock read before and after the delete.
package apistoretest

import (
	"encoding/json"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// Layer is what the suite tests: the API-server layer over a store of JSON
// values, with its extra writes and the store's identity, as
// apistore.Store offers them and as a client of a store served with the
// layer must.
type Layer interface {
	store.Store[json.RawMessage]
	store.Identifier
	apistore.StatusWriter[json.RawMessage]
	apistore.Replacer[json.RawMessage]
	apistore.PropagatingDeleter
	apistore.Applier[json.RawMessage]
}

var _ Layer = (*apistore.Store[json.RawMessage])(nil)

// Options adjusts the suite. The zero value tests apistore.Store in
// process.
type Options struct {
	// Serve, if set, puts the layer over raw, with the options layer
	// (LayerOptions: the suite's kind rules), and returns what its
	// clients use: for example, a handler that applies
	// apistore.New(raw, apistore.JSONKind{}, layer...), served, and its
	// HTTP client. raw is the store the factory made, wrapped so that the
	// suite can interleave writes with the layer's: the layer must read
	// and write through raw. Serve registers its own cleanups with t. Nil
	// means apistore.New(raw, apistore.JSONKind{}, layer...).
	Serve func(t *testing.T, raw store.Store[json.RawMessage], layer []apistore.Option[json.RawMessage]) Layer
}

// Run runs every clause over stores made by newStore, a fresh empty one
// per clause, with the layer of apistore.New over each. Stores are cleaned
// up by the factory, through t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) store.Store[json.RawMessage]) {
	RunWith(t, newStore, Options{})
}

// RunWith is Run with options.
func RunWith(t *testing.T, newStore func(t *testing.T) store.Store[json.RawMessage], opts Options) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *subject)
	}{
		{"CreateSetsGenerationOneAndNoMark", createSetsGenerationOne},
		{"DeleteWithoutFinalizersDeletes", deleteWithoutFinalizers},
		{"DeleteWithFinalizersMarksAndTheObjectStaysReadable", deleteMarks},
		{"TheMarkNeverChanges", markNeverChanges},
		{"NoFinalizerIsAddedAfterTheMark", noFinalizerAfterMark},
		{"RemovingTheLastFinalizerDeletesTheObject", removingLastFinalizerDeletes},
		{"AWriteBetweenTheReadAndTheDeleteIsAConflict", removalRacesAWrite},
		{"CreateOnAMarkedKeyIsRefusedDistinctly", createOnMarked},
		{"AFailedGuardStopsAFinalizersRemoval", guardStopsRemoval},
		{"DeleteThenRecreateLeavesTheNewObjectToItself", recreate},
		{"GenerationBumpsExactlyOnSpecChange", generationBumps},
		{"GenerationFollowsWritesThatBypassTheLayer", generationAfterRawWrites},
		{"StatusWritesNeverClobberSpec", statusKeepsSpec},
		{"SpecWritesNeverClobberStatus", specKeepsStatus},
		{"ForegroundAndOrphanMarksAddTheirFinalizers", propagations},
		{"AnExplicitPropagationReplacesTheOthersFinalizer", explicitPropagationReplacesTheOther},
		{"ADeleteWithoutPropagationKeepsTheObjectsOwn", noPropagationKeepsTheObjectsOwn},
		{"NoObjectCarriesBothGarbageCollectorFinalizers", bothGCFinalizersAreRefused},
		{"ASecondDeleteKeepsThePropagationInForce", aSecondDeleteKeepsThePropagationInForce},
		{"WritesAreCompareAndSwapAtTheRevisionGiven", compareAndSwap},
		{"WatchSeesTheMarkAsAnUpdateAndTheRemovalAsADelete", watchSeesMarkAndRemoval},
		{"AnObjectEncodesToOneTextWhateverItsMemberOrder", memberOrder},
		{"IdentityIsStableAndNotEmpty", identityIsStable},
		{"BadValuesAreInvalidAndWriteNothing", badValues},
		{"ASpecOnlyApplyKeepsTheFinalizersOwnersAndStatusControllersSet", specOnlyApplyKeeps},
		{"AnApplyAddsTheFinalizersAndOwnersItNamesAndKeepsAnUnstatedSpec", applyAddsWhatItNames},
		{"AnApplyNeverCompletesADeletionNorAddsAFinalizerToAMarkedObject", applyNeverCompletesADeletion},
		{"AnApplyCreatesAnAbsentObjectAtGenerationOneWithoutStatus", applyCreates},
		{"AnApplyThatLosesARaceIsRetriedOverTheLatestRevision", applyRetriesAConflict},
		{"AnApplyOfABadDocumentIsInvalidAndWritesNothing", applyRefusesBadDocuments},
		{"ApplyKeepsWhatControllersSetUnderRandomWritesOfBoth", applyKeepsWhatControllersSet},
		{"AWriteThatChangesNothingIsNotStored", writeChangingNothing},
		{"AWriteThatChangesNothingStillChecksRevisionAndGuards", changingNothingStillChecks},
		{"ABadSpecIsRefusedWithItsFieldNamedAndNothingIsStored", badSpecRefused},
		{"AKeyItsKindRefusesIsNeverCreated", badKeyRefused},
		{"DefaultsAreFilledBeforeValidationOnEverySpecWrite", defaultsApplied},
		{"AStatusWriteIsJudgedByTheKindsStatusRule", statusRuleOnStatusWrites},
		{"ASpecStoredBeforeItsRuleSurvivesWritesThatLeaveItAndItsDeletion", legacySpecKept},
		{"BadFinalizerNamesDuplicatesAndOwnersAreRefusedAndNothingIsStored", badMetadataRefused},
		{"BadMetadataStoredBeforeTheRulesCanBeRemovedAndTheObjectDeleted", legacyMetadataRemovable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := newStore(t)
			hook := &interleaver{Store: raw}
			var layer Layer
			if opts.Serve != nil {
				layer = opts.Serve(t, hook, LayerOptions())
			} else {
				s, err := apistore.New[json.RawMessage](hook, apistore.JSONKind{}, LayerOptions()...)
				if err != nil {
					t.Fatalf("apistore.New: %v", err)
				}
				layer = s
			}
			tc.run(t, &subject{layer: layer, raw: raw, hook: hook})
		})
	}
}

// subject is one store under test: the layer, the store below it, and the
// hook that interleaves the suite's writes with the layer's.
type subject struct {
	layer Layer
	raw   store.Store[json.RawMessage]
	hook  *interleaver
}
