module github.com/converge-go/converge

go 1.26.0
