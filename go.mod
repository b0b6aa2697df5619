module github.com/svc-sandbox/svc

go 1.26.0

require (
	github.com/moby/sys/mountinfo v0.7.3
	github.com/spf13/pflag v1.0.10 // indirect
	golang.org/x/sys v0.49.0
)
