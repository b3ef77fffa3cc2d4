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

// Who may give a setting (issue 35, F1). A lesson step's "set" is data: it may set the
// model's controls and the view, and nothing else: never read or write a file, open a
// model, start work or drive the player. Only the command line (--then) gives the rest.
// An allow-list: a setting is CommandLine unless its entry says Data, so a new setting
// that writes a file is refused from files without anyone remembering to forbid it.
enum class SettingReach { CommandLine, Data };

struct ScriptedSetting {
  const char* key;    // "heads"
  const char* value;  // what the value looks like: "N", "on|off", "layer,head"
  const char* help;   // what it does, as the control it stands for
  // Parses the value and applies it; on error the state is untouched.
  Status (*apply)(AppState& s, const std::string& value);
  SettingReach reach = SettingReach::CommandLine;
};

const std::vector<ScriptedSetting>& scripted_settings();

// Applies "key=value". Errors name the key or the value that is wrong.
Status apply_setting(AppState& s, const std::string& assignment);
// The same for a setting read from a file (a lesson step): a CommandLine setting is refused,
// naming its key, and the state is untouched.
Status apply_data_setting(AppState& s, const std::string& assignment);

// One line per setting, "  key=value  help", for --help.
std::string scripted_settings_help();

}  // namespace headmap
