// Package esapi stands in for go-elasticsearch/v9's esapi: the one
// request Jaeger's template writer names (see the parent package).
package esapi

import (
	"fmt"
	"io"
)

// API is what the client embeds.
type API struct {
	Indices *Indices
}

// Indices holds the index request Jaeger makes.
type Indices struct {
	PutIndexTemplate func(name string, body io.Reader, o ...func(*IndicesPutIndexTemplateRequest)) (*Response, error)
}

// IndicesPutIndexTemplateRequest is the request's options.
type IndicesPutIndexTemplateRequest struct{}

// Response is a response's status.
type Response struct {
	StatusCode int
}

func (r *Response) String() string { return fmt.Sprintf("[%d]", r.StatusCode) }
