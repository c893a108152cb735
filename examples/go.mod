module github.com/converge-go/converge/examples

go 1.26.0

replace github.com/converge-go/converge => ../

replace github.com/converge-go/converge/store/boltstore => ../store/boltstore

require (
	github.com/converge-go/converge v0.0.0-00010101000000-000000000000
	github.com/converge-go/converge/store/boltstore v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.45.0
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
