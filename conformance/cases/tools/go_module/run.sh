# go vet, go test and go build of a small module, then its binary: what a
# Go build step of a judge or a CI job runs. go is called by its full path,
# which the host and the sandbox share (the sandbox also finds it as go).
set -e
go=/usr/local/go/bin/go
$go vet ./...
$go test -count=1 ./... | sed 's/[0-9.]*s$/<time>/'
$go build -o wordfreq .
echo "the quick brown fox jumps over the lazy dog The fox" | ./wordfreq
