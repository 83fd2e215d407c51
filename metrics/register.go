// This file holds Register, how every package of annex adds its collectors
// to an injected registry.

package metrics

import (
	"errors"
	"reflect"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with reg and returns it; when a collector of the same
// type is already registered under the same descriptor (two watch caches, or
// two servers' authenticators, sharing one registry), it returns that one
// instead, so both feed the same series. A nil reg registers nothing and
// returns c. Any other registration failure is returned with c.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) && reflect.TypeOf(are.ExistingCollector) == reflect.TypeOf(c) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}
