// Copyright (c) 2023 The Jaeger Authors.
// SPDX-License-Identifier: Apache-2.0

// This file replaces cmd/jaeger/internal/components.go in a copy of the
// Jaeger module when the Makefile builds Jaeger for the tests (jaeger-bin):
// the same distribution with only the components the tests' configuration
// and testdata/jaeger/dev.yaml name (the OTLP receiver, the batch
// processor, the jaeger_storage and jaeger_query extensions and the
// storage exporter), as the OpenTelemetry Collector Builder makes a
// collector of chosen components. Jaeger lists its components in an
// internal package, so a distribution of its own cannot import them. The
// directory's leading underscore keeps it out of `go build ./...`.

package internal

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"

	"github.com/jaegertracing/jaeger/cmd/jaeger/internal/exporters/storageexporter"
	"github.com/jaegertracing/jaeger/cmd/jaeger/internal/extension/jaegerquery"
	"github.com/jaegertracing/jaeger/cmd/jaeger/internal/extension/jaegerstorage"
)

type builders struct {
	extension func(factories ...extension.Factory) (map[component.Type]extension.Factory, error)
	receiver  func(factories ...receiver.Factory) (map[component.Type]receiver.Factory, error)
	exporter  func(factories ...exporter.Factory) (map[component.Type]exporter.Factory, error)
	processor func(factories ...processor.Factory) (map[component.Type]processor.Factory, error)
	connector func(factories ...connector.Factory) (map[component.Type]connector.Factory, error)
}

func defaultBuilders() builders {
	return builders{
		extension: otelcol.MakeFactoryMap[extension.Factory],
		receiver:  otelcol.MakeFactoryMap[receiver.Factory],
		exporter:  otelcol.MakeFactoryMap[exporter.Factory],
		processor: otelcol.MakeFactoryMap[processor.Factory],
		connector: otelcol.MakeFactoryMap[connector.Factory],
	}
}

func (b builders) build() (otelcol.Factories, error) {
	var err error
	factories := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	if factories.Extensions, err = b.extension(jaegerquery.NewFactory(), jaegerstorage.NewFactory()); err != nil {
		return otelcol.Factories{}, err
	}
	if factories.Receivers, err = b.receiver(otlpreceiver.NewFactory()); err != nil {
		return otelcol.Factories{}, err
	}
	if factories.Exporters, err = b.exporter(storageexporter.NewFactory()); err != nil {
		return otelcol.Factories{}, err
	}
	if factories.Processors, err = b.processor(batchprocessor.NewFactory()); err != nil {
		return otelcol.Factories{}, err
	}
	if factories.Connectors, err = b.connector(); err != nil {
		return otelcol.Factories{}, err
	}
	return factories, nil
}

func Components() (otelcol.Factories, error) {
	return defaultBuilders().build()
}
