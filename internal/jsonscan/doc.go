// Package jsonscan steps over JSON values in bytes without decoding them:
// the few helpers storage/backend (metadata of stored objects) and audit
// (request and response objects) use to find a top-level field in an object
// they must not re-encode. The input is assumed to be valid JSON (it has been
// decoded or validated before); on input that ends early the helpers return
// -1, never panic.
package jsonscan
