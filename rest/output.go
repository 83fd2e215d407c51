// This file holds the response transforms an Accept header can ask for
// (wire.md §4): the object itself, a Table (as=Table;g=meta.k8s.io;v=v1 or
// v1beta1) or PartialObjectMetadata(List), and their encoders.

package rest

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/annexapi/annex/meta"
)

// outputKind is what a read or write answers with.
type outputKind int

const (
	outObject outputKind = iota
	outTable
	outPartial     // PartialObjectMetadata
	outPartialList // PartialObjectMetadataList
)

// output is a negotiated response format.
type output struct {
	kind outputKind
	// version is the meta.k8s.io version of a Table or PartialObjectMetadata
	// (v1 or v1beta1).
	version string
	// include is the includeObject policy of a Table.
	include string
	// yaml is true when the response is YAML (Accept: application/yaml):
	// the JSON answer converted on the way out (see yamlWriter).
	yaml bool
	// gzip is true when the client accepts gzip and compression is on: a
	// large body is compressed (see startBody).
	gzip bool
}

func (o output) apiVersion() string { return meta.MetaGroup + "/" + o.version }

// frameKey names the output in the key of an encoded watch frame. A watch
// event's frames are kept in its storage.EventMemo, which the watch cache
// shares among every watcher that receives the event, so that a frame is
// encoded once per event, not once per watcher. The key is frameKey, "/",
// and the event type as the watcher sees it: together, everything a frame
// depends on besides the event. The type is part of it because the watch
// cache hands one stored change to different watchers as different types
// (MODIFIED, or ADDED or DELETED for a watcher whose selector the object
// starts or stops matching), all sharing one memo; for one event, a given
// type always carries the same object.
func (o output) frameKey() string {
	switch o.kind {
	case outTable:
		return "table/" + o.version + "/" + o.include
	case outPartial, outPartialList:
		return "partial/" + o.version
	}
	return "json"
}

// scope is what a request reads: one object, a list, or a watch.
type scope int

const (
	scopeObject scope = iota
	scopeList
	scopeWatch
)

// negotiateOutput picks the output of accept for a request of scope sc, as
// k8s.io/apiserver's NegotiateOutputMediaType and transformResponseObject do:
// the first acceptable clause wins; a transform of the wrong shape for the
// scope is a 406 with k8s's message rather than a skipped clause.
func negotiateOutput(accept string, sc scope, includeObject string) (output, *meta.Status) {
	include := includeObject
	switch include {
	case "":
		include = meta.IncludeMetadata
	case meta.IncludeNone, meta.IncludeMetadata, meta.IncludeObject:
	default:
		return output{}, meta.NewBadRequest("unrecognized includeObject value: " + strconv.Quote(includeObject))
	}
	if strings.TrimSpace(accept) == "" {
		return output{kind: outObject}, nil
	}
	stream := sc == scopeWatch
	for _, c := range parseAccept(accept) {
		if c.matchesYAML() && !stream && c.plain(false) {
			return output{kind: outObject, yaml: true}, nil
		}
		if !c.matchesJSON() {
			continue
		}
		if c.plain(stream) {
			return output{kind: outObject}, nil
		}
		as, g, v := c.params["as"], c.params["g"], c.params["v"]
		if g != meta.MetaGroup || (v != "v1" && v != "v1beta1") {
			continue
		}
		switch as {
		case meta.KindTable:
			return output{kind: outTable, version: v, include: include}, nil
		case meta.KindPartialObjectMetadata:
			if sc == scopeList {
				return output{}, notAcceptable("you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)")
			}
			return output{kind: outPartial, version: v}, nil
		case meta.KindPartialObjectMetadataList:
			if sc != scopeList {
				return output{}, notAcceptable("you requested PartialObjectMetadataList, but the requested object is not a list (*unstructured.Unstructured)")
			}
			return output{kind: outPartialList, version: v}, nil
		}
	}
	if stream {
		return output{}, errNotAcceptable()
	}
	return output{}, meta.NewNotAcceptable([]string{mediaJSON, mediaYAML})
}

// rawMetadata returns the metadata member of an object's JSON, or {}.
func rawMetadata(data []byte) json.RawMessage {
	var doc struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if json.Unmarshal(data, &doc) != nil || len(doc.Metadata) == 0 {
		return json.RawMessage("{}")
	}
	return doc.Metadata
}

// appendPartial appends the PartialObjectMetadata of an object.
func appendPartial(buf []byte, apiVersion string, data []byte) []byte {
	buf = append(buf, `{"kind":"PartialObjectMetadata","apiVersion":`...)
	buf = strconv.AppendQuote(buf, apiVersion)
	buf = append(buf, `,"metadata":`...)
	buf = append(buf, rawMetadata(data)...)
	return append(buf, '}')
}

// appendListMeta appends a ListMeta's members (without braces).
func appendListMeta(buf []byte, rev uint64, cont string, remaining *int64) []byte {
	buf = append(buf, `"resourceVersion":"`...)
	buf = strconv.AppendUint(buf, rev, 10)
	buf = append(buf, '"')
	if cont != "" {
		buf = append(buf, `,"continue":`...)
		buf = strconv.AppendQuote(buf, cont)
		if remaining != nil {
			buf = append(buf, `,"remainingItemCount":`...)
			buf = strconv.AppendInt(buf, *remaining, 10)
		}
	}
	return buf
}

// notAcceptable is a 406 with a specific message.
func notAcceptable(msg string) *meta.Status {
	st := errNotAcceptable()
	st.Message = msg
	return st
}
