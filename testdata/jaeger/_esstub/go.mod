module github.com/elastic/go-elasticsearch/v9

go 1.24
