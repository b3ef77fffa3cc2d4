// dialogs.h: the File menu's dialogs and what their OK button does.
//
// The actions run on the plain state alone, with no GL and no Dear ImGui, so they can be
// tested without a window. The dialog boxes themselves are drawn by App (app.cpp); the PNG
// exports read the frame, so App runs those as captures.
#pragma once
#include <string>

#include "app/gui/app_state.h"
#include "core/error.h"

namespace headmap {

enum class Dialog { None, OpenView, SaveView, ExportHeadsPng, ExportWindowPng, ExportNpy, ExportJson, Shortcuts, OpenCheckpoint,
                    SaveCheckpoint, OpenModel, OpenLesson, SaveLessonStep, ExportLesson };

// The dialog's window title, e.g. "Open view".
const char* dialog_title(Dialog d);
// The path a dialog proposes when it opens, e.g. "view.json" ("" for Shortcuts).
const char* dialog_default_path(Dialog d);
// The dialog reads the frame (a PNG capture): App runs it, not run_dialog_action.
bool dialog_captures(Dialog d);

// OK in a file dialog: open or save a view, open a checkpoint or a GPT-2-family model
// directory (read and checked fully before anything changes), save the session's model, export the result on screen as .npy
// or JSON. On success a note goes to s.status_lines; on error the state is untouched.
Status run_dialog_action(Dialog d, const std::string& path, AppState& s);

}  // namespace headmap
