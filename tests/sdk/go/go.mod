module github.com/gyrehq/gyre/tests/sdk/go

go 1.26.0

require (
	github.com/centrifugal/centrifuge-go v0.12.1
	github.com/golang-jwt/jwt/v5 v5.3.1
)

require (
	github.com/centrifugal/protocol v0.21.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/jpillora/backoff v1.0.0 // indirect
	github.com/mailru/easyjson v0.9.2 // indirect
	github.com/planetscale/vtprotobuf v0.6.0 // indirect
	github.com/segmentio/asm v1.2.1 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/shadowspore/fossil-delta v0.0.0-20241213113458-1d797d70cbe3 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	golang.org/x/sys v0.44.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
