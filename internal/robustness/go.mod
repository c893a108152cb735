module github.com/converge-go/converge/internal/robustness

go 1.26.0

replace github.com/converge-go/converge => ../..

replace github.com/converge-go/converge/store/boltstore => ../../store/boltstore

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/converge-go/converge v0.0.0-00010101000000-000000000000
	github.com/converge-go/converge/store/boltstore v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

require (
	go.etcd.io/bbolt v1.5.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
)
