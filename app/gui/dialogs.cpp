// dialogs.cpp: what the File dialogs do, on the state alone.
#include "app/gui/dialogs.h"

#include "app/gui/lessons.h"
#include "app/gui/settings.h"
#include "core/io/checkpoint.h"
#include "core/io/file_io.h"
#include "core/io/run_export.h"

namespace headmap {

const char* dialog_title(Dialog d) {
  switch (d) {
    case Dialog::None: return "";
    case Dialog::OpenView: return "Open view";
    case Dialog::SaveView: return "Save view";
    case Dialog::ExportHeadsPng: return "Export heads as PNG";
    case Dialog::ExportWindowPng: return "Export window as PNG";
    case Dialog::ExportNpy: return "Export attention as .npy";
    case Dialog::ExportJson: return "Export attention as JSON";
    case Dialog::Shortcuts: return "Keyboard shortcuts";
    case Dialog::OpenCheckpoint: return "Open checkpoint";
    case Dialog::SaveCheckpoint: return "Save trained model";
    case Dialog::OpenModel: return "Open model (GPT-2 in Hugging Face layout)";
    case Dialog::OpenLesson: return "Open lesson";
    case Dialog::SaveLessonStep: return "Save view as lesson step (appended to the lesson file)";
    case Dialog::ExportLesson: return "Export lesson (one PNG of the window per step, into this directory)";
  }
  return "";
}

const char* dialog_default_path(Dialog d) {
  switch (d) {
    case Dialog::OpenView:
    case Dialog::SaveView: return "view.headmap.json";  // the glob of the MIME type (packaging/)
    case Dialog::OpenCheckpoint:
    case Dialog::SaveCheckpoint: return "model.safetensors";
    case Dialog::ExportHeadsPng: return "heads.png";
    case Dialog::ExportWindowPng: return "headmap.png";
    case Dialog::ExportNpy: return "attention-npy";
    case Dialog::ExportJson: return "attention.json";
    case Dialog::OpenModel: return "gpt2";
    case Dialog::OpenLesson:
    case Dialog::SaveLessonStep: return "my-lesson.json";
    case Dialog::ExportLesson: return "lesson-slides";
    case Dialog::None:
    case Dialog::Shortcuts: return "";
  }
  return "";
}

bool dialog_captures(Dialog d) { return d == Dialog::ExportHeadsPng || d == Dialog::ExportWindowPng; }

Status run_dialog_action(Dialog d, const std::string& path, AppState& state) {
  Status st;
  const ComputeResult* res = state.result.get();
  auto run_record = [&](RunRecord& run) {
    run.cfg = res->request.cfg;
    run.weights = res->fwd->weights.get();
    run.batch = &res->fwd->batch;
    run.out = &res->fwd->out;
    run.passport = &res->fwd->passport;
    run.metrics = res->fwd->metrics;
    run.induction = res->induction;
  };
  switch (d) {
    case Dialog::OpenView:
      st = load_view(path, state);
      if (st) state.status_lines.push_back("Opened " + path);
      break;
    case Dialog::SaveView:
      st = save_view(path, state);
      if (st) state.status_lines.push_back("Saved " + path);
      break;
    case Dialog::OpenCheckpoint: {
      // Load it fully here, so a bad file is refused before anything changes.
      Result<ModelWeights> w = load_checkpoint(path);
      if (!w) {
        st = w.error();
        break;
      }
      CheckpointInfo info = checkpoint_info_of(*w, path);
      info.weights = std::make_shared<const ModelWeights>(std::move(w).value());  // the worker need not read it again
      st = open_checkpoint(state, path, &info);  // at the checkpoint's own D, H, L and context
      break;
    }
    case Dialog::OpenModel:
      // Read off the UI thread by the app (workers/model_loader.h); a failure keeps the
      // current model and is shown when the read ends.
      state.open_model_request = path;
      break;
    case Dialog::SaveCheckpoint:
      if (!state.session) st = Error{ErrorKind::InvalidArgument, "There is no model trained in this session to save."};
      else st = save_checkpoint(path, *state.session);
      if (st) state.status_lines.push_back("Saved " + path);
      break;
    case Dialog::ExportNpy:
    case Dialog::ExportJson:
      if (!res || !res->fwd) {
        st = Error{ErrorKind::InvalidArgument, "Nothing to export yet."};
        break;
      }
      if (!res->fwd->complete) {  // a long request's visible layer, shown first (ForwardData::complete)
        st = Error{ErrorKind::InvalidArgument, "The other layers are still computing: export again once the heads panel no longer says so."};
        break;
      }
      {
        RunRecord run;
        run_record(run);
        st = d == Dialog::ExportNpy ? export_npy_dir(path, run) : write_run_json(path, run, true);
        if (st) state.status_lines.push_back("Wrote " + path);
      }
      break;
    case Dialog::OpenLesson: {
      Result<Lesson> l = load_lesson(path);
      st = l ? open_lesson(state, std::make_shared<const Lesson>(std::move(l).value())) : Status(l.error());
      break;
    }
    case Dialog::SaveLessonStep:
      st = append_lesson_step(path, state, "Step");
      if (st) state.status_lines.push_back("Added this view as a step to " + path + ": write its text there.");
      break;
    case Dialog::ExportLesson:  // the app shows and captures each step (App::sync_lesson_export)
      if (!state.lesson.open()) st = Error{ErrorKind::InvalidArgument, "Open a lesson first (Help > Lessons)."};
      else state.lesson.export_request = path;
      break;
    case Dialog::None:
    case Dialog::Shortcuts:
    case Dialog::ExportHeadsPng:
    case Dialog::ExportWindowPng: break;
  }
  return st;
}

}  // namespace headmap
