module github.com/svc-sandbox/svc

go 1.26
