// enum_names.h: the one way an enum's values get the words a view file or a script names
// them by: a table of (value, name), read both ways.
#pragma once
#include <cstddef>
#include <string>

namespace headmap {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

// The value's name in the table (the first entry's for a value not in it).
template <class E, size_t N>
const char* enum_name(const EnumName<E> (&table)[N], E v) {
  for (const EnumName<E>& e : table)
    if (e.value == v) return e.name;
  return table[0].name;
}

// Sets *out to the value the table names `name`; false when none is.
template <class E, size_t N>
bool parse_enum_name(const std::string& name, const EnumName<E> (&table)[N], E* out) {
  for (const EnumName<E>& e : table)
    if (name == e.name) {
      *out = e.value;
      return true;
    }
  return false;
}

}  // namespace headmap
