// Package storagetest is the conformance suite that every implementation of
// storage.Interface runs: the bbolt and etcd backends, and the watch cache
// over each. It checks the contract written in package storage's doc
// comments, case by case after k8s.io/apiserver's pkg/storage/testing store
// and watcher suites, so that a backend that passes behaves as Kubernetes
// clients expect.
//
// # Usage
//
// A backend's test calls [Run] (and [RunProperty]) with a constructor that
// returns a fresh, empty store and registers its cleanup:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, func(t *testing.T) storage.Interface {
//			s, err := bbolt.Open(filepath.Join(t.TempDir(), "db"), bbolt.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		}, storagetest.Capabilities{})
//	}
//
//	func TestProperty(t *testing.T) {
//		storagetest.RunProperty(t, newStore, storagetest.Capabilities{})
//	}
//
// Run one group or case with -run, for example
// -run 'TestConformance/pagination/snapshot_across_writes'.
//
// # What is checked
//
// Cases are grouped: create, get, delete, update (GuaranteedUpdate with
// preconditions, a stale cached state, conflicts), list (every resource
// version mode and its validation, prefixes that match whole segments,
// compaction), pagination (snapshot pages, predicates, remaining item
// counts, expired and inconsistent continue tokens), watch (event types,
// predicate transitions, start revisions, compaction, ordering and gap
// freedom under concurrent writers, Stop and context cancellation, slow
// watchers, progress bookmarks) and capabilities (CurrentRevision, Count,
// Compact, Ready). Every object a store returns is checked for the invariant
// that makes bytes canonical: metadata.resourceVersion inside Data equals
// Object.ResourceVersion, and Meta is what Data says.
//
// [RunProperty] runs fixed-seed random sequences of operations against the
// store and against a small in-memory model, with three watches open
// throughout whose events must equal the model's history.
//
// # Capabilities
//
// Optional interfaces (storage.RevisionReader, storage.Compactor,
// storage.ProgressRequester, storage.Counter, storage.ReadinessChecker) are
// found by type assertion on a store from the constructor; the cases that
// need one the store lacks are not registered, so they neither run nor
// count as passed. [Capabilities] holds only what a type assertion cannot
// tell (a wrapper that implements an interface it cannot serve) and the
// wait bound.
//
// # Assumptions
//
// A fresh store has no writer but the suite: each committed write advances
// the revision by exactly one, as in bbolt and a dedicated etcd. A store
// whose writes may skip revisions (kine on PostgreSQL) sets
// [Capabilities].RevisionGaps: a write must then commit after the previous
// one, and everything else (a watch delivers every write once, in order; a
// failed write moves nothing) is checked as before. Cases run in
// parallel, each on its own store. Stores that share one revision counter
// and its compaction (several etcd stores under their own prefixes of one
// etcd) set [Capabilities].SharedRevision: the cases that read the current
// revision, expect consecutive revisions or compact then run alone, the
// others still in parallel. Waits are bounded by
// [Capabilities].Timeout and never sleep: absence of an event is checked by a
// later fence write that must be the next event.
package storagetest
