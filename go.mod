module github.com/gyrehq/gyre

go 1.26

require (
	github.com/planetscale/vtprotobuf v0.6.0
	google.golang.org/protobuf v1.36.12
)
