// model_source.h: which weights the sliders' configuration runs on.
//
// headmap opens on a trained model. num_heads has one meaning everywhere (the app and
// headmap-cli): another H re-slices the same trained weights (they do not depend on H).
// For each configuration the "trained" choice picks, in order: a pretrained model the user
// opened (GPT-2 family; its D and L fix the sliders), the model trained in this session (if
// its D and L match), a checkpoint the user opened, the shipped default (kDefaultCheckpoint)
// or another shipped checkpoint with the same D and L, each re-sliced to the sliders' H,
// and otherwise random init, saying so. The "trained for this H" choice reaches the
// separately trained family by name: a model trained with exactly the sliders' D, H and L
// (and the no-W_O switch), else the "trained" choice with a note saying none was.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/model/config.h"
#include "core/error.h"
#include "core/model/weights.h"

namespace headmap {

struct CheckpointInfo {
  std::string path;
  int d_model = 0, num_heads = 0, num_layers = 0, context = 0;
  long steps = 0;
  double val_loss = 0;
  bool no_w_o = false;
  // The file's weights, kept from the read that checked it (the shipped checkpoints, read
  // once at start): the worker then never reads the file again. Null: read when needed.
  std::shared_ptr<const ModelWeights> weights;
};

// The checkpoints in dir (every *.safetensors the core's reader accepts), sorted by path.
std::vector<CheckpointInfo> scan_checkpoints(const std::string& dir);
// One checkpoint, read and checked by the core (load_checkpoint).
Result<CheckpointInfo> checkpoint_info(const std::string& path);
// The same, from weights already loaded from `path`.
CheckpointInfo checkpoint_info_of(const ModelWeights& w, const std::string& path);

enum class WeightsMode { Trained, TrainedForH, Random };
// "trained", "trained_for_h", "random": view files and the scripted "weights" setting.
const char* weights_mode_name(WeightsMode m);
bool parse_weights_mode(const std::string& name, WeightsMode* out);

struct WeightsChoice {
  std::string checkpoint;                          // a file to load, or empty
  std::shared_ptr<const ModelWeights> in_memory;   // or weights already in memory
  std::shared_ptr<const ModelWeights> loaded;      // checkpoint's weights when already read (see CheckpointInfo)
  int context_limit = 0;                           // the trained model's positions (0: none)
  std::string note;                                // why, when it is not the obvious choice
};

struct WeightsInputs {
  WeightsMode mode = WeightsMode::Trained;
  const std::vector<CheckpointInfo>* shipped = nullptr;
  std::string user_checkpoint;                      // opened with File > Open checkpoint
  const CheckpointInfo* user_info = nullptr;
  std::shared_ptr<const ModelWeights> session;      // trained or being trained in the app
  std::shared_ptr<const ModelWeights> pretrained;   // opened with File > Open model or --model
};

WeightsChoice choose_weights(const ModelConfig& cfg, const WeightsInputs& in);

}  // namespace headmap
