// This file writes NodeMetrics and PodMetrics as JSON by hand, in
// metrics-server's field order (kind, apiVersion, metadata, timestamp,
// window, then usage or containers). Every object is written for each
// request and, after each scrape, for the watch feed: at 30,000 pods
// encoding/json's reflection was most of a scrape cycle's CPU. The Go types
// of store.go describe the same objects (the schema is derived from them)
// and json_test.go holds the two to each other.

package main

import (
	"encoding/json"
	"strconv"
	"time"
)

// appendNodeJSON appends the NodeMetrics of e, created at now.
func appendNodeJSON(b []byte, e *nodeEntry, now time.Time) []byte {
	b = append(b, `{"kind":"NodeMetrics","apiVersion":"`+apiVersion+`","metadata":`...)
	b = appendObjectMeta(b, "", e.name, e.labels, now)
	b = appendTimes(b, e.cur.Time, e.window)
	b = append(b, `,"usage":`...)
	b = appendUsage(b, e.cpu, e.cur.MemoryBytes)
	return append(b, '}')
}

// appendPodJSON appends the PodMetrics of e, whose containers' CPU usage
// is cpu, created at now.
func appendPodJSON(b []byte, e *podEntry, cpu []int64, now time.Time) []byte {
	b = append(b, `{"kind":"PodMetrics","apiVersion":"`+apiVersion+`","metadata":`...)
	b = appendObjectMeta(b, e.namespace, e.name, e.labels, now)
	b = appendTimes(b, e.time(), e.window)
	b = append(b, `,"containers":[`...)
	for i, c := range e.containers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendString(b, c.Name)
		b = append(b, `,"usage":`...)
		b = appendUsage(b, cpu[i], c.Usage.MemoryBytes)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendObjectMeta appends the metadata: name, namespace (when not ""),
// creationTimestamp and labels (when any, by key).
func appendObjectMeta(b []byte, namespace, name string, labels Labels, created time.Time) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, name)
	if namespace != "" {
		b = append(b, `,"namespace":`...)
		b = appendString(b, namespace)
	}
	b = append(b, `,"creationTimestamp":"`...)
	b = created.UTC().AppendFormat(b, time.RFC3339)
	b = append(b, '"')
	if len(labels) > 0 {
		b = append(b, `,"labels":{`...)
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, labels[i])
			b = append(b, ':')
			b = appendString(b, labels[i+1])
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendTimes(b []byte, at time.Time, window time.Duration) []byte {
	b = append(b, `,"timestamp":"`...)
	b = at.UTC().AppendFormat(b, time.RFC3339)
	b = append(b, `","window":`...)
	return strconv.AppendQuote(b, windowString(window)) // digits, '.', unit letters
}

func appendUsage(b []byte, nanocores int64, memory uint64) []byte {
	b = append(b, `{"cpu":"`...)
	b = appendCPU(b, nanocores)
	b = append(b, `","memory":"`...)
	b = appendMemory(b, int64(memory))
	return append(b, `"}`...)
}

// appendString appends s as a JSON string: as it is when it needs no
// escaping (Kubernetes names and label values never do), else as
// encoding/json writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
