// This file holds a minimal JSON scanner that finds one top-level field of an
// object without decoding the rest: objectRef needs only the request body's
// metadata, and decoding a whole object for it would cost more than the
// rest of the audit stage.

package audit

import "github.com/annexapi/annex/internal/jsonscan"

// topLevelField returns the raw value of key in the JSON object b, or nil
// when b is not an object or has no such key (a key written with escapes
// never matches). It does not validate what it skips.
func topLevelField(b []byte, key string) []byte {
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil
	}
	i++
	for {
		i = jsonscan.SkipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return nil
		}
		end := jsonscan.SkipString(b, i)
		if end < 0 {
			return nil
		}
		k := b[i+1 : end-1]
		i = jsonscan.SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil
		}
		i = jsonscan.SkipSpace(b, i+1)
		vend := jsonscan.SkipValue(b, i)
		if vend < 0 {
			return nil
		}
		if string(k) == key {
			return b[i:vend]
		}
		i = jsonscan.SkipSpace(b, vend)
		if i >= len(b) || b[i] != ',' {
			return nil
		}
		i++
	}
}
