// Package elasticsearch stands in for github.com/elastic/go-elasticsearch/v9
// in the Jaeger the tests build (make jaeger-bin replaces the module with
// this directory): Jaeger's Elasticsearch storage references the v9
// client's Config, Client and NewClient, and the real module brings ~850
// packages (its typed API) that cost ~3 CPU-minutes to compile on every
// fresh machine. The tests and testdata/jaeger/dev.yaml store traces in
// memory; a configuration that names Elasticsearch or OpenSearch gets
// NewClient's error instead of a client.
package elasticsearch

import (
	"errors"
	"net/http"

	"github.com/elastic/go-elasticsearch/v9/esapi"
)

// Config holds the fields Jaeger sets.
type Config struct {
	Addresses            []string
	Username, Password   string
	DiscoverNodesOnStart bool
	CompressRequestBody  bool
	Header               http.Header
	Transport            http.RoundTripper
}

// Client has the field Jaeger reads.
type Client struct {
	*esapi.API
}

// NewClient refuses: this Jaeger has no Elasticsearch client.
func NewClient(Config) (*Client, error) {
	return nil, errors.New("Elasticsearch and OpenSearch storage are not built into the tests' Jaeger (testdata/jaeger/_esstub): use memory storage")
}
