// Package etcd is annex's storage backend for more than one replica: a
// [storage.Interface] kept in an etcd cluster (go.etcd.io/etcd/client/v3),
// the store Kubernetes itself uses. Several annex servers pointed at one etcd
// (and one key prefix) serve the same objects: writes through one are seen by
// the watches and consistent lists of the others.
//
// # Usage
//
//	s, err := etcd.Config{Servers: []string{"https://etcd-0:2379"}, CAFile: ..., CertFile: ..., KeyFile: ...}.Open(etcd.Options{})
//	if err != nil { ... }
//	defer s.Close()
//	go s.Start(ctx) // periodic compaction, one replica per interval
//
// [Config.AddFlags] binds kube-apiserver's flags (--etcd-servers,
// --etcd-cafile, --etcd-certfile, --etcd-keyfile, --etcd-prefix,
// --etcd-compaction-interval). [New] takes a client the caller made.
//
// # Layout and revisions
//
// An object under storage key K (/<group>/<resource>/<namespace>/<name>) is
// the etcd key <prefix>K. Its value is the object's JSON with
// metadata.resourceVersion stored empty; the revision is the key's etcd
// mod_revision, spliced into the bytes on every read so that what a reader
// gets is final. A [value.Transformer] (encryption at rest) sees the bytes
// with the empty resource version. After a key rotation, an Update whose
// result equals the stored object still rewrites it when its stored form is
// the old key's (or plaintext), so that updating every object completes the
// rotation, as in Kubernetes.
//
// Create is a transaction "create_revision = 0 → put"; Update and Delete are
// transactions "mod_revision = the revision read → put/delete, else get",
// retried from what the else branch returned (GuaranteedUpdate). A
// precondition that fails is [storage.ErrConflict]. Every resource version
// is an etcd revision: in an etcd shared with other writers (other prefixes,
// kube-apiserver) the revision also advances with their writes.
//
// # Compaction
//
// annex's contract says compaction at R expires R and everything before it;
// etcd's compaction at R keeps R readable. [Store.Compact] at R therefore
// compacts etcd at R+1 (never beyond the current revision), and the
// compacted revision an error reports is etcd's minus one. A watch from N
// asks etcd for the events from N (not N+1) and drops the one at N, so that
// a watch from the compacted revision fails as the contract says. Exact
// lists and continue tokens of a compacted revision fail with
// [storage.ErrExpired]; an expired token's error carries a fresh
// inconsistent token that continues at the latest revision.
//
// [Store.Start] runs periodic compaction as kube-apiserver does: every
// interval each replica tries a compare-and-swap on the version of a
// compaction key (default "compact_rev_key", the key kube-apiserver uses);
// the one that wins compacts etcd at the revision it recorded one interval
// earlier, the others learn the new version and wait. One replica compacts
// per interval, and an annex sharing etcd with kube-apiserver takes turns
// with it.
//
// # Watch
//
// A watch is an etcd watch with prev_kv (the old state for MODIFIED and
// DELETED events and for predicate transitions) and, when asked, progress
// notifications, which become bookmarks. [Store.RequestProgress] asks etcd
// for a progress notification on the shared watch stream; the watch cache's
// consistent reads rely on it.
package etcd
