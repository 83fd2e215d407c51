package jsondec

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// DuplicateFields returns the path of every key that appears twice in an
// object of data (valid JSON), in the order met and in the form kube's
// strict decoding errors name them: "spec.tier", "spec.items[0].name",
// with no path for a key of the root. It walks data with encoding/json's
// tokenizer: call it only when ObjectDup reported a duplicate.
func DuplicateFields(data []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []string
	walkDuplicates(dec, "", &out)
	return out
}

// walkDuplicates reads one value from dec at path.
func walkDuplicates(dec *json.Decoder, path string, out *[]string) {
	tok, err := dec.Token()
	if err != nil {
		return
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return
			}
			k, _ := kt.(string)
			p := k
			if path != "" {
				p = path + "." + k
			}
			if seen[k] {
				*out = append(*out, p)
			}
			seen[k] = true
			walkDuplicates(dec, p, out)
		}
		_, _ = dec.Token() // }
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			walkDuplicates(dec, path+"["+strconv.Itoa(i)+"]", out)
		}
		_, _ = dec.Token() // ]
	}
}
