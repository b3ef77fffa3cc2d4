// hf_post_processors.cpp: see hf_post_processors.h.
#include "core/text/hf_post_processors.h"

#include <algorithm>
#include <map>

namespace headmap::hf {

thread_local uint64_t trim_bytes_stepped = 0;

namespace {

Tok special_tok(int id, const std::string& piece, int type_id) { return Tok{id, piece, {}, type_id, true, -1}; }

// Official byte_level::process_offsets: a token's leading and trailing spaces (Ġ or
// whitespace) leave its offsets, except the one space a prefix-space pre-tokenizer added
// to the first token. The official offsets are characters by then, so the range moves by
// whole characters of the text here too.
void trim_offsets(std::vector<Tok>& toks, bool add_prefix_space, const Encodings& encs) {
  auto is_cont = [](const std::string& t, uint32_t at) { return at < t.size() && (static_cast<unsigned char>(t[at]) & 0xC0) == 0x80; };
  for (size_t i = 0; i < toks.size(); ++i) {
    Tok& t = toks[i];
    const std::u32string cps = decode_utf8(t.piece).codepoints;
    auto space = [](char32_t c) { return c == 0x120 || is_whitespace(c); };
    size_t lead = 0, trail = 0;
    while (lead < cps.size() && space(cps[lead])) ++lead;
    while (trail < cps.size() && space(cps[cps.size() - 1 - trail])) ++trail;
    const std::string* text = t.seq >= 0 && t.seq < 2 ? encs.text[t.seq] : nullptr;
    if (!text) continue;
    if (lead > 0) {
      const bool first = i == 0 || t.span.b == 0;
      if (first && add_prefix_space && lead == 1) lead = 0;
      for (size_t k = 0; k < lead && t.span.b < t.span.e; ++k)
        do ++t.span.b, ++trim_bytes_stepped;
        while (t.span.b < t.span.e && is_cont(*text, t.span.b));
    }
    if (trail > 0) {
      // The official check: at least `trail` characters before the end. Counted back from the
      // end and only up to `trail`, so a token costs its own length, not the text's (counting
      // from the start was quadratic in a line's tokens: issue 35, F4).
      size_t chars = 0;
      for (uint32_t k = std::min<uint32_t>(t.span.e, uint32_t(text->size())); k > 0 && chars < trail; --k) {
        chars += !is_cont(*text, k - 1);
        ++trim_bytes_stepped;
      }
      if (chars >= trail)
        for (size_t k = 0; k < trail && t.span.e > t.span.b; ++k)
          do --t.span.e, ++trim_bytes_stepped;
          while (t.span.e > t.span.b && is_cont(*text, t.span.e));
    }
  }
}

struct TemplatePost : PostProcessor {
  struct Item {
    bool is_seq;
    int seq;  // 0 = A, 1 = B
    std::string special;
    int type_id;
  };
  std::vector<Item> single, pair;
  std::map<std::string, std::pair<std::vector<int>, std::vector<std::string>>> specials;
  std::string where;  // "post_processor"
  void special_ids(std::vector<NamedId>& out) const override {
    for (const auto& [name, sp] : specials)
      for (size_t k = 0; k < sp.first.size(); ++k)
        out.push_back({where + ".special_tokens[\"" + sanitize_utf8(name.substr(0, 64)) + "\"].ids[" + std::to_string(k) + "]", sp.first[k]});
  }
  void run(Encodings& encs, bool add_special) const override {
    const bool is_pair = encs.list.size() > 1;
    std::vector<Tok> out;
    for (const Item& it : is_pair ? pair : single) {
      if (it.is_seq) {
        for (Tok t : encs.list[std::min<size_t>(size_t(it.seq), encs.list.size() - 1)]) t.type_id = it.type_id, out.push_back(std::move(t));
      } else if (add_special) {
        const auto& sp = specials.at(it.special);
        for (size_t k = 0; k < sp.first.size(); ++k) out.push_back(special_tok(sp.first[k], sp.second[k], it.type_id));
      }
    }
    encs.list.assign(1, std::move(out));
  }
  std::string name() const override { return "TemplateProcessing"; }
};

struct BertPost : PostProcessor {
  std::string cls, sep;
  int cls_id = 0, sep_id = 0;
  bool roberta = false, trim = false, add_prefix_space = false;
  std::string where;
  void special_ids(std::vector<NamedId>& out) const override {
    out.push_back({where + ".cls", cls_id});
    out.push_back({where + ".sep", sep_id});
  }
  void run(Encodings& encs, bool add_special) const override {
    if (roberta) {
      for (auto& e : encs.list) {
        if (trim) trim_offsets(e, add_prefix_space, encs);
        for (Tok& t : e) t.type_id = 0;
      }
    }
    if (!add_special) return;
    std::vector<Tok> out;
    out.push_back(special_tok(cls_id, cls, 0));
    for (Tok& t : encs.list[0]) t.type_id = 0, out.push_back(t);
    out.push_back(special_tok(sep_id, sep, 0));
    if (encs.list.size() > 1) {
      const int ty = roberta ? 0 : 1;
      if (roberta) out.push_back(special_tok(sep_id, sep, 0));
      for (Tok& t : encs.list[1]) t.type_id = ty, out.push_back(t);
      out.push_back(special_tok(sep_id, sep, ty));
    }
    encs.list.assign(1, std::move(out));
  }
  std::string name() const override { return roberta ? "RobertaProcessing" : "BertProcessing"; }
};

struct ByteLevelPost : PostProcessor {  // trims offsets only: ids unchanged, encodings left apart
  bool trim = true, add_prefix_space = true;
  void run(Encodings& encs, bool) const override {
    if (trim)
      for (auto& e : encs.list) trim_offsets(e, add_prefix_space, encs);
  }
  std::string name() const override { return "ByteLevel"; }
};

struct PostSeq : PostProcessor {
  std::vector<std::unique_ptr<PostProcessor>> parts;
  void run(Encodings& encs, bool add_special) const override {
    for (const auto& p : parts) p->run(encs, add_special);
  }
  void special_ids(std::vector<NamedId>& out) const override {
    for (const auto& p : parts) p->special_ids(out);
  }
  std::string name() const override {
    return sequence_name(parts);
  }
};

// A special token given as ["[CLS]", 101] (Bert and Roberta processors).
Status read_pair(const json& j, const char* name, std::string& tok, int& id, const std::string& where) {
  const json* f = field(j, name);
  if (!f || !f->is_array() || f->size() != 2 || !(*f)[0].is_string() || !(*f)[1].is_number_unsigned() || (*f)[1].get<uint64_t>() >= kMaxVocab * 2)
    return Error{ErrorKind::BadFormat, where + "." + name + " is not [token, id]"};
  tok = (*f)[0].get<std::string>();
  id = int((*f)[1].get<uint64_t>());
  return {};
}

}  // namespace

std::vector<Tok> join(Encodings& encs) {
  std::vector<Tok> out;
  for (auto& e : encs.list) out.insert(out.end(), e.begin(), e.end());
  return out;
}

static Result<std::unique_ptr<PostProcessor>> post_processor_of_type(const std::string& type, const json& j, const std::string& where) {
  if (type == "ByteLevel") {
    auto b = std::make_unique<ByteLevelPost>();
    if (Status s = read_bools(j, where, {{"trim_offsets", true, &b->trim}, {"add_prefix_space", true, &b->add_prefix_space}}); !s) return s.error();
    return std::unique_ptr<PostProcessor>(std::move(b));
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    auto b = std::make_unique<BertPost>();
    b->roberta = type == "RobertaProcessing";
    b->where = where;
    if (Status s = read_bools(j, where, {{"trim_offsets", true, &b->trim}, {"add_prefix_space", true, &b->add_prefix_space}}); !s) return s.error();
    if (Status s = read_pair(j, "cls", b->cls, b->cls_id, where); !s) return s.error();
    if (Status s = read_pair(j, "sep", b->sep, b->sep_id, where); !s) return s.error();
    return std::unique_ptr<PostProcessor>(std::move(b));
  }
  if (type == "TemplateProcessing") {
    auto t = std::make_unique<TemplatePost>();
    t->where = where;
    if (const json* sp = field(j, "special_tokens")) {
      if (!sp->is_object()) return Error{ErrorKind::BadFormat, where + ".special_tokens is not an object"};
      for (auto it = sp->begin(); it != sp->end(); ++it) {
        const std::string w = where + ".special_tokens[\"" + sanitize_utf8(it.key().substr(0, 64)) + "\"]";
        const json* ids = it.value().is_object() ? field(it.value(), "ids") : nullptr;
        const json* toks = it.value().is_object() ? field(it.value(), "tokens") : nullptr;
        if (!ids || !toks || !ids->is_array() || !toks->is_array() || ids->size() != toks->size())
          return Error{ErrorKind::BadFormat, w + " has no ids and tokens lists of one length"};
        auto& entry = t->specials[it.key()];
        for (size_t k = 0; k < ids->size(); ++k) {
          if (!(*ids)[k].is_number_unsigned() || (*ids)[k].get<uint64_t>() >= kMaxVocab * 2 || !(*toks)[k].is_string())
            return Error{ErrorKind::BadFormat, w + ".ids[" + std::to_string(k) + "] is not an id with its token"};
          entry.first.push_back(int((*ids)[k].get<uint64_t>()));
          entry.second.push_back((*toks)[k].get<std::string>());
        }
      }
    }
    for (const char* which : {"single", "pair"}) {
      const json* list = field(j, which);
      const std::string w = where + "." + which;
      if (!list || !list->is_array()) return Error{ErrorKind::BadFormat, w + " is not a list"};
      auto& items = std::string(which) == "single" ? t->single : t->pair;
      for (size_t i = 0; i < list->size(); ++i) {
        const json& e = (*list)[i];
        const std::string wi = w + "[" + std::to_string(i) + "]";
        const json* seq = e.is_object() ? field(e, "Sequence") : nullptr;
        const json* spc = e.is_object() ? field(e, "SpecialToken") : nullptr;
        const json* body = seq ? seq : spc;
        if (!body || !body->is_object()) return Error{ErrorKind::BadFormat, wi + " is neither a Sequence nor a SpecialToken"};
        const json* id = field(*body, "id");
        const json* ty = field(*body, "type_id");
        if (!id || !id->is_string()) return Error{ErrorKind::BadFormat, wi + ".id is not a string"};
        if (ty && (!ty->is_number_unsigned() || ty->get<uint64_t>() > 1000)) return Error{ErrorKind::BadFormat, wi + ".type_id is not a small count"};
        TemplatePost::Item item{seq != nullptr, 0, "", ty ? int(ty->get<uint64_t>()) : 0};
        if (seq) {
          const std::string& s = id->get_ref<const std::string&>();
          if (s != "A" && s != "B") return Error{ErrorKind::BadFormat, wi + ".id is neither A nor B"};
          item.seq = s == "B";
          if (item.seq == 1 && std::string(which) == "single") return Error{ErrorKind::BadFormat, wi + " names B in a single-text template"};
        } else {
          item.special = id->get<std::string>();
          if (!t->specials.count(item.special))
            return Error{ErrorKind::BadFormat, wi + " names \"" + sanitize_utf8(item.special.substr(0, 64)) + "\", which " + where + ".special_tokens lacks"};
        }
        items.push_back(item);
      }
    }
    return std::unique_ptr<PostProcessor>(std::move(t));
  }
  return Error{ErrorKind::BadFormat, where + ".type \"" + type + "\" is a post-processor headmap does not implement"};
}

Result<std::unique_ptr<PostProcessor>> parse_post_processor(const json& j, const std::string& where) {
  return parse_stage<PostProcessor, PostSeq>(j, where, "processors", parse_post_processor, post_processor_of_type);
}

}  // namespace headmap::hf
