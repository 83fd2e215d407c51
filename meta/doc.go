// Package meta is the wire vocabulary of annex: the Kubernetes types every
// request and response is made of, with the JSON names, omitempty rules and
// messages of k8s.io/apimachinery (release-1.32), written without importing
// it. It is a leaf: it imports only the standard library.
//
// # Objects
//
// [TypeMeta] and [ObjectMeta] are the kind/apiVersion and metadata every
// object carries; [Time] marshals as RFC 3339 UTC seconds and as null when
// zero, so a zero creationTimestamp appears as "creationTimestamp":null, as it
// does from a k8s.io/apiserver-based server. [List], [WatchEvent],
// [PartialObjectMetadata], [PartialObjectMetadataList] and [Table] are the
// response shapes; [DeleteOptions], [ListOptions], [GetOptions],
// [CreateOptions], [UpdateOptions] and [PatchOptions] the option objects.
//
// # Errors
//
// [Status] is the body of every error response and implements error; one
// constructor per reason ([NewNotFound], [NewConflict], [NewInvalid], ...)
// writes the message k8s writes. [ValidateObjectMeta] and
// [ValidateObjectMetaUpdate] return [StatusCause] values ready for
// [NewInvalid]. The name rules ([IsDNS1123Subdomain], [IsDNS1123Label],
// [IsDNS1035Label], [IsQualifiedName], [IsValidLabelValue],
// [ValidatePathSegmentName]) return k8s's messages verbatim, because clients
// and people read them.
//
// # Selectors
//
// [ParseLabelSelector] accepts the full labelSelector grammar (=, ==, !=, in,
// notin, exists, !, >, <) and [ParseFieldSelector] the fieldSelector grammar
// with its backslash escapes. Parse errors are [*ParseError] values whose text
// is what labels.Parse and fields.ParseSelector say, for a 400 BadRequest;
// they unwrap to [ErrInvalidLabelSelector] or [ErrInvalidFieldSelector]. The
// zero [LabelSelector] and [FieldSelector] match everything. Both are
// immutable once parsed and safe for concurrent use; the parsers are fuzzed.
//
// # Discovery
//
// [APIGroupList], [APIGroup], [APIResourceList] and [APIVersions] are legacy
// discovery; [APIGroupDiscoveryList] and its parts are aggregated discovery
// (apidiscovery.k8s.io/v2). A server answers aggregated discovery only when
// [NegotiateAggregatedDiscovery] picks it from the Accept header, and then
// with that Content-Type ([ContentTypeAggregatedDiscoveryV2]): clients and
// kube-aggregator tell the formats apart by it. [DiscoveryETag] and
// [StorageVersionHash] compute the values k8s puts in ETag and
// storageVersionHash.
//
// # Example
//
//	sel, err := meta.ParseLabelSelector(r.URL.Query().Get("labelSelector"))
//	if err != nil {
//		return meta.NewBadRequest(err.Error())
//	}
//	if causes := meta.ValidateObjectMeta(&obj.Metadata, true, nil); len(causes) > 0 {
//		return meta.NewInvalid(meta.GroupKind{Group: "wardle.example.com", Kind: "Flunder"}, obj.Metadata.Name, causes)
//	}
//	if sel.Matches(obj.Metadata.Labels) { ... }
//
// Messages follow release-1.32; later releases reworded a few ("must be no
// more than 63 bytes" in 1.35), which clients do not parse.
package meta
