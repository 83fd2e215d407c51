// This file formats resource quantities as Kubernetes' resource.Quantity
// prints them in canonical form: CPU in cores with decimal SI suffixes
// ("250m", "151640434n", "2"), memory in bytes with binary suffixes ("12Mi",
// "1738216Ki", or plain bytes when not a multiple of 1024).

package main

import "strconv"

var (
	cpuSuffixes    = []string{"n", "u", "m", "", "k", "M", "G", "T", "P", "E"}
	memorySuffixes = []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
)

// formatCPU formats nanocores as a canonical DecimalSI quantity of scale -9:
// the largest suffix (n, u, m, none, k, M, G, T, P, E) that keeps the number
// whole.
func formatCPU(nanocores int64) string { return string(appendCPU(nil, nanocores)) }

// appendCPU appends formatCPU(nanocores) to b.
func appendCPU(b []byte, nanocores int64) []byte {
	if nanocores == 0 {
		return append(b, '0')
	}
	n, i := nanocores, 0
	for i < len(cpuSuffixes)-1 && n%1000 == 0 {
		n /= 1000
		i++
	}
	return append(strconv.AppendInt(b, n, 10), cpuSuffixes[i]...)
}

// formatMemory formats bytes as a canonical BinarySI quantity: values
// between -1024 and 1024 exclusive print as plain numbers (k8s switches to
// DecimalSI there), others with the largest binary suffix that keeps the
// number whole.
func formatMemory(bytes int64) string { return string(appendMemory(nil, bytes)) }

// appendMemory appends formatMemory(bytes) to b.
func appendMemory(b []byte, bytes int64) []byte {
	if bytes > -1024 && bytes < 1024 {
		return strconv.AppendInt(b, bytes, 10)
	}
	n, i := bytes, 0
	for i < len(memorySuffixes)-1 && n%1024 == 0 {
		n /= 1024
		i++
	}
	return append(strconv.AppendInt(b, n, 10), memorySuffixes[i]...)
}
