// settings_table.h: the scripted settings, one table. `headmap --then key=value` applies
// them as the controls would; `headmap --help` and README's list are written from it (a
// test checks that README names every key).
//
// No GL and no Dear ImGui here: the settings change the plain state (app_state.h) only.
#pragma once
#include <string>
#include <vector>

#include "app/gui/app_state.h"
#include "core/error.h"

namespace headmap {

struct ScriptedSetting {
  const char* key;    // "heads"
  const char* value;  // what the value looks like: "N", "on|off", "layer,head"
  const char* help;   // what it does, as the control it stands for
  // Parses the value and applies it; on error the state is untouched.
  Status (*apply)(AppState& s, const std::string& value);
};

const std::vector<ScriptedSetting>& scripted_settings();

// Applies "key=value". Errors name the key or the value that is wrong.
Status apply_setting(AppState& s, const std::string& assignment);

// One line per setting, "  key=value  help", for --help.
std::string scripted_settings_help();

}  // namespace headmap
