module github.com/converge-go/converge/store/cmd/convergestore

go 1.26.0

replace github.com/converge-go/converge => ../../..

replace github.com/converge-go/converge/store/boltstore => ../../../store/boltstore

require (
	github.com/converge-go/converge v0.0.0-00010101000000-000000000000
	github.com/converge-go/converge/store/boltstore v0.0.0-00010101000000-000000000000
	go.etcd.io/bbolt v1.5.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
