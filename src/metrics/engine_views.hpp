// The production wiring: the collector's inputs taken from a running CaptureEngine.
#pragma once

#include <memory>

#include "metrics/capture_views.hpp"
#include "metrics/collector.hpp"

namespace linecap {

class CaptureEngine;

CaptureViews capture_views(const CaptureEngine& engine);

// A collector over the engine's views, ethdev port stats and statvfs of the output
// directory. The engine must outlive every collect() call.
std::unique_ptr<MetricsCollector> make_engine_collector(const CaptureEngine& engine);

}  // namespace linecap
