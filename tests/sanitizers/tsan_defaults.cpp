// tsan_defaults.cpp: compiled into every target of a HEADMAP_SANITIZE=thread build
// (CMakeLists.txt adds it to headmap_flags), so the app, the CLI and every test binary
// carry the same ThreadSanitizer suppressions, with no file to pass around.
//
// LLVM's libomp is not built with TSan. Its own locks and allocator, seen through the
// pthread and memset interceptors it calls, look like races between its threads. Archer
// (OMP_TOOL_LIBRARIES=libarcher.so, set by ctest) tells TSan about OpenMP's barriers and
// tasks, and our code inside parallel regions is instrumented and still checked: only
// calls made from libomp itself are ignored.
extern "C" const char* __tsan_default_suppressions() { return "called_from_lib:libomp.so.5\n"; }

// Accesses and interceptor calls from libraries that are not instrumented (libomp, Mesa's
// software GL, GLFW, X11) are not reported: TSan cannot see their synchronisation, so it
// would report their internals as races. Every line of headmap is instrumented. (Archer
// asks for this option too.)
extern "C" const char* __tsan_default_options() { return "ignore_noninstrumented_modules=1"; }
