module github.com/annexapi/annex

go 1.26.0

require (
	github.com/go-chi/chi/v5 v5.5.0 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
