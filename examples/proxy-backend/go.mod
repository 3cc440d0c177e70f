module github.com/gyrehq/gyre/examples/proxy-backend

go 1.26.0
