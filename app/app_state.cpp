#include "app/app_state.h"

namespace headmap {

const char* center_panel_name(CenterPanel p) {
  switch (p) {
    case CenterPanel::Heads: return "heads";
    case CenterPanel::Focus: return "focus";
    case CenterPanel::Model: return "model";
    case CenterPanel::Passport: return "passport";
    case CenterPanel::Training: return "training";
  }
  return "heads";
}

bool parse_center_panel(const std::string& name, CenterPanel* out) {
  for (CenterPanel p : {CenterPanel::Heads, CenterPanel::Focus, CenterPanel::Model, CenterPanel::Passport, CenterPanel::Training})
    if (name == center_panel_name(p)) {
      *out = p;
      return true;
    }
  return false;
}

const char* normalisation_name(Normalisation n) {
  switch (n) {
    case Normalisation::PerHead: return "head";
    case Normalisation::PerLayer: return "layer";
    case Normalisation::Global: return "global";
    case Normalisation::Absolute: return "absolute";
  }
  return "head";
}

bool parse_normalisation(const std::string& name, Normalisation* out) {
  for (Normalisation n : {Normalisation::PerHead, Normalisation::PerLayer, Normalisation::Global, Normalisation::Absolute})
    if (name == normalisation_name(n)) {
      *out = n;
      return true;
    }
  return false;
}

}  // namespace headmap
