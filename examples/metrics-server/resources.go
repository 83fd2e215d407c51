// This file declares the two served resources of metrics.k8s.io/v1beta1,
// NodeMetrics (cluster-scoped, "nodes") and PodMetrics (namespaced, "pods"),
// computed on read from the Store, with metrics-server's Table columns, and
// watchable: each scrape is an event for every object it changed.

package main

import (
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/typed"
)

// Resources returns the metrics.k8s.io/v1beta1 resources served from st,
// declared on the typed layer (package typed).
func Resources(st *Store) ([]rest.Resource, error) {
	nodes, err := typed.Computed[NodeMetrics]{
		Group: "metrics.k8s.io", Version: "v1beta1", Plural: "nodes", Kind: "NodeMetrics",
		Get: st.Node, List: st.NodeList, Changes: st.NodeChanges,
		PrinterColumns: []rest.PrinterColumn{
			{Name: "CPU", Type: meta.ColumnTypeString, Format: "quantity", JSONPath: ".usage.cpu", Description: "CPU usage in cores"},
			{Name: "Memory", Type: meta.ColumnTypeString, Format: "quantity", JSONPath: ".usage.memory", Description: "Working-set memory in bytes"},
			{Name: "Window", Type: meta.ColumnTypeString, Format: "duration", JSONPath: ".window", Description: "Interval the usage was measured over"},
		},
	}.Resource()
	if err != nil {
		return nil, err
	}
	pods, err := typed.Computed[PodMetrics]{
		Group: "metrics.k8s.io", Version: "v1beta1", Plural: "pods", Kind: "PodMetrics", Namespaced: true,
		Get: st.Pod, List: st.PodList, Changes: st.PodChanges,
		// One value per container, comma-separated (JSONPath cannot sum;
		// metrics-server's own convertor prints the pod's total).
		PrinterColumns: []rest.PrinterColumn{
			{Name: "CPU", Type: meta.ColumnTypeString, Format: "quantity", JSONPath: ".containers[*].usage.cpu", Description: "CPU usage of each container in cores"},
			{Name: "Memory", Type: meta.ColumnTypeString, Format: "quantity", JSONPath: ".containers[*].usage.memory", Description: "Working-set memory of each container in bytes"},
			{Name: "Window", Type: meta.ColumnTypeString, Format: "duration", JSONPath: ".window", Description: "Interval the usage was measured over"},
		},
	}.Resource()
	if err != nil {
		return nil, err
	}
	return []rest.Resource{nodes, pods}, nil
}
