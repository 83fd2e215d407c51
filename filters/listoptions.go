// This file decides, for a GET without a name, what Kubernetes' ListOptions
// decoding would: whether it is a watch, whether the options decode at all,
// and which exact metadata.name the field selector requires. The selectors
// are parsed with meta's parsers, which follow apimachinery's
// labels.Parse and fields.ParseSelector.

package filters

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/annexapi/annex/meta"
)

type listOptions struct {
	watch   bool
	name    string // the exact metadata.name the field selector requires
	hasName bool
}

// parseListOptions mirrors the url.Values → ListOptions conversion: ok is
// false when any option fails to decode (bad integers, bad selectors).
func parseListOptions(q url.Values) (opts listOptions, ok bool) {
	for _, k := range []string{"timeoutSeconds", "limit"} {
		if v := q[k]; len(v) > 0 {
			if _, err := strconv.ParseInt(v[0], 10, 64); err != nil {
				return opts, false
			}
		}
	}
	if v := q["labelSelector"]; len(v) > 0 && !validLabelSelector(v[0]) {
		return opts, false
	}
	if v := q["fieldSelector"]; len(v) > 0 {
		sel, err := meta.ParseFieldSelector(v[0])
		if err != nil {
			return opts, false
		}
		opts.name, opts.hasName = sel.RequiresExactMatch("metadata.name")
	}
	opts.watch = listBool(q["watch"])
	return opts, true
}

// listBool is apimachinery's []string → bool conversion: absent, "0" and
// "false" (any case) are false; anything else, even "", is true.
func listBool(v []string) bool {
	return len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
}

// queryBool is the fallback Kubernetes uses for watch when the options do not
// decode; it lower-cases rather than case-folds.
func queryBool(v []string) bool {
	if len(v) == 0 {
		return false
	}
	switch strings.ToLower(v[0]) {
	case "false", "0":
		return false
	}
	return true
}

// validLabelSelector reports whether labels.Parse would accept s.
func validLabelSelector(s string) bool {
	_, err := meta.ParseLabelSelector(s)
	return err == nil
}
