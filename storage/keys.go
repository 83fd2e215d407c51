// This file holds the key layout: how objects map to keys.

package storage

// ObjectKey is the key of an object: /<group>/<resource>/<namespace>/<name>,
// or /<group>/<resource>/<name> for a cluster-scoped object (empty
// namespace). The core group ("") is spelled "core".
//
// Each key is one concatenation, so one allocation: a GET builds one.
func ObjectKey(group, resource, namespace, name string) string {
	if group == "" {
		group = "core"
	}
	if namespace == "" {
		return "/" + group + "/" + resource + "/" + name
	}
	return "/" + group + "/" + resource + "/" + namespace + "/" + name
}

// ResourcePrefix is the prefix that List and Watch take for every object of a
// resource (namespace "") or of one namespace of it.
func ResourcePrefix(group, resource, namespace string) string {
	if group == "" {
		group = "core"
	}
	if namespace == "" {
		return "/" + group + "/" + resource
	}
	return "/" + group + "/" + resource + "/" + namespace
}
