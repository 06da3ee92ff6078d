// driver/model_summary.h - what a model is, as `txlc info` shows it.
//
// describeModel() gathers, for any opened model (driver/model.h): what the
// path is, the model id (its content hash), the spec, semantics and initial
// memory, the precision of the weights, parameter and byte counts, the
// vocabulary, the setting it runs at by default (an artifact's compiled one)
// with its memory form and pipeline, and for an artifact or standalone
// executable the txlc version and CPU it was compiled with and its stored
// graphs. The same keys feed the JSON form and the text form.
//
//   nlohmann::json d = describeModel(openModel("kjv.txla", {}));
//   std::cout << modelSummaryText(d);
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "driver/model.h"

namespace txl::driver {

nlohmann::json describeModel(const Model& m);
std::string modelSummaryText(const nlohmann::json& d);

}  // namespace txl::driver
