// model_dir.cpp: see model_dir.h.
#include "core/io/model_dir.h"

#include "core/text/utf8.h"

namespace headmap {
namespace fs = std::filesystem;

namespace {
bool inside(const fs::path& root, const fs::path& p) {  // both canonical
  auto r = root.begin(), q = p.begin();
  for (; r != root.end(); ++r, ++q)
    if (q == p.end() || *q != *r) return false;
  return q != p.end();
}
}  // namespace

Status check_model_file(const fs::path& dir, const fs::path& file) {
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status(file, ec))) return Status();  // a plain file (or none: its reader says so)
  const fs::path root = fs::canonical(dir, ec);
  if (ec) return Status();  // the directory's own reader reports it
  const fs::path target = fs::canonical(file, ec);
  if (ec) return Error{ErrorKind::Io, printable(file.string()) + " is a link that leads nowhere (" + printable(ec.message()) + ")."};
  if (inside(root, target)) return Status();
  // Hugging Face's cache: root = REPO/snapshots/REV, target in REPO/blobs/.
  if (root.parent_path().filename() == "snapshots" && target.parent_path() == root.parent_path().parent_path() / "blobs") return Status();
  return Error{ErrorKind::Io, printable(file.string()) + " is a link to " + printable(target.string()) +
                                  ", outside the model directory: headmap reads a model's files only inside its directory "
                                  "(or, for a Hugging Face cache snapshot, its blobs/ folder). Copy the file into the directory."};
}

}  // namespace headmap
