module github.com/gyrehq/gyre

go 1.26
