// Package jsonenc writes JSON the way encoding/json's Marshal does, byte
// for byte, without reflection: strings (HTML-safe escaping, invalid UTF-8
// replaced) and the values JSON decoding produces (maps with their keys
// sorted, slices, strings, json.Number, bools, nil). Audit events,
// managed-fields entries and the objects of writes are encoded with it;
// a value of any other type is handed to encoding/json, so the output is
// always Marshal's.
package jsonenc
