// enum_names.h: the one way a word (a view file's, a script's) names an enum's value.
#pragma once
#include <initializer_list>
#include <string>

namespace headmap {

// Sets *out to the value of `all` that `name_of` names `name`; false when none does.
template <class E>
bool parse_enum_name(const std::string& name, std::initializer_list<E> all, const char* (*name_of)(E), E* out) {
  for (E v : all)
    if (name == name_of(v)) {
      *out = v;
      return true;
    }
  return false;
}

}  // namespace headmap
