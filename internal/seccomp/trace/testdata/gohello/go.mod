module gohello

go 1.26
