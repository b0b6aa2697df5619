module prog

go 1.24
