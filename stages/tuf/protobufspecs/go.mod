module github.com/sigstore/protobuf-specs

go 1.22
