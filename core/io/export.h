// export.h: all of core/io's writers and readers at once, for code written before they
// were split. New code includes the one it needs:
//   file_io.h      write_file_atomic, read_file
//   npy.h          npy_bytes, parse_npy
//   config_json.h  config_json, config_from_json
//   run_export.h   RunRecord, run_json, export_npy_dir
// and core/model/source_label.h for describe_source.
#pragma once
#include "core/io/config_json.h"
#include "core/io/file_io.h"
#include "core/io/npy.h"
#include "core/io/run_export.h"
#include "core/model/source_label.h"
