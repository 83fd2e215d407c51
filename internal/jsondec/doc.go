// Package jsondec decodes a JSON object into the values a json.Decoder
// with UseNumber gives a map[string]any (nested maps, []any, strings,
// json.Number, bools, nil), in one pass and without reflection. It decodes
// only well-formed input: on anything else it reports false and the caller
// asks encoding/json, whose error messages clients see.
package jsondec
