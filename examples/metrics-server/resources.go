// This file declares the two served resources of metrics.k8s.io/v1beta1,
// NodeMetrics (cluster-scoped, "nodes") and PodMetrics (namespaced, "pods"),
// computed on read from the Store, with metrics-server's Table columns.

package main

import (
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/rest"
)

// Resources returns the metrics.k8s.io/v1beta1 resources served from st.
func Resources(st *Store) []rest.Resource {
	nodeGet, nodeList := st.Nodes()
	podGet, podList := st.Pods()
	return []rest.Resource{
		{
			Group: "metrics.k8s.io", Version: "v1beta1", Plural: "nodes", Kind: "NodeMetrics",
			Getter: nodeGet, Lister: nodeList,
			PrinterColumns: []rest.PrinterColumn{
				{Name: "CPU", Type: meta.ColumnTypeString, Format: "quantity", JSONPath: ".usage.cpu", Description: "CPU usage in cores"},
				{Name: "Memory", Type: meta.ColumnTypeString, Format: "quantity", JSONPath: ".usage.memory", Description: "Working-set memory in bytes"},
				{Name: "Window", Type: meta.ColumnTypeString, Format: "duration", JSONPath: ".window", Description: "Interval the usage was measured over"},
			},
		},
		{
			Group: "metrics.k8s.io", Version: "v1beta1", Plural: "pods", Kind: "PodMetrics", Namespaced: true,
			Getter: podGet, Lister: podList,
			// One value per container, comma-separated (JSONPath cannot sum;
			// metrics-server's own convertor prints the pod's total).
			PrinterColumns: []rest.PrinterColumn{
				{Name: "CPU", Type: meta.ColumnTypeString, Format: "quantity", JSONPath: ".containers[*].usage.cpu", Description: "CPU usage of each container in cores"},
				{Name: "Memory", Type: meta.ColumnTypeString, Format: "quantity", JSONPath: ".containers[*].usage.memory", Description: "Working-set memory of each container in bytes"},
				{Name: "Window", Type: meta.ColumnTypeString, Format: "duration", JSONPath: ".window", Description: "Interval the usage was measured over"},
			},
		},
	}
}
