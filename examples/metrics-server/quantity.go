// This file formats resource quantities as Kubernetes' resource.Quantity
// prints them in canonical form: CPU in cores with decimal SI suffixes
// ("250m", "151640434n", "2"), memory in bytes with binary suffixes ("12Mi",
// "1738216Ki", or plain bytes when not a multiple of 1024).

package main

import "strconv"

// formatCPU formats nanocores as a canonical DecimalSI quantity of scale -9:
// the largest suffix (n, u, m, none, k, M, G, T, P, E) that keeps the number
// whole.
func formatCPU(nanocores int64) string {
	if nanocores == 0 {
		return "0"
	}
	suffixes := []string{"n", "u", "m", "", "k", "M", "G", "T", "P", "E"}
	n, i := nanocores, 0
	for i < len(suffixes)-1 && n%1000 == 0 {
		n /= 1000
		i++
	}
	return strconv.FormatInt(n, 10) + suffixes[i]
}

// formatMemory formats bytes as a canonical BinarySI quantity: values
// between -1024 and 1024 exclusive print as plain numbers (k8s switches to
// DecimalSI there), others with the largest binary suffix that keeps the
// number whole.
func formatMemory(bytes int64) string {
	if bytes > -1024 && bytes < 1024 {
		return strconv.FormatInt(bytes, 10)
	}
	suffixes := []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	n, i := bytes, 0
	for i < len(suffixes)-1 && n%1024 == 0 {
		n /= 1024
		i++
	}
	return strconv.FormatInt(n, 10) + suffixes[i]
}
