#include "app/gui/presets.h"

#include <nlohmann/json.hpp>

#include "app/common/model_options.h"
#include "core/io/file_io.h"

namespace headmap {

static Presets builtin() {
  Presets p;
  p.items.push_back({"Kitten on the blanket, sleepy", kDefaultSentence, "coreference: it -> kitten", false});
  return p;
}

std::string preset_menu_label(const Preset& p) {
  if (!p.in_corpus) return p.name;
  return p.name + (*p.in_corpus ? "  (in the training corpus: memorised)" : "  (not in the training corpus)");
}

Presets load_presets(const std::string& path, std::string* error) {
  Result<std::string> text = read_file(path, 1 << 20);
  if (!text) {
    if (error) *error = text.error().message;
    return builtin();
  }
  return parse_presets(*text, path, error);
}

Presets parse_presets(const std::string& text, const std::string& path, std::string* error) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    Presets p;
    for (const auto& e : j.at("presets")) {
      if (p.items.size() >= 1000) throw std::runtime_error("more than 1000 presets");
      Preset item{e.at("name").get<std::string>(), e.at("text").get<std::string>(), e.value("note", ""), std::nullopt};
      if (e.contains("in_corpus")) item.in_corpus = e.at("in_corpus").get<bool>();
      p.items.push_back(std::move(item));
    }
    if (p.items.empty()) throw std::runtime_error("no presets");
    return p;
  } catch (const std::exception& e) {
    if (error) *error = "The presets file " + path + " is not valid (" + e.what() + "); using the built-in sentence.";
    return builtin();
  }
}

}  // namespace headmap
