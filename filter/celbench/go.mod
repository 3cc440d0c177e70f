module github.com/gyrehq/gyre/filter/celbench

go 1.26.0

replace github.com/gyrehq/gyre => ../..

require (
	cel.dev/cel-go v0.33.2
	github.com/gyrehq/gyre v0.0.0-00010101000000-000000000000
	github.com/quagmt/udecimal v1.10.1
)

require (
	cel.dev/expr v0.25.1 // indirect
	github.com/antlr4-go/antlr/v4 v4.13.1 // indirect
	github.com/planetscale/vtprotobuf v0.6.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/exp v0.0.0-20240823005443-9b4947da3948 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20240826202546-f6391c0de4c7 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20240826202546-f6391c0de4c7 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
