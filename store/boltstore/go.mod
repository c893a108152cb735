module github.com/converge-go/converge/store/boltstore

go 1.26.0

replace github.com/converge-go/converge => ../..

require (
	github.com/converge-go/converge v0.0.0-00010101000000-000000000000
	go.etcd.io/bbolt v1.5.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/stretchr/testify v1.12.1 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.45.0 // indirect
)
