// This file declares the two served resources of metrics.k8s.io/v1beta1,
// NodeMetrics (cluster-scoped, "nodes") and PodMetrics (namespaced, "pods"),
// computed from the Store's snapshot and written by json.go, with their
// schema derived from the Go types of store.go (typed.SchemaOf), with
// metrics-server's Table columns, and watchable: each scrape is an event for
// every object it changed.

package main

import (
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/typed"
)

// Resources returns the metrics.k8s.io/v1beta1 resources served from st.
// They are computed resources of package rest (Getter, Lister, Events) whose
// JSON the store writes itself: typed.Computed would do the same from
// NodeMetrics and PodMetrics values through encoding/json, at several times
// the cost per object, which every scrape pays for every pod.
func Resources(st *Store) ([]rest.Resource, error) {
	nodeSchema, err := typed.SchemaOf[NodeMetrics]()
	if err != nil {
		return nil, err
	}
	podSchema, err := typed.SchemaOf[PodMetrics]()
	if err != nil {
		return nil, err
	}
	nodes := rest.Resource{Group: "metrics.k8s.io", Version: "v1beta1", Plural: "nodes", Kind: "NodeMetrics", Schema: nodeSchema,
		Getter: rest.GetterFunc(st.Node), Lister: rest.ListerFunc(st.NodeList), Events: rest.EventSourceFunc(st.NodeEvents),
		PrinterColumns: []rest.PrinterColumn{
			{Name: "CPU", Type: meta.ColumnTypeString, Format: "quantity", JSONPath: ".usage.cpu", Description: "CPU usage in cores"},
			{Name: "Memory", Type: meta.ColumnTypeString, Format: "quantity", JSONPath: ".usage.memory", Description: "Working-set memory in bytes"},
			{Name: "Window", Type: meta.ColumnTypeString, Format: "duration", JSONPath: ".window", Description: "Interval the usage was measured over"},
		},
	}
	pods := rest.Resource{Group: "metrics.k8s.io", Version: "v1beta1", Plural: "pods", Kind: "PodMetrics", Namespaced: true, Schema: podSchema,
		Getter: rest.GetterFunc(st.Pod), Lister: rest.ListerFunc(st.PodList), Events: rest.EventSourceFunc(st.PodEvents),
		// One value per container, comma-separated (JSONPath cannot sum;
		// metrics-server's own convertor prints the pod's total).
		PrinterColumns: []rest.PrinterColumn{
			{Name: "CPU", Type: meta.ColumnTypeString, Format: "quantity", JSONPath: ".containers[*].usage.cpu", Description: "CPU usage of each container in cores"},
			{Name: "Memory", Type: meta.ColumnTypeString, Format: "quantity", JSONPath: ".containers[*].usage.memory", Description: "Working-set memory of each container in bytes"},
			{Name: "Window", Type: meta.ColumnTypeString, Format: "duration", JSONPath: ".window", Description: "Interval the usage was measured over"},
		},
	}
	return []rest.Resource{nodes, pods}, nil
}
