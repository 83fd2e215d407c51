module github.com/annexapi/annex

go 1.25.0
