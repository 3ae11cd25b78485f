module github.com/echomq/kit

go 1.26
