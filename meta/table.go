// This file holds the Table shape (meta.k8s.io/v1) that kubectl get asks
// for with Accept: application/json;as=Table;v=v1;g=meta.k8s.io.

package meta

import "encoding/json"

// Table is a list or object rendered as rows of cells. ColumnDefinitions is
// written as null when nil, which is how watch events after the first say
// "same columns"; Rows should be non-nil so that an empty table has "rows":[].
type Table struct {
	TypeMeta          `json:",inline"`
	Metadata          ListMeta                `json:"metadata"`
	ColumnDefinitions []TableColumnDefinition `json:"columnDefinitions"`
	Rows              []TableRow              `json:"rows"`
}

// Column types and the name format.
const (
	ColumnTypeString  = "string"
	ColumnTypeInteger = "integer"
	ColumnTypeNumber  = "number"
	ColumnTypeBoolean = "boolean"
	ColumnTypeDate    = "date"
	ColumnFormatName  = "name"
)

// TableColumnDefinition describes a column; every field is always written.
// Priority 0 columns show by default, higher ones with -o wide.
type TableColumnDefinition struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format"`
	Description string `json:"description"`
	Priority    int32  `json:"priority"`
}

// TableRow is one row. Object is the object (PartialObjectMetadata by
// default, the full object with includeObject=Object) as raw JSON; when nil
// it is written as null, as k8s writes an empty RawExtension.
type TableRow struct {
	Cells      []any               `json:"cells"`
	Conditions []TableRowCondition `json:"conditions,omitempty"`
	Object     json.RawMessage     `json:"object"`
}

// TableRowCondition is a condition of a row (type Completed).
type TableRowCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// IncludeObject policies of the includeObject parameter; Metadata is the default.
const (
	IncludeNone     = "None"
	IncludeMetadata = "Metadata"
	IncludeObject   = "Object"
)
