// This file holds the shared definitions every document carries: ObjectMeta,
// ListMeta, Status, Patch, DeleteOptions and WatchEvent, with the
// descriptions kubectl explain prints.

package openapi

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

func strMap(desc string) map[string]any {
	return map[string]any{"type": "object", "description": desc, "additionalProperties": map[string]any{"type": "string", "default": ""}}
}

func strList(desc string) map[string]any {
	return map[string]any{"type": "array", "description": desc, "items": map[string]any{"type": "string", "default": ""}}
}

func dateTime(desc string) map[string]any {
	return map[string]any{"type": "string", "format": "date-time", "description": desc}
}

func int64Prop(desc string) map[string]any {
	return map[string]any{"type": "integer", "format": "int64", "description": desc}
}

// commonDefinitions returns fresh copies of the shared definitions.
func commonDefinitions(v3 bool) map[string]any {
	ownerRef := map[string]any{
		"type":        "object",
		"description": "OwnerReference contains enough information to let you identify an owning object.",
		"required":    []string{"apiVersion", "kind", "name", "uid"},
		"properties": map[string]any{
			"apiVersion":         str("API version of the referent."),
			"kind":               str("Kind of the referent."),
			"name":               str("Name of the referent."),
			"uid":                str("UID of the referent."),
			"controller":         map[string]any{"type": "boolean", "description": "If true, this reference points to the managing controller."},
			"blockOwnerDeletion": map[string]any{"type": "boolean", "description": "If true, AND if the owner has the \"foregroundDeletion\" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed."},
		},
		"x-kubernetes-map-type": "atomic",
	}
	managed := map[string]any{
		"type":        "object",
		"description": "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.",
		"properties": map[string]any{
			"apiVersion":  str("APIVersion defines the version of this resource that this field set applies to."),
			"fieldsType":  str("FieldsType is the discriminator for the different fields format and version."),
			"fieldsV1":    map[string]any{"type": "object", "description": "FieldsV1 holds the first JSON version format as described in the \"FieldsV1\" type."},
			"manager":     str("Manager is an identifier of the workflow managing these fields."),
			"operation":   str("Operation is the type of operation which lead to this ManagedFieldsEntry being created."),
			"subresource": str("Subresource is the name of the subresource used to update that object."),
			"time":        dateTime("Time is the timestamp of when the ManagedFields entry was added."),
		},
	}
	objectMeta := map[string]any{
		"type":        "object",
		"description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
		"properties": map[string]any{
			"annotations":                strMap("Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata."),
			"creationTimestamp":          dateTime("CreationTimestamp is a timestamp representing the server time when this object was created."),
			"deletionGracePeriodSeconds": int64Prop("Number of seconds allowed for this object to gracefully terminate before it will be removed from the system."),
			"deletionTimestamp":          dateTime("DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted."),
			"finalizers":                 strList("Must be empty before the object is deleted from the registry."),
			"generateName":               str("GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided."),
			"generation":                 int64Prop("A sequence number representing a specific generation of the desired state."),
			"labels":                     strMap("Map of string keys and values that can be used to organize and categorize (scope and select) objects."),
			"managedFields":              map[string]any{"type": "array", "description": "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow.", "items": managed},
			"name":                       str("Name must be unique within a namespace."),
			"namespace":                  str("Namespace defines the space within which each name must be unique."),
			"ownerReferences": map[string]any{"type": "array", "description": "List of objects depended by this object.", "items": ownerRef,
				"x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge"},
			"resourceVersion": str("An opaque value that represents the internal version of this object that can be used by clients to determine when objects have changed."),
			"selfLink":        str("Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."),
			"uid":             str("UID is the unique in time and space value for this object."),
		},
	}
	listMeta := map[string]any{
		"type":        "object",
		"description": "ListMeta describes metadata that synthetic resources must have, including lists and various status objects.",
		"properties": map[string]any{
			"continue":           str("continue may be set if the user set a limit on the number of items returned."),
			"remainingItemCount": int64Prop("remainingItemCount is the number of subsequent items in the list which are not included in this list response."),
			"resourceVersion":    str("String that identifies the server's internal version of this object that can be used by clients to determine when objects have changed."),
			"selfLink":           str("Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."),
		},
	}
	var lm any = map[string]any{"$ref": "#/definitions/" + defListMeta}
	if v3 {
		lm = map[string]any{"allOf": []any{map[string]any{"$ref": "#/components/schemas/" + defListMeta}}, "default": map[string]any{}}
	}
	status := map[string]any{
		"type":        "object",
		"description": "Status is a return value for calls that don't return other objects.",
		"properties": map[string]any{
			"apiVersion": str(descAPIVersion),
			"kind":       str(descKind),
			"code":       map[string]any{"type": "integer", "format": "int32", "description": "Suggested HTTP return code for this status, 0 if not set."},
			"details":    map[string]any{"type": "object", "description": "Extended data associated with the reason.", "x-kubernetes-preserve-unknown-fields": true},
			"message":    str("A human-readable description of the status of this operation."),
			"metadata":   lm,
			"reason":     str("A machine-readable description of why this operation is in the \"Failure\" status."),
			"status":     str("Status of the operation. One of: \"Success\" or \"Failure\"."),
		},
		"x-kubernetes-group-version-kind": []any{gvk("", "v1", "Status")},
	}
	if !v3 {
		delete(status["properties"].(map[string]any)["details"].(map[string]any), "x-kubernetes-preserve-unknown-fields")
	}
	deleteOpts := map[string]any{
		"type":        "object",
		"description": "DeleteOptions may be provided when deleting an API object.",
		"properties": map[string]any{
			"apiVersion":         str(descAPIVersion),
			"kind":               str(descKind),
			"dryRun":             strList("When present, indicates that modifications should not be persisted."),
			"gracePeriodSeconds": int64Prop("The duration in seconds before the object should be deleted."),
			"orphanDependents":   map[string]any{"type": "boolean", "description": "Deprecated: please use the PropagationPolicy."},
			"preconditions": map[string]any{"type": "object", "description": "Must be fulfilled before a deletion is carried out.", "properties": map[string]any{
				"resourceVersion": str("Specifies the target ResourceVersion"),
				"uid":             str("Specifies the target UID."),
			}},
			"propagationPolicy": str("Whether and how garbage collection will be performed."),
		},
	}
	watchEvent := map[string]any{
		"type":        "object",
		"description": "Event represents a single event to a watched resource.",
		"required":    []string{"type", "object"},
		"properties": map[string]any{
			"object": map[string]any{"type": "object", "description": "Object is the object of the event."},
			"type":   str("Type of the event: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR."),
		},
	}
	return map[string]any{
		defObjectMeta:    objectMeta,
		defListMeta:      listMeta,
		defStatus:        status,
		defPatch:         map[string]any{"type": "object", "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."},
		defDeleteOptions: deleteOpts,
		defWatchEvent:    watchEvent,
	}
}
